# SPDX-License-Identifier: BSD-2-Clause
"""The verdicts at the top of a report of several captures: each capture against the
first (A), by :func:`rtrig.host.report.compare.compare_scanned` — the same figures, bounds
and verdicts as ``rtrig compare``."""

import html

from .compare import NONE, CompareError, compare_scanned
from .compare_sweeps import compare_sweeps

__all__ = ["verdict_rows", "verdict_table", "VERDICT_HEADS"]

VERDICT_HEADS = ["B against A", "channel", "verdict", "figure", "A", "B", "B − A bounds"]


def _us(ns):
    return "—" if ns is None else f"{ns / 1000:.4g}"


def _bounds(lo_hi):
    lo, hi = lo_hi
    return f"[{'…' if lo is None else _us(lo)}, {'…' if hi is None else _us(hi)}] µs"


def _mark(verdict):
    """A verdict as shown: in bold when it shows a difference."""
    return html.escape(verdict) if verdict == NONE else f"<b>{html.escape(verdict)}</b>"


def _fractions(lo_hi):
    lo, hi = lo_hi
    return f"[{'…' if lo is None else f'{lo:.3g}'}, {'…' if hi is None else f'{hi:.3g}'}]"


def verdict_rows(captures, labels, reductions, confidence=0.95):
    """``(rows, notes)``: per later capture and shared channel, a row with the
    channel's verdict, then one per percentile, missed pulses and distribution, each
    with its own verdict (those of ``rtrig compare``);
    ``notes`` the warnings and the pairs that could not be compared (one line each).
    ``reductions``: each capture's :class:`CaptureReduction`, read once by the report
    (the comparison takes its value counts instead of reading the files again)."""
    rows, notes = [], []
    a, la, ra = captures[0], labels[0], reductions[0]
    for cap, lb, red in zip(captures[1:], labels[1:], reductions[1:], strict=True):
        pair = f"{lb} against {la}"
        try:
            if a.meta.get("kind") == "sweep" and cap.meta.get("kind") == "sweep":
                c = compare_sweeps(a.path, cap.path)
                rows += [[html.escape(pair), "—", html.escape(f["verdict"]), f["name"],
                          html.escape(f["a"]), html.escape(f["b"]), ""]
                         for f in c.figures.values()]
                notes += [f"{pair}: {w}" for w in c.warnings]
                continue
            shared = [n for n in ra.first if n in red.first] or None
            c = compare_scanned(a, cap, confidence, shared, (ra, red))
        except CompareError as e:
            notes.append(f"{pair}: not compared: {e}")
            continue
        notes += [f"{pair}: {w}" for w in c.warnings]
        for ch in c.channels.values():
            # the channel's headline, then each statement with its own verdict: the
            # rows of rtrig compare's table, decided by the same functions
            rows.append([html.escape(pair), ch.channel.upper(), _mark(ch.verdict),
                         "channel", f"{ch.samples['a']} answered",
                         f"{ch.samples['b']} answered", ""])
            for f in ch.figures:
                rows.append([html.escape(pair), ch.channel.upper(), _mark(f.verdict),
                             f.figure, _us(f.a), _us(f.b), _bounds(f.diff)])
            m = ch.missed
            rows.append([html.escape(pair), ch.channel.upper(), _mark(m["verdict"]),
                         "missed", f"{m['a'][0]}/{m['a'][1]}", f"{m['b'][0]}/{m['b'][1]}",
                         _fractions(m["difference_bounds"])])
            d = ch.distribution
            rows.append([html.escape(pair), ch.channel.upper(), _mark(d["verdict"]),
                         "distribution", "", "", html.escape(
                             d.get("note") or f"KS p = {d['p_value']:.3g}")])
    return rows, notes


def verdict_table(page, captures, labels, reductions, table, confidence=0.95):
    """Add the verdicts to ``page`` (``table`` renders heads and rows as HTML)."""
    rows, notes = verdict_rows(captures, labels, reductions, confidence)
    page.add(f"<h3>Verdicts (each capture against {html.escape(labels[0])}, "
             f"{confidence:.0%} confidence for each pair's whole comparison)</h3>")
    if rows:
        page.add(table(VERDICT_HEADS, rows))
    for n in notes:
        page.add(f'<p class="note">{html.escape(n)}</p>')
    page.add('<p class="note">A verdict says B is higher or lower only when the bounds of '
             "B − A exclude 0; otherwise no difference is shown at these sample sizes. "
             "The bounds are distribution-free (order statistics) and assume independent "
             "samples; see docs/report.md.</p>")
