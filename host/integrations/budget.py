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
line, for a file that is missing or of the wrong kind); :func:`check` compares the
limits with captures and sweeps and returns one :class:`Violation` per figure out of
budget (its ``message`` names the figure, the limit, the measured value and the
capture file); :func:`evaluate` also returns each baseline comparison as a
:class:`Gate`.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ...capture import scan
from ...errors import RtrigError
from ...units import format_hz, format_s, parse_duration, parse_frequency
from ..analysis import PERCENTILES, capture_warnings
from ..bounds import DEFAULT_CONFIDENCE, check_confidence, fraction_bounds, joint_level
from ..report.compare import channel_samples

__all__ = ["Limit", "Violation", "Gate", "Baseline", "BudgetError", "parse_budget",
           "load_baselines", "check", "evaluate", "LATENCY_FIGURES", "SWEEP_FIGURES",
           "GATED_FIGURES"]

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


#: What a gate says when a bound it needs does not exist.
TOO_FEW = "too few samples"


@dataclass
class Gate:
    """One comparison of a measured figure with the baseline's: values and bounds in
    ``unit`` (``ns``, ``fraction``, ``Hz``; bounds None on an unbounded side or, for
    ``max``, where there is no interval), the ``limit`` the measured bound is held to,
    and the ``verdict``: ``met``, ``failed`` or ``too few samples`` (a bound the gate
    needs does not exist: it cannot fail)."""
    limit: Limit
    index: int                     # the test's capture (or sweep) number, from 1
    source: str                    # the measured file
    unit: str
    baseline: float | None
    baseline_bounds: tuple
    measured: float | None
    measured_bounds: tuple
    threshold: float | None
    verdict: str
    message: str = ""

    def to_json(self):
        lim = self.limit
        return {"channel": lim.channel, "figure": lim.figure, "allowance": lim.text,
                "baseline": lim.baseline, "confidence": lim.confidence,
                "unit": self.unit, "baseline_value": self.baseline,
                "baseline_bounds": list(self.baseline_bounds), "measured": self.measured,
                "measured_bounds": list(self.measured_bounds), "limit": self.threshold,
                "verdict": self.verdict, "source": self.source}

    def properties(self):
        """``(name, value)`` JUnit properties: ``rtrig.capture1.isr.p99.verdict`` …"""
        lim = self.limit
        prefix = (f"rtrig.sweep{self.index}.{SWEEP_FIGURES[lim.figure][0]}"
                  if lim.kind == "sweep" else
                  f"rtrig.capture{self.index}.{lim.channel}.{lim.figure}")
        unit = self.unit.lower()
        out = [("baseline", lim.baseline), ("allowance", lim.text),
               ("confidence", lim.confidence), (f"baseline_{unit}", self.baseline),
               (f"measured_{unit}", self.measured), (f"limit_{unit}", self.threshold),
               ("verdict", self.verdict)]
        if lim.figure != "max":
            out[5:5] = [("baseline_bounds", json.dumps(list(self.baseline_bounds))),
                        ("measured_bounds", json.dumps(list(self.measured_bounds)))]
        return [(f"{prefix}.{k}", v) for k, v in out if v is not None]


def _raise(limit, value, down=False):
    """``value`` moved by ``limit``'s allowance (up, or down for a sweep figure)."""
    if value is None:
        return None
    step = value * limit.value if limit.fraction else limit.value
    return value - step if down else value + step


def _span(bounds, fmt):
    return "[" + ", ".join("…" if v is None else fmt(v) for v in bounds) + "]"


def _pct(f):
    return "—" if f is None else f"{100 * f:.3g} %"


