# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the latency matcher (gateware/latency_matcher.py): hand
cases at one, two (step 2) and four (step 4) samples per cycle, and a reference model
of the matching rules on random event sequences (random phases and timeouts)."""

import random

import pytest
from simrun import run

from rtrig.gateware.latency_matcher import LatencyMatcher


def _collect(ctx, dut, out, when=None, cycle=0, fields=6):
    """Appends the records offered this cycle (their first ``fields`` fields)."""
    for v, r in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
        if ctx.get(v):
            rec = ctx.get(r)
            out.append((rec.pulse, rec.stim_t, rec.channel, rec.missed, rec.latency,
                        rec.completion, rec["_pad"])[:fields])
            if when is not None:
                when.append(cycle)


def match(events, timeout=0, channel=1, step=1, when=None, t0=0, phase=0):
    """events: list of (cycle, stim, rise, fall, pulse[, phase]); ``t`` is
    ``t0 + step * cycle``, ``in_phase`` is ``phase`` in cycles without an event.
    Returns the sorted records (and the cycles they appear in, into ``when``)."""
    dut = LatencyMatcher(channel, step=step)
    out = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.timeout, timeout)
        ev = {e[0]: e for e in events}
        for c in range(max(ev) + timeout + 8):
            e = ev.get(c, (c, 0, 0, 0, 0))
            ctx.set(dut.t, t0 + step * c)
            ctx.set(dut.stim_rise, e[1])
            ctx.set(dut.in_rise, e[2])
            ctx.set(dut.in_fall, e[3])
            ctx.set(dut.pulse, e[4])
            ctx.set(dut.in_phase, e[5] if len(e) > 5 else phase)
            _collect(ctx, dut, out, when, c)
            await ctx.tick()

    run(dut, tb)
    return sorted(out)


# Hand cases ---------------------------------------------------------------------

def test_latency_and_completion():
    when = []
    recs = match([(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)], when=when)
    assert recs == [(0, 10, 1, 0, 7, 15)]
    assert when == [25]                         # in the cycle of the fall


def test_same_cycle_response_is_zero_latency():
    recs = match([(10, 1, 1, 0, 0), (12, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 0, 2)]


def test_missed_when_next_pulse_comes_first():
    when = []
    recs = match([(10, 1, 0, 0, 0), (20, 1, 0, 0, 1), (23, 0, 1, 0, 0), (24, 0, 0, 1, 0)],
                 when=when)
    assert recs == [(0, 10, 1, 1, 0, 0), (1, 20, 1, 0, 3, 4)]
    assert sorted(when) == [20, 24]


def test_timeout_marks_missed():
    when = []
    recs = match([(10, 1, 0, 0, 0), (40, 0, 1, 0, 0), (41, 0, 0, 1, 0)], timeout=20,
                 when=when)
    assert recs == [(0, 10, 1, 1, 0, 0)]       # the late response is ignored
    assert when == [30]                         # 20 ticks after the pulse


@pytest.mark.parametrize("rise, answered", [(29, True), (30, False)])
def test_timeout_boundary(rise, answered):
    recs = match([(10, 1, 0, 0, 0), (rise, 0, 1, 0, 0), (rise + 2, 0, 0, 1, 0)], timeout=20)
    if answered:
        assert recs == [(0, 10, 1, 0, 19, 21)]
    else:
        assert recs == [(0, 10, 1, 1, 0, 0)]


def test_long_response_keeps_its_pulse():
    # Response to pulse 0 stays high across pulse 1; pulse 1 is answered afterwards.
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 0, 1), (25, 0, 0, 1, 0),
                  (27, 0, 1, 0, 0), (28, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 15), (1, 20, 1, 0, 7, 8)]


def test_queued_pulse_displaced_by_the_next():
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 0, 1), (30, 1, 0, 0, 2),
                  (35, 0, 0, 1, 0), (37, 0, 1, 0, 0), (38, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 25), (1, 20, 1, 1, 0, 0), (2, 30, 1, 0, 7, 8)]


def test_fall_and_stimulus_in_one_cycle():
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 1, 1), (21, 0, 1, 0, 0),
                  (22, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 10), (1, 20, 1, 0, 1, 2)]


def test_times_beyond_32_bits():
    t0 = (1 << 40) + (1 << 32) - 12
    recs = match([(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)], t0=t0)
    assert recs == [(0, t0 + 10, 1, 0, 7, 15)]


@pytest.mark.parametrize("rise_at", [9, 10])
def test_timeout_across_a_32_bit_wrap_of_t(rise_at):
    # The time-left counter does not care where ``t`` is: a pulse just below 2**32,
    # a timeout of 10 ticks, a rise 9 ticks after it counts, 10 ticks after is late.
    t0 = (1 << 32) - 4
    dut = LatencyMatcher(0)
    out = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.timeout, 10)
        for k in range(30):
            ctx.set(dut.t, t0 + k)
            ctx.set(dut.stim_rise, k == 2)
            ctx.set(dut.in_rise, k == 2 + rise_at)
            ctx.set(dut.in_fall, k == 20)
            _collect(ctx, dut, out)
            await ctx.tick()

    run(dut, tb)
    if rise_at == 9:
        assert out == [(0, t0 + 2, 0, 0, 9, 18)]
    else:
        assert out == [(0, t0 + 2, 0, 1, 0, 0)]


def test_clear_drops_the_pulses_held():
    dut = LatencyMatcher(0)
    out = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        for c in range(30):
            ctx.set(dut.t, c)
            ctx.set(dut.stim_rise, c in (5, 8))
            ctx.set(dut.pulse, c)
            ctx.set(dut.in_rise, c in (6, 9))
            ctx.set(dut.in_fall, c in (7, 12))
            ctx.set(dut.clear, c == 7)          # the fall of cycle 7 finds nothing
            _collect(ctx, dut, out)
            await ctx.tick()

    run(dut, tb)
    assert out == [(8, 8, 0, 0, 1, 4)]


# DDR sampling (step 2): ticks are half cycles, response edges carry a phase --------

def test_step2_latency_phase():
    # Stimulus at cycle 10 (t = 20); rise at cycle 13 phase 1 (t = 27); fall at cycle
    # 17 phase 0 (t = 34).
    recs = match([(10, 1, 0, 0, 0), (13, 0, 1, 0, 0, 1), (17, 0, 0, 1, 0, 0)], step=2)
    assert recs == [(0, 20, 1, 0, 7, 14)]
    recs = match([(10, 1, 0, 0, 0), (13, 0, 1, 0, 0, 0), (17, 0, 0, 1, 0, 1)], step=2)
    assert recs == [(0, 20, 1, 0, 6, 15)]


def test_step2_rise_in_the_stimulus_cycle():
    recs = match([(10, 1, 1, 0, 0, 1), (11, 0, 0, 1, 0, 1)], step=2)
    assert recs == [(0, 20, 1, 0, 1, 3)]
    recs = match([(10, 1, 1, 0, 0, 0), (11, 0, 0, 1, 0, 0)], step=2)
    assert recs == [(0, 20, 1, 0, 0, 2)]


def test_step2_fall_at_phase_1_with_stimulus_belongs_to_older_pulse():
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0, 1), (20, 1, 0, 1, 1, 1),
                  (21, 0, 1, 0, 0, 1), (22, 0, 0, 1, 0, 0)], step=2)
    assert recs == [(0, 20, 1, 0, 5, 21), (1, 40, 1, 0, 3, 4)]


def test_step2_phase_without_edge_is_ignored():
    # No response: the timeout (7 ticks after t = 20) fires at t = 28, although
    # ``in_phase`` is high all along.
    when = []
    assert match([(10, 1, 0, 0, 0)], timeout=7, step=2, phase=1, when=when) == \
        [(0, 20, 1, 1, 0, 0)]
    assert when == [14]


def test_step1_ignores_phase():
    # A rise with phase 1 is at t, 3 ticks after the pulse: under the timeout of 4.
    recs = match([(10, 1, 0, 0, 0), (13, 0, 1, 0, 0, 1), (17, 0, 0, 1, 0, 1)], timeout=4)
    assert recs == [(0, 10, 1, 0, 3, 7)]


# (timeout, rise cycle, rise phase, answered): stimulus at cycle 10 (t = 20).
STEP2_TIMEOUTS = [
    (7, 13, 0, True),       # latency 6: one tick before the timeout
    (7, 13, 1, False),      # latency 7: at the timeout
    (8, 13, 1, True),       # latency 7
    (8, 14, 0, False),      # latency 8
    (1, 10, 0, True),       # in the stimulus cycle, latency 0
    (1, 10, 1, False),      # in the stimulus cycle, latency 1
    (2, 10, 1, True),
    (2, 11, 0, False),
]


@pytest.mark.parametrize("timeout, cycle, phase, answered", STEP2_TIMEOUTS)
def test_step2_timeout_boundary(timeout, cycle, phase, answered):
    when = []
    rise = (cycle, int(cycle == 10), 1, 0, 0, phase)
    events = [(10, 1, 0, 0, 0)] * (cycle != 10) + [rise, (cycle + 2, 0, 0, 1, 0, 0)]
    recs = match(events, timeout=timeout, step=2, when=when)
    lat = 2 * (cycle - 10) + phase
    if answered:
        assert recs == [(0, 20, 1, 0, lat, 2 * (cycle + 2 - 10))]
    else:
        assert recs == [(0, 20, 1, 1, 0, 0)]
        # Emitted in the first cycle after the stimulus cycle whose time, or its edge's,
        # is ``timeout`` ticks on.
        assert when == [max(11, min(10 + (timeout + 1) // 2, cycle))]


# Four samples per cycle (step 4): ``t`` is a multiple of 4, edges carry phases 0..3 ----

@pytest.mark.parametrize("step", [0, 3, 8])
def test_other_steps_are_refused(step):
    class Refused(LatencyMatcher):
        _MustUse__silence = True     # never elaborated: its constructor raises
    with pytest.raises(ValueError):
        Refused(0, step=step)


@pytest.mark.parametrize("phase", range(4))
def test_step4_latency_phase(phase):
    # Stimulus at cycle 10 (t = 40); rise at cycle 13 (t = 52 + phase); fall at cycle
    # 17 (t = 68 + 3 - phase).
    recs = match([(10, 1, 0, 0, 0), (13, 0, 1, 0, 0, phase), (17, 0, 0, 1, 0, 3 - phase)],
                 step=4)
    assert recs == [(0, 40, 1, 0, 12 + phase, 31 - phase)]


@pytest.mark.parametrize("phase", range(4))
def test_step4_rise_in_the_stimulus_cycle(phase):
    recs = match([(10, 1, 1, 0, 0, phase), (11, 0, 0, 1, 0, 2)], step=4)
    assert recs == [(0, 40, 1, 0, phase, 6)]
    # The pulse waiting before it is missed; the rise belongs to the new one.
    recs = match([(5, 1, 0, 0, 0), (10, 1, 1, 0, 1, phase), (11, 0, 0, 1, 0, 2)], step=4)
    assert recs == [(0, 20, 1, 1, 0, 0), (1, 40, 1, 0, phase, 6)]


@pytest.mark.parametrize("phase", range(4))
def test_step4_fall_with_stimulus_belongs_to_older_pulse(phase):
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0, 1), (20, 1, 0, 1, 1, phase),
                  (21, 0, 1, 0, 0, 3), (22, 0, 0, 1, 0, 0)], step=4)
    assert recs == [(0, 40, 1, 0, 9, 40 + phase), (1, 80, 1, 0, 7, 8)]


def test_step4_phase_without_edge_is_ignored():
    # No response: the timeout (13 ticks after t = 40) fires at t = 56, not at cycle 13
    # (t = 52, + 3 would reach it), although ``in_phase`` is 3 all along.
    when = []
    assert match([(10, 1, 0, 0, 0)], timeout=13, step=4, phase=3, when=when) == \
        [(0, 40, 1, 1, 0, 0)]
    assert when == [14]


def test_step2_ignores_phase_bit_1():
    # Phase 2 is phase 0 with step 2: latency 6 under the timeout of 7.
    recs = match([(10, 1, 0, 0, 0), (13, 0, 1, 0, 0, 2), (17, 0, 0, 1, 0, 3)], timeout=7,
                 step=2)
    assert recs == [(0, 20, 1, 0, 6, 15)]


@pytest.mark.parametrize("timeout", range(1, 10))
@pytest.mark.parametrize("phase", range(4))
@pytest.mark.parametrize("cycle", range(10, 13))
def test_step4_timeout_boundary(timeout, phase, cycle):
    # Stimulus at cycle 10 (t = 40), rise at ``cycle`` with ``phase``, fall two cycles on
    # at phase 0: late iff the rise is ``timeout`` or more ticks after the stimulus.
    when = []
    rise = (cycle, int(cycle == 10), 1, 0, 0, phase)
    events = [(10, 1, 0, 0, 0)] * (cycle != 10) + [rise, (cycle + 2, 0, 0, 1, 0, 0)]
    recs = match(events, timeout=timeout, step=4, when=when)
    lat = 4 * (cycle - 10) + phase
    if lat < timeout:
        assert recs == [(0, 40, 1, 0, lat, 4 * (cycle + 2 - 10))]
    else:
        assert recs == [(0, 40, 1, 1, 0, 0)]
        # Emitted in the first cycle after the stimulus cycle whose time, or its edge's,
        # is ``timeout`` ticks on.
        elapsed = [4 * (k - 10) + phase * (k == cycle) for k in range(11, 20)]
        assert when == [11 + next(i for i, e in enumerate(elapsed) if e >= timeout)]


# Random event sequences -----------------------------------------------------------

def random_sequence(rng, n=60):
    """Per cycle: (enable, clear, stim, rise, fall); the response level toggles, so its
    rises and falls alternate."""
    level, seq = rng.random() < 0.2, []
    p_stim = rng.choice((0.05, 0.15, 0.3))
    p_edge = rng.choice((0.1, 0.3, 0.6))
    for _ in range(n):
        enable = rng.random() > 0.03
        clear = rng.random() < 0.02
        stim = rng.random() < p_stim
        rise = fall = False
        if rng.random() < p_edge:
            level = not level
            rise, fall = level, not level
        seq.append((enable, clear, stim, rise, fall))
    return seq


# A reference model of the matching rules: any timeout in ticks, a phase per cycle ------

def model(events, timeout, step, t0, channel):
    """The records of LatencyMatcher's docstring, as (cycle, record) in the order of
    the cycles. events: per cycle (enable, clear, stim, rise, fall, pulse, in_phase);
    ``t`` is ``t0 + step * cycle``."""
    cur = None                                  # [pulse, time, latency or None]
    queued = None                               # [pulse, time, None]
    out = []

    def missed(p):
        return (p[0], p[1], channel, 1, 0, 0, 0)

    def late(p, te):
        return timeout and te - p[1] >= timeout

    for k, (en, clr, stim, rise, fall, pulse, in_phase) in enumerate(events):
        t = t0 + step * k
        te = t + (in_phase % step if rise or fall else 0)   # this cycle's edge time
        if clr or not en:
            cur = queued = None
        stim = stim and en
        # The pulse waiting for its rise times out.
        if cur and cur[2] is None and late(cur, te):
            out.append((k, missed(cur)))
            cur = None
        # Response fall: completes the current pulse; a queued one becomes current.
        if fall and cur and cur[2] is not None:
            out.append((k, (cur[0], cur[1], channel, 0, cur[2] % 2**32,
                            (te - cur[1]) % 2**32, 0)))
            cur, queued = queued, None
        # Stimulus: replaces a pulse waiting for its rise, queues behind a risen one.
        if stim:
            new = [pulse, t, None]
            if cur and cur[2] is None:
                out.append((k, missed(cur)))
            if cur and cur[2] is not None:
                if queued:
                    out.append((k, missed(queued)))
                queued = new
            else:
                cur = new
        # Response rise: the latency of the pulse waiting for it, unless late.
        if rise and cur and cur[2] is None and not late(cur, te):
            cur[2] = te - cur[1]
    return out


def run_matcher(seqs, step, channel=5):
    """Runs the sequences [(timeout, events)] (events as for :func:`model`) through a
    LatencyMatcher, ``t`` from just below ``step * 2**32``; returns per sequence the
    start time and the records as (cycle in the sequence, record)."""
    dut = LatencyMatcher(channel, step=step)
    got = [[] for _ in seqs]
    starts = []

    async def tb(ctx):
        t = step * ((1 << 32) - 5000)
        for i, (timeout, events) in enumerate(seqs):
            ctx.set(dut.timeout, timeout)
            starts.append(t)
            for k, (en, clr, stim, rise, fall, pulse, in_phase) in enumerate(events):
                for sig, v in ((dut.enable, en), (dut.clear, clr), (dut.stim_rise, stim),
                               (dut.in_rise, rise), (dut.in_fall, fall), (dut.t, t),
                               (dut.pulse, pulse), (dut.in_phase, in_phase)):
                    ctx.set(sig, v)
                recs = []
                _collect(ctx, dut, recs, fields=8)
                got[i] += [(k, r) for r in recs]
                t += step
                await ctx.tick()

    run(dut, tb)
    return starts, got


def model_sequence(rng, step, timeout, n=60):
    """A random sequence for :func:`model`: random phases in every cycle (0..3 whatever
    the step), starting disabled (the timeout is changed there) and ending idle long
    enough for the timeouts, then cleared."""
    events = [(0, 1, 0, 0, 0)] + random_sequence(rng, n)
    events += [(1, 0, 0, 0, 0)] * (timeout // step + 3) + [(1, 1, 0, 0, 0)]
    out, pulse = [], rng.randrange(1 << 32)
    for en, clr, stim, rise, fall in events:
        pulse = (pulse + stim) % (1 << 32)
        out.append((en, clr, stim, rise, fall, pulse, rng.randint(0, 3)))
    return out


@pytest.mark.parametrize("step", [1, 2, 4])
def test_matches_the_reference_model(step):
    rng = random.Random(10 + step)
    seqs = []
    for _ in range(150):
        timeout = rng.choice((0, rng.randint(1, 3 * step), rng.randint(1, 12 * step)))
        seqs.append((timeout, model_sequence(rng, step, timeout)))
    starts, got = run_matcher(seqs, step)
    n = late = 0
    for (timeout, events), t0, dut in zip(seqs, starts, got, strict=True):
        ref = model(events, timeout, step, t0, 5)
        assert sorted(dut) == sorted(ref), (timeout, events)
        n += len(ref)
        late += sum(r[3] for _, r in ref)
    assert n > 1000 and late > 200              # the sequences do produce both kinds


# Start edges at any phase (``start_phase``: an interval channel's start on a pin) ------

def model_sp(events, timeout, step, t0, channel):
    """:func:`model` with a start phase per cycle: events per cycle (enable, clear,
    stim, rise, fall, pulse, in_phase, stim_phase). The start edge is at ``t +
    stim_phase``; a rise at an earlier tick than it comes before it."""
    cur = queued = None
    out = []

    def missed(p):
        return (p[0], p[1], channel, 1, 0, 0, 0)

    def late(p, te):
        return timeout and te - p[1] >= timeout

    for k, (en, clr, stim, rise, fall, pulse, in_phase, stim_phase) in enumerate(events):
        t = t0 + step * k
        te = t + (in_phase % step if rise or fall else 0)
        ts = t + stim_phase % step
        if clr or not en:
            cur = queued = None
        stim = stim and en
        if cur and cur[2] is None and late(cur, te):
            out.append((k, missed(cur)))
            cur = None
        if fall and cur and cur[2] is not None:
            out.append((k, (cur[0], cur[1], channel, 0, cur[2] % 2**32,
                            (te - cur[1]) % 2**32, 0)))
            cur, queued = queued, None
        before = rise and stim and te < ts
        if before and cur and cur[2] is None:
            cur[2] = te - cur[1]                # not late: checked above
        if stim:
            new = [pulse, ts, None]
            if cur and cur[2] is None:
                out.append((k, missed(cur)))
            if cur and cur[2] is not None:
                if queued:
                    out.append((k, missed(queued)))
                queued = new
            else:
                cur = new
        if rise and not before and cur and cur[2] is None and not late(cur, te):
            cur[2] = te - cur[1]
    return out


def run_matcher_sp(seqs, step, channel=5):
    """:func:`run_matcher` for a matcher with ``start_phase`` (events as for
    :func:`model_sp`)."""
    dut = LatencyMatcher(channel, step=step, start_phase=True)
    got = [[] for _ in seqs]
    starts = []

    async def tb(ctx):
        t = step * ((1 << 32) - 5000)
        for i, (timeout, events) in enumerate(seqs):
            ctx.set(dut.timeout, timeout)
            starts.append(t)
            for k, (en, clr, stim, rise, fall, pulse, ph, sph) in enumerate(events):
                for sig, v in ((dut.enable, en), (dut.clear, clr), (dut.stim_rise, stim),
                               (dut.in_rise, rise), (dut.in_fall, fall), (dut.t, t),
                               (dut.pulse, pulse), (dut.in_phase, ph),
                               (dut.stim_phase, sph)):
                    ctx.set(sig, v)
                recs = []
                _collect(ctx, dut, recs, fields=8)
                got[i] += [(k, r) for r in recs]
                t += step
                await ctx.tick()

    run(dut, tb)
    return starts, got


def _sp(step, events):
    """Hand events (cycle, stim, rise, fall, pulse, in_phase, stim_phase) as a dense
    :func:`model_sp` sequence, enabled, with an idle tail."""
    ev = {e[0]: e for e in events}
    out = []
    for c in range(max(ev) + 12):
        e = ev.get(c, (c, 0, 0, 0, 0, 0, 0))
        out.append((1, 0, e[1], e[2], e[3], e[4], e[5], e[6]))
    return out


@pytest.mark.parametrize("step", [2, 4])
def test_start_phase_latency_counts_from_the_start_tick(step):
    p = step - 1
    seq = _sp(step, [(3, 1, 0, 0, 7, 0, p), (5, 0, 1, 0, 0, 0, 0), (8, 0, 0, 1, 0, 1, 0)])
    (t0,), (got,) = run_matcher_sp([(0, seq)], step)
    start = t0 + 3 * step + p
    assert [r for _, r in got] == [(7, start, 5, 0, (t0 + 5 * step) - start,
                                    (t0 + 8 * step + 1) - start, 0)]


def test_start_phase_rise_before_the_start_belongs_to_the_pulse_before():
    # Pulse 1 at cycle 2; in cycle 6 its rise at phase 0 comes before pulse 2's start at
    # phase 1: pulse 1 gets the rise, pulse 2 queues behind it and gets the next rise.
    seq = _sp(2, [(2, 1, 0, 0, 1, 0, 0), (6, 1, 1, 0, 2, 0, 1), (7, 0, 0, 1, 0, 0, 0),
                  (9, 0, 1, 0, 0, 1, 0), (10, 0, 0, 1, 0, 0, 0)])
    (t0,), (got,) = run_matcher_sp([(0, seq)], 2)
    recs = sorted(r for _, r in got)
    assert recs == [(1, t0 + 4, 5, 0, 8, 10, 0),
                    (2, t0 + 13, 5, 0, (t0 + 19) - (t0 + 13), (t0 + 20) - (t0 + 13), 0)]
    # The same rise at the start's own phase belongs to the new pulse: pulse 1 missed.
    seq = _sp(2, [(2, 1, 0, 0, 1, 0, 0), (6, 1, 1, 0, 2, 1, 1), (7, 0, 0, 1, 0, 0, 0)])
    (t0,), (got,) = run_matcher_sp([(0, seq)], 2)
    assert sorted(r for _, r in got) == [(1, t0 + 4, 5, 1, 0, 0, 0),
                                         (2, t0 + 13, 5, 0, 0, 1, 0)]


def model_sequence_sp(rng, step, timeout, n=60):
    """:func:`model_sequence` with a random start phase in every cycle."""
    return [e + (rng.randint(0, 3),) for e in model_sequence(rng, step, timeout, n)]


@pytest.mark.parametrize("step", [2, 4])
def test_start_phase_matches_the_reference_model(step):
    rng = random.Random(20 + step)
    seqs = []
    for _ in range(150):
        timeout = rng.choice((0, rng.randint(1, 3 * step), rng.randint(1, 12 * step)))
        seqs.append((timeout, model_sequence_sp(rng, step, timeout)))
    starts, got = run_matcher_sp(seqs, step)
    n = before = 0
    for (timeout, events), t0, dut in zip(seqs, starts, got, strict=True):
        ref = model_sp(events, timeout, step, t0, 5)
        assert sorted(dut) == sorted(ref), (timeout, events)
        n += sum(not r[3] and r[1] % step for _, r in ref)
        before += sum(e[2] and e[3] and e[6] % step < e[7] % step for e in events)
    assert n > 100                  # answered pulses that started at phases 1..3
    assert before > 20              # rises before a start in its cycle


@pytest.mark.parametrize("step", [1, 2, 4])
def test_without_start_phase_the_matcher_is_unchanged(step):
    # the option adds its port and logic only when asked for: a matcher without it has
    # the signature every other matcher has
    from amaranth.hdl import Fragment

    from rtrig.gateware.latency_matcher import matcher_signature
    dut = LatencyMatcher(0, step=step)
    Fragment.get(dut, None)                     # elaborates (a used elaboratable)
    assert dut.signature == matcher_signature()
    assert "stim_phase" not in dut.signature.members
    if step == 1:
        class Refused(LatencyMatcher):
            _MustUse__silence = True    # never elaborated: its constructor raises
        with pytest.raises(ValueError, match="start phases"):
            Refused(0, step=1, start_phase=True)
    else:
        sp = LatencyMatcher(0, step=step, start_phase=True)
        Fragment.get(sp, None)
        assert "stim_phase" in sp.signature.members
