# SPDX-License-Identifier: BSD-2-Clause
"""The numbers behind the report's plots: numpy reductions of a capture (nothing draws).

Each plot shows binned data that keeps the extremes, computed from all the samples.
There are two ways in, with one set of binning rules:

* **arrays in memory** — :func:`latency_histogram`, :func:`exceedance`,
  :func:`envelope`, :func:`persistence`, :func:`channel_plot_data` and
  :func:`capture_plot_data` take a loaded capture or plain arrays (a notebook's way).
* **block by block** — :class:`rtrig.host.report.reduction.CaptureReduction`
  computes the same numbers from the latency records read a block at a time
  (:func:`rtrig.capture.scan`), in two passes, so memory does not grow with the
  capture; it uses this module's binning rules and helpers.
  :func:`rtrig.host.report.build_report` uses this path.

:func:`stats_plot_data` (on-chip statistics) and :func:`sweep_plot_data` read only
a capture's JSON chunks.
"""

import math

import numpy as np

from ...capture import CaptureChunks
from ...channels import SWEEP_NAMES, channel_order, sweep_figure_keys, sweep_figure_name
from ...protocol import STIM_INPUT, ChanFlags, Input
from ..analysis import channel_stats, missed_mask, stats_summary

__all__ = [
    "channel_records", "latency_histogram", "exceedance", "envelope", "persistence",
    "channel_plot_data", "stats_plot_data", "capture_plot_data", "sweep_plot_data",
    "record_count", "MARKERS",
]

#: Marker lines on a latency histogram: label → key of :func:`channel_stats`.
MARKERS = {"min": "min", "mean": "mean", "p50": "p50", "p99": "p99", "p99.9": "p999",
           "p99.99": "p9999", "max": "max"}

#: Largest number of bins of a histogram, of the envelope and of the tail curve.
HIST_BINS = 400
ENVELOPE_BINS = 600
TAIL_POINTS = 1200
PERSIST_BINS = 500

_INPUT_NAMES = {Input.ISR_OUT: "ISR_OUT", Input.APP_OUT: "APP_OUT",
                Input.HEARTBEAT: "HEARTBEAT", Input.MARKER0: "MARKER0",
                Input.MARKER1: "MARKER1", Input.MARKER2: "MARKER2",
                STIM_INPUT[0]: "STIM0", STIM_INPUT[1]: "STIM1"}
_LANE_NAMES = {"isr": "ISR_OUT", "app": "APP_OUT"}


# --------------------------------------------------------------------------- rules


def _nice_step(span, max_bins):
    """Smallest 1-2-5 × 10^k integer ≥ span / max_bins (at least 1)."""
    raw = max(span / max_bins, 1.0)
    k = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * k >= raw:
            return int(m * k)
    return int(10 * k)


def _tick_ns(tick_hz):
    return 1e9 / tick_hz


