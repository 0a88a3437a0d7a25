# SPDX-License-Identifier: BSD-2-Clause
"""The figures of a capture: latency statistics per channel.

From records (numpy, no per-sample loops; :func:`channel_stats`), from value counts
of records too many for memory (:func:`channel_stats_from_counts`) and from the
rig's on-chip statistics (:func:`stats_summary`) — the same keys whichever way, so
tables, reports and exports need not know how a capture was made. What "missed"
means is defined here once (:func:`missed_mask`).
"""

import functools
import math

import numpy as np

from ..gateware.stat_accumulators import StatFlags
from ..protocol import ChanFlags
from .bounds import DEFAULT_CONFIDENCE, binned_quantile_bounds, max_exceedance, rank_bounds

__all__ = ["channel_stats", "channel_stats_from_counts", "percentile_ranks", "bound_ranks",
           "bound_keys", "capture_summary", "stats_summary", "missed_mask", "ticks_to_ns",
           "PERCENTILES", "capture_warnings", "answered_counts"]

#: Percentiles reported per channel: name → percent.
PERCENTILES = {"p50": 50, "p99": 99, "p999": 99.9, "p9999": 99.99}


def claimable(samples, percent):
    """A percentile is backed by data when at least 10 of ``samples`` lie at or beyond
    it; the reports mark the others (too few to claim)."""
    return samples * (1 - percent / 100.0) >= 10


def ticks_to_ns(ticks, tick_hz):
    return np.asarray(ticks, dtype=np.float64) * (1e9 / tick_hz)


def bound_keys(prefix=""):
    """The keys a summary gives each percentile's bounds and the maximum's
    exceedance bound, for figures named with ``prefix``."""
    return [*(f"{prefix}{name}_{side}_ns" for name in PERCENTILES for side in ("lo", "hi")),
            f"{prefix}max_exceedance"]


@functools.lru_cache(maxsize=1024)
def bound_ranks(n, confidence=DEFAULT_CONFIDENCE):
    """0-based ranks ``(lo, hi)`` in ``n`` sorted samples of the order statistics that
    bound each of :data:`PERCENTILES` at ``confidence`` (:func:`rtrig.host.bounds.rank_bounds`;
    None for a side ``n`` samples cannot bound), in the order of :data:`PERCENTILES`."""
    return tuple(rank_bounds(n, p / 100, confidence) for p in PERCENTILES.values())


def _bounds(out, prefix, n, at_rank):
    """Put the bound keys (:func:`bound_keys`) of ``n`` samples into ``out``;
    ``at_rank(rank)`` gives the sample of a 0-based rank, in ns."""
    for name, ranks in zip(PERCENTILES, bound_ranks(n), strict=True):
        for side, r in zip(("lo", "hi"), ranks, strict=True):
            out[f"{prefix}{name}_{side}_ns"] = None if r is None else int(round(at_rank(r)))
    out[f"{prefix}max_exceedance"] = max_exceedance(n)


def _dist(values_ns, prefix=""):
    out = {}
    if len(values_ns) == 0:
        for k in ("min", "max", "mean", *PERCENTILES):
            out[f"{prefix}{k}_ns"] = None
        out[f"{prefix}jitter_ns"] = None
        out[f"{prefix}std_ns"] = None
        out.update(dict.fromkeys(bound_keys(prefix)))
        return out
    v = np.asarray(values_ns)
    n = len(v)
    out[f"{prefix}min_ns"] = int(round(v.min()))
    out[f"{prefix}max_ns"] = int(round(v.max()))
    out[f"{prefix}mean_ns"] = round(float(v.mean()), 1)
    out[f"{prefix}std_ns"] = round(float(v.std()), 1)
    # Every percentile and bound is a measured sample (the percentiles at the ranks
    # of np.percentile(method="inverted_cdf")), never an interpolation: one partial
    # sort puts each of those ranks in place.
    at = percentile_ranks(n)
    bounds = [r for pair in bound_ranks(n) for r in pair if r is not None]
    part = np.partition(v, np.unique(np.concatenate([at, bounds]).astype(np.int64)))
    for name, p in zip(PERCENTILES, part[at], strict=True):
        out[f"{prefix}{name}_ns"] = int(round(p))
    out[f"{prefix}jitter_ns"] = out[f"{prefix}max_ns"] - out[f"{prefix}min_ns"]
    _bounds(out, prefix, n, lambda r: part[r])
    return out


