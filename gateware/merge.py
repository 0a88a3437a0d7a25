# SPDX-License-Identifier: BSD-2-Clause
"""Merge record sources that cannot wait into one stream, counting what is lost."""

from amaranth import Cat, Module, Mux, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RecordMerger"]


class RecordMerger(wiring.Component):
    """Collects records from ``n`` fire-and-forget sources into one stream.

    Each source offers a record with a one-cycle ``valid`` strobe and cannot be held
    up; it lands in a one-record holding register. A round-robin arbiter moves held
    records to ``out``. A record that finds its source's holding register still full
    is dropped and counted in ``overflow``: nothing is lost silently.

    All ports are in the ``sync`` domain.

    Members
    -------
    valid : In(n)
        Per source: a record is offered this cycle.
    payload : In(ArrayLayout(shape, n))
        Per source: the record.
    out : Out(stream.Signature(shape))
    overflow : Out(32)
        Records dropped since ``clear``; a drop shows two cycles after the cycle in
        which it happened.
    clear : In(1)
    """

    def __init__(self, shape, n):
        from amaranth.lib.data import ArrayLayout
        self.n = n
        self.shape = shape
        super().__init__({
            "valid": In(n),
            "payload": In(ArrayLayout(shape, n)),
            "out": Out(stream.Signature(shape)),
            "overflow": Out(32),
            "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.n
        full = Signal(n)
        held = [Signal(self.shape, name=f"held{i}") for i in range(n)]
        sel = Signal(range(n))

        # The arbiter state twice: ``sel`` (binary) drives the wide payload mux, the
        # one-hot ``sel_oh`` the control, so the holding registers' enables do not hang
        # off the mux select's large fanout.
        sel_oh = Signal(n, init=1)
        taken = Signal(n)
        m.d.comb += [
            self.out.valid.eq((full & sel_oh).any()),
        ]
        # The payload multiplexer in slices of about 40 bits, each with its own copy of
        # ``sel`` (copy k counts sel + k: a different start value, so synthesis keeps
        # the copies apart), so no select drives the whole record.
        width = Shape.cast(self.shape).width
        slices = max(1, min(n, round(width / 40)))
        bounds = [width * k // slices for k in range(slices + 1)]
        for k in range(slices):
            lo, hi = bounds[k], bounds[k + 1]
            copy = sel if k == 0 else Signal(range(n), init=k % n, name=f"sel_copy{k}")
            if k:
                with m.If(~self.out.valid | self.out.ready):
                    m.d.sync += copy.eq(Mux(copy == n - 1, 0, copy + 1))
            payload = Signal(width, name=f"payload_slice{k}")
            with m.Switch(copy):
                for v in range(n):
                    with m.Case(v):
                        m.d.comb += payload.eq(held[(v - k) % n])
            m.d.comb += self.out.payload.as_value()[lo:hi].eq(payload[lo:hi])
        m.d.comb += taken.eq(Mux(self.out.ready, full & sel_oh, 0))
        # Move to the next source when the current one has nothing or was just taken.
        with m.If(~self.out.valid | self.out.ready):
            m.d.sync += sel_oh.eq(sel_oh.rotate_left(1))
            with m.If(sel == n - 1):
                m.d.sync += sel.eq(0)
            with m.Else():
                m.d.sync += sel.eq(sel + 1)

        lost_q = Signal(range(n + 1))
        frees = []
        for i in range(n):
            # A free holding register follows its source every cycle, so its load
            # enable does not depend on ``valid`` (only on flip-flops): ``full`` decides
            # whether what it holds is a record.
            free = Signal(name=f"free{i}")
            frees.append(free)
            m.d.comb += free.eq(~full[i] | taken[i])
            with m.If(free):
                m.d.sync += [held[i].eq(self.payload[i]), full[i].eq(self.valid[i])]
        # Drops: one flip-flop per source, counted in the next cycle, added in the one
        # after (the downstream ``ready`` reaches only the per-source flip-flops).
        lost_bits = Signal(n)
        m.d.sync += lost_bits.eq(self.valid & ~Cat(*frees))
        total = 0
        for i in range(n):
            total = total + lost_bits[i]
        m.d.sync += lost_q.eq(total)
        with m.If(self.clear):
            m.d.sync += [self.overflow.eq(0), lost_q.eq(0), lost_bits.eq(0)]
        with m.Else():
            m.d.sync += self.overflow.eq(self.overflow + lost_q)
        return m
