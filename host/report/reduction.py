# SPDX-License-Identifier: BSD-2-Clause
"""Reports of captures too large to load: the numbers of :mod:`rtrig.host.report.data`
reduced from a capture's latency records a block at a time (nothing draws).

:class:`CaptureReduction` reads the records (:func:`rtrig.capture.scan`) in two
passes, so memory does not grow with the capture: pass 1 counts each latency and
completion value exactly (:class:`ValueCounts`; latencies are whole ticks, so every
percentile stays a sample) and finds the pulse range and the persistence window;
pass 2 fills the envelope, whose groups are fixed by pass 1's counts, the misses by
pulse and the persistence lanes. The binning rules are data.py's, so the result
equals the in-memory functions' on the loaded capture (tests/host/test_report.py
checks it). :func:`rtrig.host.report.build_report` uses this path.
"""

import numpy as np

from ...capture import CaptureChunks, load
from ...protocol import ChanFlags
from ..analysis import channel_stats_from_counts, missed_mask
from .data import (
    _LANE_NAMES,
    ENVELOPE_BINS,
    HIST_BINS,
    PERSIST_BINS,
    _envelope_starts,
    _event_lanes,
    _events_whole,
    _exceedance_counts,
    _hist_bins,
    _lane_from_steps,
    _lane_steps,
    _markers,
    _missed_edges,
    _persistence_dict,
    _stim_lanes,
    _tick_ns,
    _value_counts,
    _window,
    channel_records,
    record_count,
    stats_plot_data,
)

__all__ = ["ValueCounts", "CaptureReduction"]

#: Widest value range :class:`ValueCounts` counts with one counter per value (8 MB).
DENSE_SPAN = 1 << 20


class ValueCounts:
    """Exact counts of integer samples (ticks), added block by block.

    One counter per value from the lowest to the highest seen while that range is
    at most ``dense_span`` values (one ``bincount`` per block); past it, sorted
    distinct values and their counts, merged per block, so memory grows with the
    number of distinct values, never with the number of samples.
    """

    def __init__(self, dense_span=DENSE_SPAN):
        self.dense_span = dense_span
        self.lo = 0
        self.dense = None                   # counts of lo, lo + 1, ...
        self.sparse = None                  # (values, counts) once the range is too wide

    def add(self, ticks):
        t = np.asarray(ticks)
        if len(t) == 0:
            return
        if self.sparse is None and self._widen(int(t.min()), int(t.max())):
            self.dense += np.bincount(np.subtract(t, self.lo, dtype=np.int64),
                                      minlength=len(self.dense))
            return
        if self.sparse is None:
            self.sparse, self.dense = self.result(), None
        new_values, new_counts = _value_counts(t)
        values = np.concatenate([self.sparse[0], new_values])
        counts = np.concatenate([self.sparse[1], new_counts])
        order = np.argsort(values, kind="stable")
        values, counts = values[order], counts[order]
        first = np.flatnonzero(np.diff(values, prepend=values[0] - 1))
        self.sparse = values[first], np.add.reduceat(counts, first)

    def _widen(self, lo, hi):
        """Make the dense counters cover ``lo..hi`` too; False if too wide for them."""
        if self.dense is not None:
            lo, hi = min(lo, self.lo), max(hi, self.lo + len(self.dense) - 1)
        if hi - lo >= self.dense_span:
            return False
        if self.dense is None or len(self.dense) != hi - lo + 1:
            grown = np.zeros(hi - lo + 1, dtype=np.int64)
            if self.dense is not None:
                grown[self.lo - lo:self.lo - lo + len(self.dense)] = self.dense
            self.lo, self.dense = lo, grown
        return True

    def result(self):
        """``(values, counts)``: the distinct values seen, ascending, as int64."""
        if self.sparse is not None:
            return self.sparse
        if self.dense is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        nz = np.flatnonzero(self.dense)
        return nz + self.lo, self.dense[nz]


def _histogram_counts(values, counts, tick_hz, max_bins=HIST_BINS, lo=None, hi=None):
    """:func:`latency_histogram` of distinct ``values`` (ascending) seen ``counts`` times."""
    if len(values) == 0:
        return np.zeros(1), np.zeros(0, dtype=np.int64)
    lo = int(values[0]) if lo is None else int(lo)
    hi = int(values[-1]) if hi is None else int(hi)
    start, width, nbins = _hist_bins(lo, hi, max_bins)
    inside = (values >= lo) & (values <= hi)
    # values ascend, so each bin is a run of them: bin sums are differences of a cumsum
    below = np.searchsorted(values[inside], start + width * np.arange(nbins + 1))
    total = np.concatenate([[0], np.cumsum(counts[inside])])
    edges = (start + width * np.arange(nbins + 1)) * _tick_ns(tick_hz)
    return edges, np.diff(total[below])


