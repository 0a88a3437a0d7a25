"""Capture files: versioned, self-describing, written incrementally (DESIGN §5).

Layout (all integers little-endian)::

    magic  b"RTRIGCAP"                8 bytes
    version u16, reserved u16         4 bytes
    chunk*                            until end of file

    chunk: kind (4 ASCII bytes) | length u32 | payload (length bytes)

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
crash or an unplugged rig keeps every complete chunk; a torn last chunk is ignored
on load (and reported as ``truncated``). Later chunks of the same kind append.

:func:`load` holds every record in memory; :func:`scan` indexes the chunks and
reads the records a block at a time (:class:`CaptureChunks`), for reductions of
captures larger than memory.
"""

import json
import os
import struct
from pathlib import Path

import numpy as np

from .protocol import EVENT_DTYPE, LATENCY_DTYPE, TRUTH_DTYPE

__all__ = ["FORMAT_VERSION", "CaptureWriter", "Capture", "load", "CHANNEL_NAMES",
           "CaptureChunks", "scan", "BLOCK_RECORDS"]

MAGIC = b"RTRIGCAP"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHH")
_CHUNK = struct.Struct("<4sI")
_ARRAYS = {b"LATR": LATENCY_DTYPE, b"EVNT": EVENT_DTYPE, b"TRTH": TRUTH_DTYPE}
_JSON_ONE = {b"META": "meta", b"FINL": "final", b"STAT": "stats"}

#: Names of the latency channels, by channel number.
CHANNEL_NAMES = {0: "isr", 1: "app"}

#: Most records :meth:`CaptureChunks.blocks` reads at once (2^20: 23 MB of latency
#: records), so a reduction's memory does not depend on how the capture was chunked.
BLOCK_RECORDS = 1 << 20


