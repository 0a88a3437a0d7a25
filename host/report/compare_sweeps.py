# SPDX-License-Identifier: BSD-2-Clause
"""A/B comparison of two sweeps by their figures (MF-ISR, MF-APP, interval channels'
MF, SF): each lies between the highest frequency measured clear and the first found
failing, the sweep's resolution; the figures differ when those intervals do not
overlap."""

from dataclasses import dataclass, field

from ...channels import sweep_figure_keys, sweep_figure_name
from ...units import format_hz
from .compare import HIGHER, LOWER, CompareError, _capture_kind, _open

__all__ = ["compare_sweeps", "SweepComparison"]


@dataclass
class SweepComparison:
    a: str
    b: str
    figures: dict          # key → {"name", "a", "b", "verdict"}
    warnings: list = field(default_factory=list)

    def to_json(self):
        return {"kind": "sweep", "a": self.a, "b": self.b, "figures": self.figures,
                "warnings": self.warnings}


def _sweep_keys(a_cap, b_cap):
    """MF-ISR, MF-APP, then the MF of every interval channel either sweep sought (in
    the order A, then B, named them), then SF."""
    return sweep_figure_keys([*((a_cap.meta.get("sweep") or {}).get("channels") or ()),
                              *((b_cap.meta.get("sweep") or {}).get("channels") or ())])


def _sweep_interval(fig):
    """``(lo, hi, confirmed, text)`` of one sweep figure: the true value lies above
    ``lo`` (the highest frequency measured clear) and at or below ``hi`` (the first
    failing); ``hi`` None when the range ended first, both None when not sought."""
    if not fig:
        return None, None, False, "not measured"
    hz, below = fig.get("hz"), fig.get("below_hz")
    if hz is None and below is None:
        return None, None, False, fig.get("reason") or "not measured"
    if hz is None:
        return below, None, False, f"above {format_hz(below)}"
    text = f"{format_hz(hz)} ({format_hz(below) if below else '?'} – {format_hz(hz)}" \
        f"{', confirmed' if fig.get('confirmed') else ', unconfirmed'})"
    return below, hz, bool(fig.get("confirmed")), text


def compare_sweeps(a_path, b_path):
    """Compare two sweep captures' MF-ISR, MF-APP, interval channels' MF and SF."""
    a_cap, b_cap = _open(a_path, "A"), _open(b_path, "B")
    for cap, label in ((a_cap, "A"), (b_cap, "B")):
        if _capture_kind(cap) != "sweep":
            raise CompareError(f"{label} ({cap.path}) is a capture and the other a sweep: "
                               "compare two captures or two sweeps")
        if not (cap.final or {}).get("figures"):
            raise CompareError(f"{label} ({cap.path}) holds no sweep figures "
                               "(the sweep did not finish)")
    figures = {}
    for key in _sweep_keys(a_cap, b_cap):
        name = sweep_figure_name(key)
        ia = _sweep_interval(a_cap.final["figures"].get(key))
        ib = _sweep_interval(b_cap.final["figures"].get(key))
        if ia[0] is None and ia[1] is None or ib[0] is None and ib[1] is None:
            verdict = "not compared (not measured in both)"
        elif ib[0] is not None and ia[1] is not None and ib[0] >= ia[1]:
            verdict = HIGHER
        elif ia[0] is not None and ib[1] is not None and ia[0] >= ib[1]:
            verdict = LOWER
        else:
            verdict = "no difference shown at the sweeps' resolution"
        if verdict in (HIGHER, LOWER) and not (ia[2] and ib[2]):
            verdict += " (unconfirmed)"
        figures[key] = {"name": name, "a": ia[3], "b": ib[3],
                        "a_interval_hz": [ia[0], ia[1]], "b_interval_hz": [ib[0], ib[1]],
                        "confirmed": [ia[2], ib[2]], "verdict": verdict}
    warnings = []
    sa, sb = a_cap.meta.get("sweep") or {}, b_cap.meta.get("sweep") or {}
    if a_cap.meta.get("load") != b_cap.meta.get("load"):
        warnings.append("A and B were swept with different load: "
                        f"{'on' if a_cap.meta.get('load') else 'off'} against "
                        f"{'on' if b_cap.meta.get('load') else 'off'}")
    for key in ("pulses", "resolution", "stim_jitter_s"):
        if sa.get(key) != sb.get(key):
            warnings.append(f"A and B were swept with different {key.replace('_', ' ')}: "
                            f"{sa.get(key)} against {sb.get(key)}")
    if not _same_target(a_cap.meta, b_cap.meta):
        warnings.append("A and B were swept on different targets")
    for key, what in (("board", "boards"), ("tick_hz", "tick rates")):
        if a_cap.meta.get(key) != b_cap.meta.get(key):
            warnings.append(f"A and B were swept on different {what}")
    return SweepComparison(str(a_path), str(b_path), figures, warnings)


#: The model's parameters that are not durations (the others are ticks of the rig).
_NOT_DURATIONS = {"seed", "app"}


def _target_s(meta):
    """``(target without its durations, {duration: seconds})``: the target of ``meta``
    in physical units, so a target is the same on rigs of other tick rates."""
    target = dict(meta.get("target") or {})
    hz = float(meta.get("tick_hz") or 1)
    durations = {}
    for key in [k for k in target if k.endswith("_ticks")]:
        durations[key[:-len("_ticks")]] = float(target.pop(key) or 0) / hz
    model = target.pop("model", None)
    if isinstance(model, dict):
        target["model"] = {k: v for k, v in model.items() if k in _NOT_DURATIONS}
        durations.update({f"model.{k}": float(v) / hz for k, v in model.items()
                          if k not in _NOT_DURATIONS and isinstance(v, (int, float))})
    else:
        target["model"] = model
    return target, durations


def _same_target(ma, mb):
    """Are the two sweeps' targets the same, durations compared in seconds? Each rig
    rounds a duration to its own ticks: within half a tick of each they are equal."""
    (ta, da), (tb, db) = _target_s(ma), _target_s(mb)
    tol = 0.5 / float(ma.get("tick_hz") or 1) + 0.5 / float(mb.get("tick_hz") or 1)
    return ta == tb and da.keys() == db.keys() and all(
        abs(da[k] - db[k]) <= tol * (1 + 1e-9) for k in da)
