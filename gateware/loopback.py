# SPDX-License-Identifier: BSD-2-Clause
"""Loopback target: STIM0 echoed back after a programmable delay (calibration)."""

from amaranth import Cat, Module, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LoopbackTarget", "LoopbackDelayLine"]


class LoopbackTarget(wiring.Component):
    """Reproduces ``stim`` on ``out`` exactly ``delay`` ticks later.

    Up to ``depth + 1`` edges may be in flight (a delay of up to ``depth / 2`` stimulus
    periods); edges beyond that are dropped and counted in ``lost``.

    All ports are in the ``sync`` domain.

    Members
    -------
    stim : In(1)
    delay : In(32)
        Ticks (the host changes it only while the stimulus is stopped; it is sampled
        through registers, so a change takes effect one cycle later).
    out : Out(1)
    lost : Out(32)
    """

    stim: In(1)
    delay: In(32)
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

        delay_m1 = Signal(32)
        d0, d1, d2 = Signal(), Signal(), Signal()     # delay == 0, == 1, >= 2
        m.d.sync += [delay_m1.eq(self.delay - 1), d0.eq(self.delay == 0),
                     d1.eq(self.delay == 1), d2.eq(self.delay >= 2)]

        # Edges in flight: the oldest in a head register (so the due-time compare starts
        # from flip-flops), the others in a FIFO behind it. An edge is due ``delay - 1``
        # cycles after it is seen and shows on ``out`` one cycle later.
        m.submodules.q = q = fifo.SyncFIFO(width=33, depth=self.depth)
        due = Signal(32)
        new = Signal()
        # Due times on a private free-running counter (times are only compared with
        # each other), so the rig's timebase does not have to reach this block.
        now = Signal(32)
        m.d.sync += now.eq(now + 1)
        m.d.comb += [due.eq(now + delay_m1), new.eq(edge & d2)]
        head_v, head_due, head_lvl = Signal(), Signal(32), Signal()
        pop = Signal()
        m.d.comb += pop.eq(head_v & (head_due == now))
        late = Signal()
        with m.If(pop):
            m.d.sync += late.eq(head_lvl)
        refill = Signal()
        m.d.comb += refill.eq(~head_v | pop)
        with m.If(refill & q.r_rdy):
            m.d.comb += q.r_en.eq(1)
            m.d.sync += [head_v.eq(1), head_due.eq(q.r_data[:32]), head_lvl.eq(q.r_data[32])]
        with m.Elif(refill & new):
            # Nothing queued: the new edge goes straight to the head.
            m.d.sync += [head_v.eq(1), head_due.eq(due), head_lvl.eq(self.stim)]
        with m.Elif(pop):
            m.d.sync += head_v.eq(0)
        m.d.comb += [
            q.w_data.eq(Cat(due, self.stim)),
            q.w_en.eq(new & ~(refill & ~q.r_rdy)),
        ]
        with m.If(q.w_en & ~q.w_rdy):
            m.d.sync += self.lost.eq(self.lost + 1)

        with m.If(d0):
            m.d.comb += self.out.eq(self.stim)
        with m.Elif(d1):
            m.d.comb += self.out.eq(prev)
        with m.Else():
            m.d.comb += self.out.eq(late)
        return m


class LoopbackDelayLine(wiring.Component):
    """Reproduces ``stim`` on ``out`` exactly ``delay`` ticks later, from a block-RAM
    delay line: any number of edges in flight, delays up to ``depth`` ticks.

    The compact rig's loopback (an iCE40 has block RAM to spare and few logic cells):
    STIM0 is written to the RAM every cycle and read back ``delay`` cycles later. A
    delay above ``depth`` cannot be made: ``out`` then stays low (every pulse is
    missed, which the host sees) and ``too_long`` is high.

    All ports are in the ``sync`` domain.

    Members
    -------
    stim : In(1)
    delay : In(32)
        Ticks (the host changes it only while the stimulus is stopped).
    out : Out(1)
    too_long : Out(1)
    """

    stim: In(1)
    delay: In(32)
    out: Out(1)
    too_long: Out(1)

    def __init__(self, depth=8192):
        self.depth = depth
        super().__init__()

    def elaborate(self, platform):
        from amaranth.lib.memory import Memory
        m = Module()
        prev = Signal()
        m.d.sync += prev.eq(self.stim)
        m.submodules.mem = mem = Memory(shape=1, depth=self.depth, init=[])
        wp, rp = mem.write_port(), mem.read_port()
        wptr = Signal(range(self.depth))
        m.d.sync += wptr.eq(wptr + 1)
        m.d.comb += [wp.addr.eq(wptr), wp.data.eq(self.stim), wp.en.eq(1)]
        # Read in cycle c - 1 what was written in cycle c - delay (``delay - 1`` entries
        # back); the data comes out in cycle c.
        back = Signal(range(self.depth))
        d0, d1, long_ = Signal(), Signal(), Signal()
        m.d.sync += [back.eq(self.delay - 1), d0.eq(self.delay == 0), d1.eq(self.delay == 1),
                     long_.eq(self.delay > self.depth)]
        m.d.comb += [rp.addr.eq(wptr - back), self.too_long.eq(long_)]
        with m.If(d0):
            m.d.comb += self.out.eq(self.stim)
        with m.Elif(d1):
            m.d.comb += self.out.eq(prev)
        with m.Elif(~long_):
            m.d.comb += self.out.eq(rp.data)
        return m
