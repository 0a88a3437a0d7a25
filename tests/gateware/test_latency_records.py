# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the latency records feature's channel edges
(gateware/features/latency_records.py, ``LAT_EDGES``): latency channels by default, interval
channels between any two edges when set."""

import random

import pytest
from simrun import run

from rtrig.gateware.features.latency_records import LatencyRecords
from rtrig.protocol import EDGE_SOURCES, LAT_EDGES_RESET, Input, lat_edges

STIM0 = EDGE_SOURCES.index("STIM0")


#: Samples per cycle: a rig's 4, and 1 and 2, whose records must be the same (at one
#: sample per cycle every edge is at phase 0: the reference for the phases).
STEPS = [1, 2, 4]


def records(edges, lat_edges_value=LAT_EDGES_RESET, cycles=None, step=1):
    """Drive the feature with ``edges`` — {tick: [(source, rising), ...]}, pin times in
    ticks: with ``step`` ticks per cycle an edge at tick T is flagged in cycle T // step
    at phase T % step — and return the records of both channels as (channel, pulse,
    stim_t, missed, latency, completion)."""
    dut = LatencyRecords(depth=16, step=step, intervals=True)
    out = []
    last = (max(edges) + 10) // step + 10 if cycles is None else cycles
    by_cycle = {}
    for tick, evs in edges.items():
        by_cycle.setdefault(tick // step, []).extend((s, r, tick % step) for s, r in evs)

    async def tb(ctx):
        ctx.set(dut.regs.LAT_CH_EN, 0b11)
        ctx.set(dut.regs.STREAM_EN, 0b10)
        ctx.set(dut.regs.LAT_EDGES, lat_edges_value)
        for c in range(last):
            rise = fall = phase = 0
            for src, rising, ph in by_cycle.get(c, []):
                if rising:
                    rise |= 1 << src
                else:
                    fall |= 1 << src
                phase |= ph << (2 * src)
            ctx.set(dut.rise, rise)
            ctx.set(dut.fall, fall)
            ctx.set(dut.phase.as_value(), phase)
            ctx.set(dut.t, step * c)
            for ch in range(2):
                for rv, rec in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
                    if ctx.get(rv[ch]):
                        r = ctx.get(rec[ch])
                        out.append((r.channel, r.pulse, r.stim_t, r.missed, r.latency,
                                    r.completion))
            await ctx.tick()

    run(dut, tb, "latency_edges")
    return sorted(out)


@pytest.mark.parametrize("step", STEPS)
def test_default_channels_are_stim0_to_isr_and_app(step):
    e = {10: [(STIM0, 1)], 25: [(Input.ISR_OUT, 1)], 30: [(STIM0, 0)],
         40: [(Input.ISR_OUT, 0), (Input.APP_OUT, 1)], 52: [(Input.APP_OUT, 0)]}
    assert records(e, step=step) == [(0, 0, 10, 0, 15, 30), (1, 0, 10, 0, 30, 42)]


@pytest.mark.parametrize("step", STEPS)
def test_interval_channel_marker_rise_to_fall(step):
    # Channel 0: MARKER0 rise → MARKER0 fall (an operation's duration); its record is
    # complete at the end source's next opposite edge (the next rise).
    sel = lat_edges(Input.MARKER0, 0, Input.MARKER0, 1)
    m0 = Input.MARKER0
    e = {100: [(m0, 1)], 137: [(m0, 0)], 200: [(m0, 1)], 210: [(m0, 0)], 260: [(m0, 1)],
         # STIM0 pulses do not disturb an interval channel
         150: [(STIM0, 1)], 160: [(STIM0, 0)]}
    got = [r for r in records(e, sel | LAT_EDGES_RESET & 0xFF00, step=step) if r[0] == 0]
    assert got == [(0, 0, 100, 0, 37, 100), (0, 1, 200, 0, 10, 60)]


@pytest.mark.parametrize("step", STEPS)
def test_interval_channel_across_two_markers_and_falling_start(step):
    # Channel 1: MARKER1 fall → MARKER2 rise (completion: MARKER2's fall); channel 0 keeps
    # STIM0 → ISR_OUT.
    sel = (LAT_EDGES_RESET & 0xFF) | lat_edges(Input.MARKER1, 1, Input.MARKER2, 0) << 8
    m1, m2 = Input.MARKER1, Input.MARKER2
    e = {5: [(m1, 1)], 20: [(m1, 0)], 33: [(m2, 1)], 50: [(m2, 0)],
         60: [(m1, 1)], 70: [(m1, 0)], 71: [(m2, 1)], 75: [(m2, 0)],
         80: [(STIM0, 1)], 84: [(Input.ISR_OUT, 1)], 90: [(Input.ISR_OUT, 0)]}
    got = records(e, sel, step=step)
    assert got == [(0, 0, 80, 0, 4, 10), (1, 0, 20, 0, 13, 30), (1, 1, 70, 0, 1, 5)]


@pytest.mark.parametrize("step", STEPS)
def test_interval_channel_start_without_end_is_missed(step):
    sel = lat_edges(Input.MARKER0, 0, Input.MARKER1, 0) | LAT_EDGES_RESET & 0xFF00
    m0, m1 = Input.MARKER0, Input.MARKER1
    e = {10: [(m0, 1)], 20: [(m0, 0)], 40: [(m0, 1)], 45: [(m1, 1)], 50: [(m1, 0)]}
    got = [r for r in records(e, sel, step=step) if r[0] == 0]
    assert got == [(0, 0, 10, 1, 0, 0), (0, 1, 40, 0, 5, 10)]


def _random_pin_edges(rng, sources, n, spacing):
    """Edges of ``sources`` at random ticks, each source's level alternating and its
    edges at least ``spacing`` ticks apart (one edge per source per cycle)."""
    edges, level = {}, dict.fromkeys(sources, 0)
    t = dict.fromkeys(sources, 0)
    for _ in range(n):
        s = rng.choice(sources)
        t[s] += rng.randint(spacing, 6 * spacing)
        level[s] ^= 1
        edges.setdefault(t[s], []).append((s, level[s]))
    return edges


@pytest.mark.parametrize("step", [2, 4])
def test_interval_channels_between_pins_are_exact_to_the_tick(step):
    # Two pins changing at any tick: the matchers with several samples per cycle give
    # the records of one sample per cycle, tick for tick (start edges at odd phases,
    # rises before a start in its cycle included).
    rng = random.Random(step)
    m0, m1, m2 = Input.MARKER0, Input.MARKER1, Input.MARKER2
    sel = lat_edges(m0, 0, m1, 0) | lat_edges(m2, 1, m1, 1) << 8
    n = odd = 0
    for _ in range(6):
        e = _random_pin_edges(rng, [m0, m1, m2], 120, step)
        ref = records(e, sel)
        assert records(e, sel, step=step) == ref
        n += sum(not r[3] for r in ref)
        odd += sum(not r[3] and r[2] % step for r in ref)
    assert n > 100 and odd > 30             # answered, many starting at phases 1..3
