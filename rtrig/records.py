# SPDX-License-Identifier: BSD-2-Clause
"""The rig's stream records, each declared once (docs/protocol.md).

A record is a list of bit fields, least significant first, as the gateware packs it
and the link carries it (the payload bytes are the record's bits, little-endian). From
that one declaration come

- its Amaranth layout (:meth:`WireRecord.struct`, the gateware's ``data.Struct``);
- its numpy wire dtype (:meth:`WireRecord.wire_dtype`, the packed payload as the host
  receives it) and the readers of its fields (:meth:`WireRecord.unpack`);
- its payload length in bytes (:attr:`WireRecord.payload_len`).

The decoded forms the host keeps and capture files store (:data:`LATENCY_DTYPE`,
:data:`EVENT_DTYPE`, :data:`TRUTH_DTYPE`) are fixed file formats: old capture files
stay readable because they never change.

The gateware is built from this module: editing it changes the gateware hash
(register ``BUILD_HASH``), as editing :mod:`rtrig.protocol` does.
"""

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["Field", "WireRecord", "EVENT", "LATENCY", "TRUTH", "RECORDS",
           "EVENT_DTYPE", "LATENCY_DTYPE", "TRUTH_DTYPE"]


@dataclass(frozen=True)
class Field:
    """``bits`` bits named ``name``; names starting with ``_`` are padding (sent 0)."""
    name: str
    bits: int


# numpy formats of the whole-byte field widths; 48-bit times travel as lo/hi halves.
_FORMATS = {8: "u1", 16: "<u2", 32: "<u4", 64: "<u8"}