class CaptureWriter:
    """Appends chunks to a new capture file; use as a context manager."""

    def __init__(self, path, meta):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "wb")
        self._f.write(_HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self.chunk(b"META", json.dumps(meta, sort_keys=True).encode())
        self.closed = False

    def chunk(self, kind, payload):
        self._f.write(_CHUNK.pack(kind, len(payload)) + payload)
        self._f.flush()

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


class Capture:
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
        The file ends in a torn chunk (the capture was interrupted while writing).
    """

    def __init__(self, path):
        from .host.errors import CaptureFormatError
        self.path = Path(path)
        try:
            data = self.path.read_bytes()
        except OSError as e:
            raise CaptureFormatError(f"cannot read {path}: {e.strerror or e}") from e
        if len(data) < _HEADER.size or data[:8] != MAGIC:
            raise CaptureFormatError(f"{path} is not an rtrig capture file")
        _, version, _ = _HEADER.unpack_from(data)
        if version > FORMAT_VERSION:
            raise CaptureFormatError(
                f"{path} has capture format {version}; this rtrig reads up to "
                f"{FORMAT_VERSION}", hint="upgrade rtrig")
        self.version = version
        self.meta, self.final, self.stats = None, None, None
        self.steps = []
        parts = {k: [] for k in _ARRAYS}
        self.truncated = False
        off = _HEADER.size
        while off < len(data):
            if off + _CHUNK.size > len(data):
                self.truncated = True
                break
            kind, length = _CHUNK.unpack_from(data, off)
            start, end = off + _CHUNK.size, off + _CHUNK.size + length
            if end > len(data):
                self.truncated = True
                break
            payload = data[start:end]
            if kind in _ARRAYS:
                dt = _ARRAYS[kind]
                usable = len(payload) - len(payload) % dt.itemsize
                parts[kind].append(np.frombuffer(payload[:usable], dtype=dt))
            elif kind in _JSON_ONE:
                setattr(self, _JSON_ONE[kind], json.loads(payload))
            elif kind == b"STEP":
                self.steps.append(json.loads(payload))
            off = end
        if self.meta is None:
            raise CaptureFormatError(f"{path} has no metadata chunk")

        def cat(kind):
            dt = _ARRAYS[kind]
            return np.concatenate(parts[kind]) if parts[kind] else np.zeros(0, dtype=dt)

        lat = cat(b"LATR")
        self.latency = lat[np.lexsort((lat["pulse"], lat["channel"]))] if len(lat) else lat
        self.events = cat(b"EVNT")
        self.truth = cat(b"TRTH")

    @property
    def tick_hz(self):
        return self.meta["tick_hz"]

    @property
    def complete(self):
        return self.final is not None and not self.truncated

    def channels(self):
        """Names of the latency channels present in the capture."""
        return [CHANNEL_NAMES.get(c, f"ch{c}") for c in sorted(set(self.latency["channel"]))]

    def channel(self, name):
        """Records of one channel (``"isr"``, ``"app"`` or a number), by pulse."""
        num = {v: k for k, v in CHANNEL_NAMES.items()}.get(name, name)
        return self.latency[self.latency["channel"] == int(num)]

    def summary(self):
        """Per-channel statistics (see :func:`rtrig.host.analysis.channel_stats`)."""
        from .host.analysis import capture_summary
        return capture_summary(self)

    def __repr__(self):
        return (f"<Capture {self.path.name}: {len(self.latency)} latency records, "
                f"{len(self.events)} events, {'complete' if self.complete else 'partial'}>")


def load(path):
    """Load a capture file (the one call of DESIGN §5)."""
    return Capture(path)


class CaptureChunks:
    """A capture file indexed chunk by chunk; its record arrays are read on demand.

    Opening reads the JSON chunks and only the headers of the array chunks (their
    place and size), so it costs the same for any number of records. The
    attributes are those of :class:`Capture` but the record arrays: ``path``,
    ``version``, ``meta``, ``final``, ``stats``, ``steps``, ``truncated``,
    ``tick_hz`` and ``complete``. Chunks are read with the rules of :func:`load`
    (a torn last chunk is skipped, a trailing partial record ignored), so
    :meth:`blocks` yields exactly the records ``load`` concatenates, in file order
    (``load`` then sorts the latency records by channel and pulse; blocks are not
    sorted).
    """

    def __init__(self, path):
        from .host.errors import CaptureFormatError
        self.path = Path(path)
        self.meta, self.final, self.stats = None, None, None
        self.steps = []
        self.truncated = False
        self._spans = {k: [] for k in _ARRAYS}     # kind -> [(payload offset, records)]
        try:
            size = self.path.stat().st_size
            f = open(self.path, "rb")
        except OSError as e:
            raise CaptureFormatError(f"cannot read {path}: {e.strerror or e}") from e
        with f:
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size or head[:8] != MAGIC:
                raise CaptureFormatError(f"{path} is not an rtrig capture file")
            _, self.version, _ = _HEADER.unpack(head)
            if self.version > FORMAT_VERSION:
                raise CaptureFormatError(
                    f"{path} has capture format {self.version}; this rtrig reads up to "
                    f"{FORMAT_VERSION}", hint="upgrade rtrig")
            off = _HEADER.size
            while off < size:
                if off + _CHUNK.size > size:
                    self.truncated = True
                    break
                f.seek(off)
                kind, length = _CHUNK.unpack(f.read(_CHUNK.size))
                start, end = off + _CHUNK.size, off + _CHUNK.size + length
                if end > size:
                    self.truncated = True
                    break
                if kind in _ARRAYS:
                    self._spans[kind].append((start, length // _ARRAYS[kind].itemsize))
                elif kind in _JSON_ONE:
                    setattr(self, _JSON_ONE[kind], json.loads(f.read(length)))
                elif kind == b"STEP":
                    self.steps.append(json.loads(f.read(length)))
                off = end
        if self.meta is None:
            raise CaptureFormatError(f"{path} has no metadata chunk")

    @property
    def tick_hz(self):
        return self.meta["tick_hz"]

    @property
    def complete(self):
        return self.final is not None and not self.truncated

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
