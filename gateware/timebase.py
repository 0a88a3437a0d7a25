# SPDX-License-Identifier: BSD-2-Clause
"""Free-running timebase: the unit of every raw figure the rig reports."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Timebase", "TIME_WIDTH"]

#: Width of a timestamp in bits: 2**48 ticks of 8.33 ns (the ECP5 boards') is 27.1 days.
TIME_WIDTH = 48


class Timebase(wiring.Component):
    """A free-running tick counter in the ``sync`` domain.

    Parameters
    ----------
    step : int
        Ticks per cycle (2 with DDR input capture: a tick is half a clock period).

    Members
    -------
    now : Out(48)
        Ticks since reset; ``now`` equals the cycle number times ``step`` (cycle 0 is
        the first after reset). At 30 MHz with ``step`` 4 one tick is 8.33 ns.
    latch : In(1)
        Copy ``now[32:48]`` into ``latched_hi`` (used by the ``TIME_LO`` register read,
        so a 48-bit time is read consistently as two 32-bit words).
    latched_hi : Out(16)
    """

    now: Out(TIME_WIDTH)
    latch: In(1)
    latched_hi: Out(TIME_WIDTH - 32)

    def __init__(self, step=1):
        self.step = step
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.now.eq(self.now + self.step)
        with m.If(self.latch):
            m.d.sync += self.latched_hi.eq(self.now[32:])
        return m
