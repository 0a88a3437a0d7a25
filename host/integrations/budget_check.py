# SPDX-License-Identifier: BSD-2-Clause
"""Checking a budget: the test's captures and sweeps against its limits, and against
the baselines its allowances name (a :class:`Gate` per comparison); the budget's
keywords, limits and baselines are :mod:`rtrig.host.integrations.budget`'s."""

import json
from dataclasses import dataclass

from ...capture import scan
from ...units import format_hz
from ..analysis import PERCENTILES
from ..bounds import fraction_bounds, joint_level
from ..report.compare import channel_samples
from .budget import SWEEP_FIGURES, Limit, Violation, _fmt_ns, _label

__all__ = ["Gate", "check", "evaluate", "TOO_FEW"]


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
