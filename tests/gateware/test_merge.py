# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the record merger (gateware/merge.py)."""

from simrun import run

from rtrig.gateware.latency_matcher import LatencyRecord
from rtrig.gateware.merge import RecordMerger


def test_merger_counts_what_it_cannot_hold():
    dut = RecordMerger(LatencyRecord, 2)
    got = []

    async def tb(ctx):
        ctx.set(dut.out.ready, 0)                 # back-pressure: nothing drains
        for i in range(3):                        # source 0 offers three records
            ctx.set(dut.valid, 0b01)
            ctx.set(dut.payload[0].pulse, i)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        await ctx.tick()                          # the count is registered twice:
        assert ctx.get(dut.overflow) == 1         # the last drop shows two cycles late
        await ctx.tick()
        assert ctx.get(dut.overflow) == 2         # one held, two dropped and counted
        ctx.set(dut.out.ready, 1)
        for _ in range(4):
            if ctx.get(dut.out.valid):
                got.append(ctx.get(dut.out.payload.pulse))
            await ctx.tick()

    run(dut, tb, "merge")
    assert got == [0]