@dataclass(frozen=True)
class WireRecord:
    """A stream record: bit fields, least significant first.

    Fields of whole bytes must start on a byte boundary (they become numpy fields of
    their own, a 48-bit one as ``<name>_lo`` ``<u4`` and ``<name>_hi`` ``<u2``); fields
    narrower than a byte share a byte (one ``u1`` numpy field named after its first
    field) and must fill it exactly.
    """
    name: str
    fields: tuple

    def __post_init__(self):
        bits = sum(f.bits for f in self.fields)
        if bits % 8:
            raise ValueError(f"{self.name}: {bits} bits is not a whole number of bytes")
        self._wire()        # checks the byte alignment

    @property
    def payload_len(self) -> int:
        """Bytes of one record on the wire."""
        return sum(f.bits for f in self.fields) // 8

    def layout(self) -> dict:
        """Field name → width in bits, least significant first (an Amaranth
        ``StructLayout`` mapping)."""
        return {f.name: f.bits for f in self.fields}

    def struct(self):
        """The Amaranth ``data.Struct`` of this record (one class per record)."""
        return _struct(self)

    def _wire(self):
        """(numpy fields, where each record field is: name → (numpy field, shift, mask)
        or, for a 48-bit field, (lo field, hi field))."""
        names, formats, offsets, where = [], [], [], {}
        pos, byte_field = 0, None
        for f in self.fields:
            if f.bits >= 8:
                if pos % 8:
                    raise ValueError(f"{self.name}.{f.name} does not start on a byte boundary")
                if f.bits == 48:
                    lo, hi = f"{f.name}_lo", f"{f.name}_hi"
                    names += [lo, hi]
                    formats += ["<u4", "<u2"]
                    offsets += [pos // 8, pos // 8 + 4]
                    where[f.name] = (lo, hi)
                elif f.bits in _FORMATS:
                    names.append(f.name)
                    formats.append(_FORMATS[f.bits])
                    offsets.append(pos // 8)
                    where[f.name] = (f.name, 0, (1 << f.bits) - 1)
                else:
                    raise ValueError(f"{self.name}.{f.name}: no numpy type of {f.bits} bits")
            else:
                if pos % 8 == 0:
                    byte_field = f.name
                    names.append(f.name)
                    formats.append("u1")
                    offsets.append(pos // 8)
                elif (pos % 8) + f.bits > 8:
                    raise ValueError(f"{self.name}.{f.name} crosses a byte boundary")
                where[f.name] = (byte_field, pos % 8, (1 << f.bits) - 1)
            pos += f.bits
        return names, formats, offsets, where

    def wire_dtype(self) -> np.dtype:
        """The packed payload as a numpy dtype (itemsize :attr:`payload_len`)."""
        names, formats, offsets, _ = self._wire()
        return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                         "itemsize": self.payload_len})

    def unpack(self, wire, name):
        """Field ``name`` of the records in ``wire`` (an array of :meth:`wire_dtype`),
        as unsigned integers (``uint64`` for a 48-bit field)."""
        spec = self._wire()[3][name]
        if len(spec) == 2:
            lo, hi = spec
            return wire[lo].astype(np.uint64) | (wire[hi].astype(np.uint64) << np.uint64(32))
        column, shift, mask = spec
        values = wire[column]
        if shift == 0 and mask == np.iinfo(values.dtype).max:
            return values
        return (values >> shift) & mask

    def byte(self, wire, name):
        """The whole byte that sub-byte field ``name`` shares with its neighbours."""
        return wire[self._wire()[3][name][0]]

    def pack(self, **values) -> bytes:
        """One record's payload bytes (fields not given are 0); for tests and twins."""
        word, pos = 0, 0
        for f in self.fields:
            v = int(values.pop(f.name, 0))
            if not 0 <= v < 1 << f.bits:
                raise ValueError(f"{self.name}.{f.name} = {v} does not fit {f.bits} bits")
            word |= v << pos
            pos += f.bits
        if values:
            raise TypeError(f"{self.name} has no field {sorted(values)[0]!r}")
        return word.to_bytes(self.payload_len, "little")


@functools.cache
def _struct(record):
    # Amaranth is imported here, not at the top: the host reads records without it.
    from amaranth.lib import data
    return type(record.name, (data.Struct,), {
        "__annotations__": record.layout(),
        "__doc__": f"Wire layout of a {record.name} payload ({record.payload_len} bytes, "
                   "see :mod:`rtrig.records`).",
        "__module__": __name__,
    })


#: A raw event: an edge on an input (``input`` 0..5) or a stimulus output
#: (:data:`rtrig.protocol.STIM_INPUT`); ``t`` is its pin time in ticks.
EVENT = WireRecord("EventRecord", (
    Field("t", 48),
    Field("input", 4), Field("_pad", 3), Field("rising", 1),
))

#: One response channel's answer to one stimulus pulse. ``latency`` is response rise
#: minus stimulus rise, ``completion`` response fall minus stimulus rise, in ticks;
#: both 0 when ``missed``. Bits 4..6 of the ``channel`` byte are reserved (0).
LATENCY = WireRecord("LatencyRecord", (
    Field("pulse", 32),
    Field("stim_t", 48),
    Field("channel", 4), Field("_pad", 3), Field("missed", 1),
    Field("latency", 32),
    Field("completion", 32),
))

#: The model target's truth for one pulse and channel: a LATENCY record without
#: ``stim_t`` (times in ticks from the irq rising edge).
TRUTH = WireRecord("TruthWireRecord", (
    Field("pulse", 32),
    Field("channel", 4), Field("_pad", 3), Field("missed", 1),
    Field("latency", 32),
    Field("completion", 32),
))

#: Every stream record by the name of its packet type (:class:`rtrig.protocol.PacketType`).
RECORDS = {"EVENT": EVENT, "LATENCY": LATENCY, "TRUTH": TRUTH}


# Decoded forms (host arrays and capture files). ``flags`` is the upper nibble of the
# wire's channel byte (:class:`rtrig.protocol.ChanFlags`).

#: A raw event, decoded.
EVENT_DTYPE = np.dtype([("t", "<u8"), ("input", "u1"), ("rising", "u1")])
#: A latency record, decoded.
LATENCY_DTYPE = np.dtype([
    ("pulse", "<u4"), ("stim_t", "<u8"), ("channel", "u1"), ("flags", "u1"),
    ("latency", "<u4"), ("completion", "<u4"),
])
#: A truth record, decoded (the LATENCY layout without ``stim_t``).
TRUTH_DTYPE = np.dtype([
    ("pulse", "<u4"), ("channel", "u1"), ("flags", "u1"),
    ("latency", "<u4"), ("completion", "<u4"),
])
