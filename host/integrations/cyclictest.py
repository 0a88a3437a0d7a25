# SPDX-License-Identifier: BSD-2-Clause
"""cyclictest histograms beside rig captures (``rtrig report``, docs/report.md).

rt-tests' ``cyclictest -h N`` (or ``-H N``, ``--histfile=PATH``) prints a latency
histogram of N buckets of 1 µs, one column per thread (and a total column with
``-H``), then summary lines::

    # Histogram
    000000 000000	000000
    000001 000012	000003
    …
    # Total: 000001999 000001999
    # Min Latencies: 00045 00014
    # Avg Latencies: 00066 00068
    # Max Latencies: 01284 04633
    # Histogram Overflows: 00001 00001
    # Histogram Overflow at cycle number:
    # Thread 0: 01259
    …

Those are latencies the system timed itself (a timer's wake-up measured by the same
clock), where the rig measures from outside, pin to pin. :func:`read` parses such a
file into a :class:`Histogram`; :func:`split_paths` tells the files given to
``rtrig report`` apart; :func:`report_section` adds the side-by-side section to a
report: a summary table (``self-timed (cyclictest)`` rows against ``external
(rig)`` rows), the histograms overlaid as densities and the tails.
"""

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...capture import MAGIC
from ...errors import CaptureFormatError
from ...outputs import read_input
from .cyclictest_values import MAX_FILE_BYTES, check_count, check_histogram, json_buckets

__all__ = ["Histogram", "parse", "parse_json", "read", "is_cyclictest", "split_paths",
           "report_section"]

# signed, so that a negative count is named rather than taken for a status line
_ROW = re.compile(r"^\s*(-?\d+)((?:\s+-?\d+)+)\s*$")
_SUMMARY = {"Total": "total", "Min Latencies": "min", "Avg Latencies": "avg",
            "Max Latencies": "max", "Histogram Overflows": "overflows"}


@dataclass
class Histogram:
    """One cyclictest histogram file. ``counts[t, i]``: samples of thread ``t`` in
    bucket ``i`` (``[i, i + 1)`` µs); ``overflows[t]``: its samples beyond the last
    bucket; ``min``/``avg``/``max``: cyclictest's own per-thread figures in µs (None
    when the file has no summary lines). A ``-H`` total column is dropped (it is the
    sum of the threads)."""
    path: Path
    counts: np.ndarray
    overflows: np.ndarray
    min: np.ndarray | None = None
    avg: np.ndarray | None = None
    max: np.ndarray | None = None
    unit_ns: int = 1000
    notes: list = field(default_factory=list)
    sysinfo: dict = field(default_factory=dict)       # cyclictest --json's

    def __post_init__(self):
        check_histogram(self)           # what cyclictest cannot have written: refused

    @property
    def name(self):
        return self.path.name

    @property
    def threads(self):
        return self.counts.shape[0]

    @property
    def buckets(self):
        return self.counts.shape[1]

    @property
    def samples(self):
        """Every sample: those in the buckets and those beyond."""
        return int(self.counts.sum() + self.overflows.sum())

    def combined(self):
        """Counts per bucket over all threads."""
        return self.counts.sum(axis=0)

    def percentile_ns(self, percent):
        """The lower edge of the bucket holding the ``percent`` percentile (inverted
        CDF, like the rig's percentiles: a bucket that holds a sample, never an
        interpolation), or None when it lies among the overflows."""
        n = self.samples
        if n == 0:
            return None
        rank = max(int(np.ceil(percent / 100.0 * n)), 1)
        cum = np.cumsum(self.combined())
        i = int(np.searchsorted(cum, rank))
        return None if i >= self.buckets else i * self.unit_ns

    def summary(self):
        """min, mean, p50, p99, p99.9 and max in ns over all threads; ``overflows``."""
        n_t = self.counts.sum(axis=1) + self.overflows
        out = {"samples": self.samples, "threads": self.threads,
               "overflows": int(self.overflows.sum()), "range_ns": self.buckets * self.unit_ns}
        if self.min is not None and self.samples:
            out["min_ns"] = int(self.min.min()) * self.unit_ns
            out["max_ns"] = int(self.max.max()) * self.unit_ns
            out["mean_ns"] = float((self.avg * n_t).sum() / n_t.sum()) * self.unit_ns
        else:           # no summary lines: the buckets' edges (overflows unknown)
            nz = np.flatnonzero(self.combined())
            out["min_ns"] = int(nz[0]) * self.unit_ns if len(nz) else None
            out["max_ns"] = int(nz[-1]) * self.unit_ns if len(nz) and not out["overflows"] \
                else None
            c = self.combined()
            out["mean_ns"] = (float((np.arange(self.buckets) * c).sum() / c.sum()) * self.unit_ns
                              if c.sum() and not out["overflows"] else None)
        for key, p in (("p50_ns", 50), ("p99_ns", 99), ("p999_ns", 99.9)):
            out[key] = self.percentile_ns(p)
        return out

    def exceedance(self):
        """``(x_ns, p)``: the fraction of all samples at or above each bucket's lower
        edge, overflows included; ends at the maximum (one sample) when it is known."""
        n = self.samples
        if n == 0:
            return np.zeros(0), np.zeros(0)
        c = self.combined()
        at_or_above = n - np.concatenate(([0], np.cumsum(c)[:-1]))
        keep = c > 0
        x = np.arange(self.buckets, dtype=np.float64)[keep] * self.unit_ns
        p = at_or_above[keep] / n
        mx = None if self.max is None else int(self.max.max()) * self.unit_ns
        if mx is not None and (len(x) == 0 or mx > x[-1]):
            if self.overflows.sum():
                x = np.append(x, self.buckets * self.unit_ns)
                p = np.append(p, self.overflows.sum() / n)
            x = np.append(x, mx)
            p = np.append(p, 1.0 / n)
        return x, p


