# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the raw events' queue (``EventGroups``), the link's round robin
and the register file's one-level read (the iCEBreaker's)."""

import random

import pytest
from amaranth import Module
from amaranth.lib import data
from simrun import run

from rtrig.gateware.features.events import EventGroups
from rtrig.gateware.link import StreamRoundRobin
from rtrig.gateware.registers import RegisterFile
from rtrig.protocol import REGISTERS, Access


class Rec(data.Struct):
    t: 48
    input: 4
    _pad: 3
    rising: 1


def _groups_run(edges_at, cycles, ready_at=lambda c: True, depth=8, step=2):
    """edges_at: {cycle: [(source, rising, phase), ...]}; ``t`` advances by ``step``
    per cycle; returns (records, counters)."""
    codes = [0, 1, 2, 3, 4, 5, 8, 9]
    dut = EventGroups(8, codes, depth, Rec, phase_bits=step.bit_length() - 1)
    got, counters = [], {}

    async def tb(ctx):
        for c in range(cycles):
            v = r = p = 0
            for src, rising, phase in edges_at.get(c, []):
                v |= 1 << src
                r |= rising << src
                p |= phase << (2 * src)
            ctx.set(dut.valid, v)
            ctx.set(dut.rising, r)
            ctx.set(dut.phase.as_value(), p)
            ctx.set(dut.t, 1000 + step * c)
            ctx.set(dut.out.ready, ready_at(c))
            if ctx.get(dut.out.valid) and ready_at(c):
                rec = ctx.get(dut.out.payload)
                got.append((rec.t, rec.input, rec.rising))
            await ctx.tick()
        counters["records"] = ctx.get(dut.records)
        counters["overflow"] = ctx.get(dut.overflow)

    run(dut, tb)
    return got, counters, codes


@pytest.mark.parametrize("step", [1, 2, 4])
def test_event_groups_hand_out_every_edge_in_time_order(step):
    rng = random.Random(5)
    edges_at = {}
    for c in range(0, 200, 7):
        srcs = rng.sample(range(8), rng.randint(1, 4))
        edges_at[c] = [(s, rng.randint(0, 1), rng.randrange(step)) for s in srcs]
    got, counters, codes = _groups_run(edges_at, 400, step=step)
    want = sorted((1000 + step * c + ph, codes[s], r)
                  for c, es in edges_at.items() for s, r, ph in es)
    assert sorted(got) == want
    # Within one cycle the lowest source comes first; across cycles, time order.
    cyc = [g[0] - g[0] % step for g in got]
    assert cyc == sorted(cyc)
    assert counters == {"records": len(want), "overflow": 0}


def test_event_groups_count_what_the_full_fifo_drops():
    # Nothing drains: a depth-4 FIFO keeps the first groups that fit; the rest are
    # counted edge by edge.
    edges_at = {c: [(0, 1, 0), (3, 0, 0)] for c in range(10, 30)}
    got, counters, _ = _groups_run(edges_at, 50, ready_at=lambda c: c >= 35, depth=4)
    kept = counters["records"]
    assert kept % 2 == 0 and 0 < kept < 40
    assert counters["overflow"] == 40 - kept
    # The first queued groups come out intact, in order.
    assert got[:4] == [(1020, 0, 1), (1020, 3, 0), (1022, 0, 1), (1022, 3, 0)]


def test_round_robin_holds_the_selected_input():
    dut = StreamRoundRobin(8, 3)
    out = []

    async def tb(ctx):
        ctx.set(dut.i0.valid, 1)
        ctx.set(dut.i0.payload, 0xA0)
        ctx.set(dut.i2.valid, 1)
        ctx.set(dut.i2.payload, 0xC0)
        for c in range(12):
            ready = c % 3 == 2                    # a slow consumer
            ctx.set(dut.out.ready, ready)
            if ctx.get(dut.out.valid):
                out.append((c, ctx.get(dut.out.payload), ready))
            took = [ctx.get(getattr(dut, f"i{k}").ready) for k in range(3)]
            await ctx.tick()
            if took[0]:
                ctx.set(dut.i0.payload, ctx.get(dut.i0.payload) + 1)
            if took[2]:
                ctx.set(dut.i2.payload, ctx.get(dut.i2.payload) + 1)

    run(dut, tb)
    taken = [p for c, p, r in out if r]
    # Alternates between the two valid inputs; each beat is offered until taken.
    assert taken == [0xA0, 0xC0, 0xA1, 0xC1]
    assert all(p in (0xA0, 0xC0, 0xA1, 0xC1) for _, p, _ in out)


def test_register_file_one_level_read_returns_the_r_en_cycle_value():
    m = Module()
    m.submodules.regs = regs = RegisterFile(read_pipeline=False)
    counter = regs.ro["TIME_LO"]
    m.d.sync += counter.eq(counter + 1)
    rw = [r for r in REGISTERS if r.access is Access.RW]

    async def tb(ctx):
        for r in rw[:4]:
            ctx.set(regs.addr, r.addr)
            await ctx.tick()
            ctx.set(regs.w_en, 1)
            ctx.set(regs.w_data, 0xFFFFFFFF)
            await ctx.tick()
            ctx.set(regs.w_en, 0)
            await ctx.tick()
            ctx.set(regs.r_en, 1)
            await ctx.tick()
            ctx.set(regs.r_en, 0)
            assert ctx.get(regs.r_data) == (1 << r.width) - 1
        ctx.set(regs.addr, 0x010)
        await ctx.tick()
        now = ctx.get(counter)
        ctx.set(regs.r_en, 1)
        await ctx.tick()
        ctx.set(regs.r_en, 0)
        await ctx.tick()
        assert ctx.get(regs.r_data) == now
        ctx.set(regs.addr, 0x7FF)                 # no register there
        await ctx.tick()
        ctx.set(regs.r_en, 1)
        await ctx.tick()
        assert ctx.get(regs.r_data) == 0xDEADBEEF

    run(m, tb)
