# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the loopback target (gateware/loopback.py)."""

import pytest
from simrun import edges, run

from rtrig.gateware.loopback import LoopbackTarget


@pytest.mark.parametrize("depth", [16, 2])
@pytest.mark.parametrize("delay", [0, 1, 2, 5, 37])
def test_loopback_delay_is_exact(delay, depth):
    # Period 40: a delay of 37 has three edges in flight, as many as depth 2 holds.
    dut = LoopbackTarget(depth)
    stim, out = [], []

    async def tb(ctx):
        ctx.set(dut.delay, delay)
        for c in range(150):
            s = 1 if (c % 40) in range(10, 20) else 0
            ctx.set(dut.stim, s)
            stim.append(s)
            out.append(ctx.get(dut.out))
            await ctx.tick()

    run(dut, tb, "loop")
    assert [(c + delay, v) for c, v in edges(stim) if c + delay < 150] == edges(out)


def test_loopback_counts_edges_beyond_its_depth():
    # Depth 2 holds three edges in flight; with a delay of 57 (period 40, 10 high) the
    # fourth edge (cycle 60) finds the queue full.
    dut = LoopbackTarget(2)
    lost = []

    async def tb(ctx):
        ctx.set(dut.delay, 57)
        for c in range(70):
            ctx.set(dut.stim, 1 if (c % 40) in range(10, 20) else 0)
            lost.append(ctx.get(dut.lost))
            await ctx.tick()

    run(dut, tb, "loop_lost")
    assert lost[60] == 0 and lost[61] == 1 and lost[-1] == 1
