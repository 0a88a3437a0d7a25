# SPDX-License-Identifier: BSD-2-Clause
"""What a rig feature is: a component that declares its registers and its streams.

Every block the host sees (stimulus, targets, capture, raw events, latency records,
statistics, the host link) is a :class:`Feature`: it names the registers of the one
register map (:data:`rtrig.protocol.REGISTERS`) that it implements, and the registers
of other features it only reads. Its ``regs`` member carries them as ports, so a
feature is tested, and read, on its own; :class:`~rtrig.gateware.top.GatewareTop` lists the
features, builds the register file from their declarations and wires each register
port to it (:func:`connect_registers`). A register of a feature not built in reads its
map value and ignores writes.

This module also holds the small stream helpers the features share: the record FIFO
behind a :class:`~rtrig.gateware.merge.RecordMerger` and the packet streams that feed
the link's arbiter (``stream.Signature(TxPacket)``, :mod:`rtrig.gateware.link`).
"""

from amaranth import Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from ..protocol import REGISTERS, Access

__all__ = ["Feature", "connect_registers", "packet_from_fifo", "packet_from_stream",
           "record_fifo", "REGISTER_BY_NAME"]

#: The register map by name.
REGISTER_BY_NAME = {r.name: r for r in REGISTERS}


class Feature(wiring.Component):
    """A rig feature: a component with a ``regs`` member for its registers.

    Parameters
    ----------
    members : dict
        The feature's own ports (name → ``In``/``Out``).
    registers : iterable of str
        Registers it implements (names in :data:`rtrig.protocol.REGISTERS`).
    uses : iterable of str
        Read/write registers of other features whose value it reads.
    read_strobes, write_strobes : iterable of str
        Registers whose reads (``<NAME>_read``) or writes (``<NAME>_wrote``) it sees
        as one-cycle pulses; a write pulse comes with the value in ``w_value``.

    Members
    -------
    regs : Out(Signature)
        One port per register, all in the ``sync`` domain: ``In(width)`` for a
        read/write register (its value, reset to its map value), ``Out(32)`` for a
        read-only one (the feature drives it; left undriven it reads its map value),
        ``In(1)`` for a strobe register (pulses with the write); plus the
        ``<NAME>_read`` / ``<NAME>_wrote`` pulses and ``w_value : In(32)``.
    """

    def __init__(self, members, *, registers, uses=(), read_strobes=(), write_strobes=()):
        self.registers = tuple(registers)
        self.uses = tuple(uses)
        self.read_strobes = tuple(read_strobes)
        self.write_strobes = tuple(write_strobes)
        ports = {}
        for name in self.registers + self.uses:
            r = REGISTER_BY_NAME[name]
            if name in self.uses and r.access is not Access.RW:
                raise ValueError(f"{type(self).__name__} can only use read/write registers, "
                                 f"not {name}")
            if r.access is Access.RO:
                ports[name] = Out(32, init=r.reset)
            elif r.access is Access.RW:
                ports[name] = In(r.width, init=r.reset)
            else:
                ports[name] = In(1)
        for name in self.read_strobes:
            ports[f"{name}_read"] = In(1)
        for name in self.write_strobes:
            ports[f"{name}_wrote"] = In(1)
        if self.write_strobes or any(REGISTER_BY_NAME[n].access is Access.STROBE
                                     for n in self.registers):
            ports["w_value"] = In(32)
        super().__init__({**members, "regs": Out(wiring.Signature(ports))})


def connect_registers(m, regfile, feature):
    """Wire ``feature.regs`` to the :class:`~rtrig.gateware.registers.RegisterFile`
    ``regfile`` (combinationally: no cycle is added)."""
    port = feature.regs
    for name in feature.registers + feature.uses:
        if name in regfile.rw:
            m.d.comb += getattr(port, name).eq(regfile.rw[name])
        elif name in regfile.ro:
            m.d.comb += regfile.ro[name].eq(getattr(port, name))
        else:
            m.d.comb += getattr(port, name).eq(regfile.strobe[name])
    for name in feature.read_strobes:
        m.d.comb += getattr(port, f"{name}_read").eq(regfile.read_strobe[name])
    for name in feature.write_strobes:
        m.d.comb += getattr(port, f"{name}_wrote").eq(regfile.wrote[name])
    if hasattr(port, "w_value"):
        m.d.comb += port.w_value.eq(regfile.w_value)


def packet_from_fifo(m, s, ptype, record, q):
    """Drive TxPacket stream ``s`` with packets of type ``ptype`` carrying the
    ``record`` (a :class:`rtrig.records.WireRecord`) entries of FIFO ``q``."""
    m.d.comb += [
        s.valid.eq(q.r_rdy),
        s.payload.type.eq(ptype),
        s.payload.length.eq(record.payload_len),
        s.payload.payload.eq(q.r_data),
        q.r_en.eq(s.ready),
    ]


def packet_from_stream(m, s, ptype, record, src):
    """Drive TxPacket stream ``s`` with the ``record`` payloads of stream ``src``."""
    m.d.comb += [
        s.valid.eq(src.valid),
        s.payload.type.eq(ptype),
        s.payload.length.eq(record.payload_len),
        s.payload.payload.eq(src.payload),
        src.ready.eq(s.ready),
    ]


def _space(m, f, ahead):
    """A registered ``w_rdy`` for FIFO ``f``: room for ``ahead`` more records (the
    records already on their way to it, plus one: the flag lags the level by one
    cycle). Keeps the FIFO's level compare off the record mergers' paths."""
    space = Signal()
    m.d.sync += space.eq(f.w_level < f.depth - ahead)
    return space


def record_fifo(m, merger, shape, depth, clear, overflow, count):
    """The FIFO behind a :class:`~rtrig.gateware.merge.RecordMerger`: the merger's
    drops go to ``overflow``, records written since ``clear`` to ``count``. A record
    leaving the merger is written directly; the merger sees a registered space flag
    (room for three more records)."""
    q = fifo.SyncFIFOBuffered(width=shape.as_shape().size, depth=depth + 1)
    w_en, w_data = Signal(), Signal.like(q.w_data)
    m.d.comb += [w_en.eq(merger.out.valid & merger.out.ready), w_data.eq(merger.out.payload)]
    m.d.comb += [
        q.w_data.eq(w_data),
        q.w_en.eq(w_en),
        merger.out.ready.eq(_space(m, q, 3)),
        overflow.eq(merger.overflow),
    ]
    with m.If(clear):
        m.d.sync += count.eq(0)
    with m.Elif(q.w_en & q.w_rdy):
        m.d.sync += count.eq(count + 1)
    return q
