# SPDX-License-Identifier: BSD-2-Clause
"""The stream records are declared once (rtrig.records): the gateware's Amaranth
layout, the host's numpy wire dtype and the payload length agree bit for bit."""

import random

import numpy as np
import pytest

from rtrig.gateware.latency_matcher import LatencyRecord
from rtrig.gateware.top import EventRecord, TruthWireRecord
from rtrig.host.rig.decode import (
    _STREAMS,
    WIRE_EVENT,
    WIRE_LATENCY,
    WIRE_TRUTH,
    decode_events,
    decode_latency,
    decode_truth,
)
from rtrig.protocol import PAYLOAD_LEN, ChanFlags, PacketType
from rtrig.records import EVENT, LATENCY, RECORDS, TRUTH, Field, WireRecord


def _random_values(record, rnd):
    return {f.name: rnd.randrange(1 << f.bits) for f in record.fields
            if not f.name.startswith("_")}


def _amaranth_bytes(record, values):
    """The payload bytes the gateware sends: the record's bits as one integer."""
    layout = record.struct().as_shape()
    bits = layout.const(values).as_bits()
    return bits.to_bytes(record.payload_len, "little")


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_layout_dtype_and_length_agree(name):
    record = RECORDS[name]
    rnd = random.Random(name)
    assert record.struct().as_shape().size == 8 * record.payload_len
    assert record.wire_dtype().itemsize == record.payload_len
    assert PAYLOAD_LEN[PacketType[name]] == record.payload_len
    assert _STREAMS[PacketType[name]] == record.payload_len
    for _ in range(50):
        values = _random_values(record, rnd)
        raw = _amaranth_bytes(record, values)
        assert raw == record.pack(**values)
        wire = np.frombuffer(raw, dtype=record.wire_dtype())
        for field, value in values.items():
            assert int(record.unpack(wire, field)[0]) == value, field


def test_gateware_uses_the_declared_records():
    assert LatencyRecord is LATENCY.struct()
    assert EventRecord is EVENT.struct()
    assert TruthWireRecord is TRUTH.struct()
    assert (WIRE_LATENCY, WIRE_EVENT, WIRE_TRUTH) == (
        LATENCY.wire_dtype(), EVENT.wire_dtype(), TRUTH.wire_dtype())


def test_payload_lengths_are_the_documented_ones():
    # docs/protocol.md: EVENT 7, LATENCY 19, TRUTH 13 bytes.
    assert (EVENT.payload_len, LATENCY.payload_len, TRUTH.payload_len) == (7, 19, 13)


def test_host_decoders_read_gateware_bytes():
    lat = dict(pulse=0xDEADBEEF, stim_t=(1 << 47) | 12345, channel=1, missed=1,
               latency=7, completion=0xFFFFFFFF)
    got = decode_latency(_amaranth_bytes(LATENCY, lat))[0]
    assert (int(got["pulse"]), int(got["stim_t"]), int(got["channel"]), int(got["flags"]),
            int(got["latency"]), int(got["completion"])) == (
        0xDEADBEEF, (1 << 47) | 12345, 1, ChanFlags.MISSED, 7, 0xFFFFFFFF)
    ev = decode_events(_amaranth_bytes(EVENT, dict(t=(1 << 48) - 1, input=15, rising=1)))[0]
    assert (int(ev["t"]), int(ev["input"]), int(ev["rising"])) == ((1 << 48) - 1, 15, 1)
    tr = decode_truth(_amaranth_bytes(TRUTH, dict(pulse=3, channel=1, missed=0,
                                                  latency=100, completion=150)))[0]
    assert (int(tr["pulse"]), int(tr["channel"]), int(tr["flags"]),
            int(tr["latency"]), int(tr["completion"])) == (3, 1, 0, 100, 150)


def test_bad_declarations_are_refused():
    with pytest.raises(ValueError, match="whole number of bytes"):
        WireRecord("X", (Field("a", 8), Field("b", 3)))
    with pytest.raises(ValueError, match="byte boundary"):
        WireRecord("X", (Field("a", 4), Field("b", 8), Field("c", 4)))
    with pytest.raises(ValueError, match="does not fit"):
        EVENT.pack(input=16)
