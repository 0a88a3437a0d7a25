# SPDX-License-Identifier: BSD-2-Clause
"""The SoC's outputs sampled at every tick of the rig's clock (:class:`SoCSampler`),
against the levels the SoC drove, on two simulated clocks whose rising edges coincide
once per frame, as the board's PLL makes them."""

import random
from math import gcd

import pytest
from amaranth import ClockDomain, Elaboratable, Module
from amaranth.sim import Simulator

from rtrig.gateware.soc_sampler import SoCSampler, sample_plan

NS = 1e-9


class _Bench(Elaboratable):
    def __init__(self, **kwargs):
        self.dut = SoCSampler(2, **kwargs)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.domains.soc = ClockDomain("soc")
        m.submodules.dut = self.dut
        return m


def sampled(sync_hz, soc_hz, step, *, soc_start=0, n_sync=120, seed=1):
    """Runs the sampler with the SoC driving random levels; returns (expected, got) for
    every sample after the first two frames: the SoC's level at the sample's tick, and
    the sample. Times are whole units: a ``sync`` period is ``soc_hz * step`` units, a
    SoC period ``sync_hz * step`` (so the edges coincide every ``lcm``); the SoC clock starts
    ``soc_start`` of its own periods late, which moves its cycle counter's phase."""
    rng = random.Random(seed)
    bench = _Bench(step=step, sync_hz=sync_hz, soc_hz=soc_hz)
    dut, unit = bench.dut, NS
    sync_period, soc_period = soc_hz * step, sync_hz * step
    first = 10 * sync_period * soc_period          # both clocks' first rising edge
    n_soc = n_sync * sync_period // soc_period + 4
    driven = []                                    # (time of the SoC edge, level after it)
    got = []                                       # (time of the sync edge, samples)

    async def soc_side(ctx):
        for n in range(soc_start + n_soc):
            await ctx.tick("soc")
            if n >= soc_start:
                level = rng.randrange(4)
                ctx.set(dut.gpio, level)
                driven.append((first + n * soc_period, level))

    async def sync_side(ctx):
        for n in range(n_sync):
            await ctx.tick("sync")
            got.append((first + n * sync_period, [ctx.get(dut.samples[k])
                                                  for k in range(step)]))

    sim = Simulator(bench)
    sim.add_clock(sync_period * unit, phase=first * unit, domain="sync")
    sim.add_clock(soc_period * unit, phase=first * unit, domain="soc")
    sim.add_testbench(soc_side)
    sim.add_testbench(sync_side)
    sim.run()

    def level_at(t):
        before = [v for e, v in driven if e <= t]
        return before[-1] if before else 0

    frame = sync_period * soc_period // gcd(sync_period, soc_period)
    pairs = []
    for edge, samples in got:
        if edge < first + 2 * frame + (soc_start + 3) * soc_period:
            continue
        for k, s in enumerate(samples):
            t = edge - sync_period + k * sync_period // step
            pairs.append((level_at(t), s))
    return pairs


@pytest.mark.parametrize("soc_start", [0, 1, 2, 3, 4])
def test_every_tick_of_a_30_mhz_rig_beside_a_50_mhz_soc(soc_start):
    # The ECP5 boards' clocks, whatever SoC cycle the counter starts on.
    pairs = sampled(30, 50, 4, soc_start=soc_start, seed=soc_start)
    assert len(pairs) > 300
    wrong = [(i, e, g) for i, (e, g) in enumerate(pairs) if e != g]
    assert not wrong, wrong[:8]


@pytest.mark.parametrize("sync_hz,soc_hz,step", [(40, 50, 4), (100, 50, 1), (4, 7, 4)])
def test_other_clock_pairs(sync_hz, soc_hz, step):
    pairs = sampled(sync_hz, soc_hz, step, n_sync=90)
    assert len(pairs) > 60
    assert all(e == g for e, g in pairs)


def test_the_boards_plan():
    # 30/50: a frame of three rig cycles, steps of 1, 2, 2 SoC cycles, three levels kept.
    plan = sample_plan(4, 30, 50)
    assert plan.frame == 3 and plan.steps == (1, 2, 2) and plan.depth == 3


def test_a_clock_pair_without_a_marking_step_is_refused():
    bad = next((a, b) for a in range(2, 12) for b in range(2, 12)
               if _refused(a, b))
    with pytest.raises(ValueError, match="marks a phase"):
        sample_plan(4, *bad)


def _refused(a, b):
    try:
        sample_plan(4, a, b)
    except ValueError as e:
        return "marks a phase" in str(e)
    return False
