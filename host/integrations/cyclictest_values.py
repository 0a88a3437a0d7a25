# SPDX-License-Identifier: BSD-2-Clause
"""What a cyclictest histogram may hold, checked before anything is computed from it:
counts are whole numbers of samples (0 up to int64's range), buckets are cyclictest's
(0 up to :data:`MAX_BUCKETS`), min/avg/max are latencies (finite, 0 or more, min ≤ avg
≤ max for a thread with samples). Every refusal is one
:class:`~rtrig.errors.CaptureFormatError` line naming the file and the field.

Also the reader of cyclictest's ``--json`` output (:func:`json_buckets`): its threads'
histograms, cycle counts and min/avg/max, checked the same way."""

import json

import numpy as np

from ...errors import CaptureFormatError

__all__ = ["MAX_BUCKETS", "MAX_COUNT", "MAX_LATENCY_US", "MAX_FILE_BYTES", "check_count",
           "check_histogram", "json_buckets"]

#: The most buckets cyclictest makes (rt-tests' HIST_MAX).
MAX_BUCKETS = 1_000_000
#: The largest count of samples (int64, as the histograms are held).
MAX_COUNT = (1 << 63) - 1
#: The largest latency taken for one (µs): 10^12 µs are 11.6 days.
MAX_LATENCY_US = 10 ** 12
#: The largest cyclictest file read: 1 000 000 buckets of a few threads' columns.
MAX_FILE_BYTES = 256 << 20


def check_count(path, where, value):
    """``value`` as an int if it is a count of samples, else a one-line refusal."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise CaptureFormatError(f"{path}: {where} is {value!r}, not a whole number of "
                                 "samples")
    if value < 0:
        raise CaptureFormatError(f"{path}: {where} is {value}: a count of samples "
                                 "cannot be negative")
    if value > MAX_COUNT:
        raise CaptureFormatError(f"{path}: {where} is {value}: more samples than there "
                                 f"can be (at most {MAX_COUNT})")
    return int(value)


def _check_latencies(path, name, values, threads):
    arr = np.asarray(values)
    if arr.shape != (threads,):
        raise CaptureFormatError(f"{path}: {name} has {arr.size} values for {threads} "
                                 "threads")
    for t, v in enumerate(arr.tolist()):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CaptureFormatError(f"{path}: thread {t}'s {name} is {v!r}, not a number")
        if not 0 <= v <= MAX_LATENCY_US:       # NaN and infinity fail here too
            raise CaptureFormatError(f"{path}: thread {t}'s {name} is {v!r}: a latency "
                                     f"is 0 to {MAX_LATENCY_US} µs")
    return arr


def check_histogram(h):
    """Refuse a :class:`~rtrig.host.integrations.cyclictest.Histogram` whose fields
    cyclictest cannot have written, in one line naming ``h.path`` and the field."""
    path, counts = h.path, np.asarray(h.counts)
    if counts.ndim != 2 or counts.dtype.kind not in "iu":
        raise CaptureFormatError(f"{path}: the histogram's counts are not whole numbers")
    if counts.shape[1] > MAX_BUCKETS:
        raise CaptureFormatError(f"{path}: {counts.shape[1]} buckets, cyclictest makes at "
                                 f"most {MAX_BUCKETS}")
    neg = np.argwhere(counts < 0)
    if len(neg):
        t, i = neg[0]
        raise CaptureFormatError(f"{path}: thread {t}'s bucket {i} holds {counts[t, i]} "
                                 "samples: a count cannot be negative")
    over = np.asarray(h.overflows)
    if over.shape != (counts.shape[0],) or over.dtype.kind not in "iu" or (over < 0).any():
        raise CaptureFormatError(f"{path}: the histogram overflows are not one count of 0 "
                                 "or more per thread")
    if float(counts.sum(dtype=np.float64)) + float(over.sum(dtype=np.float64)) > MAX_COUNT:
        raise CaptureFormatError(f"{path}: more than {MAX_COUNT} samples in all")
    if h.min is None:
        return
    stats = {k: _check_latencies(path, k, getattr(h, k), counts.shape[0])
             for k in ("min", "avg", "max")}
    has = counts.sum(axis=1) + over > 0
    for t in np.flatnonzero(has):
        lo, avg, hi = (stats[k][t] for k in ("min", "avg", "max"))
        if lo > hi:
            raise CaptureFormatError(f"{path}: thread {t}'s min ({lo}) is above its max "
                                     f"({hi})")
        if not lo <= avg <= hi:
            raise CaptureFormatError(f"{path}: thread {t}'s avg ({avg}) is not between its "
                                     f"min ({lo}) and max ({hi})")


def _thread_buckets(path, t, hist):
    """``{bucket: count}`` of thread ``t``'s ``histogram`` object, checked."""
    if not isinstance(hist, dict):
        raise CaptureFormatError(f"{path}: thread {t}'s histogram is not an object of "
                                 "buckets")
    out = {}
    for key, count in hist.items():
        try:
            b = int(key)
        except ValueError:
            raise CaptureFormatError(f"{path}: thread {t}'s histogram has a bucket "
                                     f"{key!r}, not a number") from None
        if not 0 <= b < MAX_BUCKETS:
            raise CaptureFormatError(f"{path}: thread {t}'s histogram has bucket {b}: "
                                     f"cyclictest's are 0 to {MAX_BUCKETS - 1}")
        out[b] = check_count(path, f"thread {t}'s bucket {b}", count)
    return out


def json_buckets(text, path):
    """``(counts, overflows, {min, avg, max}, sysinfo)`` of cyclictest's ``--json``
    output ``text``: counts threads × buckets, the samples beyond the buckets (its
    cycles less the buckets' sum), each thread's figures."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CaptureFormatError(f"{path}: not cyclictest --json output ({e})") from None
    threads = doc.get("thread") if isinstance(doc, dict) else None
    if not isinstance(threads, dict) or not threads or \
            not all(k.isdigit() and isinstance(v, dict) for k, v in threads.items()):
        raise CaptureFormatError(f"{path}: not cyclictest --json output (no 'thread' "
                                 "object of threads)")
    rows = [threads[k] for k in sorted(threads, key=int)]
    buckets = [_thread_buckets(path, t, r.get("histogram") or {}) for t, r in enumerate(rows)]
    top = max([b + 1 for bs in buckets for b in bs] + [1])
    counts = np.zeros((len(rows), top), dtype=np.int64)
    for t, bs in enumerate(buckets):
        for b, c in bs.items():
            counts[t, b] = c
    over = []
    for t, r in enumerate(rows):
        cycles = check_count(path, f"thread {t}'s cycles", r.get("cycles"))
        if cycles < int(sum(buckets[t].values())):
            raise CaptureFormatError(f"{path}: thread {t}'s cycles ({cycles}) are fewer "
                                     "than the samples in its histogram")
        over.append(cycles - int(sum(buckets[t].values())))
    missing = [k for k in ("min", "avg", "max") if any(k not in r for r in rows)]
    if missing:
        raise CaptureFormatError(f"{path}: a thread has no {missing[0]} (not cyclictest "
                                 "--json output)")
    stats = {k: np.array([r[k] for r in rows], dtype=object) for k in ("min", "avg", "max")}
    for k, v in stats.items():
        _check_latencies(path, k, v, len(rows))
        stats[k] = np.array(v.tolist(), dtype=np.float64)
    sysinfo = doc.get("sysinfo") if isinstance(doc.get("sysinfo"), dict) else {}
    return counts, np.array(over, dtype=np.int64), stats, sysinfo
