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

:func:`parse_budget` turns the keywords into :class:`Limit` objects;
:func:`check` compares them with captures and sweeps and returns one
:class:`Violation` per figure out of budget (its ``message`` names the figure, the
limit, the measured value and the capture file).
"""

from dataclasses import dataclass

from ...units import format_hz, format_s, parse_duration, parse_frequency

__all__ = ["Limit", "Violation", "BudgetError", "parse_budget", "check", "LATENCY_FIGURES",
           "SWEEP_FIGURES"]

_BASE = ("min", "mean", "p50", "p99", "p999", "p9999", "max", "jitter", "std")
#: Latency figures a budget can bound (keys of a capture summary without ``_ns``).
LATENCY_FIGURES = _BASE + tuple(f"completion_{k}" for k in _BASE)
#: Sweep figures a budget can require: keyword → (sweep result key, name).
SWEEP_FIGURES = {"mf_isr_min": ("mf_isr_hz", "MF-ISR"), "mf_app_min": ("mf_app_hz", "MF-APP"),
                 "sf_min": ("sf_hz", "SF")}


class BudgetError(ValueError):
    """A budget that cannot be understood (unknown figure, bad value)."""


@dataclass(frozen=True)
class Limit:
    """One figure's limit. ``kind``: ``latency`` (``value`` in ns, upper limit),
    ``missed`` (a count, or a fraction when ``fraction``), ``sweep`` (Hz, lower)."""
    channel: str
    figure: str
    kind: str
    value: float
    text: str
    fraction: bool = False

    def to_json(self):
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


def parse_budget(kwargs):
    """The limits of one ``latency_budget`` marker's keywords (raises BudgetError)."""
    kw = dict(kwargs)
    channel = str(kw.pop("channel", "isr")).lower()
    if channel not in ("isr", "app"):
        raise BudgetError(f"latency_budget: unknown channel '{channel}' (isr or app)")
    limits = []
    for key, v in kw.items():
        text = str(v)
        if key in LATENCY_FIGURES:
            try:
                s = float(v) if isinstance(v, (int, float)) else parse_duration(v)
            except ValueError as e:
                raise BudgetError(f"latency_budget {key}: {e}") from None
            if not s >= 0:
                raise BudgetError(f"latency_budget {key}: must be 0 or more, got {v!r}")
            limits.append(Limit(channel, key, "latency", s * 1e9,
                                text if isinstance(v, str) else format_s(s)))
        elif key == "missed":
            if isinstance(v, str) and v.strip().endswith("%"):
                try:
                    f = float(v.strip()[:-1]) / 100
                except ValueError:
                    raise BudgetError(f"latency_budget missed: '{v}' is not a percentage "
                                      "(try missed='0.1%')") from None
                limits.append(Limit(channel, "missed", "missed", f, text, fraction=True))
            else:
                try:
                    n = int(v)
                except (TypeError, ValueError):
                    raise BudgetError(f"latency_budget missed: '{v}' is not a pulse count or "
                                      "a percentage (try missed=0 or missed='0.1%')") from None
                if n < 0 or n != v and not isinstance(v, str):
                    raise BudgetError(f"latency_budget missed: must be a count of 0 or more, "
                                      f"got {v!r}")
                limits.append(Limit(channel, "missed", "missed", n, str(n)))
        elif key in SWEEP_FIGURES:
            try:
                hz = float(v) if isinstance(v, (int, float)) else parse_frequency(v)
            except ValueError as e:
                raise BudgetError(f"latency_budget {key}: {e}") from None
            limits.append(Limit(None, key, "sweep", hz,
                                text if isinstance(v, str) else format_hz(hz)))
        else:
            known = ", ".join((*LATENCY_FIGURES[:8], "missed", *SWEEP_FIGURES))
            raise BudgetError(f"latency_budget: unknown figure '{key}' (figures: {known}, …)")
    if not limits:
        raise BudgetError("latency_budget: no limit given (e.g. p99='5us')")
    return limits


def _label(limit):
    if limit.kind == "sweep":
        return SWEEP_FIGURES[limit.figure][1]
    return f"{limit.channel.upper()} {limit.figure}"


def check(limits, captures, sweeps):
    """Compare ``limits`` with the test's ``captures`` (dicts: ``path``, ``summary``
    of a capture result) and ``sweeps`` (dicts: ``path``, ``figures``: result key
    such as ``mf_isr_hz`` → ``{"hz", "below_hz", "reason"}``). Every capture must
    meet every latency and missed limit, and every sweep every sweep limit. Returns a list of :class:`Violation`."""
    out = []

    def bad(limit, measured, source, what):
        msg = (f"latency budget: {_label(limit)} limit {limit.text}, measured {what} "
               f"({'sweep' if limit.kind == 'sweep' else 'capture'}: {source})")
        out.append(Violation(limit, measured, str(source), msg))

    for limit in limits:
        if limit.kind == "sweep":
            if not sweeps:
                out.append(Violation(limit, None, "", f"latency budget: {_label(limit)} limit "
                                     f"{limit.text}, measured nothing (the test ran no sweep)"))
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
    return out
