# SPDX-License-Identifier: BSD-2-Clause
"""The host's side of the packet framing of :mod:`rtrig.protocol` (docs/protocol.md).

``END SLIP( type:u8 | seq:u8 | payload | crc16:u16 big-endian ) END``: the CRC and
SLIP encoder with which the host sends, the incremental decoder with which it
receives. Kept apart from :mod:`rtrig.protocol`, whose register map and packet
layouts the gateware is built from: this module is host code only, so changing it
does not change the gateware hash.
"""

import binascii

from .protocol import SLIP_END, SLIP_ESC, SLIP_ESC_END, SLIP_ESC_ESC

__all__ = ["crc16", "slip_encode", "frame", "SlipDecoder"]


def crc16(data: bytes) -> int:
    """CRC-16/IBM-3740 (CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF) of ``data``."""
    return binascii.crc_hqx(bytes(data), 0xFFFF)


def slip_encode(body: bytes) -> bytes:
    out = bytearray()
    for b in body:
        if b == SLIP_END:
            out += bytes((SLIP_ESC, SLIP_ESC_END))
        elif b == SLIP_ESC:
            out += bytes((SLIP_ESC, SLIP_ESC_ESC))
        else:
            out.append(b)
    out.append(SLIP_END)
    return bytes(out)


def frame(ptype: int, seq: int, payload: bytes) -> bytes:
    """Encode one packet: body, CRC and SLIP framing."""
    body = bytes((int(ptype), seq & 0xFF)) + bytes(payload)
    return bytes((SLIP_END,)) + slip_encode(body + crc16(body).to_bytes(2, "big"))


class SlipDecoder:
    """Incremental SLIP decoder with CRC check.

    ``feed(data)`` returns a list of ``(type, seq, payload)`` for every good packet
    completed by ``data``; bad packets (CRC, too short, bad escape) are counted in
    ``crc_errors`` and dropped; decoding resynchronises on the next ``END``: every
    ``END`` resets the decoder, whatever came before it (an ``ESC`` cut off by a
    delimiter is a bad packet, never an escape of the next packet's first byte).
    """

    MAX_BODY = 64

    def __init__(self):
        self._buf = bytearray()
        self._esc = False
        self._bad = False
        self.crc_errors = 0
        self.packets = 0

    def feed(self, data: bytes) -> list:
        out = []
        for b in data:
            if b == SLIP_END:
                if self._buf or self._bad or self._esc:
                    pkt = self._finish()
                    if pkt is not None:
                        out.append(pkt)
                continue
            if self._bad:
                continue
            if self._esc:
                self._esc = False
                if b == SLIP_ESC_END:
                    b = SLIP_END
                elif b == SLIP_ESC_ESC:
                    b = SLIP_ESC
                else:
                    self._bad = True
                    continue
            elif b == SLIP_ESC:
                self._esc = True
                continue
            if len(self._buf) >= self.MAX_BODY:
                self._bad = True
                continue
            self._buf.append(b)
        return out

    def _finish(self):
        body, bad = bytes(self._buf), self._bad or self._esc
        self._buf.clear()
        self._esc = self._bad = False
        if bad or len(body) < 4 or crc16(body) != 0:
            self.crc_errors += 1
            return None
        self.packets += 1
        return body[0], body[1], body[2:-2]
