"""Loopback target: STIM0 echoed back after a programmable delay (calibration)."""

from amaranth import Cat, Module, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LoopbackTarget"]


class LoopbackTarget(wiring.Component):
    """Reproduces ``stim`` on ``out`` exactly ``delay`` ticks later.

    Up to ``depth`` edges may be in flight (a delay of up to ``depth / 2`` stimulus
    periods); edges beyond that are dropped and counted in ``lost``.

    Members
    -------
    stim : In(1)
    delay : In(32)
        Ticks (the host changes it only while the stimulus is stopped).
    now : In(48)
    out : Out(1)
    lost : Out(32)
    """

    stim: In(1)
    delay: In(32)
    now: In(48)
    out: Out(1)
    lost: Out(32)

    def __init__(self, depth=16):
        self.depth = depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        prev = Signal()
        m.d.sync += prev.eq(self.stim)
        edge = Signal()
        m.d.comb += edge.eq(self.stim != prev)

        m.submodules.q = q = fifo.SyncFIFO(width=33, depth=self.depth)
        due = Signal(32)
        m.d.comb += [
            due.eq(self.now[:32] + self.delay - 1),
            q.w_data.eq(Cat(due, self.stim)),
            q.w_en.eq(edge & (self.delay >= 2)),
        ]
        with m.If(q.w_en & ~q.w_rdy):
            m.d.sync += self.lost.eq(self.lost + 1)

        late = Signal()
        with m.If(q.r_rdy & (q.r_data[:32] == self.now[:32])):
            m.d.comb += q.r_en.eq(1)
            m.d.sync += late.eq(q.r_data[32])

        with m.If(self.delay == 0):
            m.d.comb += self.out.eq(self.stim)
        with m.Elif(self.delay == 1):
            m.d.comb += self.out.eq(prev)
        with m.Else():
            m.d.comb += self.out.eq(late)
        return m