def missed_mask(records):
    """Which latency records are misses: those with the MISSED flag, and those that
    carry no response time at all — latency and completion both 0 — without being
    flagged INCOMPLETE (a completed answer falls after its stimulus's high time, so
    it cannot read 0 for both). The one definition that statistics, sweeps, selftest,
    reports and exports use."""
    flags = records["flags"]
    empty = ((records["latency"] == 0) & (records["completion"] == 0) &
             ((flags & ChanFlags.INCOMPLETE) == 0))
    return ((flags & ChanFlags.MISSED) != 0) | empty


def channel_stats(records, tick_hz):
    """Statistics of one channel's latency records.

    Returns a dict: pulses, answered, missed, missed_fraction, latency figures
    (min/max/mean/std/p50/p99/p999/p9999/jitter in ns), each percentile's 95 %
    bounds (``p99_lo_ns``, ``p99_hi_ns``, …; None for a side too few samples bound),
    the maximum's exceedance bound (``max_exceedance``, :mod:`rtrig.host.bounds`)
    and the same for completion with a ``completion_`` prefix.
    """
    missed = missed_mask(records)
    ok = records[~missed]
    out = {
        "pulses": int(len(records)),
        "answered": int(len(ok)),
        "missed": int(missed.sum()),
        "missed_fraction": float(missed.mean()) if len(records) else 0.0,
    }
    out.update(_dist(ticks_to_ns(ok["latency"], tick_hz)))
    done = ok[(ok["flags"] & ChanFlags.INCOMPLETE) == 0]
    out.update(_dist(ticks_to_ns(done["completion"], tick_hz), prefix="completion_"))
    return out


def percentile_ranks(n):
    """0-based positions in the sorted samples of :data:`PERCENTILES`, for ``n`` samples.

    The index arithmetic of ``np.percentile(..., method="inverted_cdf")`` (numpy's
    ``_inverted_cdf``, float64 and all), so a percentile read from value counts is
    the very sample ``np.percentile`` returns.
    """
    index = n * np.true_divide(list(PERCENTILES.values()), 100) - 1
    below = np.floor(index)
    return np.maximum(np.where(index == below, below, below + 1), 0).astype(np.int64)


