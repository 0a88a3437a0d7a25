# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the latency records feature's channel edges
(gateware/latency_records.py, ``LAT_EDGES``): latency channels by default, interval
channels between any two edges when set."""

from simrun import run

from rtrig.gateware.latency_records import LatencyRecords
from rtrig.protocol import EDGE_SOURCES, LAT_EDGES_RESET, Input, lat_edges

STIM0 = EDGE_SOURCES.index("STIM0")


def records(edges, lat_edges_value=LAT_EDGES_RESET, cycles=None):
    """Drive the feature with ``edges`` — {cycle: [(source, rising), ...]} stamped with
    the cycle as pin time — and return the records of both channels as
    (channel, pulse, stim_t, missed, latency, completion)."""
    dut = LatencyRecords(depth=16)
    out = []
    last = max(edges) + 10 if cycles is None else cycles

    async def tb(ctx):
        ctx.set(dut.regs.LAT_CH_EN, 0b11)
        ctx.set(dut.regs.STREAM_EN, 0b10)
        ctx.set(dut.regs.LAT_EDGES, lat_edges_value)
        for c in range(last):
            rise = fall = 0
            for src, rising in edges.get(c, []):
                if rising:
                    rise |= 1 << src
                else:
                    fall |= 1 << src
            ctx.set(dut.rise, rise)
            ctx.set(dut.fall, fall)
            ctx.set(dut.t, c)
            for ch in range(2):
                for rv, rec in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
                    if ctx.get(rv[ch]):
                        r = ctx.get(rec[ch])
                        out.append((r.channel, r.pulse, r.stim_t, r.missed, r.latency,
                                    r.completion))
            await ctx.tick()

    run(dut, tb, "latency_edges")
    return sorted(out)


def test_default_channels_are_stim0_to_isr_and_app():
    e = {10: [(STIM0, 1)], 25: [(Input.ISR_OUT, 1)], 30: [(STIM0, 0)],
         40: [(Input.ISR_OUT, 0), (Input.APP_OUT, 1)], 52: [(Input.APP_OUT, 0)]}
    assert records(e) == [(0, 0, 10, 0, 15, 30), (1, 0, 10, 0, 30, 42)]


def test_interval_channel_marker_rise_to_fall():
    # Channel 0: MARKER0 rise → MARKER0 fall (an operation's duration); its record is
    # complete at the end source's next opposite edge (the next rise).
    sel = lat_edges(Input.MARKER0, 0, Input.MARKER0, 1)
    m0 = Input.MARKER0
    e = {100: [(m0, 1)], 137: [(m0, 0)], 200: [(m0, 1)], 210: [(m0, 0)], 260: [(m0, 1)],
         # STIM0 pulses do not disturb an interval channel
         150: [(STIM0, 1)], 160: [(STIM0, 0)]}
    got = [r for r in records(e, sel | LAT_EDGES_RESET & 0xFF00) if r[0] == 0]
    assert got == [(0, 0, 100, 0, 37, 100), (0, 1, 200, 0, 10, 60)]


def test_interval_channel_across_two_markers_and_falling_start():
    # Channel 1: MARKER1 fall → MARKER2 rise (completion: MARKER2's fall); channel 0 keeps
    # STIM0 → ISR_OUT.
    sel = (LAT_EDGES_RESET & 0xFF) | lat_edges(Input.MARKER1, 1, Input.MARKER2, 0) << 8
    m1, m2 = Input.MARKER1, Input.MARKER2
    e = {5: [(m1, 1)], 20: [(m1, 0)], 33: [(m2, 1)], 50: [(m2, 0)],
         60: [(m1, 1)], 70: [(m1, 0)], 71: [(m2, 1)], 75: [(m2, 0)],
         80: [(STIM0, 1)], 84: [(Input.ISR_OUT, 1)], 90: [(Input.ISR_OUT, 0)]}
    got = records(e, sel)
    assert got == [(0, 0, 80, 0, 4, 10), (1, 0, 20, 0, 13, 30), (1, 1, 70, 0, 1, 5)]


def test_interval_channel_start_without_end_is_missed():
    sel = lat_edges(Input.MARKER0, 0, Input.MARKER1, 0) | LAT_EDGES_RESET & 0xFF00
    m0, m1 = Input.MARKER0, Input.MARKER1
    e = {10: [(m0, 1)], 20: [(m0, 0)], 40: [(m0, 1)], 45: [(m1, 1)], 50: [(m1, 0)]}
    got = [r for r in records(e, sel) if r[0] == 0]
    assert got == [(0, 0, 10, 1, 0, 0), (0, 1, 40, 0, 5, 10)]
