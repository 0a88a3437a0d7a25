# SPDX-License-Identifier: BSD-2-Clause
"""What identifies a build: its logic, not the text of its sources.

Amaranth records where each signal and cell was made (``src`` attributes, file and
line). Yosys carries them through synthesis without letting them change anything else,
and the rest of a netlist decides placement and timing (nextpnr is deterministic for a
netlist, its options and its seed). :func:`logic_text` is the RTLIL without them, so
two sources that build the same hardware — one with a comment more, or a function split
in two — give the same text. ``BUILD_HASH`` is taken from it
(:meth:`~rtrig.gateware.top.GatewareTop.logic_hash`): an edit that leaves the logic alone
leaves the register, the netlist and every board's placement as they were.
"""

import hashlib
import re

__all__ = ["logic_text", "logic_digest"]

_SRC = re.compile(r"^\s*attribute \\src ")


def logic_text(rtlil):
    """``rtlil`` (Amaranth's RTLIL text) without its ``src`` attributes."""
    return "".join(line for line in rtlil.splitlines(keepends=True) if not _SRC.match(line))


def logic_digest(rtlil):
    """SHA-256 (hex) of :func:`logic_text`."""
    return hashlib.sha256(logic_text(rtlil).encode()).hexdigest()
