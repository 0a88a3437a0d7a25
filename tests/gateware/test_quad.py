# SPDX-License-Identifier: BSD-2-Clause
"""Four samples per clock (the iCEBreaker's inputs): a model of the iCE40 DDR input
buffer at twice the ``sync`` clock, the :class:`QuadSampler` and the
:class:`EdgeDetector` together, checked against the pin's waveform in ticks."""

import random

import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.sim import Simulator

from rtrig.gateware.capture import IN_DELAY, EdgeDetector, QuadSampler
from rtrig.gateware.timebase import Timebase

TICK = 10e-9                  # a tick; ``fast`` = 2 ticks, ``sync`` = 4 ticks


class QuadCapture(Elaboratable):
    """Pins → iCE40-style DDR buffer (domain ``fast``) → QuadSampler → EdgeDetector."""

    def __init__(self, n):
        self.n = n
        self.pins = Signal(n)
        self.stim = Signal(2)
        self.qs = QuadSampler(n)
        self.edges = EdgeDetector(n, samples=4, pin_latency=3)
        self.tb = Timebase(4)

    def elaborate(self, platform):
        m = Module()
        m.domains.fast = ClockDomain()
        m.domains.fast_fall = ClockDomain()     # the falling edges of ``fast``
        m.submodules.qs, m.submodules.edges, m.submodules.tb = self.qs, self.edges, self.tb
        # The I/O cell samples at both edges; fabric registers re-take both samples at
        # the next rising edge (amaranth's iCE40 DDRBuffer).
        d_in_0, d_in_1 = Signal(self.n), Signal(self.n)
        m.d.fast += d_in_0.eq(self.pins)
        m.d.fast_fall += d_in_1.eq(self.pins)
        m.d.fast += [self.qs.pair[0].eq(d_in_0), self.qs.pair[1].eq(d_in_1)]
        m.d.comb += [
            self.edges.pins.eq(self.qs.samples[0]),
            self.edges.pins_later[0].eq(self.qs.samples[1]),
            self.edges.pins_later[1].eq(self.qs.samples[2]),
            self.edges.pins_later[2].eq(self.qs.samples[3]),
            self.edges.stim.eq(self.stim),
            self.edges.now.eq(self.tb.now),
        ]
        return m


def capture(waveform, n_ticks, stim_cycles=()):
    """Drives pin 0 with ``waveform`` (tick → level from that tick's sample on; the
    change lands half a tick before the sample) and STIM0 high in ``stim_cycles``;
    returns the edges seen, (pin, t + phase, rising), and the glitch count."""
    dut = QuadCapture(1)
    seen = []

    async def pins(ctx):
        await ctx.delay(TICK / 2)                      # tick k is sampled at (k + 1) TICK
        level = 0
        for k in range(n_ticks):
            level = waveform.get(k, level)
            ctx.set(dut.pins, level)
            await ctx.delay(TICK)

    async def watch(ctx):
        for c in range(n_ticks // 4 + 12):
            ctx.set(dut.stim, int(c in stim_cycles))
            rise, fall = ctx.get(dut.edges.rise), ctx.get(dut.edges.fall)
            for i in range(3):
                if (rise | fall) >> i & 1:
                    ph = ctx.get(dut.edges.phase[i])
                    seen.append((i, ctx.get(dut.edges.t) + ph, bool(rise >> i & 1)))
            await ctx.tick()
        seen.append(("glitches", ctx.get(dut.edges.glitches)))

    sim = Simulator(dut)
    # Rising edges of all three clocks at whole ticks: sync every 4, fast every 2,
    # fast_fall in between.
    sim.add_clock(4 * TICK, phase=TICK)
    sim.add_clock(2 * TICK, phase=TICK, domain="fast")
    sim.add_clock(2 * TICK, phase=2 * TICK, domain="fast_fall")
    sim.add_testbench(pins, background=True)
    sim.add_testbench(watch)
    sim.run()
    glitches = seen.pop()[1]
    return seen, glitches


def test_every_tick_of_an_edge_is_resolved():
    # A rise at each of the four phases of a cycle, and a fall likewise.
    for k in range(40, 48):
        wave = {k: 1, k + 9: 0}
        seen, glitches = capture(wave, 80)
        assert seen == [(0, k, True), (0, k + 9, False)], k
        assert glitches == 0


def test_stimulus_edges_at_clock_edges():
    # STIM0 set in the cycle whose ``now`` is 4c changes at the tick of that cycle's
    # closing edge (as with one sample per clock).
    seen, _ = capture({}, 80, stim_cycles=range(10, 13))
    stim = [(t, r) for i, t, r in seen if i == 1]
    assert len(stim) == 2 and stim[1][0] - stim[0][0] == 12
    assert all(t % 4 == 0 for t, _ in stim)


@pytest.mark.parametrize("seed", range(4))
def test_random_waveform_against_its_samples(seed):
    rng = random.Random(seed)
    n_ticks, k, level, wave = 600, 40, 0, {}
    while k < n_ticks - 40:
        level ^= 1
        wave[k] = level
        k += rng.choice([1, 2, 3, 5, 7, 11, 13, 30])
    seen, glitches = capture(wave, n_ticks)
    # Expected: per cycle (ticks 4c..4c+3), one edge if the level changed, at the
    # first change in the cycle; a glitch if it changed more than once.
    levels, lv = [], 0
    for t in range(n_ticks):
        lv = wave.get(t, lv)
        levels.append(lv)
    expect, n_glitch, prev = [], 0, 0
    for c in range(n_ticks // 4):
        s = levels[4 * c:4 * c + 4]
        changes = [j for j in range(4) if s[j] != (s[j - 1] if j else prev)]
        if len(changes) > 1:
            n_glitch += 1
        if s[3] != prev:
            expect.append((0, 4 * c + changes[0], bool(s[3])))
        prev = s[3]
    assert seen == expect
    assert glitches == n_glitch > 0


def test_delay_constants():
    dut = EdgeDetector(1, samples=4, pin_latency=3)
    assert dut.in_delay == 4 * (IN_DELAY + 3) and dut.delay_cycles == IN_DELAY + 3
    dut._MustUse__silence = True
