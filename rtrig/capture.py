# SPDX-License-Identifier: BSD-2-Clause
"""Capture files: versioned, self-describing, written incrementally (docs/capture-format.md).

Layout (all integers little-endian)::

    magic  b"RTRIGCAP"                8 bytes
    version u16, reserved u16         4 bytes
    chunk*                            until end of file

    chunk: kind (4 ASCII bytes) | length u32 | crc32 u32 | payload (length bytes)

``crc32`` is the CRC-32 (:func:`zlib.crc32`) of the chunk's offset in the file (u64),
its kind, its length and its payload: it vouches for the chunk *at that place*, so a
copy of an earlier chunk does not pass. Format 1 had no ``crc32`` field (chunk
header ``kind | length``); such files are still read, without that check.

Chunk kinds:

``META``  JSON object: what was measured (first chunk; exactly one).
``LATR``  latency records, a packed array of :data:`rtrig.protocol.LATENCY_DTYPE`.
``EVNT``  raw events, :data:`rtrig.protocol.EVENT_DTYPE`.
``TRTH``  model truth records, :data:`rtrig.protocol.TRUTH_DTYPE`.
``STAT``  JSON object: on-chip statistics read at the end.
``STEP``  JSON object: one step of a sweep.
``FINL``  JSON object: how the capture ended (counters, status); absent if the
          capture was cut off.

Every chunk is flushed as soon as it is written, so a capture stopped by Ctrl-C, a
crash or an unplugged rig keeps every complete chunk. Later chunks of the same kind
append. The readers stop at the first chunk that is cut short, has an impossible
header (unknown kind, ``META`` anywhere but first, an array length that is not a
whole number of records) or fails its checksum: they return the chunks before it and
report it as ``truncated`` at ``truncated_at`` (its offset), so a torn write followed
by zeros or garbage never loads as records. A file that has no intact ``META``
chunk is not readable (:class:`~rtrig.errors.CaptureFormatError`).

:func:`load` holds every record in memory; :func:`scan` indexes the chunks and
reads the records a block at a time (:class:`CaptureChunks`), for reductions of
captures larger than memory.
"""

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from .errors import CaptureFormatError
from .outputs import check_input, check_output
from .protocol import EVENT_DTYPE, LATENCY_DTYPE, TRUTH_DTYPE

__all__ = ["FORMAT_VERSION", "CaptureWriter", "Capture", "load", "CHANNEL_NAMES",
           "CaptureChunks", "scan", "BLOCK_RECORDS"]

MAGIC = b"RTRIGCAP"
FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sHH")
_CHUNK = struct.Struct("<4sII")          # kind, length, crc32
_CHUNK_V1 = struct.Struct("<4sI")        # format 1: kind, length (no checksum)
_SUMMED = struct.Struct("<Q4sI")         # what crc32 covers before the payload
_ARRAYS = {b"LATR": LATENCY_DTYPE, b"EVNT": EVENT_DTYPE, b"TRTH": TRUTH_DTYPE}
_JSON_ONE = {b"META": "meta", b"FINL": "final", b"STAT": "stats"}
_KINDS = set(_ARRAYS) | set(_JSON_ONE) | {b"STEP"}
#: Bytes read at a time while checking an array chunk that :func:`scan` does not keep.
_CRC_READ = 1 << 22

#: Names of the latency channels, by channel number.
CHANNEL_NAMES = {0: "isr", 1: "app"}

#: Most records :meth:`CaptureChunks.blocks` reads at once (2^20: 23 MB of latency
#: records), so a reduction's memory does not depend on how the capture was chunked.
BLOCK_RECORDS = 1 << 20


def _checksum(offset, kind, payload):
    """The ``crc32`` of a chunk of format 2 at ``offset`` (see the module docstring)."""
    return zlib.crc32(payload, zlib.crc32(_SUMMED.pack(offset, kind, len(payload))))


