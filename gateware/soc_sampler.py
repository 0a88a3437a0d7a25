# SPDX-License-Identifier: BSD-2-Clause
"""The SoC's GPIO outputs as the capture's samples, one per tick.

The SoC runs on its own clock (``soc``, 50 MHz) beside the rig's ``sync``; on a board
both come from one PLL, so their rising edges coincide once per *frame* (the least
common multiple of the two periods: 100 ns for a 30 MHz rig). The SoC's outputs change
only at its own edges, so the level an output had at any tick of a ``sync`` cycle is
known exactly once the rig knows the SoC's levels of the last few SoC cycles and where
the ``sync`` edge falls in the frame. :class:`SoCSampler` gets both with plain
registers, read by ``sync`` one cycle after the SoC wrote them (at the tightest, 6.67 ns
after: a SoC edge at 60 ns, the rig's at 66.67 ns):

- in ``soc``, the outputs of the last ``depth`` SoC cycles and a counter of SoC cycles;
- in ``sync``, a copy of both at every edge. The counter's step from one ``sync`` edge to
  the next (1, 2, 2 SoC cycles at 30 and 50 MHz) tells where in the frame the edge is,
  whatever the two clocks' reset phases, and from it which SoC cycle each tick of the
  past ``sync`` cycle lies in (:func:`sample_plan`).

So each of the ``step`` samples of a cycle is the SoC's level at that tick, its edges
timed to the tick (8.33 ns) where sampling once per ``sync`` cycle gave 33.33 ns; the
samples come one ``sync`` cycle after the cycle they describe. A copy the SoC wrote at
the very edge where ``sync`` copies it is taken as before that edge (the SoC's register
is not yet out: the synchronous design's hold rule; the simulation twin's clocks behave
so too).
"""

from math import gcd

from amaranth import Array, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SoCSampler", "SamplePlan", "sample_plan"]

#: Bits of the SoC cycle counter: a step of up to 7 cycles per ``sync`` cycle.
COUNT_BITS = 3


class SamplePlan:
    """Where every tick of a ``sync`` cycle lies among the SoC's cycles.

    Attributes
    ----------
    frame : int
        ``sync`` cycles per frame (the clocks' rising edges coincide once per frame).
    steps : tuple of int
        By phase (``sync`` edge in the frame, 0 where the edges coincide): the SoC
        cycles between the previous ``sync`` edge's copy and this one's.
    marker : (int, int) or None
        A step found at one phase only, and that phase: the counter's step that fixes
        the phase (``None`` with a one-cycle frame).
    back : tuple of tuple of int
        By phase, by tick of the cycle before the edge: how many SoC cycles before the
        newest level the copy holds that tick's level is.
    depth : int
        SoC levels kept (``1 + max(back)``).
    """

    def __init__(self, frame, steps, marker, back):
        self.frame, self.steps, self.marker, self.back = frame, steps, marker, back
        self.depth = 1 + max(max(b) for b in back)


def sample_plan(step, sync_hz, soc_hz):
    """The :class:`SamplePlan` of a ``sync`` clock of ``sync_hz`` with ``step`` ticks per
    cycle beside a SoC clock of ``soc_hz`` (rising edges coinciding once per frame).
    Raises :class:`ValueError` when no counter step marks a phase alone."""
    g = gcd(sync_hz, soc_hz)
    frame, soc_per_frame = sync_hz // g, soc_hz // g
    # Time in units of 1 / (soc_per_frame * step) sync periods: integers throughout.
    sync_period, tick, soc_period = soc_per_frame * step, soc_per_frame, frame * step

    def newest(t):
        # The SoC edge last before time t (an edge at t itself is not yet seen).
        return (t - 1) // soc_period

    steps, back = [], []
    for j in range(frame):
        edge = j * sync_period
        steps.append(newest(edge) - newest(edge - sync_period))
        back.append(tuple(newest(edge) - (edge - sync_period + k * tick) // soc_period
                          for k in range(step)))
    if max(steps) >= 1 << COUNT_BITS:
        raise ValueError(f"a {soc_hz} Hz SoC beside a {sync_hz} Hz rig steps "
                         f"{max(steps)} cycles per rig cycle: more than the counter holds")
    marker = None
    if frame > 1:
        unique = [j for j in range(frame) if steps.count(steps[j]) == 1]
        if not unique:
            raise ValueError(f"a {soc_hz} Hz SoC beside a {sync_hz} Hz rig: no step of "
                             f"its cycle counter ({steps}) marks a phase of the frame")
        marker = (steps[unique[0]], unique[0])
    return SamplePlan(frame, tuple(steps), marker, tuple(back))


class SoCSampler(wiring.Component):
    """The SoC's outputs (domain ``soc``) as ``step`` samples per ``sync`` cycle.

    Parameters
    ----------
    width : int
        Outputs.
    step : int
        Ticks (samples) per ``sync`` cycle.
    sync_hz, soc_hz : int
        The two clocks, rising edges coinciding once per frame (:func:`sample_plan`).

    Members
    -------
    gpio : In(width)
        The SoC's outputs, from registers of ``soc``.
    samples : Out(ArrayLayout(width, step))
        In ``sync``: the outputs' levels at the ticks of the previous ``sync`` cycle
        (sample ``k`` at its tick ``k``). Right from the first frame after both clocks
        run; before that, levels of nearby ticks.
    """

    def __init__(self, width, *, step, sync_hz, soc_hz):
        self.plan = sample_plan(step, sync_hz, soc_hz)
        self.step = step
        super().__init__({"gpio": In(width),
                          "samples": Out(data.ArrayLayout(width, step))})

    def elaborate(self, platform):
        m = Module()
        plan, width = self.plan, len(self.gpio)

        # soc: the levels of the last ``depth`` cycles, newest first, and a cycle count.
        levels = [self.gpio]
        for d in range(1, plan.depth):
            r = Signal(width, name=f"soc_level{d}")
            m.d.soc += r.eq(levels[-1])
            levels.append(r)
        count = Signal(COUNT_BITS)
        m.d.soc += count.eq(count + 1)

        # sync: their copy at each edge, and the count's step since the edge before.
        copy = Array(Signal(width, name=f"copy{d}") for d in range(plan.depth))
        m.d.sync += [c.eq(v) for c, v in zip(copy, levels)]
        copy_count, count_before = Signal(COUNT_BITS), Signal(COUNT_BITS)
        m.d.sync += [copy_count.eq(count), count_before.eq(copy_count)]
        stepped = Signal(COUNT_BITS)
        m.d.comb += stepped.eq(copy_count - count_before)

        phase = Signal(range(plan.frame))
        if plan.frame > 1:
            last = Signal(range(plan.frame))
            m.d.sync += last.eq(phase)
            marker_step, marker_phase = plan.marker
            with m.If(stepped == marker_step):
                m.d.comb += phase.eq(marker_phase)
            with m.Elif(last == plan.frame - 1):
                m.d.comb += phase.eq(0)
            with m.Else():
                m.d.comb += phase.eq(last + 1)

        with m.Switch(phase):
            for j, back in enumerate(plan.back):
                with m.Case(j):
                    m.d.comb += [self.samples[k].eq(copy[b]) for k, b in enumerate(back)]
        return m
