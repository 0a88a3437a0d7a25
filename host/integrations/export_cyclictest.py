# SPDX-License-Identifier: BSD-2-Clause
"""The ``cyclictest`` export (docs/exports.md): a capture's latency histogram in the
layout of rt-tests' ``cyclictest -h``.

One line per µs bucket, a column per channel, then the ``# Min Latencies:`` … lines,
so histogram plotting scripts written for cyclictest (OSADL's) work unchanged. A
statistics-mode capture's on-chip histograms are exported when their bins fit the µs
buckets exactly. (:mod:`rtrig.host.integrations.cyclictest` reads such files.)
"""

import numpy as np

from ...channels import channel_order
from ...errors import UsageError
from ..analysis import missed_mask
from ..report.data import channel_records
from .export_csv import no_records, ns_per_tick

__all__ = ["cyclictest_histogram", "write_cyclictest", "MAX_BUCKETS"]


#: Most 1 µs buckets of a cyclictest histogram (one line each): latencies up to 1 s.
#: Beyond the last bucket they are counted as overflows, as cyclictest does.
MAX_BUCKETS = 1_000_000


def _check_buckets(buckets):
    if not 1 <= buckets <= MAX_BUCKETS:
        raise UsageError(f"--buckets must be between 1 and {MAX_BUCKETS} (1 s of 1 µs "
                         f"buckets), got {buckets}",
                         hint="latencies beyond the last bucket are counted as overflows")