def _hist_bins(lo, hi, max_bins):
    """``(start, width, nbins)`` of a histogram of ticks ``lo..hi``: bins a whole
    1-2-5 number of ticks wide, aligned to a multiple of the width."""
    width = _nice_step(hi - lo + 1, max_bins)
    start = (lo // width) * width
    return start, width, (hi - start) // width + 1


def _envelope_starts(n, max_bins):
    """First sample of each envelope group: at most ``max_bins`` groups of equal size."""
    return np.unique(np.linspace(0, n, min(n, max_bins) + 1).astype(np.int64)[:-1])


def _missed_edges(first_pulse, last_pulse, records):
    """Pulse bins of the misses marked on the envelope."""
    return np.linspace(first_pulse, last_pulse + 1, min(ENVELOPE_BINS, records) + 1)


def _markers(stats):
    return {label: stats[f"{key}_ns"] for label, key in MARKERS.items()
            if stats[f"{key}_ns"] is not None}


def _window(last, stim_meta, nbins):
    """Persistence window in ticks: just past the latest response edge ``last``
    (the stimulus' high time without one), at most one period."""
    period = int(stim_meta.get("period_ticks") or 0)
    high_ticks = stim_meta.get("high_ticks")
    if not last and high_ticks:
        last = int(high_ticks)
    window = max(int(last * 1.1) + 1, nbins)
    return min(window, period) if period else window


def _events_whole(cap):
    """Events are trusted only when the capture says it lost none (a cut-off
    capture cannot say): with lost edges the records give the truer picture."""
    link = (cap.final or {}).get("link") or {}
    return cap.final is not None and not link.get("evt_overflow") \
        and not link.get("lost_packets")


def record_count(cap, kind=b"LATR"):
    """Number of records of an array kind in a loaded or a scanned capture."""
    if isinstance(cap, CaptureChunks):
        return cap.count(kind)
    return len({b"LATR": cap.latency, b"EVNT": cap.events, b"TRTH": cap.truth}[kind])


# --------------------------------------------------------------------------- arrays


def channel_records(cap):
    """``{name: records}`` of every channel, as views (no copies).

    The loaded latency array is sorted by channel, then pulse, so each channel is
    one contiguous slice, found from the channel counts instead of a mask over all
    records.
    """
    lat = cap.latency
    if len(lat) == 0:
        return {}
    counts = np.bincount(lat["channel"], minlength=16)
    ends = np.cumsum(counts)
    out = {}
    for c in np.flatnonzero(counts):
        out[cap.channel_name(c)] = lat[ends[c] - counts[c]:ends[c]]
    return out


def _split(records):
    """Plain field arrays of one channel: answered latencies and completed times."""
    flags = records["flags"]
    missed = missed_mask(records)
    bad = missed | ((flags & ChanFlags.INCOMPLETE) != 0)
    any_missed, any_bad = bool(missed.any()), bool(bad.any())
    lat = records["latency"]
    answered = ~missed
    return {
        "pulse": records["pulse"][answered] if any_missed else records["pulse"],
        "latency": lat[answered] if any_missed else lat,
        "completion": records["completion"][~bad] if any_bad else records["completion"],
        "missed_pulse": records["pulse"][missed],
        # aligned with "latency": every answered pulse's completion and whether it fell
        "completion_all": records["completion"][answered] if any_missed
        else records["completion"],
        "done": ~bad[answered] if any_missed else ~bad,
    }


def _stats(records, tick_hz):
    """:func:`channel_stats` on a compact copy (only the fields it reads): the same
    numbers, without copying 22-byte records around."""
    from ...protocol import LATENCY_DTYPE
    dt = np.dtype([(f, LATENCY_DTYPE[f]) for f in ("flags", "latency", "completion")])
    small = np.empty(len(records), dtype=dt)
    for f in dt.names:
        small[f] = records[f]
    return channel_stats(small, tick_hz)


def latency_histogram(ticks, tick_hz, max_bins=HIST_BINS, lo=None, hi=None):
    """Histogram of latencies given in ticks.

    Bins are a whole number of ticks wide (1-2-5 steps) so no bin straddles a
    tick boundary, aligned to a multiple of the width, and cover ``lo..hi`` ticks
    (default: the data's min..max). Returns ``(edges_ns, counts)``: ``len(edges) ==
    len(counts) + 1``; counts sum to the number of values within ``lo..hi``.
    """
    t = np.asarray(ticks, dtype=np.int64)
    if len(t) == 0:
        return np.zeros(1), np.zeros(0, dtype=np.int64)
    lo = int(t.min()) if lo is None else int(lo)
    hi = int(t.max()) if hi is None else int(hi)
    start, width, nbins = _hist_bins(lo, hi, max_bins)
    inside = t[(t >= lo) & (t <= hi)]
    counts = np.bincount((inside - start) // width, minlength=nbins)[:nbins]
    edges = (start + width * np.arange(nbins + 1)) * _tick_ns(tick_hz)
    return edges, counts


def _value_counts(ticks):
    """Sorted distinct values and their counts, O(N) when the range is modest."""
    t = np.asarray(ticks, dtype=np.int64)
    if len(t) == 0:
        return t, t
    lo, hi = int(t.min()), int(t.max())
    if hi - lo < max(4 * len(t), 1 << 16) and hi - lo < 1 << 26:
        c = np.bincount(t - lo)
        nz = np.flatnonzero(c)
        return nz + lo, c[nz]
    return np.unique(t, return_counts=True)


def exceedance(ticks, tick_hz, max_points=TAIL_POINTS):
    """The tail: for each distinct latency x (ns), the fraction of samples ≥ x.

    This is 1 − CDF just below x (the exceedance probability); the first point is
    the minimum at 1.0 and the last the maximum at 1/N, so the tail is never cut.
    Drawn as a step curve (``line_shape="vh"``). When there are more than
    ``max_points`` distinct values the body is thinned evenly while the last
    ``max_points // 3`` points (the far tail) are all kept.
    Returns ``(x_ns, p)``.
    """
    return _exceedance_counts(*_value_counts(ticks), tick_hz, max_points)


def _exceedance_counts(values, counts, tick_hz, max_points=TAIL_POINTS):
    """:func:`exceedance` of distinct ``values`` (ascending) seen ``counts`` times."""
    n = counts.sum()
    if n == 0:
        return np.zeros(0), np.zeros(0)
    at_or_above = np.cumsum(counts[::-1])[::-1] / n
    x = values * _tick_ns(tick_hz)
    if len(x) > max_points:
        tail = max_points // 3
        body = np.linspace(0, len(x) - tail - 1, max_points - tail).astype(np.int64)
        keep = np.unique(np.concatenate([body, np.arange(len(x) - tail, len(x))]))
        x, at_or_above = x[keep], at_or_above[keep]
    return x, at_or_above


def envelope(pulse, values, max_bins=ENVELOPE_BINS):
    """Min/max/mean of ``values`` over consecutive groups of samples (by pulse).

    Groups hold equal numbers of samples, so every sample falls in exactly one
    group: the envelope's lowest min is the global minimum and its highest max the
    global maximum. With at most ``max_bins`` samples each sample is its own group.
    Returns a dict of arrays: ``pulse`` (first pulse of the group), ``min``,
    ``max``, ``mean``, ``count``.
    """
    pulse = np.asarray(pulse)
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if n == 0:
        z = np.zeros(0)
        return {"pulse": z, "min": z, "max": z, "mean": z, "count": z}
    starts = _envelope_starts(n, max_bins)
    counts = np.diff(np.append(starts, n))
    return {
        "pulse": pulse[starts],
        "min": np.minimum.reduceat(v, starts),
        "max": np.maximum.reduceat(v, starts),
        "mean": np.add.reduceat(v, starts) / counts,
        "count": counts,
    }


def _lane(n, init_high, pulse, t, rising, window, nbins):
    """Persistence counts of one digital lane over ``nbins`` time bins.

    ``n`` pulses; ``init_high`` (bool per pulse): the line's level at the stimulus
    edge; ``pulse``, ``t``, ``rising``: the line's edges, sorted by pulse then time,
    ``t`` in ticks after that pulse's stimulus edge. Each edge starts an interval
    at its level that lasts until the pulse's next edge (or the window's end), so a
    lost edge never carries over to other pulses. Returns ``(low, edge, high)``:
    per bin, the pulses whose line is low somewhere in the bin, the edges in the
    bin, and the pulses whose line is high somewhere in it (a scope's persistence).
    """
    t = np.asarray(t, dtype=np.int64)
    keep = (t >= 0) & (t < window)
    pulse = np.asarray(pulse, dtype=np.int64)[keep]
    rising = np.asarray(rising, dtype=bool)[keep]
    b = t[keep] * nbins // window
    edge = np.bincount(b, minlength=nbins)[:nbins]
    acc = {True: np.zeros(nbins + 1, dtype=np.int64), False: np.zeros(nbins + 1, dtype=np.int64)}
    last = np.ones(len(b), dtype=bool)
    last[:-1] = pulse[1:] != pulse[:-1]
    end = np.empty_like(b)
    end[:-1] = b[1:]
    end[last] = nbins - 1
    first = np.ones(len(b), dtype=bool)
    first[1:] = pulse[1:] != pulse[:-1]
    first_end = np.full(n, nbins - 1, dtype=np.int64)
    first_end[pulse[first]] = b[first]
    init_high = np.broadcast_to(np.asarray(init_high, dtype=bool), (n,))
    for level in (True, False):
        sel = rising == level
        acc[level] += np.bincount(b[sel], minlength=nbins + 1)
        acc[level] -= np.bincount(end[sel] + 1, minlength=nbins + 1)
        start = init_high == level
        acc[level][0] += int(start.sum())
        acc[level] -= np.bincount(first_end[start] + 1, minlength=nbins + 1)
    low = np.minimum(np.cumsum(acc[False])[:nbins], n)
    high = np.minimum(np.cumsum(acc[True])[:nbins], n)
    return low, edge, high


def _lane_steps(latency, completion, done, window, nbins):
    """The additive part of :func:`_lane_records`: per bin, the changes of the low
    and high counts (before their running sums) and the edges. Steps of blocks of
    pulses add up to those of all the pulses."""
    lat = np.asarray(latency, dtype=np.int64)
    inside = lat < window
    rb = lat[inside] * nbins // window
    comp = np.asarray(completion, dtype=np.int64)[inside]
    fell = np.asarray(done, dtype=bool)[inside] & (comp < window)
    fb = np.where(fell, comp * nbins // np.int64(window), nbins)    # nbins: still high
    m = nbins + 2
    high = np.bincount(rb, minlength=m) - np.bincount(np.minimum(fb, nbins - 1) + 1,
                                                      minlength=m)
    low = -np.bincount(rb + 1, minlength=m) + np.bincount(fb[fell], minlength=m)
    edge = (np.bincount(rb, minlength=nbins)[:nbins]
            + np.bincount(fb[fell], minlength=nbins)[:nbins])
    return low, edge, high


def _lane_from_steps(n, low, edge, high, nbins):
    """``(low, edge, high)`` counts of ``n`` pulses from their :func:`_lane_steps`."""
    low = low.copy()
    low[0] += n              # every pulse starts low; missed ones stay low throughout
    return (np.minimum(np.cumsum(low)[:nbins], n), edge,
            np.minimum(np.cumsum(high)[:nbins], n))


def _lane_records(n, latency, completion, done, window, nbins):
    """:func:`_lane` for a response known from its records (one rise at the latency,
    one fall at the completion unless incomplete; missed pulses stay low), in a
    few passes over the arrays instead of building an edge list."""
    return _lane_from_steps(n, *_lane_steps(latency, completion, done, window, nbins), nbins)


def _event_lanes(ev, window, nbins):
    """Persistence lanes of every recorded input from raw events: ``(pulses,
    lanes)``, or None without stimulus edges to align on."""
    stim_rise = np.sort(ev["t"][(ev["input"] == STIM_INPUT[0]) & (ev["rising"] != 0)])
    stim_rise = stim_rise.astype(np.int64)
    if not len(stim_rise):
        return None
    n = len(stim_rise)
    ev = ev[np.argsort(ev["t"], kind="stable")]
    present = np.flatnonzero(np.bincount(ev["input"], minlength=16))
    lanes = []
    for inp in sorted(present.tolist(), key=lambda i: (i < 14, i)):
        e = ev[ev["input"] == inp]
        t = e["t"].astype(np.int64)
        rising = e["rising"] != 0
        init = np.zeros(n, dtype=bool)     # the stimulus is low before its own edge
        if inp not in STIM_INPUT.values():
            # level of this input when each stimulus rose: its last edge before
            before = np.searchsorted(t, stim_rise, side="left") - 1
            init[before >= 0] = rising[before[before >= 0]]
        idx = np.searchsorted(stim_rise, t, side="right") - 1
        ok = idx >= 0
        rel = t[ok] - stim_rise[idx[ok]]
        low, edge, high = _lane(n, init, idx[ok], rel, rising[ok], window, nbins)
        lanes.append((_INPUT_NAMES.get(inp, f"in{inp}"), low, edge, high))
    return n, lanes


def _stim_lanes(n, high_ticks, window, nbins):
    """The STIM0 lane of ``n`` pulses known from the metadata (none without it)."""
    if not high_ticks:
        return []
    one = _lane(1, False, [0, 0], [0, int(high_ticks)], [True, False], window, nbins)
    return [("STIM0", *(a * n for a in one))]


def _persistence_dict(source, window, tick_hz, nbins, pulses, lanes):
    tick_ns = _tick_ns(tick_hz)
    return {"source": source, "window_ns": window * tick_ns,
            "bin_ns": window * tick_ns / nbins, "pulses": int(pulses), "lanes": lanes}


def persistence(cap, nbins=PERSIST_BINS, window_ticks=None, split=None):
    """Scope-persistence data: every pulse's waveforms aligned at the stimulus edge.

    From raw events when the capture has stimulus edges and reports no lost event
    (every recorded input becomes a lane), else from the latency records (STIM0 plus one
    lane per response channel, high from latency to completion). The window runs
    from the stimulus edge to just past the latest response edge (at most one
    period). Returns a dict: ``source`` ("events" or "records"), ``window_ns``,
    ``bin_ns``, ``pulses`` and ``lanes``: a list of ``(name, low, edge, high)``.
    """
    stim_meta = cap.meta.get("stimulus") or {}
    if split is None:
        split = {name: _split(rec) for name, rec in channel_records(cap).items()}
    if window_ticks is None:
        last = 0
        for d in split.values():
            for key in ("latency", "completion"):
                if len(d[key]):
                    last = max(last, int(d[key].max()))
        window_ticks = _window(last, stim_meta, nbins)
    window = int(window_ticks)
    from_events = _event_lanes(cap.events, window, nbins) \
        if _events_whole(cap) or not split else None
    if from_events:
        return _persistence_dict("events", window, cap.tick_hz, nbins, *from_events)
    n = max([len(d["pulse"]) + len(d["missed_pulse"]) for d in split.values()] + [0])
    lanes = _stim_lanes(n, stim_meta.get("high_ticks"), window, nbins)
    for name, d in split.items():
        pulses = len(d["pulse"]) + len(d["missed_pulse"])
        lanes.append((_LANE_NAMES.get(name, name.upper()),
                      *_lane_records(pulses, d["latency"], d["completion_all"], d["done"],
                                     window, nbins)))
    return _persistence_dict("records", window, cap.tick_hz, nbins, n, lanes)


def channel_plot_data(records, tick_hz, hist_range=None):
    """Everything the report plots for one channel, from its latency records.

    Returns a dict: ``stats`` (:func:`channel_stats`), ``markers`` (label → ns, the
    same numbers as ``stats``), ``hist`` and ``completion_hist`` (``(edges_ns,
    counts)``), ``tail`` (``(x_ns, p)``), ``envelope`` (latency in ns against
    pulse), ``missed_at`` (``(first_pulse, missed)`` per bin with misses) and
    ``split`` (the plain field arrays).
    """
    stats = _stats(records, tick_hz)
    d = _split(records)
    lo, hi = hist_range if hist_range else (None, None)
    tick_ns = _tick_ns(tick_hz)
    missed_bins = (np.zeros(0), np.zeros(0))
    if len(d["missed_pulse"]):
        p = records["pulse"]
        edges = _missed_edges(int(p[0]), int(p[-1]), len(p))
        cnt, _ = np.histogram(d["missed_pulse"], bins=edges)
        nz = cnt > 0
        missed_bins = (edges[:-1][nz], cnt[nz])
    return {
        "stats": stats,
        "markers": _markers(stats),
        "hist": latency_histogram(d["latency"], tick_hz, lo=lo, hi=hi),
        "completion_hist": latency_histogram(d["completion"], tick_hz),
        "tail": exceedance(d["latency"], tick_hz),
        "envelope": envelope(d["pulse"], d["latency"].astype(np.float64) * tick_ns),
        "missed_at": missed_bins,
        "split": d,
    }


def capture_plot_data(cap, hist_ranges=None):
    """:func:`channel_plot_data` of every channel of a capture: ``{name: data}``
    (:func:`stats_plot_data` for a statistics-mode capture, which has no records)."""
    recs = channel_records(cap)
    if not recs and cap.stats:
        return stats_plot_data(cap)
    return {name: channel_plot_data(rec, cap.tick_hz, hist_range=(hist_ranges or {}).get(name))
            for name, rec in recs.items()}


def stats_plot_data(cap, max_bins=HIST_BINS):
    """What the report plots for a statistics-mode capture (the rig's on-chip
    histograms; no per-pulse data), with the keys of :func:`channel_plot_data`.

    ``stats`` are :func:`rtrig.host.procedures.stats.stats_summary`'s (percentiles to one bin);
    ``hist`` is the rig's histogram trimmed to its used bins and merged by a whole
    factor down to at most ``max_bins`` bins; ``tail`` the exceedance at the lower
    edge of each used bin (the overflow counts at the top); ``envelope`` and
    ``split`` are None. ``resolution_ns`` is the histogram bin width.
    """
    stat = cap.stats or {}
    if not stat.get("channels"):
        return {}
    tick_ns = _tick_ns(cap.tick_hz)
    summary = stats_summary(stat, cap.tick_hz)
    w, off = int(stat["bin_width_ticks"]), int(stat["bin_offset_ticks"])
    out = {}
    for name in sorted(stat["channels"], key=channel_order):
        fig = stat["channels"][name]
        st = summary[name]
        counts = np.asarray(fig.get("histogram") or [], dtype=np.int64)
        used = np.flatnonzero(counts)
        hist = (np.zeros(1), np.zeros(0, dtype=np.int64))
        tail = (np.zeros(0), np.zeros(0))
        n = int(fig["answered"])
        if len(used) and n:
            lo, hi = int(used[0]), int(used[-1]) + 1
            k = max(1, -(-(hi - lo) // max_bins))
            hi = lo + -(-(hi - lo) // k) * k
            c = np.zeros(hi - lo, dtype=np.int64)
            c[:min(hi, len(counts)) - lo] = counts[lo:hi]
            merged = c.reshape(-1, k).sum(axis=1)
            edges = (off + w * (lo + k * np.arange(len(merged) + 1))) * tick_ns
            hist = (edges, merged)
            above = np.cumsum(counts[used][::-1])[::-1] + int(fig.get("overflow", 0))
            x = np.maximum(off + w * used, fig["lat_min"]) * tick_ns
            tail = (x, above / n)
        out[name] = {
            "stats": st,
            "markers": _markers(st),
            "hist": hist,
            "completion_hist": (np.zeros(1), np.zeros(0, dtype=np.int64)),
            "tail": tail,
            "envelope": None,
            "missed_at": (np.zeros(0), np.zeros(0)),
            "split": None,
            "resolution_ns": w * tick_ns,
            "outside": (int(fig.get("underflow", 0)), int(fig.get("overflow", 0))),
        }
    return out


def sweep_channels(cap):
    """The channels a sweep sought MF of: isr, app, then its interval channels."""
    swept = (cap.meta.get("sweep") or {}).get("channels") or ()
    return ["isr", "app", *(c for c in swept if c not in ("isr", "app"))]


def sweep_plot_data(cap):
    """A sweep's curve: arrays by frequency and the found MF/SF frequencies.
    ``missed``: channel → its missed fraction per step (NaN where the step timed
    another channel)."""
    steps = sorted(cap.steps, key=lambda s: s.get("freq_hz") or 0)

    def col(key):
        return np.array([np.nan if s.get(key) is None else float(s[key]) for s in steps])

    final = cap.final or {}
    channels = sweep_channels(cap)
    keys = sweep_figure_keys(channels)
    return {"freq_hz": col("freq_hz"), "isr_missed": col("isr_missed"),
            "app_missed": col("app_missed"), "load_progress": col("load_progress"),
            "missed": {c: col(f"{c}_missed") for c in channels},
            "marks": {sweep_figure_name(k): final.get(k) for k in keys
                      if k in SWEEP_NAMES or k in (final.get("figures") or {})}}
