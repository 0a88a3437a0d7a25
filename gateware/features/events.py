# SPDX-License-Identifier: BSD-2-Clause
"""Raw events: the feature that streams timestamped edges, and its queue (one FIFO
entry per cycle with edges, not per edge)."""

from amaranth import Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...protocol import N_INPUTS, STIM_INPUT, PacketType
from ...records import EVENT
from ..feature import Feature, packet_from_stream
from ..link import TxPacket
from ..timebase import TIME_WIDTH

__all__ = ["EventGroups", "EventRecord", "RawEvents"]

#: The EVENT record, declared in :data:`rtrig.records.EVENT` (7 bytes on the wire).
EventRecord = EVENT.struct()


def _popcount(bits):
    total = 0
    for b in bits:
        total = total + b
    return total


class EventGroups(wiring.Component):
    """Queues the edges of each cycle as one group and hands them out one by one.

    The edges of all ``n`` sources in one cycle share one time, so a cycle with edges
    is written to the FIFO (block RAM) as one entry: the time, which sources have an
    edge, their directions and (DDR capture) their sampling phases. The output side
    expands an entry into one record per edge, lowest source first. This holds no
    record per source in flip-flops, which the :class:`~rtrig.gateware.merge.RecordMerger`
    does (a cell per bit on an iCE40). Edges are handed out in the order of their
    cycles (within a cycle, lowest source first).

    All ports are in the ``sync`` domain.

    Parameters
    ----------
    n : int
        Number of edge sources.
    codes : list of int
        Input code of each source (the record's ``input`` field).
    depth : int
        Cycles with edges the FIFO holds.
    record : data.Struct
        Output record layout with fields ``t``, ``input`` and ``rising``.
    phase_bits : int
        Bits of each edge's phase kept: 0 (one sample per cycle), 1 or 2 (2 or 4).

    Members
    -------
    valid, rising : In(n)
        Per source: an edge this cycle and its direction.
    phase : In(ArrayLayout(2, n))
        Per source: the edge's time offset in ticks (below ``2 ** phase_bits``).
    t : In(48)
        Time of this cycle's edges (plus their ``phase``).
    out : Out(stream.Signature(record))
    overflow : Out(32)
        Edges dropped because the FIFO was full, since ``clear``.
    records : Out(32)
        Edges queued since ``clear``.
    clear : In(1)

    A cycle's edges are written to the FIFO in that cycle; the full flag is a
    registered "room for one more" (it lags the level by one cycle).
    """

    def __init__(self, n, codes, depth, record, phase_bits=1):
        self.n = n
        self.phase_bits = phase_bits
        self.codes = list(codes)
        self.depth = depth
        self.record = record
        super().__init__({
            "valid": In(n), "rising": In(n), "phase": In(data.ArrayLayout(2, n)),
            "t": In(TIME_WIDTH),
            "out": Out(stream.Signature(record)),
            "overflow": Out(32), "records": Out(32),
            "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, pb = self.n, self.phase_bits
        group = data.StructLayout({"t": TIME_WIDTH, "valid": n, "rising": n,
                                   "phase": data.ArrayLayout(pb, n)})

        # The group of this cycle, written as it is (its inputs are flip-flops).
        g, g_any = Signal(group), Signal()
        m.d.comb += [g.t.eq(self.t), g.valid.eq(self.valid), g.rising.eq(self.rising),
                     g_any.eq(self.valid.any())]
        for i in range(n):
            m.d.comb += g.phase[i].eq(self.phase[i][:pb])

        m.submodules.q = q = fifo.SyncFIFOBuffered(width=group.size, depth=self.depth + 1)
        room = Signal(init=1)
        m.d.sync += room.eq(q.w_level < q.depth - 1)
        m.d.comb += [q.w_data.eq(g), q.w_en.eq(g_any & room)]

        # Counters: the edges of a group, added one cycle after it was written/dropped.
        n_edges = Signal(range(n + 1))
        added, lost = Signal(range(n + 1)), Signal(range(n + 1))
        m.d.comb += n_edges.eq(_popcount(g.valid))
        m.d.sync += [added.eq(0), lost.eq(0)]
        with m.If(g_any & room):
            m.d.sync += added.eq(n_edges)
        with m.Elif(g_any):
            m.d.sync += lost.eq(n_edges)
        with m.If(self.clear):
            m.d.sync += [self.records.eq(0), self.overflow.eq(0), added.eq(0), lost.eq(0)]
        with m.Else():
            m.d.sync += [self.records.eq(self.records + added),
                         self.overflow.eq(self.overflow + lost)]

        # Output side: the group being handed out stays at the FIFO's output (no copy).
        # ``pending`` marks its edges not yet presented; the presented edge (source
        # code, direction, phase) is a register, so the choice of the lowest pending
        # edge is not on the path of the packet framer, which reads the record through
        # the packet arbiter.
        cur = Signal(group)
        m.d.comb += cur.eq(q.r_data)
        pending, loaded = Signal(n), Signal()
        valid_q, code_q, rising_q, phase_q = Signal(), Signal(4), Signal(), Signal(2)
        m.d.comb += [
            self.out.valid.eq(valid_q),
            # ``t`` is a multiple of the samples per cycle whenever a phase can be
            # nonzero (t counts by them and the capture delay is whole cycles), so the
            # phase fills its low bits: no adder.
            self.out.payload.t.eq(cur.t | phase_q),
            self.out.payload.input.eq(code_q),
            self.out.payload.rising.eq(rising_q),
        ]
        free = Signal()           # nothing presented after this cycle
        m.d.comb += free.eq(~valid_q | self.out.ready)
        with m.If(valid_q & self.out.ready):
            m.d.sync += valid_q.eq(0)
        low = Signal(n)           # one-hot: the lowest set bit of ``pending``
        m.d.comb += low.eq(pending & -pending)
        with m.If(loaded & free):
            with m.If(pending.any()):
                # Present the next edge of the group.
                m.d.sync += [valid_q.eq(1), pending.eq(pending & ~low)]
                for i in range(n):
                    with m.If(low[i]):
                        m.d.sync += [code_q.eq(self.codes[i]), rising_q.eq(cur.rising[i]),
                                     phase_q.eq(cur.phase[i])]
            with m.Else():
                # Its last edge is taken: drop the group; the next one's edges are
                # loaded into ``pending`` in the following cycle.
                m.d.comb += q.r_en.eq(1)
                m.d.sync += loaded.eq(0)
        with m.Elif(~loaded & q.r_rdy):
            m.d.sync += [pending.eq(cur.valid), loaded.eq(1)]
        return m


class RawEvents(Feature):
    """The raw events feature: one EVENT packet per enabled edge.

    Edges of the inputs (``EDGE_EN`` bits 0..7 rising, 8..15 falling) and of the
    stimulus outputs (bit 16, both directions) become EVENT records while
    ``STREAM_EN`` bit 0 is set, queued in front of the link a cycle at a time
    (:class:`EventGroups`: one FIFO entry per cycle with edges, no record per source in
    flip-flops; events come out in the order of their cycles).

    Parameters
    ----------
    depth : int
        FIFO depth: cycles with edges.
    phase_bits : int
        Bits of each edge's phase kept (log2 of the samples per cycle).

    Members
    -------
    rise, fall : In(8)
        Edge strobes of inputs 0..5, STIM0, STIM1 (``sync``; :class:`InputCapture`).
    phase : In(ArrayLayout(2, 8))
        The edges' tick within the cycle.
    t : In(48)
        Pin time of this cycle's edges, ticks.
    clear : In(1)
        Zero the counters.
    packets : Out(stream.Signature(TxPacket))
        EVENT packets (7-byte payloads, :data:`rtrig.records.EVENT`).
    regs : Out(Signature)
        ``EDGE_EN``, ``EVT_OVERFLOW``, ``EVT_RECORDS``; it reads ``STREAM_EN``.
    """

    def __init__(self, depth=512, phase_bits=2):
        self.depth = depth
        self.phase_bits = phase_bits
        n = N_INPUTS + 2
        super().__init__({
            "rise": In(n), "fall": In(n), "phase": In(data.ArrayLayout(2, n)),
            "t": In(TIME_WIDTH), "clear": In(1),
            "packets": Out(stream.Signature(TxPacket)),
        }, registers=("EDGE_EN", "EVT_OVERFLOW", "EVT_RECORDS"), uses=("STREAM_EN",))

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        n = N_INPUTS + 2
        edge_en, on = regs.EDGE_EN, regs.STREAM_EN[0]
        valid = Signal(n)
        codes = []
        for i in range(n):
            if i < N_INPUTS:
                code, r_en, f_en = i, edge_en[i], edge_en[8 + i]
            else:
                code, r_en, f_en = STIM_INPUT[i - N_INPUTS], edge_en[16], edge_en[16]
            codes.append(code)
            m.d.comb += valid[i].eq(on & ((self.rise[i] & r_en) | (self.fall[i] & f_en)))
        m.submodules.groups = groups = EventGroups(
            n, codes, self.depth, EventRecord, phase_bits=self.phase_bits)
        m.d.comb += [
            groups.valid.eq(valid),
            groups.rising.eq(self.rise),
            groups.phase.eq(self.phase),
            groups.t.eq(self.t),
            groups.clear.eq(self.clear),
            regs.EVT_OVERFLOW.eq(groups.overflow),
            regs.EVT_RECORDS.eq(groups.records),
        ]
        packet_from_stream(m, self.packets, PacketType.EVENT, EVENT, groups.out)
        return m
