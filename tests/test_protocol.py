# SPDX-License-Identifier: BSD-2-Clause
"""Framing and CRC: round trips, and garbage that must never crash the decoder."""

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rtrig.framing import SlipDecoder, crc16, frame
from rtrig.protocol import (
    REGISTERS,
    SLIP_END,
    SLIP_ESC,
    SLIP_ESC_END,
    SLIP_ESC_ESC,
    PacketType,
    Reg,
)


def test_crc16_check_value():
    # CRC-16/IBM-3740 (CCITT-FALSE) check value from the CRC catalogue.
    assert crc16(b"123456789") == 0x29B1


@given(st.integers(0, 255), st.integers(0, 255), st.binary(max_size=20),
       st.integers(1, 4))
def test_leading_zero_bytes_change_the_crc(ptype, seq, payload, zeros):
    # A zero byte slipped in after the delimiter must not leave a valid packet
    # (with CRC-16/XMODEM's initial value of 0 it did: 0x00 bytes were invisible).
    body = bytes((ptype, seq)) + payload
    good = body + crc16(body).to_bytes(2, "big")
    assert crc16(good) == 0
    assert crc16(bytes(zeros) + good) != 0


def test_register_map_is_consistent():
    addrs = [r.addr for r in REGISTERS]
    assert len(addrs) == len(set(addrs)), "duplicate register address"
    assert Reg.ID == 0x000 and Reg.STIM_CTRL == 0x020


@given(st.integers(0, 255), st.integers(0, 255), st.binary(max_size=40))
def test_round_trip(ptype, seq, payload):
    d = SlipDecoder()
    assert d.feed(frame(ptype, seq, payload)) == [(ptype, seq, payload)]
    assert d.crc_errors == 0


def test_escapes_delimiters_in_payload():
    payload = bytes([SLIP_END, SLIP_ESC, SLIP_END, 0x00])
    wire = frame(PacketType.READ_DATA, 7, payload)
    assert wire.count(bytes([SLIP_END])) == 2          # only the two delimiters
    assert SlipDecoder().feed(wire) == [(PacketType.READ_DATA, 7, payload)]


def test_corrupted_packet_is_counted_and_next_one_survives():
    good = frame(PacketType.EVENT, 1, b"\x01\x02\x03")
    bad = bytearray(good)
    bad[2] ^= 0x40
    d = SlipDecoder()
    out = d.feed(bytes(bad) + good)
    assert out == [(PacketType.EVENT, 1, b"\x01\x02\x03")]
    assert d.crc_errors == 1


def test_truncated_packet_resynchronises():
    good = frame(PacketType.LATENCY, 3, bytes(range(19)))
    d = SlipDecoder()
    out = d.feed(good[:9] + good)   # a torn packet, then a whole one
    assert out == [(PacketType.LATENCY, 3, bytes(range(19)))]
    assert d.crc_errors == 1


@settings(max_examples=300)
@given(st.binary(max_size=600))
def test_garbage_never_crashes_and_is_counted(data):
    d = SlipDecoder()
    packets = d.feed(data)
    for p in packets:            # anything accepted carried a valid CRC
        assert len(p) == 3
    # every delimited non-empty chunk is either a packet or an error
    assert len(packets) + d.crc_errors <= data.count(bytes([SLIP_END])) + 1


def _feed_in_pieces(decoder, data, rnd, longest):
    """Feed ``data`` to ``decoder`` in pieces of 1..``longest`` bytes; the packets."""
    out, pos = [], 0
    while pos < len(data):
        n = rnd.randint(1, longest)
        out += decoder.feed(data[pos:pos + n])
        pos += n
    return out


@given(st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=20), st.randoms())
def test_stream_split_anywhere(payloads, rnd):
    wire = b"".join(frame(PacketType.EVENT, i, p) for i, p in enumerate(payloads))
    d = SlipDecoder()
    out = _feed_in_pieces(d, wire, rnd, 17)
    assert [p for _, _, p in out] == payloads
    assert d.crc_errors == 0


def test_random_bit_errors_are_detected():
    rnd = random.Random(1)
    d = SlipDecoder()
    n_ok = 0
    for i in range(500):
        payload = bytes(rnd.randrange(256) for _ in range(19))
        wire = bytearray(frame(PacketType.LATENCY, i & 0xFF, payload))
        flip = rnd.randrange(len(wire) - 1)
        wire[flip] ^= 1 << rnd.randrange(8)
        for _, _, p in d.feed(bytes(wire)):
            n_ok += 1
            assert p == payload   # a packet that passes the CRC is the one sent
    assert d.crc_errors >= 490


# SLIP resynchronisation: every END resets the decoder -------------------------------

#: Bytes that stress the decoder's escape state: the SLIP specials, zero, and others.
_SLIP_HEAVY = st.sampled_from([SLIP_END, SLIP_ESC, SLIP_ESC_END, SLIP_ESC_ESC, 0x00, 0x41])


def reference_decode(data):
    """A plain reading of the framing: the packets and bad packets of every chunk
    closed by an END (the bytes after the last END are not a chunk yet)."""
    packets, bad = [], 0
    for chunk in data.split(bytes([SLIP_END]))[:-1]:
        if not chunk:
            continue
        body, it, ok = bytearray(), iter(chunk), True
        for b in it:
            if b == SLIP_ESC:
                nxt = next(it, None)
                if nxt not in (SLIP_ESC_END, SLIP_ESC_ESC):
                    ok = False
                    break
                b = SLIP_END if nxt == SLIP_ESC_END else SLIP_ESC
            body.append(b)
        if not ok or len(body) > SlipDecoder.MAX_BODY or len(body) < 4 or crc16(body):
            bad += 1
        else:
            packets.append((body[0], body[1], bytes(body[2:-2])))
    return packets, bad


def test_esc_then_end_does_not_eat_the_next_packet():
    good = frame(PacketType.LATENCY, 9, bytes(range(19)))
    d = SlipDecoder()
    assert d.feed(bytes([SLIP_END, SLIP_ESC, SLIP_END]) + good) == \
        [(PacketType.LATENCY, 9, bytes(range(19)))]
    assert d.crc_errors == 1            # the cut-off escape is one bad packet


@settings(max_examples=2000)
@given(st.lists(_SLIP_HEAVY, max_size=12), st.integers(0, 255), st.binary(max_size=20))
def test_a_good_packet_survives_any_junk_before_it(junk, seq, payload):
    d = SlipDecoder()
    out = d.feed(bytes(junk) + frame(PacketType.EVENT, seq, payload))
    assert out[-1:] == [(PacketType.EVENT, seq, payload)]


@settings(max_examples=1000)
@given(st.lists(st.one_of(st.lists(_SLIP_HEAVY, max_size=8).map(bytes),
                          st.builds(frame, st.just(PacketType.EVENT), st.integers(0, 255),
                                    st.binary(max_size=12))), max_size=12),
       st.randoms())
def test_decoder_matches_the_reference_in_any_pieces(parts, rnd):
    data = b"".join(parts)
    d = SlipDecoder()
    out = _feed_in_pieces(d, data, rnd, 9)
    assert (out, d.crc_errors) == reference_decode(data)


def test_framing_and_protocol_import_no_circle():
    # rtrig.framing builds on rtrig.protocol (SLIP bytes); the protocol, which the
    # gateware is built from, must not import the host's framing back.
    import ast

    import rtrig.framing
    import rtrig.protocol
    import rtrig.records

    def imports(module):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}

    assert "framing" not in imports(rtrig.protocol)
    assert "protocol" in imports(rtrig.framing)
    assert not {"framing", "protocol"} & imports(rtrig.records)
