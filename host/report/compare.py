# SPDX-License-Identifier: BSD-2-Clause
"""A/B comparison of two captures: is B higher, lower, or is no difference shown at
this sample size?

Per channel and percentile, each capture's percentile gets distribution-free bounds
(:mod:`rtrig.host.bounds`) and the difference B − A gets the bounds
``(B.lo − A.hi, B.hi − A.lo)``. The verdict is *B higher* when the whole interval lies
above 0, *B lower* when below, otherwise *no difference shown*. Missed pulses are
compared the same way with their Clopper–Pearson bounds, and the whole distributions
with a two-sample Kolmogorov–Smirnov test on the latencies in ns (so captures of rigs
with other tick rates compare). The stated confidence holds for the whole
comparison: with ``m`` statements, each is made at 1 − (1 − confidence) / m
(Bonferroni), and each capture's own bounds at the square root of that (the two
captures are independent). The maxima and minima get no interval: they are shown as
measured, with the exceedance bound their sample size supports.

Sweeps are compared by their figures in :mod:`rtrig.host.report.compare_sweeps`.
:func:`rtrig.host.report.compare_text.compare` takes two paths and returns a
:class:`Comparison` (or a sweeps' comparison);
:func:`~rtrig.host.report.compare_text.format_comparison` prints either; ``to_json``
gives the figures for scripts.
"""

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ...capture import scan
from ...channels import channel_order
from ...errors import RtrigError
from ...units import format_hz, format_s
from ..analysis import PERCENTILES, capture_warnings
from ..bounds import (
    DEFAULT_CONFIDENCE,
    binned_quantile_bounds,
    check_confidence,
    difference,
    fraction_bounds,
    joint_level,
    max_exceedance,
    quantile_bounds,
)
from ..model.common import TICK_HZ
from .reduction import CaptureReduction

__all__ = ["compare_captures", "compare_scanned", "compare_samples", "Samples", "channel_samples",
           "Comparison", "ChannelComparison", "FigureComparison",
           "CompareError", "channel_verdict", "HIGHER", "LOWER", "NONE"]

HIGHER, LOWER, NONE = "B higher", "B lower", "no difference shown"
#: The channel verdict when the distributions differ but no percentile says which way.
SHAPE = "B differs in shape"
#: A channel's verdict when a capture is phase-locked (:mod:`rtrig.host.rhythm`).
PHASE_LOCKED = "not comparable: phase-locked"
MIXED = "B higher in some figures, lower in others"


class CompareError(RtrigError):
    """Two files that cannot be compared (one-line reason)."""
    exit_code = 2


@dataclass
class Samples:
    """One channel of one capture: the answered latencies as value counts (ticks,
    ascending), or, from on-chip statistics, as a histogram (``hist``)."""
    values: np.ndarray
    counts: np.ndarray
    pulses: int
    missed: int
    tick_hz: float
    hist: dict | None = None          # binned: below, hist, overflow, offset, width, lo, hi

    @classmethod
    def from_ticks(cls, latencies, missed=0, tick_hz=TICK_HZ):
        """Answered ``latencies`` (ticks of ``tick_hz``) and ``missed`` pulses."""
        values, counts = np.unique(np.asarray(latencies, dtype=np.int64), return_counts=True)
        return cls(values, counts.astype(np.int64), int(counts.sum()) + int(missed),
                   int(missed), tick_hz)

    @property
    def answered(self):
        return self.pulses - self.missed

    def ns(self, ticks):
        return None if ticks is None else ticks * 1e9 / self.tick_hz

    def bounds(self, q, confidence):
        """Bounds (ticks) of the q-quantile."""
        if self.answered == 0:
            return None, None
        if self.hist is None:
            return quantile_bounds(self.values, self.counts, q, confidence)
        h = self.hist
        return binned_quantile_bounds(self.answered, h["below"], h["hist"], h["overflow"],
                                      h["offset"], h["width"], h["lo"], h["hi"], q, confidence)

    def point(self, q):
        """The percentile as the summaries give it (a sample, inverted CDF; from a
        histogram the lower edge of its bin)."""
        if self.answered == 0:
            return None
        rank = max(int(np.ceil(self.answered * q)), 1) - 1
        if self.hist is None:
            cum = np.cumsum(self.counts)
            return int(self.values[np.searchsorted(cum, rank, side="right")])
        edges = np.cumsum([self.hist["below"], *self.hist["hist"], self.hist["overflow"]])
        i = int(np.searchsorted(edges, rank, side="right"))
        v = self.hist["lo"] if i == 0 else self.hist["offset"] + (i - 1) * self.hist["width"]
        return min(max(v, self.hist["lo"]), self.hist["hi"])

    def extreme(self, which):
        if self.answered == 0:
            return None
        if self.hist is not None:
            return self.hist["lo"] if which == "min" else self.hist["hi"]
        return int(self.values[0] if which == "min" else self.values[-1])


