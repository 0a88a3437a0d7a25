# SPDX-License-Identifier: BSD-2-Clause
"""FPGA boards the rig runs on (``rtrig.boards``).

One module per board family; each exports ``BOARDS``, a list of :class:`Board`
(one per device variant). :func:`get_board` finds one by its command-line name.
"""

from .board import Board, BoardTop
from .registry import (
                       BOARDS,
                       DEFAULT_BOARDS,
                       board_names,
                       board_top,
                       get_board,
                       loopback_limit_cycles,
)

__all__ = ["Board", "BoardTop", "BOARDS", "DEFAULT_BOARDS", "get_board", "board_names",
           "board_top", "loopback_limit_cycles"]