class CaptureWriter:
    """Appends chunks to a new capture file (format :data:`FORMAT_VERSION`, every
    chunk with its checksum); use as a context manager."""

    def __init__(self, path, meta):
        self.path = check_output(path)   # never a device, FIFO or socket in its place
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "wb")
        self._f.write(_HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self._offset = _HEADER.size
        self.chunk(b"META", json.dumps(meta, sort_keys=True).encode())
        self.closed = False

    def chunk(self, kind, payload):
        assert kind in _KINDS, kind
        crc = _checksum(self._offset, kind, payload)
        self._f.write(_CHUNK.pack(kind, len(payload), crc) + payload)
        self._f.flush()
        self._offset += _CHUNK.size + len(payload)

    def json(self, kind, obj):
        self.chunk(kind, json.dumps(obj, sort_keys=True).encode())

    def array(self, kind, arr):
        if len(arr):
            assert arr.dtype == _ARRAYS[kind]
            self.chunk(kind, np.ascontiguousarray(arr).tobytes())

    def close(self, final=None):
        if self.closed:
            return
        if final is not None:
            self.json(b"FINL", final)
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _read(cap, keep_arrays):
    """Read the chunks of ``cap.path`` in file order into ``cap``.

    Sets the attributes :class:`Capture` and :class:`CaptureChunks` share (``version``,
    ``meta``, ``final``, ``stats``, ``steps``, ``truncated``, ``truncated_at``) and
    returns the array chunks, ``{kind: [(payload offset, length, payload)]}``, the
    payload bytes being kept only when ``keep_arrays``. Reading stops at the first
    chunk :func:`_chunks` finds damaged, or whose JSON does not parse.
    """
    path = cap.path
    cap.meta, cap.final, cap.stats = None, None, None
    cap.steps = []
    cap.truncated, cap.truncated_at = False, None
    arrays = {k: [] for k in _ARRAYS}
    check_input(path, CaptureFormatError)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size or head[:8] != MAGIC:
                raise CaptureFormatError(
                    f"{path} is not an rtrig capture file (no magic at byte 0)")
            _, cap.version, _ = _HEADER.unpack(head)
            if cap.version > FORMAT_VERSION:
                raise CaptureFormatError(
                    f"{path} has capture format {cap.version}; this rtrig reads up to "
                    f"{FORMAT_VERSION}", hint="upgrade rtrig")
            for off, kind, start, length, payload in _chunks(f, size, cap.version,
                                                             keep_arrays):
                if kind in _ARRAYS:
                    arrays[kind].append((start, length, payload))
                    continue
                try:
                    obj = None if kind is None else json.loads(payload)
                except (ValueError, RecursionError):   # bad UTF-8 or JSON
                    kind = None
                if kind is None:
                    cap.truncated, cap.truncated_at = True, off
                    break
                if not isinstance(obj, dict):
                    raise CaptureFormatError(
                        f"{path}: its {kind.decode()} chunk (at byte {off}) holds a JSON "
                        f"{_json_type(obj)}, not an object", hint="was it written by rtrig?")
                if kind == b"STEP":
                    cap.steps.append(obj)
                else:
                    setattr(cap, _JSON_ONE[kind], obj)
    except OSError as e:
        raise CaptureFormatError(f"cannot read {path}: {e.strerror or e}") from e
    if cap.meta is None:
        raise CaptureFormatError(f"{path} has no intact metadata chunk "
                                 f"(at byte {cap.truncated_at or _HEADER.size})")
    _check_meta(path, cap.meta)
    return arrays


def _json_type(obj):
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(obj), type(obj).__name__)


def _check_meta(path, meta):
    """What every reader relies on: the metadata is an object with a positive tick rate
    (times in the file are ticks of it), and channel names, when given, map channel
    numbers to names."""
    if not isinstance(meta, dict):
        raise CaptureFormatError(f"{path}: its metadata is not a JSON object")
    hz = meta.get("tick_hz")
    if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not 0 < hz < float("inf"):
        raise CaptureFormatError(f"{path}: its metadata has no valid tick_hz (got {hz!r}); "
                                 "its times cannot be converted", hint="was it written by rtrig?")
    names = meta.get("channel_names")
    if names is not None and not (
            isinstance(names, dict) and all(isinstance(v, str) for v in names.values())
            and all(k.isdigit() for k in names)):
        raise CaptureFormatError(
            f"{path}: its META chunk's channel_names is a JSON {_json_type(names)}, not an "
            "object of channel numbers to names", hint="was it written by rtrig?")


def _chunks(f, size, version, keep_arrays):
    """The chunks of an open capture file of ``size`` bytes after its header, in order.

    Yields ``(offset, kind, payload offset, length, payload)`` for each chunk that is
    whole, possible and (format 2) passes its checksum; ``payload`` is the bytes, or
    None for an array chunk when not ``keep_arrays``. At the first chunk that is not,
    yields ``(offset, None, 0, 0, None)`` and stops: nothing after it is vouched for.
    """
    head = _CHUNK if version >= 2 else _CHUNK_V1
    off = _HEADER.size
    while off < size:
        if off + head.size > size:
            break
        f.seek(off)
        kind, length, *crc = head.unpack(f.read(head.size))
        start = off + head.size
        dt = _ARRAYS.get(kind)
        if (start + length > size or kind not in _KINDS
                or (kind == b"META") != (off == _HEADER.size)
                or (crc and dt is not None and length % dt.itemsize)):
            break
        if dt is None or keep_arrays:
            payload = f.read(length)
            if len(payload) != length or (crc and crc[0] != _checksum(off, kind, payload)):
                break
        else:
            payload = None
            if crc:
                # checked a piece at a time: scan's memory does not grow with the chunk
                got = zlib.crc32(_SUMMED.pack(off, kind, length))
                for i in range(0, length, _CRC_READ):
                    got = zlib.crc32(f.read(min(_CRC_READ, length - i)), got)
                if got != crc[0]:
                    break
        yield off, kind, start, length, payload
        off = start + length
    if off < size:
        yield off, None, 0, 0, None


