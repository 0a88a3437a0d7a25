"""Exact-cycle tests of the stimulus generator (gateware/stimulus.py)."""

from simrun import edges, run

from rtrig.gateware.stimulus import StimulusGenerator


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