_FIELDS = ("pulse", "flags", "latency", "completion")


def _by_channel(block):
    """``{channel number: {field: array}}`` of one block of latency records."""
    ch = block["channel"]
    present = np.flatnonzero(np.bincount(ch))
    if len(present) == 1:
        return {int(present[0]): {f: block[f] for f in _FIELDS}}
    out = {}
    for c in present:
        mine = ch == c
        out[int(c)] = {f: block[f][mine] for f in _FIELDS}
    return out


def _masks(records):
    """``(missed, done)`` per record: no answer; answered and fell in time."""
    missed = missed_mask(records)
    return missed, ~(missed | ((records["flags"] & ChanFlags.INCOMPLETE) != 0))


class _FirstPass:
    """One channel, pass 1: records, exact value counts of the answered pulses'
    latencies and the completed ones' completion times, the pulse range, and
    whether the records come in pulse order."""

    def __init__(self):
        self.records = 0
        self.latency = ValueCounts()
        self.completion = ValueCounts()
        self.first_pulse = self.last_pulse = None
        self.in_order = True

    def add(self, f):
        missed, done = _masks(f)
        self.records += len(missed)
        self.latency.add(f["latency"][~missed])
        self.completion.add(f["completion"][done])
        p = f["pulse"]
        prev = -1 if self.last_pulse is None else self.last_pulse
        self.in_order = self.in_order and int(p[0]) >= prev and bool(np.all(p[1:] >= p[:-1]))
        if self.first_pulse is None:
            self.first_pulse = int(p[0])
        self.last_pulse = int(p[-1])


class _SecondPass:
    """One channel, pass 2, over its records in pulse order: the envelope (groups
    of ranks fixed from pass 1's count of answered pulses), the misses by pulse and
    the steps of the persistence lane."""

    def __init__(self, first, window, nbins):
        self.answered = int(first.latency.result()[1].sum())
        self.starts = _envelope_starts(self.answered, ENVELOPE_BINS)
        g = len(self.starts)
        self.min = np.full(g, np.iinfo(np.int64).max)
        self.max = np.full(g, -1, dtype=np.int64)
        self.sum = np.zeros(g, dtype=np.int64)
        self.pulse = np.zeros(g, dtype=np.uint32)
        self.rank = 0                       # answered pulses seen so far
        self.missed_edges = None
        if first.records > self.answered:
            self.missed_edges = _missed_edges(first.first_pulse, first.last_pulse,
                                              first.records)
            self.missed = np.zeros(len(self.missed_edges) - 1, dtype=np.int64)
        self.window, self.nbins = window, nbins
        self.steps = None

    def add(self, f):
        missed, done = _masks(f)
        answered = ~missed
        lat = f["latency"][answered].astype(np.int64)
        if len(lat):
            # this block holds ranks r0 .. r0 + k - 1: groups g0 .. g1, the first
            # maybe begun in an earlier block, the last maybe ended in a later one
            r0, k = self.rank, len(lat)
            g0, g1 = np.searchsorted(self.starts, [r0, r0 + k - 1], side="right") - 1
            starts = self.starts[g0:g1 + 1]
            cuts = np.concatenate([[0], starts[1:] - r0])
            part = slice(g0, g1 + 1)
            self.min[part] = np.minimum(self.min[part], np.minimum.reduceat(lat, cuts))
            self.max[part] = np.maximum(self.max[part], np.maximum.reduceat(lat, cuts))
            self.sum[part] += np.add.reduceat(lat, cuts)
            begun = starts >= r0
            self.pulse[part][begun] = f["pulse"][answered][starts[begun] - r0]
            self.rank += k
        if self.missed_edges is not None:
            self.missed += np.histogram(f["pulse"][missed], bins=self.missed_edges)[0]
        steps = _lane_steps(lat, f["completion"][answered], done[answered], self.window,
                            self.nbins)
        self.steps = steps if self.steps is None else [a + b for a, b in
                                                       zip(self.steps, steps, strict=True)]

    def envelope(self, tick_ns):
        """:func:`envelope` of the answered latencies in ns."""
        if self.answered == 0:
            z = np.zeros(0)
            return {"pulse": z, "min": z, "max": z, "mean": z, "count": z}
        counts = np.diff(np.append(self.starts, self.answered))
        return {"pulse": self.pulse, "min": self.min.astype(np.float64) * tick_ns,
                "max": self.max.astype(np.float64) * tick_ns,
                "mean": self.sum.astype(np.float64) * tick_ns / counts, "count": counts}

    def missed_at(self):
        if self.missed_edges is None:
            return np.zeros(0), np.zeros(0)
        nz = self.missed > 0
        return self.missed_edges[:-1][nz], self.missed[nz]


