# SPDX-License-Identifier: BSD-2-Clause
"""Heartbeat windows: how much CPU a target's background load got, window by window
(docs/statistics.md)."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["HeartbeatWindows"]


class HeartbeatWindows(wiring.Component):
    """Heartbeat edges per window of ``window`` ticks.

    Windows are back to back, ``window`` cycles each: ``[c0 + i*W, c0 + (i+1)*W)``,
    where ``c0`` is the last cycle with ``clear``, the cycle the stimulus started
    (``running`` rose) or the last cycle with ``window == 0`` (off; ``window`` is
    registered, so it acts one cycle late). One cycle after a window ends its edge
    count is in ``last``. A window that lay entirely inside one stimulus run
    (``running`` high in each of its cycles) also updates ``min``, ``max`` and
    ``windows``, one cycle after ``last``; so a load task starved by the stimulus
    shows as ``min == 0``.

    All ports are in the ``sync`` domain.

    Members
    -------
    clear, edge, running : In(1)
        ``edge``: one heartbeat edge (either direction) this cycle.
    window : In(32)
        Window length in ticks; 0 = off.
    last : Out(32)
        Edges in the last complete window.
    min : Out(32, init=0xFFFFFFFF)
        Fewest edges in a complete window during the stimulus (0xFFFFFFFF: none yet).
    max : Out(32)
    windows : Out(32)
        Complete windows during the stimulus since ``clear``.
    """

    clear: In(1)
    edge: In(1)
    running: In(1)
    window: In(32)
    last: Out(32)
    min: Out(32, init=0xFFFF_FFFF)
    max: Out(32)
    windows: Out(32)

    def elaborate(self, platform):
        m = Module()
        # ``rem`` counts the window's remaining cycles down to -1 (the window ends when
        # its sign bit is set: no 32-bit compare); "off" is registered.
        rem, edges = Signal(33), Signal(32)
        w_m2, w_off = Signal(33), Signal(init=1)
        m.d.comb += w_m2.eq(self.window - 2)
        m.d.sync += w_off.eq(self.window == 0)
        in_run = Signal()           # running in every cycle of this window so far
        was_running = Signal()
        m.d.sync += was_running.eq(self.running)
        started = Signal()
        m.d.comb += started.eq(self.running & ~was_running)

        # A complete window's count goes to ``last``; one cycle later (from flip-flops)
        # into min, max and windows.
        upd = Signal()
        m.d.sync += upd.eq(0)
        total = Signal(32)
        m.d.comb += total.eq(edges + self.edge)
        with m.If(self.clear | started | w_off):
            m.d.sync += [rem.eq(w_m2), edges.eq(self.edge), in_run.eq(self.running)]
        with m.Elif(rem[32]):
            m.d.sync += [self.last.eq(edges), rem.eq(w_m2), edges.eq(self.edge),
                         in_run.eq(self.running), upd.eq(in_run)]
        with m.Else():
            m.d.sync += [rem.eq(rem - 1), edges.eq(total)]
            with m.If(~self.running):
                m.d.sync += in_run.eq(0)
        with m.If(upd):
            m.d.sync += self.windows.eq(self.windows + 1)
            with m.If(self.last < self.min):
                m.d.sync += self.min.eq(self.last)
            with m.If(self.last > self.max):
                m.d.sync += self.max.eq(self.last)
        with m.If(self.clear):
            m.d.sync += [self.last.eq(0), self.min.eq(0xFFFF_FFFF), self.max.eq(0),
                         self.windows.eq(0)]
        return m