def _ints(text, path, lineno, field="value"):
    try:
        values = [int(v) for v in text.split()]
    except ValueError:
        raise CaptureFormatError(f"{path}: line {lineno}: not a cyclictest summary line "
                                 f"({text.strip()[:40]!r})") from None
    return [check_count(path, f"line {lineno}: {field}", v) for v in values]


def parse(text, path="<text>"):
    """A :class:`Histogram` from the text of ``cyclictest -h``/``-H`` output."""
    path = Path(path)
    rows, summary, seen_header = [], {}, False
    width = None
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            if body.startswith("Histogram") and ":" not in body:
                seen_header = True
            key, _, rest = body.partition(":")
            if key in _SUMMARY:
                summary[_SUMMARY[key]] = _ints(rest, path, lineno, f"'{key}'")
            continue
        m = _ROW.match(line)
        if not m:
            if not rows and not seen_header:
                break               # not a histogram at all (checked below)
            # a thread's status line (cyclictest without -q) or other chatter
            continue
        bucket = int(m.group(1))
        vals = [check_count(path, f"line {lineno}: bucket {bucket}'s count", int(v))
                for v in m.group(2).split()]
        if width is None:
            width = len(vals)
        elif len(vals) != width:
            raise CaptureFormatError(f"{path}: line {lineno}: {len(vals)} columns, the "
                                     f"histogram has {width}")
        if bucket != len(rows):
            raise CaptureFormatError(f"{path}: line {lineno}: bucket {bucket} "
                                     f"where {len(rows)} was expected")
        rows.append(vals)
    if not rows:
        raise CaptureFormatError(f"{path}: no cyclictest histogram in it (run "
                                 "cyclictest with -h N or -H N)")
    counts = np.array(rows, dtype=np.int64).T            # threads × buckets
    cols = counts.shape[0]
    # Min and Avg have one value per thread; with -H the histogram, Total, Max and
    # Overflows also have a last value for all threads together: dropped here.
    threads = len(summary["min"]) if "min" in summary else len(summary.get("total", [])) or cols
    if cols == threads + 1:
        counts = counts[:threads]
    elif cols != threads:
        raise CaptureFormatError(f"{path}: {cols} histogram columns but {threads} threads "
                                 "in the summary")
    for key in ("total", "min", "avg", "max", "overflows"):
        if key in summary and len(summary[key]) == threads + 1 and cols == threads + 1:
            summary[key] = summary[key][:threads]
        if key in summary and len(summary[key]) != threads:
            raise CaptureFormatError(f"{path}: '{key}' line has {len(summary[key])} values "
                                     f"for {threads} threads")
    notes = []
    if "total" in summary and list(counts.sum(axis=1)) != summary["total"]:
        notes.append("the buckets do not add up to cyclictest's Total line")
    over = np.array(summary.get("overflows", [0] * threads), dtype=np.int64)
    stats = {k: (np.array(summary[k], dtype=np.int64) if k in summary else None)
             for k in ("min", "avg", "max")}
    if any(v is None for v in stats.values()):
        stats = {"min": None, "avg": None, "max": None}
    return Histogram(path, counts, over, notes=notes, **stats)


