# SPDX-License-Identifier: BSD-2-Clause
"""The report's suite section (``rtrig suite`` captures): per-test figures, the
distribution and tail of every test, thread-switch time against thread count, and the
nested interrupts' latencies against STIM1's offset."""

import html
import re

import numpy as np

from ...capture import CaptureChunks, load
from ..procedures.suite import split_tests
from .data import exceedance
from .figures import _AXIS, PALETTE, _layout, _us, tail_figure

__all__ = ["suite_section", "suite_iterations", "box_figure", "scaling_figure",
           "nested_figure"]

_HEADS = ["test", "count", "cold", "min", "mean", "p50", "p99", "p99.99", "max", "missed",
          "self-timed"]


def suite_iterations(cap):
    """``{test: iterations}`` of a suite capture (:data:`~rtrig.host.procedures.suite.ITERATION_DTYPE`,
    from its raw events) and the target's own cycle counts ``{test: [cycles]}`` when it
    gave them."""
    if isinstance(cap, CaptureChunks):
        cap = load(cap.path)
    final = (cap.final or {}).get("suite") or {}
    # The test of each MARKER2 window as the run named it (the firmware's TRACE BEGIN
    # words); files from before that recorded the asked tests, in the windows' order.
    tests = final.get("order")
    if tests is None:
        tests = (cap.meta.get("suite") or {}).get("tests") or []
    return split_tests(cap.events, tests), final.get("self_timed_cycles") or {}


def _warm_ticks(its):
    """The intervals of the iterations after the cold first one, missed left out."""
    warm = its[1:]
    return warm["interval"][~warm["missed"]]


def _us_cell(ns, weak=False):
    if ns is None:
        return "—"
    cell = f"{ns / 1000:.4g}"
    return f'<span class="weak" title="fewer than 10 samples beyond">{cell}*</span>' if weak \
        else cell


def _pct_cell(t, key, weak=False):
    """A percentile with its 95 % bounds under it (µs)."""
    cell = _us_cell(t.get(f"{key}_ns"), weak)
    if t.get(f"{key}_ns") is None or f"{key}_lo_ns" not in t:
        return cell
    lo, hi = t[f"{key}_lo_ns"], t[f"{key}_hi_ns"]
    return f'{cell}<br><span class="ci">[{_us_cell(lo)}, {_us_cell(hi)}]</span>'


def _rows(figures):
    rows = []
    for name, t in figures.items():
        st = t.get("self_timed")
        agree = "—" if st is None else (
            f"agree (±{st['max_diff_cycles']:g} cycles)" if st["agree"]
            else f"<b>differ</b> by {st['max_diff_cycles']:g} cycles")
        weak = t.get("weak") or ()
        rows.append([html.escape(name), str(t["count"]), _us_cell(t.get("cold_ns")),
                     _us_cell(t.get("min_ns")), _us_cell(t.get("mean_ns")),
                     _pct_cell(t, "p50"), _pct_cell(t, "p99", "p99" in weak),
                     _pct_cell(t, "p9999", "p9999" in weak), _us_cell(t.get("max_ns")),
                     str(t.get("missed", 0)), agree])
    return rows


def box_figure(per_test, tick_hz):
    """Every warm iteration of every test (after the cold first one) as a box with its
    outliers: the spread and the few slow iterations that decide a worst case."""
    data = []
    for i, (name, its) in enumerate(per_test.items()):
        ns = _warm_ticks(its).astype(np.float64) * (1e9 / tick_hz)
        data.append({"type": "box", "y": _us(ns), "name": name, "boxpoints": "outliers",
                     "marker": {"size": 3, "color": PALETTE[i % len(PALETTE)]},
                     "line": {"width": 1}})
    lay = _layout(460, "Each test's iterations (cold first iteration left out)",
                  showlegend=False)
    lay["yaxis"] = {**_AXIS, "title": {"text": "time, µs"}, "type": "log"}
    lay["xaxis"] = {**_AXIS}
    return {"data": data, "layout": lay}


