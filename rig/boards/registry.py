# SPDX-License-Identifier: BSD-2-Clause
"""The boards by name: every variant of every board module, and the top level of a
board's build target."""

from .board import BoardTop

__all__ = ["BOARDS", "DEFAULT_BOARDS", "get_board", "board_names", "board_top",
           "loopback_limit_cycles"]


def _collect():
    from . import icebreaker, orangecrab, ulx3s
    boards = {}
    for mod in (ulx3s, orangecrab, icebreaker):
        for b in mod.BOARDS:
            boards[b.name] = b
    return boards


#: Every board variant by name.
BOARDS = _collect()
#: The variants ``make bitstreams`` and the build tests (so CI) cover: every one, those
#: whose place and route another variant's stands for (``Board.same_die_as``) last,
#: after it.
DEFAULT_BOARDS = tuple(sorted(BOARDS, key=lambda n: bool(BOARDS[n].same_die_as)))


def board_names():
    return list(BOARDS)


def get_board(name):
    """The :class:`Board` called ``name`` (case-insensitive); ``KeyError`` if none."""
    return BOARDS[name.lower()]


def loopback_limit_cycles(code):
    """The longest loopback delay, in clock cycles, of the rig that reports board
    ``code`` (``BOARD``): its delay line holds that many cycles, and a longer delay
    answers nothing. None for a code no board has (0: a rig that names no board)."""
    from ..gateware.features.targets import LOOP_LINE_DEPTH
    for b in BOARDS.values():
        if b.code == code and code:
            return LOOP_LINE_DEPTH
    return None


def board_top(board, target="rig", firmware=b""):
    """The top level of ``board``'s ``target`` (one of :attr:`Board.targets`);
    ``firmware`` is the SoC's RAM image (raw ``.bin`` bytes) for the SoC targets."""
    if target not in board.targets:
        raise ValueError(f"{board.name} does not build target {target!r}")
    if target == "rig":
        return BoardTop(board)
    from .soc import RigSoCTop, SoCTargetTop
    return (RigSoCTop if target == "soc" else SoCTargetTop)(board, firmware)