def _capture_kind(cap):
    return "sweep" if cap.meta.get("kind") == "sweep" else "capture"


def channel_samples(cap, reduction=None):
    """``{channel: Samples}`` of a scanned capture (:func:`rtrig.capture.scan`);
    ``reduction``: its :class:`CaptureReduction`, when one has read it already."""
    if cap.meta.get("mode") == "statistics" and cap.stats is not None:
        st = cap.stats
        out = {}
        for name, fig in st["channels"].items():
            n = fig["answered"]
            hist = {"below": fig["underflow"], "hist": list(fig["histogram"]),
                    "overflow": max(n - fig["underflow"] - sum(fig["histogram"]), 0),
                    "offset": st["bin_offset_ticks"], "width": st["bin_width_ticks"],
                    "lo": fig["lat_min"], "hi": fig["lat_max"]}
            out[name] = Samples(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                n + fig["missed"], fig["missed"], cap.tick_hz, hist)
        return out
    red = reduction or CaptureReduction(cap)
    out = {}
    for name, first in red.first.items():
        values, counts = first.latency.result()
        answered = int(np.sum(counts))
        out[name] = Samples(values, counts, first.records, first.records - answered,
                            cap.tick_hz)
    return out


@dataclass
class FigureComparison:
    """One percentile of one channel: each capture's value and bounds, and B − A (ns)."""
    figure: str
    a: float | None
    b: float | None
    a_bounds: tuple
    b_bounds: tuple
    diff: tuple
    verdict: str

    def to_json(self):
        return {"figure": self.figure, "a_ns": self.a, "b_ns": self.b,
                "a_bounds_ns": list(self.a_bounds), "b_bounds_ns": list(self.b_bounds),
                "difference_bounds_ns": list(self.diff), "verdict": self.verdict}


@dataclass
class ChannelComparison:
    channel: str
    figures: list
    extremes: dict             # min/max: {"a_ns", "b_ns", "a_exceedance", "b_exceedance"}
    mean: dict                 # {"a_ns", "b_ns"} (shown, no verdict)
    missed: dict               # {"a", "b", "a_bounds", "b_bounds", "diff", "verdict"}
    distribution: dict         # {"test", "statistic", "p_value", "alpha", "verdict"}
    samples: dict              # {"a": answered, "b": answered}
    verdict: str = NONE

    def to_json(self):
        return {"channel": self.channel, "verdict": self.verdict, "samples": self.samples,
                "figures": [f.to_json() for f in self.figures], "extremes": self.extremes,
                "mean": self.mean, "missed": self.missed, "distribution": self.distribution}


@dataclass
class Comparison:
    a: str
    b: str
    confidence: float
    statements: int
    channels: dict
    warnings: list = field(default_factory=list)

    def to_json(self):
        return {"kind": "capture", "a": self.a, "b": self.b, "confidence": self.confidence,
                "statements": self.statements, "warnings": self.warnings,
                "channels": {k: c.to_json() for k, c in self.channels.items()}}


def _verdict(lo, hi):
    if lo is not None and lo > 0:
        return HIGHER
    if hi is not None and hi < 0:
        return LOWER
    return NONE


def channel_verdict(figures, missed, distribution, a_answered, b_answered):
    """A channel's headline, from every statement of its table: the percentiles'
    verdicts (``figures``), the missed pulses' (``missed``), the distributions'
    (``distribution``) and whether each capture has an answered pulse. It reads
    "no difference shown" only when none of them shows one; ``rtrig compare`` and the
    report both print it."""
    up, down = HIGHER in figures, LOWER in figures
    parts = []
    if up and down:
        parts.append(MIXED)
    elif up or down:
        parts.append(HIGHER if up else LOWER)
    elif distribution != NONE:
        parts.append(SHAPE)
    if not (a_answered and b_answered):
        who = ("A and B have" if not (a_answered or b_answered) else
               "A has" if not a_answered else "B has")
        parts.append(f"{who} no answered pulse")
    if missed in (HIGHER, LOWER):
        parts.append(f"B misses {'more' if missed == HIGHER else 'fewer'} pulses")
    return ", ".join(parts) or NONE