def parse_json(text, path="<text>"):
    """A :class:`Histogram` from cyclictest's ``--json`` output ``text``."""
    path = Path(path)
    counts, over, stats, sysinfo = json_buckets(text, path)
    return Histogram(path, counts, over, sysinfo=sysinfo, **stats)


def read(path):
    """Parse the cyclictest file ``path``: a ``-h``/``-H`` histogram, or ``--json``
    output. Only a regular file is read, of at most
    :data:`~.cyclictest_values.MAX_FILE_BYTES`."""
    path = Path(path)
    text = read_input(path, MAX_FILE_BYTES, "a cyclictest file",
                      CaptureFormatError).decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        return parse_json(text, path)
    return parse(text, path)


def is_cyclictest(path):
    """Is ``path`` to be read as a cyclictest histogram? Not when it is named
    ``.rtrig``, cannot be read (the capture reader says why) or starts as a capture."""
    path = Path(path)
    if path.suffix == ".rtrig" or not path.is_file():   # a FIFO would block here
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) != MAGIC
    except OSError:
        return False


def split_paths(paths):
    """``rtrig report``'s files: ``(captures, histograms)`` — the rtrig captures as
    given, the cyclictest files parsed (a bad one raises CaptureFormatError)."""
    caps, hists = [], []
    for p in paths:
        if is_cyclictest(p):
            hists.append(read(p))
        else:
            caps.append(p)
    return caps, hists


# --------------------------------------------------------------------------- report

_SELF = "self-timed (cyclictest)"
_EXT = "external (rig)"
_HEADS = ["source", "file", "samples", "min", "mean", "p50", "p99", "p99.9", "max",
          "beyond range"]


def _us(ns, approx_above=None):
    if ns is None:
        return "—" if approx_above is None else f"&gt; {approx_above / 1000:g}"
    return f"{ns / 1000:.4g}"


def _rows(histograms, rig, labels):
    rows = []
    for h in histograms:
        s = h.summary()
        rng = s["range_ns"]
        rows.append([_SELF, html.escape(h.name) + (f" ({h.threads} threads)"
                                                   if h.threads > 1 else ""),
                     s["samples"], _us(s["min_ns"]), _us(s["mean_ns"]),
                     _us(s["p50_ns"], rng), _us(s["p99_ns"], rng), _us(s["p999_ns"], rng),
                     _us(s["max_ns"]),
                     f"{s['overflows']} (&gt; {rng / 1000:g} µs)" if s["overflows"] else "0"])
    for lb, per_channel in zip(labels, rig, strict=True):
        for ch, d in per_channel.items():
            st = d["stats"]
            rows.append([_EXT, html.escape(f"{lb} · {ch.upper()}"), st["answered"],
                         _us(st["min_ns"]), _us(st["mean_ns"]), _us(st["p50_ns"]),
                         _us(st["p99_ns"]), _us(st["p999_ns"]), _us(st["max_ns"]),
                         f"{st['missed']} missed"])
    return rows


