# SPDX-License-Identifier: BSD-2-Clause
"""What the simulated SoC's console says about a run: a firmware that ended
(``SIM_EXIT``) or never answered is an error, not a slow target (docs/own-firmware.md).

The twin's harness appends the SoC's ``CONSOLE_TX`` bytes to the console file and, for
a write to ``SIM_EXIT``, a line ``SIM_EXIT <code>`` (``host/sim/harness.cpp``).
"""

import re

from ...errors import SimulationError

__all__ = ["read_console", "check_soc_run", "CONSOLE_TAIL"]

#: Console lines quoted in an error.
CONSOLE_TAIL = 3

_EXIT = re.compile(r"^SIM_EXIT (\d+)$", re.MULTILINE)


def read_console(path):
    """``(exit_code, lines)`` of a console file: the first ``SIM_EXIT`` code (None when
    the firmware has not ended) and the console's lines before it (all when it has
    not), without the harness's own ``SIM_EXIT`` lines. A missing file reads empty."""
    try:
        text = path.read_text(errors="replace")
    except (FileNotFoundError, TypeError, AttributeError):
        return None, []
    m = _EXIT.search(text)
    code = int(m.group(1)) if m else None
    before = text[:m.start()] if m else text
    return code, [ln for ln in before.splitlines() if ln.strip()]


def _tail(lines):
    if not lines:
        return "the console is empty"
    return "console: " + " | ".join(repr(ln)[1:-1] for ln in lines[-CONSOLE_TAIL:])


def check_soc_run(rig, summary=None):
    """Raise :class:`SimulationError` when the SoC twin's firmware ended (wrote
    ``SIM_EXIT``) or, with ``summary`` (a capture's per-channel figures), when it gave
    no response edge at all: every pulse of every channel measured missed. No-op for a
    rig that is not the SoC twin."""
    sim = getattr(rig, "sim", None)
    if sim is None or not getattr(sim, "soc", False):
        return
    code, lines = read_console(sim.console)
    hint = ("--console FILE keeps the SoC's whole console" if not sim.console_kept
            else f"the whole console is in {sim.console}")
    if code is not None:
        raise SimulationError(f"the SoC firmware ended with SIM_EXIT {code} "
                              f"({_tail(lines)})", hint=hint)
    if summary:
        pulses = sum(st.get("pulses", 0) for st in summary.values())
        if pulses and all(st.get("answered", 0) == 0 for st in summary.values()):
            names = ", ".join(summary)
            raise SimulationError(
                f"the SoC firmware never answered: no response edge on {names} for any "
                f"of {pulses // len(summary)} pulses ({_tail(lines)})",
                hint="see docs/own-firmware.md for the pins and edges rtrig times; " + hint)
