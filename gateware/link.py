# SPDX-License-Identifier: BSD-2-Clause
"""Host link: SLIP-framed packets with sequence numbers and CRC over the UART.

The packet format is defined in :mod:`rtrig.protocol`; this module is its gateware
side: :class:`PacketRx` (bytes → checked commands), :class:`CommandUnit` (commands →
register accesses and responses) and :class:`PacketTx` (packets → escaped bytes).
"""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..protocol import SLIP_END, SLIP_ESC, SLIP_ESC_END, SLIP_ESC_ESC, PacketType

__all__ = ["TxPacket", "Command", "PacketRx", "PacketTx", "CommandUnit", "StreamRoundRobin",
           "MAX_PAYLOAD"]

#: Largest payload of a rig → host packet, bytes.
MAX_PAYLOAD = 19


class TxPacket(data.Struct):
    """A rig → host packet before framing: type, payload length and payload bytes."""
    type: 8
    length: 5
    payload: MAX_PAYLOAD * 8


class Command(data.Struct):
    """A checked host → rig request."""
    type: 8
    seq: 8
    addr: 16
    value: 32        #: WRITE: the value; READ: the count in bits 0..15


def _crc16():
    # CRC-16/IBM-3740 (CCITT-FALSE): XMODEM's polynomial with the register preset to
    # 0xFFFF, so a zero byte in front of a packet changes its CRC (with XMODEM's preset
    # of 0 a leading 0x00 was invisible). rtrig.protocol.crc16 is the same function.
    return crc.catalog.CRC16_IBM_3740(data_width=8).create()


class PacketRx(wiring.Component):
    """Decodes SLIP-framed host packets and checks length, type and CRC.

    All ports are in the ``sync`` domain.

    Members
    -------
    bytes_in : In(stream.Signature(8))
    cmd : Out(stream.Signature(Command))
        Good WRITE/READ requests; decoding waits while a command is not taken.
    errors : Out(32)
        Packets dropped (bad CRC, bad escape, wrong length for the type, unknown type).
    error : Out(1)
        Strobe: ``errors`` counts one more in the next cycle.
    clear : In(1)
    """

    bytes_in: In(stream.Signature(8))
    cmd: Out(stream.Signature(Command))
    errors: Out(32)
    error: Out(1)
    clear: In(1)

    BODY = 10   # the longest request body: type, seq, 6 payload bytes, 2 CRC bytes

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc_ = _crc16()
        buf = Signal(self.BODY * 8)
        count = Signal(range(self.BODY + 2))
        esc = Signal()
        bad = Signal()
        err = Signal()

        # Input register: each byte is held and classified for one cycle before it is
        # decoded (keeps the FIFO read and the byte compares off the CRC's path).
        in_v, b = Signal(), Signal(8)
        is_end, is_esc, is_esc_end, is_esc_esc = Signal(), Signal(), Signal(), Signal()
        go = Signal()           # the held byte is decoded this cycle
        # A closing END is checked in its cycle (``ok``, one flip-flop) and the command
        # issued in the next (``ending``): ``cmd.valid`` starts at flip-flops, not at the
        # length, type and CRC checks.
        ending, ok = Signal(), Signal()
        m.d.comb += [go.eq(in_v & ~self.cmd.valid & ~ending),
                     self.bytes_in.ready.eq(~in_v | (~self.cmd.valid & ~ending))]
        with m.If(go):
            m.d.sync += in_v.eq(0)
        with m.If(self.bytes_in.valid & self.bytes_in.ready):
            nb = self.bytes_in.payload
            m.d.sync += [in_v.eq(1), b.eq(nb), is_end.eq(nb == SLIP_END),
                         is_esc.eq(nb == SLIP_ESC), is_esc_end.eq(nb == SLIP_ESC_END),
                         is_esc_esc.eq(nb == SLIP_ESC_ESC)]
        byte = Signal(8)
        store = Signal()
        ptype = buf[0:8]
        # The command is read from the body buffer itself: it stays put while the
        # command waits (decoding waits too).
        m.d.comb += [
            self.cmd.payload.type.eq(ptype),
            self.cmd.payload.seq.eq(buf[8:16]),
            self.cmd.payload.addr.eq(buf[16:32]),
            self.cmd.payload.value.eq(Mux(ptype == PacketType.WRITE, buf[32:64], buf[32:48])),
        ]
        with m.If(ending):
            m.d.sync += ending.eq(0)
            with m.If(ok):
                m.d.sync += self.cmd.valid.eq(1)
            with m.Else():
                m.d.comb += err.eq(1)
        with m.If(go):
            with m.If(is_end):
                with m.If(count != 0):
                    good_len = Mux(ptype == PacketType.WRITE, count == 10,
                                   Mux(ptype == PacketType.READ, count == 8, 0))
                    m.d.sync += [ending.eq(1),
                                 ok.eq(~bad & ~esc & good_len & crc_.match_detected)]
                m.d.sync += [count.eq(0), esc.eq(0), bad.eq(0)]
            with m.Elif(esc):
                m.d.sync += esc.eq(0)
                with m.If(is_esc_end):
                    m.d.comb += [byte.eq(SLIP_END), store.eq(1)]
                with m.Elif(is_esc_esc):
                    m.d.comb += [byte.eq(SLIP_ESC), store.eq(1)]
                with m.Else():
                    m.d.sync += bad.eq(1)
            with m.Elif(is_esc):
                m.d.sync += esc.eq(1)
            with m.Else():
                m.d.comb += [byte.eq(b), store.eq(1)]
        with m.If(store & ~bad):
            with m.If(count == self.BODY + 1):
                m.d.sync += bad.eq(1)
            with m.Else():
                m.d.sync += count.eq(count + 1)
                m.d.comb += [crc_.valid.eq(1), crc_.data.eq(byte), crc_.start.eq(count == 0)]
                with m.Switch(count):
                    for i in range(self.BODY):
                        with m.Case(i):
                            m.d.sync += buf[i * 8:(i + 1) * 8].eq(byte)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += self.cmd.valid.eq(0)
        m.d.comb += self.error.eq(err)
        with m.If(self.clear):
            m.d.sync += self.errors.eq(0)
        with m.Elif(err):
            m.d.sync += self.errors.eq(self.errors + 1)
        return m


