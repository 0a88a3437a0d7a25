# SPDX-License-Identifier: BSD-2-Clause
"""An armed start: a run that begins at a rig time the host chose, not when its write lands."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .timebase import TIME_WIDTH

__all__ = ["RunArm", "ARM_HOLD_LEAD"]

#: Cycles between the end of the target's hold and the first STIM0 rise of a run
#: armed with no lead: the hold is low from cycle ``at - ARM_HOLD_LEAD`` on.
ARM_HOLD_LEAD = 3


class RunArm(wiring.Component):
    """Starts the stimulus generator at a chosen rig time, in the ``sync`` domain.

    A run armed in cycle ``a`` (``arm``) waits for the timebase: with ``at`` = ``T``
    and ``lead`` = ``L`` (ticks, used in clock cycles: divided by ``step``, rounded
    down), ``start`` pulses in cycle ``T + L - 2`` so that the generator's first STIM0
    rise is high from cycle ``T + L`` (the generator's outputs are registered, two
    cycles behind its ``start``). ``hold`` (the internal target kept in reset, when
    armed with ``restart``) is high from cycle ``a + 1`` and low from cycle
    ``T - ARM_HOLD_LEAD`` on, so the target starts the same number of cycles before
    the first pulse on every run. ``T`` must lie at least 8 cycles after ``a``; a run
    armed later never starts (the timebase passed ``T``): ``armed`` stays high and the
    host, which sees the time pass, disarms it with ``stop``.

    The wait is an equality of the timebase with ``T - 6``, compared in two halves and
    registered twice (two LUT levels from any flip-flop on the iCE40), then a
    down-counter of the lead tested by its sign bit, like the generator's counters.

    Members
    -------
    now : In(48)
        The timebase, ticks.
    at : In(48)
        ``RUN_AT``, ticks; held while armed.
    lead : In(32)
        ``STIM_LEAD``, ticks; held while armed.
    arm : In(1)
        Pulse: wait for ``at`` (ignored while armed or while ``running``).
    restart : In(1)
        With ``arm``: hold the internal target in reset until the start.
    stop : In(1)
        Pulse: disarm.
    running : In(1)
        The generator's ``running``.
    start : Out(1)
        Pulse to the generator's ``start``.
    armed : Out(1)
        Waiting for ``at`` or the lead, up to the cycle of ``start`` (``STIM_STATUS``
        bit 1; the generator's ``running`` rises in the cycle after).
    hold : Out(1)
        Keep the internal target in reset.
    """

    now: In(TIME_WIDTH)
    at: In(TIME_WIDTH)
    lead: In(32)
    arm: In(1)
    restart: In(1)
    stop: In(1)
    running: In(1)
    start: Out(1)
    armed: Out(1)
    hold: Out(1)

    def __init__(self, step=4, restart=True):
        self.shift = step.bit_length() - 1
        #: Built with the lead and the hold (a rig with an internal target to restart);
        #: without, ``lead`` and ``restart`` are ignored and ``hold`` stays low.
        self.with_restart = restart
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        shift = self.shift
        width = TIME_WIDTH - shift
        now_c = self.now[shift:]
        # The cycle to compare with, registered once from the settings (stable long
        # before the time comes): hit is high in cycle T - 4, 2 cycles after the
        # compare of cycle T - 6.
        at_m6 = Signal(width)
        m.d.sync += at_m6.eq(self.at[shift:] - 6)
        half = width // 2
        eq_lo, eq_hi, hit = Signal(), Signal(), Signal()
        m.d.sync += [eq_lo.eq(now_c[:half] == at_m6[:half]),
                     eq_hi.eq(now_c[half:] == at_m6[half:]),
                     hit.eq(eq_lo & eq_hi)]

        waiting = Signal()        # armed, up to cycle T - 4
        leading = Signal()        # from cycle T - 3, counting the lead down
        if not self.with_restart:
            self._start_at_once(m, waiting, leading, hit)
            return m
        lcnt = Signal(33)         # lead cycles left, minus one
        lead_c = Signal(32)
        m.d.comb += lead_c.eq(self.lead >> shift)
        done = Signal()
        # armed covers the start's own cycle: the generator's running follows it at once,
        # so STIM_STATUS never reads idle between the two.
        m.d.comb += [done.eq(leading & lcnt[32]),
                     self.armed.eq(waiting | leading | self.start)]
        m.d.sync += self.start.eq(done)

        with m.If(self.stop):
            m.d.sync += [waiting.eq(0), leading.eq(0), self.hold.eq(0)]
        with m.Elif(self.arm & ~waiting & ~leading & ~self.running):
            m.d.sync += [waiting.eq(1), self.hold.eq(self.restart)]
        with m.Elif(waiting & hit):
            # Cycle T - 4: the hold ends (low from T - 3); the lead counts L cycles
            # from T - 3, so done is high in cycle T + L - 3 and start in T + L - 2.
            m.d.sync += [waiting.eq(0), leading.eq(1), self.hold.eq(0),
                         lcnt.eq(lead_c - 1)]
        with m.Elif(leading):
            with m.If(lcnt[32]):
                m.d.sync += leading.eq(0)
            with m.Else():
                m.d.sync += lcnt.eq(lcnt - 1)
        return m

    def _start_at_once(self, m, waiting, leading, hit):
        """Without the restart: no lead (``start`` in cycle ``T - 2``), no hold."""
        # leading is high for the one cycle T - 3.
        m.d.comb += self.armed.eq(waiting | leading | self.start)
        m.d.sync += [self.start.eq(leading), leading.eq(0)]
        with m.If(self.stop):
            m.d.sync += waiting.eq(0)
        with m.Elif(self.arm & ~waiting & ~leading & ~self.running):
            m.d.sync += waiting.eq(1)
        with m.Elif(waiting & hit):
            m.d.sync += [waiting.eq(0), leading.eq(1)]
