# SPDX-License-Identifier: BSD-2-Clause
"""The area-lean stimulus generator: cycle-exact equivalence with
:class:`StimulusGenerator` on random settings and start/stop sequences, and hand cases."""

import random

from amaranth import Module
from simrun import run

from rtrig.gateware.stimulus_generator import StimulusGenerator, lfsr32_next
from rtrig.gateware.stimulus_generator_lean import LeanStimulusGenerator

SETTINGS = ("period", "high", "count", "jitter", "offset", "seed", "stim1_en")
OUTPUTS = ("stim0", "stim1", "running", "pulses")


def run_pair(steps):
    """Drives :class:`StimulusGenerator` and :class:`LeanStimulusGenerator` with the same
    inputs. ``steps``: a list of dicts of inputs to apply in one cycle each ({} = keep
    the settings, no start/stop). Returns the (reference, lean) output tuples per cycle."""
    m = Module()
    m.submodules.ref = ref = StimulusGenerator()
    m.submodules.lean = lean = LeanStimulusGenerator()
    trace = []

    async def tb(ctx):
        for step in steps:
            for dut in (ref, lean):
                ctx.set(dut.start, 0)
                ctx.set(dut.stop, 0)
                for name, value in step.items():
                    ctx.set(getattr(dut, name), value)
            trace.append(tuple(tuple(ctx.get(getattr(dut, o)) for o in OUTPUTS)
                               for dut in (ref, lean)))
            await ctx.tick()

    run(m, tb)
    return trace


#: Cycles the lean generator's jitter mask takes to settle after ``jitter`` changes
#: (the host writes settings long before it starts a train).
SETTLE = 32


def settled(steps):
    """``steps`` with the settling time after every change of ``jitter``."""
    out = []
    for step in steps:
        out.append(step)
        if "jitter" in step:
            out += [{}] * SETTLE
    return out


def assert_same(steps):
    steps = settled(steps)
    for cycle, (want, got) in enumerate(run_pair(steps)):
        assert got == want, f"cycle {cycle}: {dict(zip(OUTPUTS, got))} != " \
                            f"{dict(zip(OUTPUTS, want))}"


def random_settings(rng):
    if rng.random() < 0.08:
        period = rng.randrange(100, 1000)
    else:
        period = rng.randrange(2, 61)
    high = rng.randrange(1, period)
    stim1_en = rng.random() < 0.6
    offset = rng.choice([0, rng.randrange(0, period - high)])
    jitter = rng.choice([0, 0, 1, rng.randrange(2, 8), rng.randrange(8, 40),
                         rng.randrange(1 << 8, 1 << 31), (1 << 32) - 1])
    count = rng.randrange(0, 7)
    return dict(period=period, high=high, count=count, jitter=jitter, offset=offset,
                seed=rng.randrange(1, 1 << 32), stim1_en=int(stim1_en))