def _dist_counts(values, counts, tick_hz, prefix=""):
    """:func:`_dist` of the samples ``values`` (ticks, ascending) × ``counts``.

    The same numbers as :func:`_dist` on the expanded samples: extremes and
    percentiles are samples; the sum is exact (integers), so the mean equals
    numpy's whenever a tick is a whole number of ns (to the last bit, else to
    rounding); the standard deviation agrees to rounding.
    """
    values = np.asarray(values, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        return _dist(np.zeros(0), prefix)
    tick_ns = 1e9 / tick_hz
    out = {f"{prefix}min_ns": int(round(values[0] * tick_ns)),
           f"{prefix}max_ns": int(round(values[-1] * tick_ns))}
    mean = int(np.dot(values, counts)) * tick_ns / n
    dev = values * tick_ns - mean
    out[f"{prefix}mean_ns"] = round(mean, 1)
    out[f"{prefix}std_ns"] = round(float(np.sqrt(np.dot(counts, dev * dev) / n)), 1)
    cum = np.cumsum(counts)
    at = np.searchsorted(cum, percentile_ranks(n), side="right")
    for name, v in zip(PERCENTILES, values[at], strict=True):
        out[f"{prefix}{name}_ns"] = int(round(v * tick_ns))
    out[f"{prefix}jitter_ns"] = out[f"{prefix}max_ns"] - out[f"{prefix}min_ns"]
    _bounds(out, prefix, n,
            lambda r: values[np.searchsorted(cum, r, side="right")] * tick_ns)
    return out


def channel_stats_from_counts(pulses, latency, completion, tick_hz):
    """:func:`channel_stats` from value counts instead of records.

    ``pulses``: records of the channel; ``latency``: ``(values, counts)`` of the
    answered pulses' latencies in ticks, values ascending; ``completion``: the same
    of the completed pulses' completion times. This is how a capture too large for
    memory is summed up chunk by chunk (latencies are whole ticks, so counting
    values keeps every percentile exact).
    """
    answered = int(np.sum(latency[1]))
    missed = pulses - answered
    out = {"pulses": int(pulses), "answered": answered, "missed": int(missed),
           "missed_fraction": missed / pulses if pulses else 0.0}
    out.update(_dist_counts(*latency, tick_hz))
    out.update(_dist_counts(*completion, tick_hz, prefix="completion_"))
    return out


def capture_summary(cap):
    """Per-channel statistics of a loaded capture: {name: channel_stats}.

    Statistics-mode captures hold no records; their summary comes from the on-chip
    statistics (percentiles to one histogram bin)."""
    if cap.meta.get("mode") == "statistics" and cap.stats is not None:
        return stats_summary(cap.stats, cap.tick_hz)
    return {name: channel_stats(cap.channel(name), cap.tick_hz) for name in cap.channels()}


#: What a capture's ``END`` status says is missing, for the statuses of a run that
#: ended before its pulse train did (rtrig.host.rig.run.end_status).
_ENDED_EARLY = {"link lost": "ended with a lost link", "unplugged": "ended when the rig was "
                "unplugged", "interrupted": "was interrupted",
                "failed": "ended by a failure"}


def capture_warnings(cap, answered=None):
    """One line per thing missing from ``cap`` (loaded or scanned), each naming its
    file: cut off (no final chunk, or a torn chunk), ended before its pulse train did
    (a lost link, an interruption, a failure), and, from ``answered`` (``{channel:
    (answered, pulses)}``, :func:`answered_counts`), a channel with no answered pulse.
    Every consumer of a capture (compare, exports, the pytest plugin) says these."""
    out = []
    path = cap.path
    if cap.truncated:
        out.append(f"{path} is cut off at byte {cap.truncated_at} (a torn or damaged "
                   "chunk): nothing from there on is read"
                   + ("" if cap.final is not None else ", and it has no final chunk"))
    elif cap.final is None:
        out.append(f"{path} is cut off (no final chunk): what came after its last "
                   "whole chunk is missing")
    status = (cap.final or {}).get("status")
    if status in _ENDED_EARLY:
        out.append(f"{path} {_ENDED_EARLY[status]}: the pulses after that are missing")
    for name, (n, pulses) in (answered or {}).items():
        if n == 0:
            out.append(f"{path} has no answered pulse on {name.upper()}" +
                       (f" ({pulses} pulses, all missed)" if pulses else " (no pulse)"))
    return out


def answered_counts(cap):
    """``{channel: (answered, pulses)}`` of a loaded capture (from on-chip statistics
    in statistics mode)."""
    if cap.meta.get("mode") == "statistics" and cap.stats is not None:
        return {name: (fig["answered"], fig["answered"] + fig["missed"])
                for name, fig in cap.stats["channels"].items()}
    out = {}
    for name in cap.channels():
        rec = cap.channel(name)
        out[name] = (int(np.count_nonzero(~missed_mask(rec))), len(rec))
    return out


def _ns(ticks, tick_hz):
    return ticks * 1e9 / tick_hz


def _percentiles(fig, stat):
    """Percentile values in ticks from a channel's histogram (see the module doc)."""
    n = fig["answered"]
    w, off = stat["bin_width_ticks"], stat["bin_offset_ticks"]
    hist = fig["histogram"]
    out = {}
    for name, q in PERCENTILES.items():
        rank = max(math.ceil(n * q / 100), 1)          # 1-based rank, inverted CDF
        cum = fig["underflow"]
        if rank <= cum:
            value = fig["lat_min"]                      # below the offset: a lower bound
        else:
            value = None
            for i, c in enumerate(hist):
                cum += c
                if rank <= cum:
                    value = off + i * w
                    break
            if value is None:                           # in the overflow range
                value = off + len(hist) * w
        out[name] = min(max(value, fig["lat_min"]), fig["lat_max"])
    return out


def stats_summary(stat, tick_hz):
    """Per-channel summaries of a ``STAT`` chunk, with the keys of
    :func:`rtrig.host.analysis.channel_stats` (ns).

    Mean and standard deviation are exact (from the sums); percentiles have the
    resolution of one bin (see :func:`_percentiles`), and their bounds are widened to
    whole bins; completion time has min, max, mean, jitter and the maximum's
    exceedance bound only (no sum of squares, no histogram): its ``std``,
    percentiles and their bounds are None.
    """
    out = {}
    for name, fig in stat["channels"].items():
        n, missed = fig["answered"], fig["missed"]
        s = {"pulses": n + missed, "answered": n, "missed": missed,
             "missed_fraction": missed / (n + missed) if n + missed else 0.0}
        flags = StatFlags(fig["flags"])
        if n == 0:
            for k in ("min", "max", "mean", "std", *PERCENTILES, "jitter"):
                s[f"{k}_ns"] = None
        else:
            s["min_ns"] = int(round(_ns(fig["lat_min"], tick_hz)))
            s["max_ns"] = int(round(_ns(fig["lat_max"], tick_hz)))
            wrapped = flags & (StatFlags.LAT_SUM_WRAPPED | StatFlags.LAT_SUMSQ_WRAPPED)
            s["mean_ns"] = None if flags & StatFlags.LAT_SUM_WRAPPED else \
                round(_ns(fig["lat_sum"] / n, tick_hz), 1)
            if wrapped:
                s["std_ns"] = None
            else:
                var = (n * fig["lat_sumsq"] - fig["lat_sum"] ** 2) / (n * n)   # ticks²
                s["std_ns"] = round(_ns(math.sqrt(max(var, 0.0)), tick_hz), 1)
            for k, v in _percentiles(fig, stat).items():
                s[f"{k}_ns"] = int(round(_ns(v, tick_hz)))
            s["jitter_ns"] = s["max_ns"] - s["min_ns"]
        s.update(_binned_bounds(fig, stat, tick_hz))
        done = n - fig["incomplete"]
        keys = ("min", "max", "mean", "std", *PERCENTILES, "jitter")
        for k in keys:
            s[f"completion_{k}_ns"] = None
        s.update(dict.fromkeys(bound_keys("completion_")))
        if done > 0:
            s["completion_min_ns"] = int(round(_ns(fig["comp_min"], tick_hz)))
            s["completion_max_ns"] = int(round(_ns(fig["comp_max"], tick_hz)))
            if not flags & StatFlags.COMP_SUM_WRAPPED:
                s["completion_mean_ns"] = round(_ns(fig["comp_sum"] / done, tick_hz), 1)
            s["completion_jitter_ns"] = s["completion_max_ns"] - s["completion_min_ns"]
            s["completion_max_exceedance"] = max_exceedance(done)
        out[name] = s
    return out


def _binned_bounds(fig, stat, tick_hz):
    """The bound keys (:func:`bound_keys`) of a channel's latency from its on-chip
    histogram (:func:`rtrig.host.bounds.binned_quantile_bounds`: each bound widened
    to its bin's edge, never narrowed)."""
    n = fig["answered"]
    out = dict.fromkeys(bound_keys())
    if n == 0:
        return out
    hist = fig["histogram"]
    over = max(n - fig["underflow"] - sum(hist), 0)
    for name, q in PERCENTILES.items():
        lo, hi = binned_quantile_bounds(n, fig["underflow"], hist, over,
                                        stat["bin_offset_ticks"], stat["bin_width_ticks"],
                                        fig["lat_min"], fig["lat_max"], q / 100)
        out[f"{name}_lo_ns"] = None if lo is None else int(round(_ns(lo, tick_hz)))
        out[f"{name}_hi_ns"] = None if hi is None else int(round(_ns(hi, tick_hz)))
    out["max_exceedance"] = max_exceedance(n)
    return out
