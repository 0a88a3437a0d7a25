# SPDX-License-Identifier: BSD-2-Clause
"""The stream packets' payloads: their wire layouts and their decoding into records."""

import numpy as np

from ...protocol import ChanFlags, PacketType
from ...records import EVENT, EVENT_DTYPE, LATENCY, LATENCY_DTYPE, RECORDS, TRUTH, TRUTH_DTYPE

__all__ = ["WIRE_LATENCY", "WIRE_EVENT", "WIRE_TRUTH", "decode_latency", "decode_events",
           "decode_truth", "payload_bytes"]

#: Wire layouts of the stream payloads (packed, little-endian), derived from the
#: records' one declaration in :mod:`rtrig.records`.
WIRE_LATENCY = LATENCY.wire_dtype()
WIRE_EVENT = EVENT.wire_dtype()
WIRE_TRUTH = TRUTH.wire_dtype()
#: Bits of the channel byte that are flags (:class:`rtrig.protocol.ChanFlags`).
_FLAG_BITS = 0xFF & ~ChanFlags.CHANNEL_MASK


def decode_latency(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_LATENCY)
    out = np.empty(len(w), dtype=LATENCY_DTYPE)
    out["pulse"] = LATENCY.unpack(w, "pulse")
    out["stim_t"] = LATENCY.unpack(w, "stim_t")
    out["channel"] = LATENCY.unpack(w, "channel")
    out["flags"] = LATENCY.byte(w, "channel") & _FLAG_BITS
    out["latency"] = LATENCY.unpack(w, "latency")
    out["completion"] = LATENCY.unpack(w, "completion")
    return out


def decode_events(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_EVENT)
    out = np.empty(len(w), dtype=EVENT_DTYPE)
    out["t"] = EVENT.unpack(w, "t")
    out["input"] = EVENT.unpack(w, "input")
    out["rising"] = EVENT.unpack(w, "rising")
    return out


def decode_truth(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_TRUTH)
    out = np.empty(len(w), dtype=TRUTH_DTYPE)
    out["pulse"] = TRUTH.unpack(w, "pulse")
    out["channel"] = TRUTH.unpack(w, "channel")
    out["flags"] = TRUTH.byte(w, "channel") & _FLAG_BITS
    out["latency"] = TRUTH.unpack(w, "latency")
    out["completion"] = TRUTH.unpack(w, "completion")
    return out


#: Payload bytes of each stream packet type.
_STREAMS = {PacketType[name]: record.payload_len for name, record in RECORDS.items()}
#: Offset of the LATENCY payload's channel byte (the loss counter reads it raw).
_CHAN_BYTE = WIRE_LATENCY.fields["channel"][1]


def payload_bytes(stream):
    """Payload bytes of one record of ``stream`` (``"LATENCY"``, ``"EVENT"``, ``"TRUTH"``)."""
    return _STREAMS[PacketType[stream]]
