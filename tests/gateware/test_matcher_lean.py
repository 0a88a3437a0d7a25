"""The area-lean latency matcher: hand cases, DDR (step 2) cases, and equivalence with
:class:`LatencyMatcher` on random event sequences."""

import random

import pytest
from amaranth import Module
from simrun import run

from rtrig.gateware.matcher import LatencyMatcher
from rtrig.gateware.matcher_lean import LeanLatencyMatcher


def _collect(ctx, dut, out, when=None, cycle=0, fields=6):
    """Appends the records offered this cycle (their first ``fields`` fields)."""
    for v, r in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
        if ctx.get(v):
            rec = ctx.get(r)
            out.append((rec.pulse, rec.stim_t, rec.channel, rec.missed, rec.latency,
                        rec.completion, rec.incomplete, rec["_pad"])[:fields])
            if when is not None:
                when.append(cycle)


def match(events, timeout=0, channel=1, step=1, when=None, t0=0, phase=0):
    """events: list of (cycle, stim, rise, fall, pulse[, phase]); ``t`` is
    ``t0 + step * cycle``, ``in_phase`` is ``phase`` in cycles without an event.
    Returns the sorted records (and the cycles they appear in, into ``when``)."""
    dut = LeanLatencyMatcher(channel, step=step)
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


# The hand cases of test_core.py's LatencyMatcher tests -----------------------------

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
    dut = LeanLatencyMatcher(0)
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
    dut = LeanLatencyMatcher(0)
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


# Equivalence with LatencyMatcher on random event sequences -------------------------

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


def run_pair(seqs, step=2, phases=None):
    """Runs the sequences [(timeout, events)] through a LatencyMatcher (``t`` + 1 per
    cycle) and a LeanLatencyMatcher with ``step`` (``t`` + ``step`` per cycle, each
    sequence's response edges at phase ``phases[i]``); returns both record lists per
    sequence."""
    ref = LatencyMatcher(3, out_reg=False)
    dut = LeanLatencyMatcher(3, step=step)
    top = Module()
    top.submodules.ref = ref
    top.submodules.dut = dut
    got = [([], []) for _ in seqs]
    tail = 60                                   # > the longest timeout

    async def tb(ctx):
        c = (1 << 32) - 10000                   # the times cross 2**32
        for i, (timeout, events) in enumerate(seqs):
            phase = phases[i] if phases else 0
            ctx.set(ref.timeout, timeout)
            ctx.set(dut.timeout, timeout * step)
            pulse = i * 1000
            for k in range(len(events) + tail):
                # The sequence's tail ends with a clear: each sequence starts empty.
                idle = (1, k == len(events) + tail - 1, 0, 0, 0)
                en, clr, stim, rise, fall = events[k] if k < len(events) else idle
                pulse += stim
                for mt, t in ((ref, c), (dut, c * step)):
                    ctx.set(mt.enable, en)
                    ctx.set(mt.clear, clr)
                    ctx.set(mt.stim_rise, stim)
                    ctx.set(mt.in_rise, rise)
                    ctx.set(mt.in_fall, fall)
                    ctx.set(mt.t, t)
                    ctx.set(mt.pulse, pulse)
                ctx.set(dut.in_phase, phase)
                _collect(ctx, ref, got[i][0], fields=8)
                _collect(ctx, dut, got[i][1], fields=8)
                c += 1
                await ctx.tick()

    run(top, tb)
    return got


def _timeouts(rng):
    return rng.choice((0, 0, 1, 2, 3, rng.randint(1, 12), rng.randint(4, 40)))


def test_equivalent_to_latency_matcher():
    rng = random.Random(1)
    seqs = [(_timeouts(rng), random_sequence(rng)) for _ in range(200)]
    got = run_pair(seqs, step=1)
    n = 0
    for (timeout, events), (ref, dut) in zip(seqs, got, strict=True):
        assert sorted(dut) == sorted(ref), (timeout, events)
        n += len(ref)
    assert n > 1000                             # the sequences do produce records


def test_step2_equivalent_to_latency_matcher_scaled():
    # With every response edge at one phase p, step 2 gives LatencyMatcher's records
    # with times doubled, latency and completion 2 x + p, for timeout 2 T.
    rng = random.Random(2)
    seqs = [(_timeouts(rng), random_sequence(rng)) for _ in range(100)]
    phases = [rng.randint(0, 1) for _ in seqs]
    got = run_pair(seqs, step=2, phases=phases)
    for (timeout, events), p, (ref, dut) in zip(seqs, phases, got, strict=True):
        scaled = [(pulse, 2 * st, ch, missed, 0 if missed else 2 * lat + p,
                   0 if missed else 2 * comp + p, inc, pad)
                  for pulse, st, ch, missed, lat, comp, inc, pad in ref]
        assert sorted(dut) == sorted(scaled), (timeout, p, events)
