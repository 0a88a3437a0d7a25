# SPDX-License-Identifier: BSD-2-Clause
"""Every board's logic as it was placed and timed (``rig/boards/placed.json``)."""

import pytest

from rtrig.boards import BOARDS
from rtrig.boards.netlist import board_digests, placed_digests


@pytest.mark.xdist_group("netlist")
def test_every_board_is_placed_as_its_logic():
    """Every board's logic is the logic it was last placed, routed and timed with. A
    failure means a gateware (or board) change moved placement: run
    ``make test-boards``, and when every board meets timing, record the new digests
    with ``python -m rtrig.boards.netlist --record``."""
    placed = placed_digests()
    now = {f"{n}/{t}": d for n, t, d in board_digests()}
    assert set(now) <= {f"{n}/{t}" for n, b in BOARDS.items() for t in b.targets}
    moved = sorted(k for k in now if placed.get(k) != now[k])
    assert not moved, (f"the logic of {', '.join(moved)} is not what was placed and timed: "
                       "run `make test-boards`, then `python -m rtrig.boards.netlist "
                       "--record`")
    assert set(placed) == set(now), "placed.json lists boards that are gone"
