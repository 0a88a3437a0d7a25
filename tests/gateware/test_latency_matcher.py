# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the latency matcher (gateware/latency_matcher.py)."""

import pytest
from simrun import run

from rtrig.gateware.latency_matcher import LatencyMatcher


def match(events, timeout=0, channel=1, out_reg=True, when=None):
    """events: list of (t, stim, rise, fall, pulse); returns emitted records (and the
    cycles they appear in, into ``when``)."""
    dut = LatencyMatcher(channel, out_reg=out_reg)
    out = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.timeout, timeout)
        last_t = max(e[0] for e in events) + 5
        ev = {e[0]: e for e in events}
        for t in range(last_t + (timeout or 0) + 3):
            e = ev.get(t, (t, 0, 0, 0, 0))
            ctx.set(dut.t, t)
            ctx.set(dut.stim_rise, e[1])
            ctx.set(dut.in_rise, e[2])
            ctx.set(dut.in_fall, e[3])
            ctx.set(dut.pulse, e[4])
            for v, r in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
                if ctx.get(v):
                    rec = ctx.get(r)
                    out.append((rec.pulse, rec.stim_t, rec.channel, rec.missed, rec.latency,
                                rec.completion))
                    if when is not None:
                        when.append(t)
            await ctx.tick()

    run(dut, tb, "match")
    return sorted(out)


def test_matcher_latency_and_completion():
    recs = match([(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 7, 15)]


def test_matcher_same_cycle_response_is_zero_latency():
    recs = match([(10, 1, 1, 0, 0), (12, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 0, 2)]


def test_matcher_missed_when_next_pulse_comes_first():
    recs = match([(10, 1, 0, 0, 0), (20, 1, 0, 0, 1), (23, 0, 1, 0, 0), (24, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 1, 0, 0), (1, 20, 1, 0, 3, 4)]


def test_matcher_timeout_marks_missed():
    recs = match([(10, 1, 0, 0, 0), (40, 0, 1, 0, 0), (41, 0, 0, 1, 0)], timeout=20)
    assert recs == [(0, 10, 1, 1, 0, 0)]       # the late response is ignored


def test_matcher_long_response_keeps_its_pulse():
    # Response to pulse 0 stays high across pulse 1; pulse 1 is answered afterwards.
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 0, 1), (25, 0, 0, 1, 0),
                  (27, 0, 1, 0, 0), (28, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 15), (1, 20, 1, 0, 7, 8)]


def test_matcher_fall_and_stimulus_in_one_cycle():
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 1, 1), (21, 0, 1, 0, 0),
                  (22, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 10), (1, 20, 1, 0, 1, 2)]


MATCH_CASES = [
    [(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)],
    [(10, 1, 0, 0, 0), (20, 1, 0, 0, 1), (23, 0, 1, 0, 0), (24, 0, 0, 1, 0)],
    [(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 1, 1), (21, 0, 1, 0, 0), (22, 0, 0, 1, 0)],
]


@pytest.mark.parametrize("events", MATCH_CASES)
def test_matcher_without_output_register_is_one_cycle_earlier(events):
    when_reg, when_comb = [], []
    assert match(events, out_reg=False, when=when_comb) == match(events, when=when_reg)
    assert when_comb == [c - 1 for c in when_reg]