def _gate_capture(limit, index, path, m, b):
    """The :class:`Gate` of one measured channel ``m`` against the baseline's ``b``
    (:class:`Samples <rtrig.host.report.compare.Samples>`)."""
    level = joint_level(limit.confidence, 1)
    if limit.kind == "missed":
        unit, fmt = "fraction", _pct
        bb, mb = fraction_bounds(b.missed, b.pulses, level), fraction_bounds(m.missed, m.pulses,
                                                                             level)
        bv, mv = b.missed / b.pulses, (m.missed / m.pulses if m.pulses else None)
        threshold = None if bb[1] is None else bb[1] + limit.value
        shown = (f"baseline {b.missed} of {b.pulses} {_span(bb, fmt)}",
                 f"measured {m.missed} of {m.pulses} {_span(mb, fmt)}")
    else:
        unit, fmt = "ns", _fmt_ns
        if limit.figure == "max":
            bb = mb = (None, None)
            bv, mv = b.ns(b.extreme("max")), m.ns(m.extreme("max"))
            threshold = _raise(limit, bv)
            shown = (f"baseline {fmt(bv)}", f"measured {_fmt_opt(mv)} (as measured: the "
                     "maximum has no interval)")
        else:
            q = PERCENTILES[limit.figure] / 100
            bb = tuple(b.ns(v) for v in b.bounds(q, level))
            mb = tuple(m.ns(v) for v in m.bounds(q, level))
            bv, mv = b.ns(b.point(q)), m.ns(m.point(q))
            threshold = _raise(limit, bb[1])
            shown = (f"baseline {fmt(bv)} {_span(bb, fmt)}",
                     f"measured {_fmt_opt(mv)} {_span(mb, fmt)}")
    low = mb[0] if limit.figure != "max" else mv
    if limit.kind == "latency" and m.answered == 0:
        verdict = "failed"
    elif threshold is None or low is None:
        verdict = TOO_FEW
    else:
        verdict = "failed" if low > threshold else "met"
    g = Gate(limit, index, str(path), unit, bv, bb, mv, mb, threshold, verdict)
    if verdict == "failed":
        above = "no answered pulse" if m.answered == 0 and limit.kind == "latency" else \
            f"above {fmt(threshold)}" + ("" if limit.figure == "max" else
                                         f" at {limit.confidence:.0%}")
        g.message = (f"latency baseline: {_label(limit)} {limit.text} over {shown[0]} "
                     f"(baseline: {limit.baseline}), {shown[1]} is {above} "
                     f"(capture: {path})")
    return g


def _fmt_opt(ns):
    return "nothing" if ns is None else _fmt_ns(ns)


def _gate_sweep(limit, index, path, fig, base):
    """The :class:`Gate` of one measured sweep figure ``fig`` against the baseline's
    (each ``{"hz", "below_hz"}``: the figure lies above ``below_hz``, at or below
    ``hz``)."""
    bb = (base.get("below_hz"), base.get("hz"))
    mb = ((fig or {}).get("below_hz"), (fig or {}).get("hz"))
    threshold = _raise(limit, bb[0], down=True)
    if mb == (None, None):
        verdict = "failed"
    elif threshold is None or mb[1] is None:
        verdict = TOO_FEW
    else:
        verdict = "failed" if mb[1] < threshold else "met"
    g = Gate(limit, index, str(path), "Hz", bb[1], bb, mb[1], mb, threshold, verdict)
    if verdict == "failed":
        span = lambda b: f"({format_hz(b[0])} – {format_hz(b[1])}]"  # noqa: E731
        got = ((fig or {}).get("reason") or "nothing (not sought)") if mb == (None, None) \
            else f"{format_hz(mb[1])} {span(mb)} is below {format_hz(threshold)}"
        g.message = (f"latency baseline: {_label(limit)} {limit.text} under baseline "
                     f"{format_hz(bb[1])} {span(bb)} (baseline: {limit.baseline}), measured "
                     f"{got} (sweep: {path})")
    return g


def _samples(cap):
    """The capture's channels as Samples (read from its file once)."""
    if cap.get("samples") is None:
        cap["samples"] = channel_samples(scan(cap["path"]))
    return cap["samples"]


def _gates(limit, captures, sweeps, base, bad, out, gates):
    """Gate every capture (or sweep) of the test against ``base``; a figure not
    measured, or a failed gate, is a violation."""
    n = len(gates)
    _gate_each(limit, captures, sweeps, base, bad, gates)
    out += [Violation(g.limit, g.measured, g.source, g.message) for g in gates[n:]
            if g.verdict == "failed"]


