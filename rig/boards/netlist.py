# SPDX-License-Identifier: BSD-2-Clause
"""A board's logic: what decides its placement and timing.

Yosys and nextpnr are deterministic: the same netlist, options, seed and tool
versions give the same placement and timing. The source locations Amaranth records
(``src`` attributes) are carried through synthesis and change nothing else (checked:
the OrangeCrab's RTLIL with every source line moved gives a byte-identical placed and
routed configuration), and ``BUILD_HASH`` is taken from the logic
(:mod:`rtrig.gateware.identity`), so a comment, an SPDX line or a function split in
``gateware/`` changes no board.

:func:`board_digests` gives the SHA-256 of each board top's RTLIL without ``src``
attributes, with the firmware image the build uses in the SoC targets. When a change
leaves every board's digest as it was, the boards place and route as before; when one
moves, that board's placement moves and its timing has to be confirmed by a build
(``make test-boards``). ``placed.json`` beside this module records the digests of the
netlists the boards were last placed, routed and timed with;
``tests/boards/test_netlist.py`` fails when a board's logic has moved from it.

``python -m rtrig.boards.netlist`` prints the digests of every board and target;
``--record`` writes them to ``placed.json`` (after ``make test-boards`` has passed).
"""

import json
import sys
from pathlib import Path

from ..gateware.identity import logic_digest

__all__ = ["board_rtlil", "board_digests", "PLACED", "placed_digests"]

#: The digests of the netlists every board was last placed and timed with.
PLACED = Path(__file__).with_name("placed.json")

def board_rtlil(board, target="rig"):
    """The RTLIL a build of ``board``'s ``target`` synthesises (the SoC targets with the
    default firmware image, as ``rtrig build`` takes it)."""
    from .build import _plan, _prepare_top
    top, _ = _prepare_top(board, None, target, None)
    return _plan(board, board.platform(), top, "top", target).files["top.il"]


def board_digests(names=None):
    """(board, target, digest) of every board and target (or of ``names``)."""
    from . import BOARDS
    out = []
    for name, board in BOARDS.items():
        if names and name not in names:
            continue
        if getattr(board, "same_die_as", ""):
            continue                    # placed and routed as its stand-in
        for target in board.targets:
            out.append((name, target, logic_digest(board_rtlil(board, target))))
    return out


def placed_digests():
    """``{"board/target": digest}`` from :data:`PLACED`."""
    return json.loads(PLACED.read_text())


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    record = "--record" in args
    names = {a for a in args if a != "--record"}
    if record and names:
        sys.exit("error: --record writes every board's digest: give no board names")
    rows = board_digests(names)
    for name, target, digest in rows:
        print(f"{name:16} {target:10} {digest}")
    if record:
        PLACED.write_text(json.dumps({f"{n}/{t}": d for n, t, d in rows}, indent=2,
                                     sort_keys=True) + "\n")
        print(f"recorded in {PLACED}")


if __name__ == "__main__":
    main()