class CommandUnit(wiring.Component):
    """Executes register requests and queues their responses.

    All ports are in the ``sync`` domain.

    Members
    -------
    cmd : In(stream.Signature(Command))
    resp : Out(stream.Signature(TxPacket))
        WRITE_ACK / READ_DATA packets (payload: req_seq, addr, value).
    addr, w_en, w_data, r_en : Out
        Register file port; ``addr`` is held from the cycle before ``w_en`` / ``r_en``
        to the cycle after; ``r_data`` is valid the second cycle after ``r_en``.
    r_data : In(32)

    The command stays on ``cmd`` until it is done (``ready`` then): the unit keeps no
    copy of it.
    """

    cmd: In(stream.Signature(Command))
    resp: Out(stream.Signature(TxPacket))
    addr: Out(16)
    w_en: Out(1)
    w_data: Out(32)
    r_en: Out(1)
    r_data: In(32)

    def elaborate(self, platform):
        m = Module()
        c = self.cmd.payload
        remaining = Signal(16)
        value = Signal(32)
        rtype = Signal(8)
        m.d.comb += [self.addr.eq(c.addr), self.w_data.eq(c.value)]
        m.d.comb += [
            self.resp.payload.type.eq(rtype),
            self.resp.payload.length.eq(7),
            self.resp.payload.payload.eq(Cat(c.seq, c.addr, value)),
        ]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.cmd.valid):
                    with m.If(self.cmd.payload.type == PacketType.WRITE):
                        m.next = "WRITE"
                    with m.Else():
                        m.d.sync += remaining.eq(self.cmd.payload.value[:16])
                        # (through SETTLE: the register file decodes addr a cycle ahead)
                        m.next = "SETTLE"
            with m.State("WRITE"):
                m.d.comb += self.w_en.eq(1)
                m.d.sync += [value.eq(c.value), rtype.eq(PacketType.WRITE_ACK)]
                m.next = "RESPOND"
            with m.State("READ"):
                with m.If(remaining == 0):
                    m.d.comb += self.cmd.ready.eq(1)
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += self.r_en.eq(1)
                    m.d.sync += [remaining.eq(remaining - 1), rtype.eq(PacketType.READ_DATA)]
                    m.next = "READ_MUX"
            with m.State("READ_MUX"):
                # The register file's read mux is registered in two levels.
                m.next = "READ_WAIT"
            with m.State("READ_WAIT"):
                m.d.sync += value.eq(self.r_data)
                m.next = "RESPOND"
            with m.State("RESPOND"):
                m.d.comb += self.resp.valid.eq(1)
                with m.If(self.resp.ready):
                    with m.If(rtype == PacketType.READ_DATA):
                        m.next = "SETTLE"
                    with m.Else():
                        m.d.comb += self.cmd.ready.eq(1)
                        m.next = "IDLE"
            with m.State("SETTLE"):
                # One spare cycle so a read side effect (address auto-increment of a
                # memory window) settles before the next read of the same address, and
                # the register file's address decode follows a new address.
                m.next = "READ"
        return m


