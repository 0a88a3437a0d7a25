# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the input capture (gateware/features/capture.py), four samples per
clock behind the I/O cells: the :class:`EdgeDetector` given each
cycle's four samples as :class:`QuadSampler` delivers them (those that see ticks
4c … 4c + 3 of the cycle two edges back, ``pin_latency`` 2), checked against the pin's
waveform in ticks, in the frame of the stimulus' own edges.

The I/O cells and the sampler themselves are simulated as built, from the boards'
netlists with the vendor cells' models, in ``tests/boards/test_netsim.py``."""

import random

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from rtrig.gateware.features.capture import IN_DELAY, EdgeDetector
from rtrig.gateware.timebase import Timebase

PIN_LATENCY = 2               # sync cycles from a pin's tick to the sampler's output


class QuadCapture(Elaboratable):
    """Samples → EdgeDetector, with the timebase."""

    def __init__(self, n):
        self.n = n
        self.samples = [Signal(n, name=f"s{j}") for j in range(4)]
        self.stim = Signal(2)
        self.edges = EdgeDetector(n, pin_latency=PIN_LATENCY)
        self.tb = Timebase(4)

    def elaborate(self, platform):
        m = Module()
        m.submodules.edges, m.submodules.tb = self.edges, self.tb
        m.d.comb += [
            self.edges.pins.eq(self.samples[0]),
            *(self.edges.pins_later[j].eq(self.samples[j + 1]) for j in range(3)),
            self.edges.stim.eq(self.stim),
            self.edges.now.eq(self.tb.now),
        ]
        return m


def capture(waveform, n_ticks, stim_cycles=()):
    """Pin 0 follows ``waveform`` (tick → level from that tick on) and STIM0 is high in
    ``stim_cycles`` (it changes at the ``sync`` edge that starts the cycle, tick 4c);
    returns the edges seen, (pin, t + phase, rising), and the glitch count."""
    dut = QuadCapture(1)
    seen = []
    levels, level = [], 0
    for k in range(n_ticks + 48):
        level = waveform.get(k, level)
        levels.append(level)

    async def bench(ctx):
        for c in range(n_ticks // 4 + 12):
            # the samples this cycle: ticks 4(c - PIN_LATENCY) .. + 3
            base = 4 * (c - PIN_LATENCY)
            for j in range(4):
                ctx.set(dut.samples[j], levels[base + j] if base >= 0 else 0)
            ctx.set(dut.stim, int(c in stim_cycles))
            rise, fall = ctx.get(dut.edges.rise), ctx.get(dut.edges.fall)
            for i in range(3):
                if (rise | fall) >> i & 1:
                    ph = ctx.get(dut.edges.phase[i])
                    seen.append((i, ctx.get(dut.edges.t) + ph, bool(rise >> i & 1)))
            await ctx.tick()
        seen.append(("glitches", ctx.get(dut.edges.glitches)))

    sim = Simulator(dut)
    sim.add_clock(4e-8)
    sim.add_testbench(bench)
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
    # STIM0 high in cycles 10..12: it rises at tick 40 and falls at tick 52.
    seen, _ = capture({}, 80, stim_cycles=range(10, 13))
    assert [(t, r) for i, t, r in seen if i == 1] == [(40, True), (52, False)]


def test_a_wire_from_stim0_reads_zero():
    # An input that follows STIM0 (changing within the tick after its edge) reads the
    # stimulus' own times.
    seen, _ = capture({40: 1, 52: 0}, 80, stim_cycles=range(10, 13))
    assert [(t, r) for i, t, r in seen if i == 1] == [(t, r) for i, t, r in seen if i == 0]


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
    dut = EdgeDetector(1, pin_latency=PIN_LATENCY)
    assert dut.in_delay == 4 * (IN_DELAY + 2) and dut.delay_cycles == IN_DELAY + 2
    dut._MustUse__silence = True