def _bins_ns(s):
    """A histogram's bins in ns: (offset, width, count)."""
    h = s.hist
    return s.ns(h["offset"]), s.ns(h["width"]), len(h["hist"])


def _same_bins(a, b):
    (oa, wa, na), (ob, wb, nb) = _bins_ns(a), _bins_ns(b)
    return na == nb and np.isclose(oa, ob, rtol=1e-9, atol=1e-6) and \
        np.isclose(wa, wb, rtol=1e-9, atol=1e-6)


def _ks(a, b, alpha):
    """Two-sample Kolmogorov–Smirnov on the answered latencies in ns (each capture's
    ticks at its own rate: captures of rigs of other tick rates compare); from
    histograms with the same bins, on the bins."""
    if a.answered == 0 or b.answered == 0:
        return {"test": "ks", "statistic": None, "p_value": None, "alpha": alpha,
                "verdict": NONE, "note": "a capture has no answered pulse"}
    if (a.hist is None) != (b.hist is None) or (a.hist is not None and not _same_bins(a, b)):
        return {"test": "ks", "statistic": None, "p_value": None, "alpha": alpha,
                "verdict": NONE, "note": "not comparable: the captures hold different "
                "kinds of data (records, or histograms with other bins)"}

    def expand(s):
        if s.hist is None:
            return np.repeat(s.values * (1e9 / s.tick_hz), s.counts)
        h = s.hist
        edges = [h["lo"]] + [h["offset"] + i * h["width"] for i in range(len(h["hist"]) + 1)]
        return np.repeat(np.asarray(edges, dtype=np.float64) * (1e9 / s.tick_hz),
                         [h["below"], *h["hist"], h["overflow"]])

    xa, xb = expand(a), expand(b)
    # The exact distribution is for small samples without ties; past that scipy's
    # asymptotic one (conservative with ties, as latencies in whole ticks have).
    method = "exact" if len(xa) * len(xb) <= 10_000 else "asymp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # exact → asymp fallback note
        res = stats.ks_2samp(xa, xb, method=method)
    p = float(res.pvalue)
    return {"test": "ks", "statistic": float(res.statistic), "p_value": p, "alpha": alpha,
            "verdict": "distributions differ" if p < alpha else NONE}


def _compare_channel(name, a, b, level, alpha):
    figures = []
    for fig, pct in PERCENTILES.items():
        q = pct / 100
        ab = tuple(a.ns(v) for v in a.bounds(q, level))
        bb = tuple(b.ns(v) for v in b.bounds(q, level))
        d = difference(ab, bb)
        figures.append(FigureComparison(fig, a.ns(a.point(q)), b.ns(b.point(q)), ab, bb, d,
                                        _verdict(*d)))
    extremes = {}
    for which in ("min", "max"):
        extremes[which] = {"a_ns": a.ns(a.extreme(which)), "b_ns": b.ns(b.extreme(which)),
                           "a_exceedance": max_exceedance(a.answered, level),
                           "b_exceedance": max_exceedance(b.answered, level)}
    mean = {"a_ns": _mean_ns(a), "b_ns": _mean_ns(b)}
    fa = fraction_bounds(a.missed, a.pulses, level)
    fb = fraction_bounds(b.missed, b.pulses, level)
    dm = difference(fa, fb)
    missed = {"a": [a.missed, a.pulses], "b": [b.missed, b.pulses], "a_bounds": list(fa),
              "b_bounds": list(fb), "difference_bounds": list(dm), "verdict": _verdict(*dm)}
    dist = _ks(a, b, alpha)
    verdict = channel_verdict([f.verdict for f in figures], missed["verdict"],
                              dist["verdict"], a.answered, b.answered)
    return ChannelComparison(name, figures, extremes, mean, missed, dist,
                             {"a": a.answered, "b": b.answered}, verdict)


def _mean_ns(s):
    if s.answered == 0 or s.hist is not None:
        return None
    return float(np.dot(s.values, s.counts) / s.answered) * 1e9 / s.tick_hz