def _table(rows):
    h = "".join(f"<th>{x}</th>" for x in _HEADS)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


_COLORS = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#ff7f0e"]
_RIG_COLORS = ["#1f77b4", "#d62728", "#7f7f7f", "#bcbd22"]


def density_figure(histograms, rig, labels):
    """The histograms as densities (fraction of samples per µs) on one axis, so 1 µs
    cyclictest buckets and the rig's finer bins compare."""
    data = []
    for i, h in enumerate(histograms):
        n = h.samples
        c = h.combined()
        last = int(np.flatnonzero(c)[-1]) + 2 if c.any() else 1
        x = np.arange(last, dtype=np.float32) + 0.5
        data.append({"type": "scatter", "x": x, "y": (c[:last] / max(n, 1)).astype(np.float32),
                     "name": f"{_SELF}: {h.name}", "mode": "lines",
                     "line": {"shape": "hvh", "color": _COLORS[i % len(_COLORS)]},
                     "hovertemplate": "%{x:.1f} µs: %{y:.3g} per µs<extra></extra>"})
    k = 0
    for lb, per_channel in zip(labels, rig, strict=True):
        for ch, d in per_channel.items():
            edges, counts = d["hist"]
            if len(counts) == 0:
                continue
            edges = np.asarray(edges, dtype=np.float64)
            width_us = np.diff(edges) / 1000.0
            centres = (edges[:-1] + edges[1:]) / 2000.0
            total = max(int(np.sum(counts)), 1)
            data.append({"type": "scatter", "x": centres.astype(np.float32),
                         "y": (np.asarray(counts) / total / width_us).astype(np.float32),
                         "name": f"{_EXT}: {lb} · {ch.upper()}", "mode": "lines",
                         "line": {"shape": "hvh", "color": _RIG_COLORS[k % len(_RIG_COLORS)]},
                         "hovertemplate": "%{x:.3f} µs: %{y:.3g} per µs<extra></extra>"})
            k += 1
    lay = {"height": 420, "title": {"text": "Latency density: self-timed (cyclictest) and "
                                            "external (rig)", "x": 0.5},
           "xaxis": {"title": {"text": "latency, µs"}, "showgrid": True},
           "yaxis": {"title": {"text": "fraction of samples per µs"}, "type": "log",
                     "exponentformat": "power"},
           "legend": {"orientation": "h", "y": -0.25}, "margin": {"l": 70, "r": 30, "t": 50,
                                                                  "b": 50}}
    return {"data": data, "layout": lay}


def report_section(page, histograms, rig, labels):
    """Add the side-by-side section to a report page (``page.add(html)``,
    ``page.figure(fig)``). ``rig``: the per-channel plot data of each capture (as the
    report computed it), ``labels`` their labels."""
    from ..report.figures import tail_figure
    page.add('<h2 id="cyclictest">Self-timed (cyclictest) and external (rig)</h2>')
    page.add('<p class="note">cyclictest times its own wake-ups with the system\'s clock '
             "(timer expiry → thread running, 1 µs buckets); the rig times the target from "
             "outside, pin to pin (stimulus edge → response edge). Percentiles are the "
             "lower edge of the bucket or bin that holds them; \"&gt; N\" lies beyond the "
             "histogram's range.</p>")
    page.add(_table(_rows(histograms, rig, labels)))
    for h in histograms:
        for note in h.notes:
            page.add(f'<p class="note">{html.escape(h.name)}: {html.escape(note)}</p>')
    page.figure(density_figure(histograms, rig, labels))
    series = [(f"{_SELF}: {h.name}", *h.exceedance(), _COLORS[i % len(_COLORS)], "dot")
              for i, h in enumerate(histograms)]
    k = 0
    for lb, per_channel in zip(labels, rig, strict=True):
        for ch, d in per_channel.items():
            series.append((f"{_EXT}: {lb} · {ch.upper()}", *d["tail"],
                           _RIG_COLORS[k % len(_RIG_COLORS)], "solid"))
            k += 1
    page.figure(tail_figure(series))
