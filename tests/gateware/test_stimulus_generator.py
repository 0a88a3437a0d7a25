# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the stimulus generator (gateware/stimulus_generator.py)."""

import pytest
from simrun import edges, run

from rtrig.gateware.stimulus_generator import StimulusGenerator


def stim_trace(period, high, count, offset=None, jitter=0, seed=1, cycles=200):
    dut = StimulusGenerator()
    s0, s1, running = [], [], []

    async def tb(ctx):
        ctx.set(dut.period, period)
        ctx.set(dut.high, high)
        ctx.set(dut.count, count)
        ctx.set(dut.jitter, jitter)
        ctx.set(dut.seed, seed)
        if offset is not None:
            ctx.set(dut.offset, offset)
            ctx.set(dut.stim1_en, 1)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(cycles):
            s0.append(ctx.get(dut.stim0))
            s1.append(ctx.get(dut.stim1))
            running.append(ctx.get(dut.running))
            await ctx.tick()

    run(dut, tb, "stim")
    return s0, s1, running


def test_stimulus_period_high_and_count():
    s0, _, running = stim_trace(period=10, high=3, count=4, cycles=60)
    e = edges(s0)
    rises = [c for c, v in e if v]
    falls = [c for c, v in e if not v]
    assert rises == [1, 11, 21, 31]          # first pulse two cycles after start
    assert [f - r for r, f in zip(rises, falls)] == [3, 3, 3, 3]
    assert sum(s0) == 12
    assert running[33] == 1 and running[40] == 0   # stops after the last pulse fell


def test_stimulus_stim1_offset():
    s0, s1, _ = stim_trace(period=20, high=4, count=3, offset=7, cycles=80)
    r0 = [c for c, v in edges(s0) if v]
    r1 = [c for c, v in edges(s1) if v]
    assert [b - a for a, b in zip(r0, r1)] == [7, 7, 7]
    assert sum(s1) == 12


def test_stimulus_jitter_bounds_and_spread():
    s0, _, _ = stim_trace(period=12, high=2, count=0, jitter=5, seed=0x1234, cycles=2000)
    rises = [c for c, v in edges(s0) if v]
    gaps = {b - a for a, b in zip(rises, rises[1:])}
    assert min(gaps) >= 12 and max(gaps) <= 17    # period + 0..J
    assert gaps == set(range(12, 18))             # every extra delay occurs


def burst_rises(period, gap, burst, count, jitter=0, cycles=300):
    """STIM0 rising cycles of a burst train (settings set two cycles before start)."""
    dut = StimulusGenerator()
    s0 = []

    async def tb(ctx):
        for port, value in (("period", period), ("high", 2), ("count", count),
                            ("jitter", jitter), ("seed", 7), ("burst", burst), ("gap", gap)):
            ctx.set(getattr(dut, port), value)
        await ctx.tick().repeat(2)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(cycles):
            s0.append(ctx.get(dut.stim0))
            await ctx.tick()

    run(dut, tb, "stim_burst")
    return [c for c, v in edges(s0) if v]


def test_stimulus_bursts_of_k_pulses_then_a_gap():
    rises = burst_rises(period=5, gap=23, burst=3, count=9)
    assert rises[0] == 1
    assert [b - a for a, b in zip(rises, rises[1:])] == [5, 5, 23, 5, 5, 23, 5, 5]


def test_stimulus_burst_of_one_is_every_pulse_at_the_gap():
    rises = burst_rises(period=5, gap=9, burst=1, count=4)
    assert [b - a for a, b in zip(rises, rises[1:])] == [9, 9, 9]


def test_stimulus_burst_zero_is_the_plain_train():
    rises = burst_rises(period=6, gap=50, burst=0, count=5)
    assert [b - a for a, b in zip(rises, rises[1:])] == [6, 6, 6, 6]


def test_stimulus_burst_with_jitter_adds_it_to_period_and_gap():
    rises = burst_rises(period=8, gap=40, burst=2, count=0, jitter=3, cycles=3000)
    d = [b - a for a, b in zip(rises, rises[1:])]
    assert {x for x in d[0::2]} <= set(range(8, 12)) and {x for x in d[1::2]} <= set(range(40, 44))
    assert set(d[0::2]) == set(range(8, 12)) and set(d[1::2]) == set(range(40, 44))


@pytest.mark.parametrize("gen_cls", ["full", "lean"])
def test_a_second_train_repeats_the_first_whatever_ran_before(gen_cls):
    # Every start draws from the seed and begins with a first period of no extra delay:
    # a run does not inherit the draw the last run left in hand (it did: the second
    # train's first period was longer, and a twin run depended on what ran before it).
    from rtrig.gateware.stimulus_generator_lean import LeanStimulusGenerator
    dut = StimulusGenerator() if gen_cls == "full" else LeanStimulusGenerator()
    trains = []

    async def tb(ctx):
        ctx.set(dut.period, 12)
        ctx.set(dut.high, 3)
        ctx.set(dut.count, 6)
        ctx.set(dut.jitter, 9)
        ctx.set(dut.seed, 0x5EED)
        for _ in range(2):
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            levels = []
            for _ in range(200):
                levels.append(ctx.get(dut.stim0))
                await ctx.tick()
            trains.append([c for c, v in edges(levels) if v])
            ctx.set(dut.jitter, 5)      # a draw of another width left in hand...
            for _ in range(40):
                await ctx.tick()
            ctx.set(dut.jitter, 9)      # ...and the settings back before the start
            for _ in range(40):
                await ctx.tick()

    run(dut, tb, f"stim_repeat_{gen_cls}")
    assert len(trains[0]) == 6
    assert trains[1] == trains[0]
    assert trains[0][1] - trains[0][0] == 12     # the first period: no extra delay
