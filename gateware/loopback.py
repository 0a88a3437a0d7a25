# SPDX-License-Identifier: BSD-2-Clause
"""Loopback target: STIM0 echoed back after a programmable delay (calibration)."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LoopbackDelayLine"]


class LoopbackDelayLine(wiring.Component):
    """Reproduces ``stim`` on ``out`` exactly ``delay`` ticks later, from a block-RAM
    delay line: any number of edges in flight, delays up to ``depth`` ticks.

    STIM0 is written to the RAM every cycle and read back ``delay`` cycles later
    (block RAM, which every board has to spare, rather than logic cells). A
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