def scaling_figure(figures):
    """Thread-switch time against the number of threads switching (an O(1) scheduler
    keeps the lines flat)."""
    points = sorted((int(m.group(1)), t) for name, t in figures.items()
                    if (m := re.fullmatch(r"thread_switch_(\d+)", name)) and t.get("mean_ns"))
    if len(points) < 2:
        return None
    n = [p[0] for p in points]
    data = [{"type": "scatter", "x": n, "y": [p[1][k] / 1000 for p in points], "name": label,
             "mode": "lines+markers", "line": {"color": PALETTE[i]}}
            for i, (k, label) in enumerate((("min_ns", "min"), ("mean_ns", "mean"),
                                            ("p99_ns", "p99"), ("max_ns", "max")))]
    lay = _layout(380, "Thread switch time against thread count")
    lay["xaxis"] = {**_AXIS, "type": "log", "title": {"text": "threads yielding in turn"},
                    "tickvals": n}
    lay["yaxis"] = {**_AXIS, "title": {"text": "switch, µs"}, "rangemode": "tozero"}
    return {"data": data, "layout": lay}


def nested_figure(figures):
    """Both ISRs' latencies and the time until both are serviced (the median, a
    whisker up to the maximum) against STIM1's offset after STIM0, with the
    higher-priority line second (it preempts) and first."""
    data = []
    orders = (("", "high-priority line second"), ("_high_first", "high-priority line first"))
    for o, (suffix, label) in enumerate(orders):
        points = []
        for name in figures:
            if not name.endswith(".isr0"):
                continue
            test = name[:-len(".isr0")]
            if test == "irq_simultaneous":
                offset = 0 if not suffix else None      # offset 0: line 1 is the higher
            elif m := re.fullmatch(r"irq_nested_(\d+)ns" + suffix, test):
                offset = int(m.group(1))
            else:
                offset = None
            if offset is not None:
                points.append((offset, test))
        points.sort()
        if len(points) < 2:
            continue
        for i, part in enumerate(("isr0", "isr1", "both")):
            rows = [figures.get(f"{t}.{part}", {}) for _, t in points]
            p50 = [r.get("p50_ns") for r in rows]
            top = [r.get("max_ns") for r in rows]
            data.append({"type": "scatter", "x": [p[0] for p in points],
                         "y": [None if y is None else y / 1000 for y in p50],
                         "error_y": {"type": "data", "symmetric": False, "arrayminus": [0] * len(rows),
                                     "array": [0 if a is None or b is None else (b - a) / 1000
                                               for a, b in zip(p50, top, strict=True)],
                                     "thickness": 1, "width": 4},
                         "name": f"{part}, {label}", "mode": "lines+markers",
                         "line": {"color": PALETTE[i], "dash": "solid" if o == 0 else "dot"}})
    if not data:
        return None
    lay = _layout(420, "Nested interrupts: latency against STIM1's offset")
    lay["xaxis"] = {**_AXIS, "title": {"text": "STIM1 after STIM0, ns"}}
    lay["yaxis"] = {**_AXIS, "title": {"text": "µs (p50, whisker to the max)"},
                    "rangemode": "tozero"}
    return {"data": data, "layout": lay}


def suite_section(page, cap, table):
    """Add the suite's tables and plots for capture ``cap`` to ``page`` (``table``:
    the page's table builder, heads and rows → HTML)."""
    figures = ((cap.final or {}).get("suite") or {}).get("tests") or {}
    if not figures:
        return
    per_test, _ = suite_iterations(cap)
    suite = cap.meta.get("suite") or {}
    page.add(f"<h3>Kernel suite, µs (operations: MARKER0 rising → MARKER1 rising; "
             f"interrupt tests: from each pulse, docs/suite.md; "
             f"{suite.get('iterations', '?')} iterations per test, "
             f"{'loaded' if suite.get('loaded') else 'unloaded'})</h3>")
    page.add(table(_HEADS, _rows(figures)))
    page.add('<p class="note">cold: the first iteration, apart; min … max over the others. '
             "[lo, hi] under a percentile: its 95 % confidence bounds (distribution-free, "
             "from order statistics; — where too few iterations bound that side). "
             "* fewer than 10 iterations lie beyond this percentile. self-timed: the "
             "target's own cycle count of each iteration against the rig's figure.</p>")
    page.figure(box_figure(per_test, cap.tick_hz))
    page.figure(tail_figure([(name, *exceedance(_warm_ticks(its), cap.tick_hz),
                              PALETTE[i % len(PALETTE)])
                             for i, (name, its) in enumerate(per_test.items())]))
    for fig in (scaling_figure(figures), nested_figure(figures)):
        if fig is not None:
            page.figure(fig)