class CaptureReduction:
    """The numbers of one capture's report, reduced from its latency records block
    by block: the same as :func:`capture_plot_data` and :func:`persistence`, in
    memory that does not grow with the number of records.

    ``cap`` is a scanned capture (:func:`rtrig.capture.scan`; its blocks are read
    from the file, twice) or a loaded one (its channels are the blocks). Pass 1
    runs here; :meth:`latency_ranges` is known after it, and :meth:`plot_data`
    runs pass 2. The envelope groups answered pulses by rank in pulse order, which
    is file order for the rig's captures (each channel's records are written as
    they are matched, pulse by pulse); a file whose channel is out of pulse order
    is loaded whole and sorted instead, as :func:`rtrig.load` does.
    """

    def __init__(self, cap):
        self.cap = cap
        self.first = self._first_pass()
        if isinstance(cap, CaptureChunks) and not all(f.in_order for f in self.first.values()):
            self.cap = load(cap.path)
            self.first = self._first_pass()

    def _blocks(self):
        """``{channel number: {field: array}}`` per block of records."""
        blocks = self.cap.blocks(b"LATR") if isinstance(self.cap, CaptureChunks) \
            else channel_records(self.cap).values()
        for block in blocks:
            yield _by_channel(block)

    def _first_pass(self):
        first = {}
        for block in self._blocks():
            for c, fields in block.items():
                first.setdefault(c, _FirstPass()).add(fields)
        self._names = {c: self.cap.channel_name(c) for c in sorted(first)}
        return {self._names[c]: first[c] for c in sorted(first)}

    def latency_ranges(self):
        """``{channel: (lowest, highest)}`` answered latency in ticks."""
        out = {}
        for name, first in self.first.items():
            values, _ = first.latency.result()
            if len(values):
                out[name] = (int(values[0]), int(values[-1]))
        return out

    def plot_data(self, hist_ranges=None, nbins=PERSIST_BINS):
        """``(per_channel, persistence)``: :func:`capture_plot_data`'s dict (with
        ``split`` None) and :func:`persistence`'s, or None for a capture without
        records or events."""
        cap = self.cap
        stim = cap.meta.get("stimulus") or {}
        last = max([int(v[-1]) for f in self.first.values()
                    for v, _ in (f.latency.result(), f.completion.result()) if len(v)] + [0])
        window = _window(last, stim, nbins)
        second = {name: _SecondPass(f, window, nbins) for name, f in self.first.items()}
        if second:
            for block in self._blocks():
                for c, fields in block.items():
                    second[self._names[c]].add(fields)
        if not self.first and cap.stats:
            per_channel = stats_plot_data(cap)
        else:
            per_channel = {name: self._channel(name, second[name], (hist_ranges or {}).get(name))
                           for name in self.first}
        pers = None
        if self.first or record_count(cap, b"EVNT"):
            pers = self._persistence(second, window, nbins)
        return per_channel, pers

    def _channel(self, name, second, hist_range):
        """:func:`channel_plot_data` of one channel from its two passes."""
        first, tick_hz = self.first[name], self.cap.tick_hz
        latency, completion = first.latency.result(), first.completion.result()
        stats = channel_stats_from_counts(first.records, latency, completion, tick_hz)
        lo, hi = hist_range or (None, None)
        return {
            "stats": stats,
            "markers": _markers(stats),
            "hist": _histogram_counts(*latency, tick_hz, lo=lo, hi=hi),
            "completion_hist": _histogram_counts(*completion, tick_hz),
            "tail": _exceedance_counts(*latency, tick_hz),
            "envelope": second.envelope(_tick_ns(tick_hz)),
            "missed_at": second.missed_at(),
            "split": None,
        }

    def _persistence(self, second, window, nbins):
        """:func:`persistence`, the record lanes from pass 2's steps."""
        cap = self.cap
        if _events_whole(cap) or not self.first:
            events = cap.array(b"EVNT") if isinstance(cap, CaptureChunks) else cap.events
            from_events = _event_lanes(events, window, nbins)
            if from_events:
                return _persistence_dict("events", window, cap.tick_hz, nbins, *from_events)
        n = max([f.records for f in self.first.values()] + [0])
        lanes = _stim_lanes(n, (cap.meta.get("stimulus") or {}).get("high_ticks"), window, nbins)
        for name, first in self.first.items():
            lanes.append((_LANE_NAMES.get(name, name.upper()),
                          *_lane_from_steps(first.records, *second[name].steps, nbins)))
        return _persistence_dict("records", window, cap.tick_hz, nbins, n, lanes)