def _gate_each(limit, captures, sweeps, base, bad, gates):
    if limit.kind == "sweep":
        for i, sw in enumerate(sweeps, 1):
            key = SWEEP_FIGURES[limit.figure][0]
            gates.append(_gate_sweep(limit, i, sw["path"], sw["figures"].get(key),
                                     base.figures[key]))
        return
    for i, cap in enumerate(captures, 1):
        m = _samples(cap).get(limit.channel)
        if m is None:
            bad(limit, None, cap["path"], f"nothing (no {limit.channel.upper()} channel "
                "in the capture)")
            continue
        gates.append(_gate_capture(limit, i, cap["path"], m, base.samples[limit.channel]))


def check(limits, captures, sweeps, baselines=None):
    """:func:`evaluate`'s violations."""
    return evaluate(limits, captures, sweeps, baselines)[0]


def evaluate(limits, captures, sweeps, baselines=None):
    """Compare ``limits`` with the test's ``captures`` (dicts: ``path``, ``summary``
    of a capture result, optionally ``samples``: channel → Samples, else read from
    ``path`` when an allowance needs them) and ``sweeps`` (dicts: ``path``,
    ``figures``: result key such as ``mf_isr_hz`` → ``{"hz", "below_hz", "reason"}``).
    Every capture must meet every latency and missed limit, and every sweep every sweep
    limit; allowances compare with ``baselines`` (:func:`load_baselines`). Returns
    ``(violations, gates)``: a list of :class:`Violation` and one of :class:`Gate`."""
    out, gates = [], []

    def bad(limit, measured, source, what):
        msg = (f"latency budget: {_label(limit)} limit {limit.text}, measured {what} "
               f"({'sweep' if limit.kind == 'sweep' else 'capture'}: {source})")
        out.append(Violation(limit, measured, str(source), msg))

    for limit in limits:
        if limit.kind == "sweep":
            if not sweeps:
                out.append(Violation(limit, None, "", f"latency budget: {_label(limit)} limit "
                                     f"{limit.text}, measured nothing (the test ran no sweep)"))
            if limit.baseline is not None:
                _gates(limit, captures, sweeps, baselines[limit.baseline], bad, out, gates)
                continue
            for sw in sweeps:
                fig = sw["figures"].get(SWEEP_FIGURES[limit.figure][0]) or {}
                hz, below = fig.get("hz"), fig.get("below_hz")
                if hz is not None:
                    if hz < limit.value:
                        bad(limit, hz, sw["path"], format_hz(hz))
                elif below is not None:
                    # not found in the range: the figure lies above the highest
                    # frequency measured clear, which meets the minimum only if that
                    # frequency does
                    if below < limit.value:
                        bad(limit, below, sw["path"], f"above {format_hz(below)} only "
                            "(the sweep range ends below the limit)")
                else:
                    bad(limit, None, sw["path"], fig.get("reason") or "nothing (not sought)")
            continue
        if not captures:
            out.append(Violation(limit, None, "", f"latency budget: {_label(limit)} limit "
                                 f"{limit.text}, measured nothing (the test ran no capture)"))
        if limit.baseline is not None:
            _gates(limit, captures, sweeps, baselines[limit.baseline], bad, out, gates)
            continue
        for cap in captures:
            st = cap["summary"].get(limit.channel)
            if st is None:
                bad(limit, None, cap["path"], f"nothing (no {limit.channel.upper()} channel "
                    "in the capture)")
                continue
            if limit.kind == "missed":
                got = st["missed"]
                if limit.fraction:
                    frac = got / st["pulses"] if st["pulses"] else 0.0
                    if frac > limit.value:
                        bad(limit, frac, cap["path"],
                            f"{100 * frac:.4g} % ({got} of {st['pulses']} pulses)")
                elif got > limit.value:
                    bad(limit, got, cap["path"], f"{got} of {st['pulses']} pulses")
                continue
            ns = st.get(f"{limit.figure}_ns")
            if ns is None:
                bad(limit, None, cap["path"], "nothing (no answered pulse)")
            elif ns > limit.value:
                bad(limit, ns, cap["path"], _fmt_ns(ns))
    return out, gates
