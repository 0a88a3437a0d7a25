# SPDX-License-Identifier: BSD-2-Clause
"""Input capture: synchronise the target's pins, detect edges, timestamp them."""

from amaranth import Cat, Module, Signal
from amaranth.lib import cdc, data, wiring
from amaranth.lib.wiring import In, Out

from ...protocol import N_INPUTS, Input
from ..feature import Feature
from ..timebase import TIME_WIDTH

__all__ = ["EdgeDetector", "QuadSampler", "InputCapture", "IN_DELAY", "SAMPLES"]

#: Cycles between a pin change and its edge detection: two synchroniser flip-flops
#: (``IN_DELAY`` × ``SAMPLES`` ticks, with a board's ``pin_latency`` cycles more).
#: Subtracted from every timestamp, so event times are pin times (docs/architecture.md, "Time and resolution").
IN_DELAY = 2
#: Samples of every input pin per ``sync`` cycle (DDR input registers clocked at twice
#: the ``sync`` clock, gathered by a :class:`QuadSampler`): a tick is a quarter of a
#: clock period.
SAMPLES = 4


class EdgeDetector(wiring.Component):
    """Synchronises ``n`` asynchronous inputs and detects their edges.

    The stimulus outputs (already synchronous) pass through an equal two-stage delay,
    so stimulus and response edges come out in the order of their pin times and carry
    one common timestamp ``t``.

    Parameters
    ----------
    n : int
        Number of asynchronous inputs, each sampled :data:`SAMPLES` (4) times per cycle
        (DDR input registers clocked at twice the ``sync`` clock, gathered by a
        :class:`QuadSampler`). A tick is a quarter of a clock period, ``now`` advances
        by 4 per cycle, and each edge has a ``phase`` (the sample it was first seen in,
        0 to 3 ticks after ``t``).
    pin_latency : int
        Cycles the pin samples spend in registers before ``pins`` (a DDR input
        buffer's); the stimulus is delayed as much, and ``in_delay`` covers it.

    Members
    -------
    pins : In(n)
        Input pins, asynchronous to ``sync`` (the first sample of a cycle).
    pins_later : In(ArrayLayout(n, 3))
        The later samples of the cycle, in order.
    stim : In(2)
        STIM0/STIM1 output levels (``sync``).
    now : In(48)
        Timebase.
    level, rise, fall : Out(n + 2)
        Aligned levels (the last sample) and one-cycle edge strobes; bits ``0..n-1``
        the inputs, ``n`` and ``n+1`` STIM0 and STIM1. An edge is a change of the
        level from one cycle to the next.
    phase : Out(ArrayLayout(2, n + 2))
        The edge flagged this cycle happened at ``t + phase``: the first sample of the
        cycle that differs from the previous level (0 for the stimulus, which changes at
        clock edges).
    glitches : Out(32)
        Cycles since ``clear`` in which a pin changed more than once
        between its samples (a pulse shorter than a clock period; one inside a cycle
        shows no edge, one across a cycle's samples its first change).
    clear : In(1)
    t : Out(48)
        Pin time of the edges flagged this cycle: ``now - in_delay``. It is a register
        loaded with ``now + 4 - in_delay`` (no 48-bit subtraction on the path to the
        matchers), so ``now`` must advance by 4 per cycle, as the timebase's does.
    """

    def __init__(self, n, pin_latency=2):
        self.n = n
        self.samples = samples = SAMPLES
        self.pin_latency = pin_latency
        #: Cycles from a pin sample to its edge strobe, and the same in ticks.
        self.delay_cycles = IN_DELAY + pin_latency
        self.in_delay = self.delay_cycles * samples
        super().__init__({
            "pins": In(n),
            "pins_later": In(data.ArrayLayout(n, samples - 1)),
            "stim": In(2),
            "now": In(TIME_WIDTH),
            "level": Out(n + 2),
            "rise": Out(n + 2),
            "fall": Out(n + 2),
            "phase": Out(data.ArrayLayout(2, n + 2)),
            "glitches": Out(32),
            "clear": In(1),
            "t": Out(TIME_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        n, k = self.n, self.samples
        raw = [self.pins] + [self.pins_later[j] for j in range(k - 1)]
        s = []                          # the samples of this cycle, synchronised, in order
        for j, pins in enumerate(raw):
            synced = Signal(n, name=f"synced{j}")
            m.submodules[f"sync_ff{j}" if j else "sync_ff"] = cdc.FFSynchronizer(
                pins, synced, stages=IN_DELAY)
            s.append(synced)
        stim_d = [Signal(2, name=f"stim_d{i}") for i in range(self.delay_cycles)]
        m.d.sync += stim_d[0].eq(self.stim)
        for a, b in zip(stim_d, stim_d[1:]):
            m.d.sync += b.eq(a)
        m.d.comb += self.level.eq(Cat(s[-1], stim_d[-1]))
        prev = Signal(n + 2)
        m.d.sync += prev.eq(self.level)
        m.d.comb += [
            self.rise.eq(self.level & ~prev),
            self.fall.eq(~self.level & prev),
        ]
        # Per pin, the changes between consecutive samples (the first against the
        # previous cycle's level). One change: an edge at that sample's phase. More than
        # one: a glitch, counted; the edge (if the level changed) is at the first change.
        d = [s[0] ^ prev[:n]] + [s[j] ^ s[j - 1] for j in range(1, k)]
        glitch = Signal(n)
        for i in range(n):
            di = [dj[i] for dj in d]
            m.d.comb += [
                self.phase[i].eq(Cat(~di[0] & (di[1] | ~di[2]), ~di[0] & ~di[1])),
                glitch[i].eq((di[0] & (di[1] | di[2] | di[3])) |
                             (di[1] & (di[2] | di[3])) | (di[2] & di[3])),
            ]
        n_glitch = 0
        for i in range(n):
            n_glitch = n_glitch + glitch[i]
        with m.If(self.clear):
            m.d.sync += self.glitches.eq(0)
        with m.Else():
            m.d.sync += self.glitches.eq(self.glitches + n_glitch)
        # t = now - in_delay, one cycle ahead: at reset (now = 0) it reads -in_delay.
        t = Signal(TIME_WIDTH, init=(-self.in_delay) % (1 << TIME_WIDTH))
        m.d.sync += t.eq(self.now + (k - self.in_delay))
        m.d.comb += self.t.eq(t)
        return m


class QuadSampler(wiring.Component):
    """Four samples per ``sync`` cycle from DDR input registers clocked at twice its rate.

    A DDR input buffer in domain ``fast`` (twice the ``sync`` frequency, rising edges
    aligned with ``sync``'s: the two outputs of one PLL) delivers two samples per
    ``fast`` cycle: ``pair[0]`` taken at a rising edge, ``pair[1]`` half a ``fast``
    period later, both valid one ``fast`` cycle after the rising sample (an iCE40
    ``io.DDRBuffer``: the I/O cell's registers and the fabric register behind them;
    an ECP5 IDDRX1F: its own re-timing register, the same latency). Two ``fast``
    registers hold the last two pairs, and a ``sync`` register takes four samples at
    each ``sync`` edge, in order of time.

    A sample taken at tick ``k`` (a rising or falling ``fast`` edge) sees an edge
    anywhere in tick ``k - 1``: the tick before it, which is the tick the edge is
    timed at (a pin time quantized down, as a single-sample rig's synchroniser does).
    So the four samples of one ``sync`` cycle are those taken a quarter, a half and
    three quarters of a period after the ``sync`` edge two cycles earlier, and at the
    ``sync`` edge one cycle earlier: they see ticks 4c … 4c + 3 of the cycle two edges
    back, with no sample shared between two cycles. Behind this block a pin is two
    ``sync`` cycles deep (``GatewareTop(pin_latency=2)``); the stimulus pins, which change at
    ``sync`` edges, are delayed as much and read at tick 4c exactly. The ``fast`` →
    ``sync`` transfer is synchronous (flip-flop to flip-flop within one ``fast``
    period). ``tests/boards/test_netsim.py`` checks this against the boards' netlists
    with the vendor cells' models, at every sub-tick phase.

    Members
    -------
    pair : In(ArrayLayout(n, 2))
        The DDR buffer's two samples (domain ``fast``).
    samples : Out(ArrayLayout(n, 4))
        The four samples of the cycle, earliest first (domain ``sync``).
    """

    def __init__(self, n, fast="fast"):
        self.n = n
        self.fast = fast
        super().__init__({
            "pair": In(data.ArrayLayout(n, 2)),
            "samples": Out(data.ArrayLayout(n, 4)),
        })

    def elaborate(self, platform):
        m = Module()
        p1 = Signal.like(self.pair, name="pair_d1")
        p2 = Signal.like(self.pair, name="pair_d2")
        m.d[self.fast] += [p1.eq(self.pair), p2.eq(p1)]
        # ticks 4c .. 4c + 3 are seen by the samples at 4c + 1 .. 4c + 4: the later
        # half of the pair two fast cycles back, the pair before it and the newest
        # pair's rising sample
        m.d.sync += self.samples.eq(Cat(p2[1], p1[0], p1[1], self.pair[0]))
        return m


class InputCapture(Feature):
    """The capture feature: the rig inputs and stimulus outputs as timestamped edges,
    and the heartbeat edge count.

    An :class:`EdgeDetector` over the ``N_INPUTS`` inputs and STIM0/STIM1 (bits 6 and 7
    of ``rise``/``fall``/``phase``), all in the ``sync`` domain.

    Parameters
    ----------
    pin_latency : int
        As :class:`EdgeDetector`'s.

    Members
    -------
    pins : In(6)
        The selected target's pins (first sample of a cycle), asynchronous.
    pins_later : In(ArrayLayout(6, 3))
        Their later samples.
    stim : In(2)
        STIM0, STIM1.
    now : In(48)
        Timebase (ticks).
    clear : In(1)
        Zero the counters.
    rise, fall : Out(8)
        One-cycle edge strobes (inputs 0..5, STIM0, STIM1).
    phase : Out(ArrayLayout(2, 8))
        The edges' tick within the cycle.
    t : Out(48)
        Pin time of this cycle's edges, ticks.
    hb_edge : Out(1)
        An edge (either) of the HEARTBEAT input this cycle.
    regs : Out(Signature)
        ``IN_GLITCHES`` (:attr:`EdgeDetector.glitches`), ``HB_COUNT`` (heartbeat edges
        since ``clear``).
    """

    def __init__(self, pin_latency=2):
        self.pin_latency = pin_latency
        n = N_INPUTS
        super().__init__({
            "pins": In(n),
            "pins_later": In(data.ArrayLayout(n, SAMPLES - 1)),
            "stim": In(2), "now": In(TIME_WIDTH), "clear": In(1),
            "rise": Out(n + 2), "fall": Out(n + 2),
            "phase": Out(data.ArrayLayout(2, n + 2)),
            "t": Out(TIME_WIDTH), "hb_edge": Out(1),
        }, registers=("IN_GLITCHES", "HB_COUNT"))

    def elaborate(self, platform):
        m = Module()
        m.submodules.edges = edges = EdgeDetector(N_INPUTS, self.pin_latency)
        m.d.comb += [
            edges.pins.eq(self.pins), edges.pins_later.eq(self.pins_later),
            edges.stim.eq(self.stim), edges.now.eq(self.now), edges.clear.eq(self.clear),
            self.rise.eq(edges.rise), self.fall.eq(edges.fall),
            self.phase.eq(edges.phase), self.t.eq(edges.t),
            self.regs.IN_GLITCHES.eq(edges.glitches),
            self.hb_edge.eq(edges.rise[Input.HEARTBEAT] | edges.fall[Input.HEARTBEAT]),
        ]
        hb = self.regs.HB_COUNT
        with m.If(self.clear):
            m.d.sync += hb.eq(0)
        with m.Elif(self.hb_edge):
            m.d.sync += hb.eq(hb + 1)
        return m
