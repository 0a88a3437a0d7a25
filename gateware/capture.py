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
    t : Out(48)
        Pin time of the edges flagged this cycle: ``now - IN_DELAY``. It is a register
        loaded with ``now + 1 - IN_DELAY`` (no 48-bit subtraction on the path to the
        matchers), so ``now`` must advance by one tick per cycle, as the timebase's does.
    """

    def __init__(self, n):
        self.n = n
        super().__init__({
            "pins": In(n),
            "stim": In(2),
            "now": In(TIME_WIDTH),
            "level": Out(n + 2),
            "rise": Out(n + 2),
            "fall": Out(n + 2),
            "t": Out(TIME_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        synced = Signal(self.n)
        m.submodules.sync_ff = cdc.FFSynchronizer(self.pins, synced, stages=IN_DELAY)
        stim_d = [Signal(2, name=f"stim_d{i}") for i in range(IN_DELAY)]
        m.d.sync += stim_d[0].eq(self.stim)
        for a, b in zip(stim_d, stim_d[1:]):
            m.d.sync += b.eq(a)
        m.d.comb += self.level.eq(Cat(synced, stim_d[-1]))
        prev = Signal(self.n + 2)
        m.d.sync += prev.eq(self.level)
        m.d.comb += [
            self.rise.eq(self.level & ~prev),
            self.fall.eq(~self.level & prev),
        ]
        # t = now - IN_DELAY, one cycle ahead: at reset (now = 0) it reads -IN_DELAY.
        t = Signal(TIME_WIDTH, init=(-IN_DELAY) % (1 << TIME_WIDTH))
        m.d.sync += t.eq(self.now + (1 - IN_DELAY))
        m.d.comb += self.t.eq(t)
        return m
