# SPDX-License-Identifier: BSD-2-Clause
"""Latency budgets: limits on a test's captures and sweeps, checked in CI.

A budget is what ``@pytest.mark.latency_budget(...)`` says (docs/ci.md)::

    channel="isr", p99="5us", max="10us", missed=0, mf_isr_min="100k"

* a latency figure of the channel's capture summary (``min``, ``mean``, ``p50``,
  ``p99``, ``p999``, ``p9999``, ``max``, ``jitter``, ``std`` and the same with a
  ``completion_`` prefix) is an upper limit, a duration (``"5us"``; a bare number is
  in seconds);
* ``missed`` is an upper limit on the missed pulses: a count (``0``, ``3``) or a
  fraction of the pulses (``"0.1%"``);
* ``mf_isr_min``, ``mf_app_min``, ``sf_min`` are lower limits on a sweep's figures, a
  frequency (``"100k"``; a number is in Hz).

Against a baseline capture (``baseline="isr.rtrig"``, ``confidence=0.95``), a figure
takes an *allowance* instead, a string with a sign:

* ``p50``, ``p99``, ``p999``, ``p9999``, ``max``: ``"+5%"`` (of the baseline's figure)
  or ``"+500ns"`` (a duration) worse than the baseline at most;
* ``missed``: ``"+0"`` or ``"+0.1%"``, the missed fraction above the baseline's;
* ``mf_isr_min``, ``mf_app_min``, ``sf_min``: ``"-5%"`` or ``"-10k"`` below a baseline
  sweep's figure at most.

A percentile fails its gate only when the measurement shows it worse than the
allowance permits at the stated confidence: the lower bound of the measured
percentile lies above the upper bound of the baseline's, raised by the allowance. Each
capture's bounds are taken at ``joint_level(confidence)`` (the square root), so both
hold together with ``confidence``, and a test meeting its allowance fails at most
``1 − confidence`` of the time. The missed fraction is gated the same way with its
Clopper–Pearson bounds. The maximum has no interval: it is compared as measured. A
sweep figure lies between the highest frequency measured clear and the first found
failing; it fails when the measured failing frequency lies below the baseline's clear
one, lowered by the allowance.

:func:`parse_budget` turns the keywords into :class:`Limit` objects;
:func:`load_baselines` reads the baseline files they name (:class:`BudgetError`, one
line, for a file that is missing or of the wrong kind);
:func:`~rtrig.host.integrations.budget_check.check` compares the limits with captures
and sweeps and returns one :class:`Violation` per figure out of budget (its
``message`` names the figure, the limit, the measured value and the capture file);
:func:`~rtrig.host.integrations.budget_check.evaluate` also returns each baseline
comparison as a :class:`~rtrig.host.integrations.budget_check.Gate`.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from ...capture import scan
from ...errors import RtrigError
from ...units import format_hz, format_s, parse_duration, parse_frequency
from ..analysis import PERCENTILES, capture_warnings
from ..bounds import DEFAULT_CONFIDENCE, check_confidence
from ..report.compare import channel_samples

__all__ = ["Limit", "Violation", "Baseline", "BudgetError", "parse_budget",
           "load_baselines", "LATENCY_FIGURES", "SWEEP_FIGURES", "GATED_FIGURES"]

_BASE = ("min", "mean", "p50", "p99", "p999", "p9999", "max", "jitter", "std")
#: Latency figures a budget can bound (keys of a capture summary without ``_ns``).
LATENCY_FIGURES = _BASE + tuple(f"completion_{k}" for k in _BASE)
#: Sweep figures a budget can require: keyword → (sweep result key, name).
SWEEP_FIGURES = {"mf_isr_min": ("mf_isr_hz", "MF-ISR"), "mf_app_min": ("mf_app_hz", "MF-APP"),
                 "sf_min": ("sf_hz", "SF")}
#: Figures that take an allowance against a baseline.
GATED_FIGURES = (*PERCENTILES, "max", "missed", *SWEEP_FIGURES)


class BudgetError(ValueError):
    """A budget that cannot be understood (unknown figure, bad value)."""


@dataclass(frozen=True)
class Limit:
    """One figure's limit. ``kind``: ``latency`` (``value`` in ns, upper limit),
    ``missed`` (a count, or a fraction when ``fraction``), ``sweep`` (Hz, lower).

    With ``baseline`` (a path) the limit is an allowance against that file's figure:
    ``value`` is a fraction of the baseline's figure when ``fraction``, else an amount
    (ns, Hz; for ``missed`` always a fraction of the pulses), at ``confidence``."""
    channel: str
    figure: str
    kind: str
    value: float
    text: str
    fraction: bool = False
    baseline: str | None = None
    confidence: float | None = None

    def to_json(self):
        if self.baseline is not None:
            unit = "fraction" if self.fraction or self.kind == "missed" else \
                {"latency": "ns", "sweep": "Hz"}[self.kind]
            return {"channel": self.channel, "figure": self.figure, "limit": self.text,
                    "value": self.value, "unit": unit, "bound": "baseline",
                    "baseline": self.baseline, "confidence": self.confidence}
        return {"channel": self.channel if self.kind != "sweep" else None,
                "figure": self.figure, "limit": self.text,
                "value": self.value, "unit": {"latency": "ns", "sweep": "Hz"}.get(
                    self.kind, "fraction" if self.fraction else "pulses"),
                "bound": "min" if self.kind == "sweep" else "max"}


@dataclass(frozen=True)
class Violation:
    limit: Limit
    measured: object
    source: str          # the capture or sweep file
    message: str


def _fmt_ns(ns):
    return format_s(ns * 1e-9)


def parse_budget(kwargs, folder=None):
    """The limits of one ``latency_budget`` marker's keywords (raises BudgetError).
    A relative ``baseline`` path is taken from ``folder`` (the test file's)."""
    kw = dict(kwargs)
    channel = str(kw.pop("channel", "isr")).lower()
    if channel not in ("isr", "app"):
        raise BudgetError(f"latency_budget: unknown channel '{channel}' (isr or app)")
    baseline, confidence = _baseline_keywords(kw, folder)
    limits = []
    for key, v in kw.items():
        if isinstance(v, str) and v.strip()[:1] in ("+", "-"):
            limits.append(_allowance(channel, key, v, baseline, confidence))
        else:
            limits.append(_absolute(channel, key, v))
    if not limits:
        raise BudgetError("latency_budget: no limit given (e.g. p99='5us')")
    if baseline is not None and not any(lim.baseline for lim in limits):
        raise BudgetError(f"latency_budget: baseline {baseline} given but no allowance "
                          "against it (e.g. p99='+5%')")
    return limits


def _baseline_keywords(kw, folder):
    """``(baseline path or None, confidence or None)`` of the marker's keywords."""
    baseline, confidence = kw.pop("baseline", None), kw.pop("confidence", None)
    if baseline is None:
        if confidence is not None:
            raise BudgetError("latency_budget confidence: applies to allowances against a "
                              "baseline; give baseline='….rtrig' too")
        return None, None
    if not isinstance(baseline, (str, Path)) or not str(baseline).strip():
        raise BudgetError(f"latency_budget baseline: {baseline!r} is not a path to a capture "
                          "file")
    path = Path(baseline)
    if folder is not None and not path.is_absolute():
        path = Path(folder) / path
    try:
        confidence = check_confidence(DEFAULT_CONFIDENCE if confidence is None else confidence)
    except ValueError as e:
        raise BudgetError(f"latency_budget {e}") from None
    return str(path), confidence


def _absolute(channel, key, v):
    """The absolute limit ``key=v``."""
    text = str(v)
    if key in LATENCY_FIGURES:
        try:
            s = float(v) if isinstance(v, (int, float)) else parse_duration(v)
        except ValueError as e:
            raise BudgetError(f"latency_budget {key}: {e}") from None
        if not s >= 0:
            raise BudgetError(f"latency_budget {key}: must be 0 or more, got {v!r}")
        return Limit(channel, key, "latency", s * 1e9, text if isinstance(v, str) else format_s(s))
    if key == "missed":
        if isinstance(v, str) and v.strip().endswith("%"):
            try:
                f = float(v.strip()[:-1]) / 100
            except ValueError:
                raise BudgetError(f"latency_budget missed: '{v}' is not a percentage "
                                  "(try missed='0.1%')") from None
            return Limit(channel, "missed", "missed", f, text, fraction=True)
        try:
            n = int(v)
        except (TypeError, ValueError):
            raise BudgetError(f"latency_budget missed: '{v}' is not a pulse count or "
                              "a percentage (try missed=0 or missed='0.1%')") from None
        if n < 0 or n != v and not isinstance(v, str):
            raise BudgetError(f"latency_budget missed: must be a count of 0 or more, "
                              f"got {v!r}")
        return Limit(channel, "missed", "missed", n, str(n))
    if key in SWEEP_FIGURES:
        try:
            hz = float(v) if isinstance(v, (int, float)) else parse_frequency(v)
        except ValueError as e:
            raise BudgetError(f"latency_budget {key}: {e}") from None
        return Limit(None, key, "sweep", hz, text if isinstance(v, str) else format_hz(hz))
    known = ", ".join((*LATENCY_FIGURES[:8], "missed", *SWEEP_FIGURES))
    raise BudgetError(f"latency_budget: unknown figure '{key}' (figures: {known}, …)")


def _allowance(channel, key, v, baseline, confidence):
    """The allowance ``key=v`` (``"+5%"``, ``"+500ns"``, ``"-5%"``) against ``baseline``."""
    text = v.strip()
    if key not in GATED_FIGURES:
        if key not in LATENCY_FIGURES:
            _absolute(channel, key, v)          # says the figure is unknown
        raise BudgetError(f"latency_budget {key}: '{v}' is an allowance against a baseline, "
                          f"which only {', '.join(GATED_FIGURES)} take")
    kind = "sweep" if key in SWEEP_FIGURES else "missed" if key == "missed" else "latency"
    sign = "-" if kind == "sweep" else "+"
    example = {"latency": "'+5%' or '+500ns'", "missed": "'+0' or '+0.1%'",
               "sweep": "'-5%' or '-10k'"}[kind]
    if text[0] != sign:
        raise BudgetError(f"latency_budget {key}: an allowance against the baseline is "
                          f"{example}, not '{v}'")
    if baseline is None:
        raise BudgetError(f"latency_budget {key}: '{v}' is an allowance against a baseline; "
                          "give baseline='….rtrig' too")
    body, fraction = text[1:].strip(), text.endswith("%")
    try:
        if fraction:
            value = float(body[:-1]) / 100
        elif kind == "latency":
            value = parse_duration(body) * 1e9
        elif kind == "sweep":
            value = parse_frequency(body)
        else:
            value = float(body)
            if value != 0:
                raise ValueError("not a fraction")
    except ValueError:
        raise BudgetError(f"latency_budget {key}: '{v}' is not an allowance (try "
                          f"{example})") from None
    if not (math.isfinite(value) and value >= 0):
        raise BudgetError(f"latency_budget {key}: '{v}' is not an allowance (try {example})")
    return Limit(None if kind == "sweep" else channel, key, kind, value, text,
                 fraction=fraction, baseline=baseline, confidence=confidence)


def _label(limit):
    if limit.kind == "sweep":
        return SWEEP_FIGURES[limit.figure][1]
    return f"{limit.channel.upper()} {limit.figure}"


@dataclass
class Baseline:
    """A baseline file: a capture's ``samples`` (channel → :class:`Samples
    <rtrig.host.report.compare.Samples>`) or a sweep's ``figures``."""
    path: str
    kind: str                      # "capture" or "sweep"
    samples: dict | None = None
    figures: dict | None = None


def load_baselines(limits):
    """``{path: Baseline}`` of the files the limits' allowances name, each checked to
    hold what its allowances compare with (raises BudgetError, one line)."""
    out = {}
    for lim in limits:
        if lim.baseline is None:
            continue
        if lim.baseline not in out:
            out[lim.baseline] = _load_baseline(lim.baseline)
        _check_baseline(out[lim.baseline], lim)
    return out


def _load_baseline(path):
    if not Path(path).exists():
        raise BudgetError(f"latency_budget baseline: no such file: {path}")
    try:
        cap = scan(path)
        cut = capture_warnings(cap)
        if cut:         # a baseline must be a whole run: its figures are the reference
            raise BudgetError(f"latency_budget baseline: {cut[0]}; a baseline must be a "
                              "capture or sweep that ran to its end")
        if cap.meta.get("kind") == "sweep":
            return Baseline(str(path), "sweep", figures=(cap.final or {}).get("figures") or {})
        return Baseline(str(path), "capture", samples=channel_samples(cap))
    except RtrigError as e:
        raise BudgetError(f"latency_budget baseline: {e}") from None


def _check_baseline(base, lim):
    what = f"latency_budget {lim.figure}='{lim.text}'"
    if lim.kind == "sweep":
        if base.kind != "sweep":
            raise BudgetError(f"{what}: baseline {base.path} is a capture, not a sweep (give "
                              "sweep figures a latency_budget marker of their own)")
        fig = base.figures.get(SWEEP_FIGURES[lim.figure][0]) or {}
        if fig.get("hz") is None and fig.get("below_hz") is None:
            raise BudgetError(f"{what}: baseline {base.path} holds no "
                              f"{SWEEP_FIGURES[lim.figure][1]} figure")
        return
    if base.kind != "capture":
        raise BudgetError(f"{what}: baseline {base.path} is a sweep, not a capture of "
                          "latencies")
    s = base.samples.get(lim.channel)
    if s is None:
        raise BudgetError(f"{what}: baseline {base.path} has no {lim.channel.upper()} "
                          f"channel (it has {', '.join(base.samples) or 'none'})")
    if s.pulses == 0 or lim.kind == "latency" and s.answered == 0:
        raise BudgetError(f"{what}: baseline {base.path} holds no "
                          f"{'pulse' if s.pulses == 0 else 'answered pulse'} "
                          f"on {lim.channel.upper()}")
