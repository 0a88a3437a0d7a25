"""Latency statistics over captured records (numpy, no per-sample loops)."""

import numpy as np

from ..protocol import ChanFlags

__all__ = ["channel_stats", "channel_stats_from_counts", "percentile_ranks", "capture_summary",
           "ticks_to_ns", "PERCENTILES"]

#: Percentiles reported per channel: name → percent.
PERCENTILES = {"p50": 50, "p99": 99, "p999": 99.9, "p9999": 99.99}


def ticks_to_ns(ticks, tick_hz):
    return np.asarray(ticks, dtype=np.float64) * (1e9 / tick_hz)


def _dist(values_ns, prefix=""):
    out = {}
    if len(values_ns) == 0:
        for k in ("min", "max", "mean", *PERCENTILES):
            out[f"{prefix}{k}_ns"] = None
        out[f"{prefix}jitter_ns"] = None
        out[f"{prefix}std_ns"] = None
        return out
    v = np.asarray(values_ns)
    out[f"{prefix}min_ns"] = int(round(v.min()))
    out[f"{prefix}max_ns"] = int(round(v.max()))
    out[f"{prefix}mean_ns"] = round(float(v.mean()), 1)
    out[f"{prefix}std_ns"] = round(float(v.std()), 1)
    # inverted_cdf: every percentile is a measured sample, never an interpolation.
    pct = np.percentile(v, list(PERCENTILES.values()), method="inverted_cdf")
    for name, p in zip(PERCENTILES, pct, strict=True):
        out[f"{prefix}{name}_ns"] = int(round(p))
    out[f"{prefix}jitter_ns"] = out[f"{prefix}max_ns"] - out[f"{prefix}min_ns"]
    return out


def channel_stats(records, tick_hz):
    """Statistics of one channel's latency records.

    Returns a dict: pulses, answered, missed, missed_fraction, latency figures
    (min/max/mean/std/p50/p99/p999/p9999/jitter in ns) and the same for completion
    with a ``completion_`` prefix.
    """
    missed = (records["flags"] & ChanFlags.MISSED) != 0
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
    at = np.searchsorted(np.cumsum(counts), percentile_ranks(n), side="right")
    for name, v in zip(PERCENTILES, values[at], strict=True):
        out[f"{prefix}{name}_ns"] = int(round(v * tick_ns))
    out[f"{prefix}jitter_ns"] = out[f"{prefix}max_ns"] - out[f"{prefix}min_ns"]
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
        from .stats import stats_summary
        return stats_summary(cap.stats, cap.tick_hz)
    return {name: channel_stats(cap.channel(name), cap.tick_hz) for name in cap.channels()}
