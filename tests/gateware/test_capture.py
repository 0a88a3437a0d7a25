# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the input capture (gateware/capture.py)."""

from simrun import run

from rtrig.gateware.capture import IN_DELAY, EdgeDetector


def test_edge_detector_subtracts_synchroniser_delay():
    dut = EdgeDetector(2)
    seen = []

    async def tb(ctx):
        now = 0
        for c in range(30):
            ctx.set(dut.now, now)
            ctx.set(dut.pins, 1 if 5 <= c < 12 else 0)          # pin high cycles 5..11
            ctx.set(dut.stim, 1 if 3 <= c < 8 else 0)           # STIM0 high cycles 3..7
            # edges are flagged IN_DELAY cycles later, stamped with the pin time
            if ctx.get(dut.rise) or ctx.get(dut.fall):
                seen.append((ctx.get(dut.t), ctx.get(dut.rise), ctx.get(dut.fall)))
            await ctx.tick()
            now += 1

    run(dut, tb, "edges")
    assert IN_DELAY == 2
    assert seen == [(3, 0b100, 0), (5, 0b001, 0), (8, 0, 0b100), (12, 0, 0b001)]