def random_session(rng, runs):
    """Settings changed while stopped (a few cycles after ``running`` fell), start and
    stop pulses at random moments, starts while running among them."""
    steps = [{}] * 3
    for _ in range(runs):
        s = random_settings(rng)
        steps.append(s)
        steps += [{}] * rng.randrange(0, 3)
        steps.append({"start": 1})
        span = (s["period"] + min(s["jitter"], 3 * s["period"])) * (s["count"] or 5)
        length = rng.randrange(span // 2, span + 3 * s["period"] + 10)
        for _ in range(length):
            r = rng.random()
            if r < 0.03:
                steps.append({"start": 1})
            elif (r < 0.06 and s["count"] == 0) or r < 0.01:
                steps.append({"stop": 1})
            else:
                steps.append({})
        steps.append({"stop": 1})      # then run out: the last pulse completes
        steps += [{}] * (s["period"] + 40)
    return steps


def test_equivalence_random_sessions():
    rng = random.Random(0x57_1A)
    for _ in range(6):
        assert_same(random_session(rng, 8))


def test_equivalence_dense_small_periods():
    # Period 2..4 and heavy rejection (jitter just above a power of two): rising edges
    # come before the draw is done, stop lands mid-pulse, start while running.
    rng = random.Random(7)
    steps = [{}] * 3
    for _ in range(40):
        period = rng.randrange(2, 5)
        high = rng.randrange(1, period)
        steps.append(dict(period=period, high=high, count=rng.randrange(0, 7),
                          jitter=rng.choice([0, 1, 2, 4, 8, 16, 32, 64, (1 << 31)]),
                          offset=rng.randrange(0, period - high), stim1_en=rng.randrange(2),
                          seed=rng.randrange(1, 1 << 32)))
        steps.append({"start": 1})
        for _ in range(rng.randrange(5, 80)):
            steps.append(rng.choice([{}] * 12 + [{"start": 1}, {"stop": 1}]))
        steps.append({"stop": 1})
        steps += [{}] * 200
    assert_same(steps)


def test_equivalence_held_start_and_stop_with_start():
    # A start held high past the end of a train keeps ``running`` up; stop together
    # with the start that begins a train is ignored.
    s = dict(period=9, high=3, count=2, jitter=5, offset=2, stim1_en=1, seed=0xBEEF)
    steps = [{}] * 3 + [s, {"start": 1, "stop": 1}] + [{"start": 1}] * 40 + [{}] * 20
    steps += [{"start": 1}] + [{}] * 30
    assert_same(steps)


def test_equivalence_large_settings():
    # Long periods, high and offset near their bounds, full-width jitter masks.
    rng = random.Random(3)
    steps = [{}] * 3
    for period, jitter in ((3000, 0), (1000, 700), (700, 0x7FF), (1500, 0x8000_0000),
                           (1000, 0xFFFF_FFFF)):
        high = rng.randrange(period // 2, period)
        steps.append(dict(period=period, high=high, count=rng.randrange(1, 3), jitter=jitter,
                          offset=period - high - 1, stim1_en=1,
                          seed=rng.randrange(1, 1 << 32)))
        steps += [{"start": 1}] + [{}] * (2 * period + min(jitter, period) + 20)
    assert_same(steps)


# Hand cases on the lean generator alone -----------------------------------------------

def lean_trace(cycles, **settings):
    dut = LeanStimulusGenerator()
    out = []

    async def tb(ctx):
        await ctx.tick()                            # the draw after reset, jitter 0
        for name, value in settings.items():
            ctx.set(getattr(dut, name), value)
        await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(cycles):
            out.append(tuple(ctx.get(getattr(dut, o)) for o in OUTPUTS))
            await ctx.tick()

    run(dut, tb)
    return out


def rises(levels):
    return [c for c in range(1, len(levels)) if levels[c] and not levels[c - 1]]


def test_lean_period_high_offset_count():
    out = lean_trace(100, period=20, high=4, count=4, offset=7, stim1_en=1)
    s0, s1, running, pulses = zip(*out)
    assert rises((0,) + s0) == [2, 22, 42, 62]      # first pulse two cycles after start
    assert rises((0,) + s1) == [9, 29, 49, 69]
    assert sum(s0) == 16 and sum(s1) == 16
    assert s1[71] == 1 and s1[72] == 0              # last falling edge
    assert running[72] == 1 and running[73] == 0 and pulses[-1] == 4


def test_lean_jitter_draws_follow_the_lfsr():
    # The first period uses the draw left from before start (0 after reset); each later
    # one the next value of the LFSR seeded at start that passes ``x & 7 <= 5``, except
    # the step taken in the cycle of the first rising edge (its draw is discarded).
    seed, jitter, period = 0x1234, 5, 12
    out = lean_trace(600, period=period, high=2, count=0, jitter=jitter, seed=seed)
    r0 = rises((0,) + tuple(o[0] for o in out))
    draws, x = [0], lfsr32_next(seed)
    while len(draws) < len(r0):
        x = lfsr32_next(x)
        if x & 7 <= jitter:
            draws.append(x & 7)
    assert [b - a for a, b in zip(r0, r0[1:])] == [period + r for r in draws[:len(r0) - 1]]