#: Settings whose difference makes a comparison suspect: (label, getter, format).
def _settings(meta):
    stim = meta.get("stimulus") or {}
    target = meta.get("target") or {}
    tick = meta.get("tick_hz")
    jitter = stim.get("jitter_ticks")
    return {
        "frequency": (format_hz(stim["freq_hz"]) if stim.get("freq_hz") else None),
        "load": ("on" if meta.get("load") else "off") if "load" in meta else None,
        "jitter": (format_s(jitter / tick) if jitter is not None and tick else None),
        "target": " ".join(str(v) for v in (target.get("kind"), target.get("preset"))
                           if v) or None,
        "rig": " ".join(str(v) for v in (
            f"board {meta.get('board')}" if meta.get("board") is not None else None,
            "simulated" if meta.get("simulation") else None,
            format_hz(tick).replace("Hz", "Hz ticks") if tick else None) if v) or None,
    }


def _warnings(ma, mb):
    out = []
    sa, sb = _settings(ma), _settings(mb)
    for key in sa:
        if sa[key] != sb[key]:
            out.append(f"A and B were measured with different {key}: "
                       f"{sa[key] or 'unknown'} against {sb[key] or 'unknown'}")
    modes = ma.get("mode") or "records", mb.get("mode") or "records"
    if modes[0] != modes[1]:
        out.append(f"A holds {modes[0]} and B {modes[1]}: a statistics-mode capture's "
                   "percentiles and bounds have the resolution of its histogram's bins")
    return out


def _open(path, label):
    if not os.path.exists(path):
        raise CompareError(f"{label}: no such capture file: {path}")
    return scan(path)


def compare_captures(a_path, b_path, confidence=DEFAULT_CONFIDENCE, channels=None):
    """Compare two latency captures; see the module doc. ``channels``: the channels
    to compare (default: all; A and B must then hold the same)."""
    return compare_scanned(_open(a_path, "A"), _open(b_path, "B"), confidence, channels)


def compare_scanned(a_cap, b_cap, confidence=DEFAULT_CONFIDENCE, channels=None,
                    reductions=(None, None)):
    """:func:`compare_captures` of two captures already opened (loaded or scanned),
    with their :class:`CaptureReduction` where a report has made them already."""
    confidence = check_confidence(confidence)
    for cap, label in ((a_cap, "A"), (b_cap, "B")):
        if _capture_kind(cap) == "sweep":
            raise CompareError(f"{label} ({cap.path}) is a sweep and the other a capture: "
                               "compare two captures or two sweeps")
    a, b = (channel_samples(cap, red) for cap, red in zip((a_cap, b_cap), reductions,
                                                          strict=True))
    for s, label, cap in ((a, "A", a_cap), (b, "B", b_cap)):
        if not s or all(c.pulses == 0 for c in s.values()):
            raise CompareError(f"{label} ({cap.path}) holds no latency record to compare")
    if channels is None:
        if set(a) != set(b):
            raise CompareError(f"A has channels {', '.join(a)} and B has {', '.join(b)}: "
                               "name the ones to compare (--channels)")
        channels = sorted(a, key=channel_order)
    else:
        for name in channels:
            for s, label in ((a, "A"), (b, "B")):
                if name not in s:
                    raise CompareError(f"{label} has no channel '{name}' "
                                       f"(it has {', '.join(s) or 'none'})")
    c = compare_samples(a, b, confidence, channels)
    c.a, c.b = str(a_cap.path), str(b_cap.path)
    from ..rhythm import locked_notes
    locked = locked_notes(a_cap, b_cap, PHASE_LOCKED)
    for ch in c.channels.values() if locked else ():
        ch.verdict = PHASE_LOCKED
    c.warnings = [*(w for cap, s in ((a_cap, a), (b_cap, b)) for w in capture_warnings(
        cap, {n: (s[n].answered, s[n].pulses) for n in channels})),
        *_warnings(a_cap.meta, b_cap.meta), *locked]
    return c


def compare_samples(a, b, confidence=DEFAULT_CONFIDENCE, channels=None):
    """:func:`compare_captures` of samples already in hand: ``a`` and ``b`` map channel
    names to :class:`Samples` (e.g. :meth:`Samples.from_ticks`)."""
    confidence = check_confidence(confidence)
    channels = list(a) if channels is None else list(channels)
    statements = len(channels) * (len(PERCENTILES) + 2)
    level = joint_level(confidence, statements)
    alpha = (1 - confidence) / statements
    out = {name: _compare_channel(name, a[name], b[name], level, alpha) for name in channels}
    return Comparison("A", "B", confidence, statements, out)