class StreamRoundRobin(wiring.Component):
    """Round-robin merge of ``n`` streams of one shape (one beat = one packet).

    The output is the selected input (a wide multiplexer, no copy of the payload); the
    selection moves on when the selected input has nothing or its beat was taken.

    All ports are in the ``sync`` domain.

    Members
    -------
    i0 .. i{n-1} : In(stream.Signature(shape))
        The inputs, served in turn from ``i0``.
    out : Out(stream.Signature(shape))
    """

    def __init__(self, shape, n):
        self.n = n
        super().__init__({
            **{f"i{k}": In(stream.Signature(shape)) for k in range(n)},
            "out": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        sel = Signal(range(self.n))
        ins = [getattr(self, f"i{k}") for k in range(self.n)]
        cur_valid = Signal()
        advance = Signal()
        m.d.comb += advance.eq(~cur_valid | self.out.ready)
        with m.Switch(sel):
            for k, s in enumerate(ins):
                with m.Case(k):
                    m.d.comb += [cur_valid.eq(s.valid), s.ready.eq(self.out.ready),
                                 self.out.valid.eq(s.valid), self.out.payload.eq(s.payload)]
        with m.If(advance):
            m.d.sync += sel.eq(Mux(sel == self.n - 1, 0, sel + 1))
        return m


class PacketTx(wiring.Component):
    """Frames packets: END, then type, sequence number, payload, CRC (SLIP-escaped),
    then END.

    All ports are in the ``sync`` domain.

    The packet stays on ``pkt`` while it is sent and is taken (``ready``) with its last
    byte, so the framer keeps no copy (the source must hold its payload while
    ``valid``, as a stream does).

    Members
    -------
    pkt : In(stream.Signature(TxPacket))
    bytes_out : Out(stream.Signature(8))
    seq : Out(8)
        Sequence number of the next packet.
    """

    pkt: In(stream.Signature(TxPacket))
    bytes_out: Out(stream.Signature(8))
    seq: Out(8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc_ = _crc16()
        # The byte to send next is fetched from the waiting packet into a register
        # (states FETCH, FETCH_BYTE) before PREP looks at it: the packet comes through
        # the sender's multiplexers, far from here.
        length = self.pkt.payload.length
        ptype, body_byte, word = Signal(8), Signal(8), Signal(32)
        index = Signal(range(MAX_PAYLOAD))
        phase = Signal(range(MAX_PAYLOAD + 6))
        esc_sent = Signal()
        b = self._next_byte(m, phase, esc_sent, ptype, body_byte, crc_)

        # The next byte and what sending it does, registered in PREP (one cycle before
        # each SEND), so SEND starts from flip-flops.
        out_q, raw_q = Signal(8), Signal(8)
        adv_q, body_q, start_q, shift_q, end_q = (
            Signal(name=n) for n in ("adv_q", "body_q", "start_q", "shift_q", "end_q"))
        m.d.comb += self.bytes_out.payload.eq(out_q)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.pkt.valid):
                    m.d.sync += [phase.eq(0), esc_sent.eq(0), index.eq(0)]
                    m.next = "LEAD"
            with m.State("LEAD"):
                # A leading END closes off whatever a torn earlier packet left behind.
                m.d.comb += [self.bytes_out.valid.eq(1), self.bytes_out.payload.eq(SLIP_END)]
                m.d.sync += [b.len2.eq(length + 2), b.len3.eq(length + 3),
                             b.len4.eq(length + 4)]
                with m.If(self.bytes_out.ready):
                    m.next = "FETCH"
            # In two steps: the 32-bit word, then the byte (each a short mux).
            with m.State("FETCH"):
                m.d.sync += [ptype.eq(self.pkt.payload.type),
                             word.eq(self.pkt.payload.payload.word_select(index[2:], 32))]
                m.next = "FETCH_BYTE"
            with m.State("FETCH_BYTE"):
                m.d.sync += body_byte.eq(word.word_select(index[:2], 8))
                m.next = "PREP"
            with m.State("PREP"):
                # (After the last body byte, the CRC register holds it from this cycle.)
                m.d.sync += [out_q.eq(b.out), raw_q.eq(b.raw),
                             adv_q.eq(~(b.special & ~esc_sent)),
                             body_q.eq(b.is_body), start_q.eq(phase == 0),
                             shift_q.eq((phase >= 2) & b.is_body), end_q.eq(b.is_end)]
                m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += [self.bytes_out.valid.eq(1), self.bytes_out.payload.eq(out_q)]
                with m.If(self.bytes_out.ready):
                    m.next = "FETCH"
                    with m.If(~adv_q):
                        m.d.sync += esc_sent.eq(1)
                    with m.Else():
                        m.d.sync += [esc_sent.eq(0), phase.eq(phase + 1)]
                        with m.If(body_q):
                            m.d.comb += [crc_.valid.eq(1), crc_.data.eq(raw_q),
                                         crc_.start.eq(start_q)]
                        with m.If(shift_q):
                            m.d.sync += index.eq(index + 1)
                        with m.If(end_q):
                            m.d.sync += self.seq.eq(self.seq + 1)
                            m.d.comb += self.pkt.ready.eq(1)
                            m.next = "IDLE"
        return m

    def _next_byte(self, m, phase, esc_sent, ptype, body_byte, crc_):
        """The byte at ``phase`` of the frame after the leading END (type, sequence
        number, payload, CRC, END): ``raw``, and ``out`` as sent (SLIP-escaped: an
        escape byte first when ``esc_sent`` is low, then the escaped code)."""
        raw = Signal(8)
        is_body = Signal()
        is_end = Signal()
        # length + k, registered in LEAD (at least one cycle before SEND needs them).
        len2, len3, len4 = (Signal(range(MAX_PAYLOAD + 6), name=f"len{k}")
                            for k in range(2, 5))
        m.d.comb += [
            is_body.eq(phase < len2),
            is_end.eq(phase == len4),
        ]
        with m.If(phase == 0):
            m.d.comb += raw.eq(ptype)
        with m.Elif(phase == 1):
            m.d.comb += raw.eq(self.seq)
        with m.Elif(is_body):
            m.d.comb += raw.eq(body_byte)
        with m.Elif(phase == len2):
            m.d.comb += raw.eq(crc_.crc[8:16])
        with m.Elif(phase == len3):
            m.d.comb += raw.eq(crc_.crc[0:8])
        with m.Else():
            m.d.comb += raw.eq(SLIP_END)

        special = Signal()
        m.d.comb += special.eq(~is_end & ((raw == SLIP_END) | (raw == SLIP_ESC)))
        out = Signal(8)
        with m.If(special & ~esc_sent):
            m.d.comb += out.eq(SLIP_ESC)
        with m.Elif(special):
            m.d.comb += out.eq(Mux(raw == SLIP_END, SLIP_ESC_END, SLIP_ESC_ESC))
        with m.Else():
            m.d.comb += out.eq(raw)
        return SimpleNamespace(raw=raw, is_body=is_body, is_end=is_end, special=special,
                               out=out, len2=len2, len3=len3, len4=len4)

