# SPDX-License-Identifier: BSD-2-Clause
"""What ``rtrig compare`` does with two files: :func:`compare` them by what they hold
(two captures or two sweeps), and :func:`format_comparison` puts either comparison
into text lines."""

from ..bounds import DEFAULT_CONFIDENCE
from .compare import _capture_kind, _open, compare_captures
from .compare_sweeps import SweepComparison, compare_sweeps

__all__ = ["compare", "format_comparison"]


def compare(a_path, b_path, confidence=DEFAULT_CONFIDENCE, channels=None):
    """:func:`compare_captures` or :func:`compare_sweeps`, by what the files hold."""
    a_kind = _capture_kind(_open(a_path, "A"))
    if a_kind == "sweep":
        return compare_sweeps(a_path, b_path)
    return compare_captures(a_path, b_path, confidence, channels)


def _us(ns):
    return "—" if ns is None else f"{ns / 1000:.3f}"


def _range(bounds):
    lo, hi = bounds
    return f"[{'…' if lo is None else _us(lo)}, {'…' if hi is None else _us(hi)}]"


def _exceed(p):
    return "—" if p is None else f"{p:.2g}"


def format_comparison(c):
    """The comparison as text lines (what ``rtrig compare`` prints)."""
    lines = [f"A: {c.a}", f"B: {c.b}"]
    if isinstance(c, SweepComparison):
        lines.append("")
        width = max(8, *(len(f["name"]) for f in c.figures.values()))
        lines.append(f"{'figure':<{width}} {'A':<48} {'B':<48} verdict")
        for f in c.figures.values():
            lines.append(f"{f['name']:<{width}} {f['a']:<48} {f['b']:<48} {f['verdict']}")
    else:
        lines.append(f"confidence {c.confidence:.0%} for the whole comparison "
                     f"({c.statements} statements); values in µs")
        for ch in c.channels.values():
            lines.append("")
            lines.append(f"{ch.channel.upper()}: {ch.verdict}  "
                         f"({ch.samples['a']} against {ch.samples['b']} answered pulses)")
            lines.append(f"  {'figure':<7} {'A':>10} {'A bounds':>22} {'B':>10} "
                         f"{'B bounds':>22} {'B − A bounds':>24}  verdict")
            for f in ch.figures:
                lines.append(f"  {f.figure:<7} {_us(f.a):>10} {_range(f.a_bounds):>22} "
                             f"{_us(f.b):>10} {_range(f.b_bounds):>22} {_range(f.diff):>24}"
                             f"  {f.verdict}")
            for which, e in ch.extremes.items():
                lines.append(f"  {which:<7} {_us(e['a_ns']):>10} {'(no interval)':>22} "
                             f"{_us(e['b_ns']):>10} {'(no interval)':>22}")
            mx = ch.extremes["max"]
            lines.append(f"  exceedance of each max ≤ {_exceed(mx['a_exceedance'])} (A), "
                         f"≤ {_exceed(mx['b_exceedance'])} (B) of pulses")
            m = ch.missed
            lines.append(f"  missed  {m['a'][0]}/{m['a'][1]} against {m['b'][0]}/{m['b'][1]}:"
                         f" {m['verdict']}")
            d = ch.distribution
            if d["p_value"] is None:
                lines.append(f"  distribution: {d.get('note')}")
            else:
                lines.append(f"  distribution (two-sample KS): D = {d['statistic']:.4f}, "
                             f"p = {d['p_value']:.3g} (α = {d['alpha']:.2g}): {d['verdict']}")
    for w in c.warnings:
        lines.append(f"warning: {w}")
    return lines