class _CaptureHeader:
    """What :class:`Capture` and :class:`CaptureChunks` both derive from the chunks
    :func:`_read` sets (``meta``, ``final``, ``truncated``)."""

    @property
    def tick_hz(self):
        return self.meta["tick_hz"]

    @property
    def complete(self):
        return self.final is not None and not self.truncated

    @property
    def channel_names(self):
        """Channel number → name: ``META["channel_names"]`` (interval channels), else
        :data:`CHANNEL_NAMES` (every file written before them)."""
        names = self.meta.get("channel_names")
        return {int(k): v for k, v in names.items()} if names else dict(CHANNEL_NAMES)

    def channel_name(self, c):
        return self.channel_names.get(int(c), f"ch{c}")


class Capture(_CaptureHeader):
    """A loaded capture: metadata and numpy arrays.

    Attributes
    ----------
    meta : dict
        What was measured (see docs/capture-format.md).
    final : dict or None
        How the capture ended; None when it was cut off.
    latency, events, truth : numpy structured arrays
        All records, in file order (``latency`` sorted by channel, then pulse).
    stats : dict or None
    steps : list of dict
        Sweep steps.
    truncated : bool
        Reading stopped at a damaged chunk: cut short (the capture was interrupted
        while writing), impossible or failing its checksum. Nothing from that chunk
        on is loaded.
    truncated_at : int or None
        The byte offset of that chunk; None when not ``truncated``.
    version : int
        The file's format; files of format 1 carry no checksums, so their chunks
        cannot be vouched for one by one.
    """

    def __init__(self, path):
        self.path = Path(path)
        parts = _read(self, keep_arrays=True)

        def cat(kind):
            dt = _ARRAYS[kind]
            # a partial record at a chunk's end (format 1 only) is ignored
            arrays = [np.frombuffer(p, dtype=dt, count=len(p) // dt.itemsize)
                      for _, _, p in parts[kind]]
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dt)

        lat = cat(b"LATR")
        self.latency = lat[np.lexsort((lat["pulse"], lat["channel"]))] if len(lat) else lat
        self.events = cat(b"EVNT")
        self.truth = cat(b"TRTH")

    def channels(self):
        """Names of the latency channels present in the capture."""
        return [self.channel_name(c) for c in sorted(set(self.latency["channel"]))]

    def channel(self, name):
        """Records of one channel (``"isr"``, ``"app"``, an interval or a number), by
        pulse."""
        num = {v: k for k, v in self.channel_names.items()}.get(name, name)
        return self.latency[self.latency["channel"] == int(num)]

    def __repr__(self):
        return (f"<Capture {self.path.name}: {len(self.latency)} latency records, "
                f"{len(self.events)} events, {'complete' if self.complete else 'partial'}>")


def load(path):
    """Load a capture file (the one call of docs/capture-format.md)."""
    return Capture(path)


class CaptureChunks(_CaptureHeader):
    """A capture file indexed chunk by chunk; its record arrays are read on demand.

    Opening reads the file once, a piece at a time, to check every chunk's checksum,
    and keeps the JSON chunks and the place and size of the array chunks, so its
    memory is the same for any number of records. The
    attributes are those of :class:`Capture` but the record arrays: ``path``,
    ``version``, ``meta``, ``final``, ``stats``, ``steps``, ``truncated``,
    ``truncated_at``, ``tick_hz`` and ``complete``. Chunks are read with the rules of
    :func:`load` (reading stops at the first damaged chunk; in format 1, a trailing
    partial record is ignored), so
    :meth:`blocks` yields exactly the records ``load`` concatenates, in file order
    (``load`` then sorts the latency records by channel and pulse; blocks are not
    sorted).
    """

    def __init__(self, path):
        self.path = Path(path)
        # kind -> [(payload offset, records)], only chunks that passed their checks
        self._spans = {kind: [(start, length // _ARRAYS[kind].itemsize)
                              for start, length, _ in chunks]
                       for kind, chunks in _read(self, keep_arrays=False).items()}

    def count(self, kind=b"LATR"):
        """Number of records of an array kind (``b"LATR"``, ``b"EVNT"``, ``b"TRTH"``)."""
        return sum(n for _, n in self._spans[kind])

    def blocks(self, kind=b"LATR", size=BLOCK_RECORDS):
        """The records of ``kind`` in file order, as arrays of at most ``size`` records.

        Each block is a fresh array read from the file; only one is held at a time
        unless the caller keeps them.
        """
        dt = _ARRAYS[kind]
        with open(self.path, "rb") as f:
            for start, n in self._spans[kind]:
                f.seek(start)
                for i in range(0, n, size):
                    block = np.empty(min(size, n - i), dtype=dt)
                    f.readinto(memoryview(block).cast("B"))
                    yield block

    def array(self, kind):
        """Every record of ``kind`` in one array, in file order (held in memory)."""
        out = np.empty(self.count(kind), dtype=_ARRAYS[kind])
        i = 0
        for block in self.blocks(kind):
            out[i:i + len(block)] = block
            i += len(block)
        return out

    def __repr__(self):
        return (f"<CaptureChunks {self.path.name}: {self.count(b'LATR')} latency records, "
                f"{self.count(b'EVNT')} events, {'complete' if self.complete else 'partial'}>")


def scan(path):
    """Index a capture file without reading its records (see :class:`CaptureChunks`)."""
    return CaptureChunks(path)
