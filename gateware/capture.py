"""Input capture: synchronise the target's pins, detect edges, timestamp them."""

from amaranth import Cat, Module, Signal
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

from .timebase import TIME_WIDTH

__all__ = ["EdgeDetector", "IN_DELAY"]

#: Ticks between a pin change and its edge detection: two synchroniser flip-flops.
#: Subtracted from every timestamp, so event times are pin times (DESIGN §1).
IN_DELAY = 2


class EdgeDetector(wiring.Component):
    """Synchronises ``n`` asynchronous inputs and detects their edges.

    The stimulus outputs (already synchronous) pass through an equal two-stage delay,
    so stimulus and response edges come out in the order of their pin times and carry
    one common timestamp ``t``.

    Parameters
    ----------
    n : int
        Number of asynchronous inputs.
    ddr : bool
        Two samples of every pin per cycle (``pins`` the earlier, ``pins_late`` the
        later, from DDR input registers): ticks are half clock periods, ``now``
        advances by 2 per cycle, and each edge has a ``phase`` (0 or 1 tick).
    pin_latency : int
        Cycles the pin samples spend in registers before ``pins`` (a DDR input
        buffer's); the stimulus is delayed as much, and ``in_delay`` covers it.

    Members
    -------
    pins : In(n)
        Input pins, asynchronous to ``sync``.
    stim : In(2)
        STIM0/STIM1 output levels (``sync``).
    now : In(48)
        Timebase.
    level, rise, fall : Out(n + 2)
        Aligned levels and one-cycle edge strobes; bits ``0..n-1`` the inputs,
        ``n`` and ``n+1`` STIM0 and STIM1.
    phase : Out(n + 2)
        DDR: the edge flagged this cycle happened at ``t + phase``; else 0.
    glitches : Out(32)
        DDR: pin pulses within one cycle (no edge reported) since ``clear``.
    clear : In(1)
    t : Out(48)
        Pin time of the edges flagged this cycle: ``now - in_delay``. It is a register
        loaded with ``now + 1 - IN_DELAY`` (no 48-bit subtraction on the path to the
        matchers), so ``now`` must advance by one tick per cycle, as the timebase's does.
    """

    def __init__(self, n, ddr=False, pin_latency=0):
        self.n = n
        self.ddr = ddr
        self.pin_latency = pin_latency
        #: Cycles from a pin sample to its edge strobe, and the same in ticks.
        self.delay_cycles = IN_DELAY + pin_latency
        self.in_delay = self.delay_cycles * (2 if ddr else 1)
        super().__init__({
            "pins": In(n),
            "pins_late": In(n),
            "stim": In(2),
            "now": In(TIME_WIDTH),
            "level": Out(n + 2),
            "rise": Out(n + 2),
            "fall": Out(n + 2),
            "phase": Out(n + 2),
            "glitches": Out(32),
            "clear": In(1),
            "t": Out(TIME_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.n
        synced, synced_late = Signal(n), Signal(n)
        m.submodules.sync_ff = cdc.FFSynchronizer(self.pins, synced, stages=IN_DELAY)
        stim_d = [Signal(2, name=f"stim_d{i}") for i in range(self.delay_cycles)]
        m.d.sync += stim_d[0].eq(self.stim)
        for a, b in zip(stim_d, stim_d[1:]):
            m.d.sync += b.eq(a)
        m.d.comb += self.level.eq(Cat(synced_late if self.ddr else synced, stim_d[-1]))
        prev = Signal(n + 2)
        m.d.sync += prev.eq(self.level)
        if not self.ddr:
            m.d.comb += [
                self.rise.eq(self.level & ~prev),
                self.fall.eq(~self.level & prev),
            ]
        else:
            # Two samples per cycle: ``synced`` (earlier, tick 2c) and ``synced_late``
            # (tick 2c + 1). A pin that changed before the early sample has its edge at
            # phase 0; one that changed between the samples at phase 1. A pin that
            # changes before the early sample and back before the late one (a pulse
            # of under one clock period inside one cycle) shows no edge: counted.
            m.submodules.sync_late = cdc.FFSynchronizer(self.pins_late, synced_late,
                                                        stages=IN_DELAY)
            early = Cat(synced, stim_d[-1])        # the stimulus changes at phase 0
            changed = Signal(n + 2)
            glitch = Signal(n)
            m.d.comb += [
                changed.eq(self.level ^ prev),
                self.rise.eq(self.level & ~prev),
                self.fall.eq(~self.level & prev),
                self.phase.eq(changed & ~(early ^ prev)),
                glitch.eq((early ^ prev)[:n] & ~changed[:n]),
            ]
            n_glitch = 0
            for i in range(n):
                n_glitch = n_glitch + glitch[i]
            with m.If(self.clear):
                m.d.sync += self.glitches.eq(0)
            with m.Else():
                m.d.sync += self.glitches.eq(self.glitches + n_glitch)
        # t = now - in_delay, one cycle ahead: at reset (now = 0) it reads -in_delay.
        step = 2 if self.ddr else 1
        t = Signal(TIME_WIDTH, init=(-self.in_delay) % (1 << TIME_WIDTH))
        m.d.sync += t.eq(self.now + (step - self.in_delay))
        m.d.comb += self.t.eq(t)
        return m