def cyclictest_histogram(cap, buckets=None):
    """cyclictest's figures per channel, in µs: ``(names, hist, stats)``.

    ``hist`` has shape ``(buckets, channels)``: bucket ``i`` counts latencies with
    ``floor(ns / 1000) == i`` (cyclictest's integer µs). ``stats`` per channel:
    ``min``, ``avg``, ``max`` (integer µs like cyclictest: truncated), ``total``,
    ``overflows``, ``overflow_pulses`` (pulse numbers at or beyond the last
    bucket) and ``missed``. Default bucket count: enough for the largest latency,
    at most :data:`MAX_BUCKETS`.
    """
    recs = channel_records(cap)
    names = list(recs)
    if not names and cap.stats and cap.stats.get("channels"):
        return _cyclictest_from_stats(cap, buckets)
    if not names:
        no_records(cap)
    tick_ns = ns_per_tick(cap)
    us_all, pulses_all = [], []
    missed = []
    for name in names:
        rec = recs[name]
        ok = ~missed_mask(rec)
        missed.append(int(len(rec) - ok.sum()))
        ns = rec["latency"][ok].astype(np.int64) * tick_ns
        us_all.append(np.floor(ns / 1000.0 + 1e-9).astype(np.int64))
        pulses_all.append(rec["pulse"][ok])
    if buckets is None:
        buckets = min(max([int(u.max()) + 1 for u in us_all if len(u)] + [1]), MAX_BUCKETS)
    _check_buckets(buckets)
    hist = np.zeros((buckets, len(names)), dtype=np.int64)
    stats = []
    for j, (u, p) in enumerate(zip(us_all, pulses_all, strict=True)):
        inside = u < buckets
        hist[:, j] = np.bincount(u[inside], minlength=buckets)[:buckets]
        stats.append({
            "min": int(u.min()) if len(u) else 0,
            "avg": int(u.sum() // len(u)) if len(u) else 0,
            "max": int(u.max()) if len(u) else 0,
            "total": int(len(u)),
            "overflows": int((~inside).sum()),
            "overflow_pulses": p[~inside],
            "missed": missed[j],
        })
    return names, hist, stats


def _cyclictest_from_stats(cap, buckets):
    """:func:`cyclictest_histogram` from the rig's on-chip histograms. Exact when
    every bin lies inside one µs bucket (bin width dividing 1 µs) and no sample fell
    outside the histogram's range; refused otherwise."""
    stat = cap.stats
    tick_ns = ns_per_tick(cap)
    w, off = int(stat["bin_width_ticks"]), int(stat["bin_offset_ticks"])
    bin_ns = w * tick_ns
    if abs(1000.0 / bin_ns - round(1000.0 / bin_ns)) > 1e-9 or (off % w):
        raise UsageError(f"the rig's histogram bins ({bin_ns:g} ns) do not divide 1 µs "
                         "buckets exactly", hint="export json for the exact figures, or "
                         "capture with --mode records")
    names = sorted(stat["channels"], key=channel_order)
    figs = [stat["channels"][n] for n in names]
    for n, fig in zip(names, figs, strict=True):
        if fig.get("underflow") or fig.get("overflow"):
            raise UsageError(f"{n}: {fig.get('underflow', 0)} latencies below and "
                             f"{fig.get('overflow', 0)} above the rig's histogram range",
                             hint="export json for the exact figures")

    def us(ticks):
        return int(np.floor(ticks * tick_ns / 1000.0 + 1e-9))

    if buckets is None:
        buckets = min(max([us(f["lat_max"]) + 1 for f in figs if f["answered"]] + [1]),
                      MAX_BUCKETS)
    _check_buckets(buckets)
    hist = np.zeros((buckets, len(names)), dtype=np.int64)
    stats = []
    for j, fig in enumerate(figs):
        counts = np.asarray(fig.get("histogram") or [], dtype=np.int64)
        bucket = np.floor((off + w * np.arange(len(counts))) * tick_ns / 1000.0
                          + 1e-9).astype(np.int64)
        inside = bucket < buckets
        hist[:, j] = np.bincount(bucket[inside], weights=counts[inside],
                                 minlength=buckets)[:buckets].astype(np.int64)
        n = int(fig["answered"])
        stats.append({"min": us(fig["lat_min"]) if n else 0,
                      "avg": us(fig["lat_sum"] / n) if n else 0,
                      "max": us(fig["lat_max"]) if n else 0,
                      "total": n, "overflows": int(counts[~inside].sum()),
                      "overflow_pulses": np.zeros(0, dtype=np.int64),
                      "missed": int(fig["missed"])})
    return names, hist, stats


def write_cyclictest(cap, f, buckets=None):
    """The histogram in ``cyclictest -h`` layout, one column per channel."""
    names, hist, stats = cyclictest_histogram(cap, buckets)
    n = len(names)
    out = [f"# rtrig {cap.path.name}: latency histogram in cyclictest -h layout; "
           f"columns: {' '.join(names)} (one per response channel), 1 µs buckets",
           "# Histogram"]
    idx = np.char.mod("%06d", np.arange(len(hist)))
    cells = [np.char.mod("%06d", hist[:, j]) for j in range(n)]
    row = idx.astype(object) + " " + cells[0].astype(object)
    for c in cells[1:]:
        row = row + "\t" + c.astype(object)
    out += row.tolist()
    out.append("# Total:" + "".join(f" {s['total']:09d}" for s in stats))
    out.append("# Min Latencies:" + "".join(f" {s['min']:05d}" for s in stats))
    out.append("# Avg Latencies:" + "".join(f" {s['avg']:05d}" for s in stats))
    out.append("# Max Latencies:" + "".join(f" {s['max']:05d}" for s in stats))
    out.append("# Histogram Overflows:" + "".join(f" {s['overflows']:05d}" for s in stats))
    out.append("# Histogram Overflow at cycle number:")
    for j, s in enumerate(stats):
        shown = s["overflow_pulses"][:100].tolist()
        line = f"# Thread {j}:" + "".join(f" {p:05d}" for p in shown)
        if s["overflows"] > len(shown):
            line += f" # {s['overflows'] - len(shown):05d} others"
        out.append(line)
    out.append("# rtrig missed pulses (not in the histogram):"
               + "".join(f" {s['missed']:05d}" for s in stats))
    f.write(("\n".join(out) + "\n").encode())
