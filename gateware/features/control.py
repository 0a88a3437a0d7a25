# SPDX-License-Identifier: BSD-2-Clause
"""The rig's own registers: identity, configuration, the timebase and CLEAR."""

from amaranth import Module, Signal
from amaranth.lib.wiring import Out

from ..feature import Feature
from ..timebase import TIME_WIDTH, Timebase

__all__ = ["RigControl"]


class RigControl(Feature):
    """Identity and configuration registers, the timebase and the CLEAR strobe.

    Parameters
    ----------
    build_hash : int
        Value of ``BUILD_HASH`` (low 32 bits of the gateware hash).
    tick_hz, baud, board, caps, in_delay, step : int
        Values of ``TICK_HZ``, ``BAUD``, ``BOARD``, ``CAPS``, ``IN_DELAY`` (ticks) and
        ``STIM_STEP`` (ticks per clock cycle; the timebase advances by it).

    Members
    -------
    now : Out(48)
        Timebase, ticks since reset (``sync`` domain; :class:`Timebase`).
    clear : Out(1)
        ``CLEAR`` written: a one-cycle pulse, one cycle after the write lands. Registered
        because it reaches nearly every block: its wide fan-out starts at a flip-flop.
    regs : Out(Signature)
        ``ID`` .. ``STIM_STEP``, ``SCRATCH``, ``TIME_LO``/``TIME_HI`` (reading
        ``TIME_LO`` latches the upper bits into ``TIME_HI``) and ``CLEAR``.
    """

    def __init__(self, *, build_hash, tick_hz, baud, board, caps, in_delay, step):
        self.values = {"BUILD_HASH": build_hash, "TICK_HZ": tick_hz, "BAUD": baud,
                       "BOARD": board, "CAPS": caps, "IN_DELAY": in_delay, "STIM_STEP": step}
        self.step = step
        super().__init__(
            {"now": Out(TIME_WIDTH), "clear": Out(1)},
            registers=("ID", "VERSION", "BUILD_HASH", "TICK_HZ", "BAUD", "N_INPUTS",
                       "BOARD", "CAPS", "SCRATCH", "IN_DELAY", "STIM_STEP",
                       "TIME_LO", "TIME_HI", "CLEAR"),
            read_strobes=("TIME_LO",))

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        for name, value in self.values.items():
            m.d.comb += getattr(regs, name).eq(value)
        m.submodules.timebase = tb = Timebase(self.step)
        m.d.comb += [
            tb.latch.eq(regs.TIME_LO_read),
            regs.TIME_LO.eq(tb.now[:32]),
            regs.TIME_HI.eq(tb.latched_hi),
            self.now.eq(tb.now),
        ]
        clear = Signal()
        m.d.sync += clear.eq(regs.CLEAR)
        m.d.comb += self.clear.eq(clear)
        return m
