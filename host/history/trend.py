# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig history report``: each figure over the runs, with its bounds, and every
step between consecutive groups that ``compare``'s rule calls higher or lower
(:mod:`.steps`), on one self-contained HTML page (plotly.js embedded once, as
``rtrig report`` does).

Per channel a band plot comes first — p50, p99, p99.99 and the maximum over the runs
(OSADL's "maximum over time", with the percentiles under it) — then one plot per
figure: each run a point with its 95 % bounds as error bars, coloured by group, a
dashed line at every step with its verdict above it.
"""

import datetime
import html
import sys

from ...errors import UsageError
from ...outputs import atomic_output, check_output
from ..report.figures import PALETTE, figure_json
from .query import check_keys, format_value, group_of, groups
from .steps import judge, steps

__all__ = ["build_trend", "write_trend", "default_figures"]

_BANDS = ("p50", "p99", "p9999", "max")
_DEFAULT = ("p50", "p99", "p9999", "max", "missed")
_SCALE = {"ns": (1e-3, "µs"), "Hz": (1e-3, "kHz"), "fraction": (1.0, ""), "count": (1.0, "")}
_CSS = ("body{font-family:sans-serif;margin:0 auto;max-width:1300px;padding:0 16px;color:#222}"
        "h1{font-size:22px} h2{font-size:17px;border-bottom:1px solid #ccc;margin-top:28px}"
        "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;"
        "padding:3px 8px}th{background:#f3f3f3}.note{color:#555;font-size:12px}"
        ".higher{color:#b00}.lower{color:#070}")


def default_figures(names):
    """The figures drawn when none is named: each channel's p50, p99, p99.99, max and
    missed, the sweeps' figures and the suites' p99 and max."""
    out = []
    for n in names:
        head, _, stat = n.rpartition(".")
        if not head or (n.startswith("suite.") and stat in ("p99", "max")) or \
                (not n.startswith("suite.") and stat in _DEFAULT and head.count(".") == 0):
            out.append(n)
    return out


def _band_figure(channel, runs, per_figure, xs):
    data = []
    for i, stat in enumerate(_BANDS):
        vals = per_figure.get(f"{channel}.{stat}")
        if vals is None:
            continue
        data.append({"type": "scatter", "mode": "lines+markers", "name": stat,
                     "x": xs, "y": [_y(vals.get(r["id"]), 0) for r in runs],
                     "line": {"color": PALETTE[i % len(PALETTE)]}})
    return {"data": data, "layout": _layout(f"{channel}: p50, p99, p99.99 and maximum over "
                                            "the runs", "µs", 380)}


def _y(v, index, scale=1e-3):
    return None if v is None or v[index] is None else v[index] * scale


def _layout(title, unit, height=340):
    return {"title": {"text": title}, "height": height, "margin": {"t": 40, "b": 120},
            "xaxis": {"type": "category", "tickangle": -40},
            "yaxis": {"title": {"text": unit}}, "legend": {"orientation": "h", "y": -0.5}}


def _figure_plot(name, runs, vals, xs, by, found):
    unit = next((v[3] for v in vals.values()), "ns")
    scale, label = _SCALE.get(unit, (1.0, unit))
    grouped = groups(runs, by) if by else [(str(r["id"]), [r]) for r in runs]
    data = []
    for gi, (g, members) in enumerate(grouped):
        idx = [runs.index(r) for r in members]
        y = [_y(vals.get(r["id"]), 0, scale) for r in members]
        up = [None if v is None or vals[r["id"]][2] is None else vals[r["id"]][2] * scale - v
              for r, v in zip(members, y)]
        down = [None if v is None or vals[r["id"]][1] is None else v - vals[r["id"]][1] * scale
                for r, v in zip(members, y)]
        data.append({"type": "scatter", "mode": "markers", "name": g, "showlegend": bool(by),
                     "x": [xs[i] for i in idx], "y": y,
                     "error_y": {"type": "data", "symmetric": False,
                                 "array": [u or 0 for u in up],
                                 "arrayminus": [d or 0 for d in down]},
                     "marker": {"color": PALETTE[gi % len(PALETTE)], "size": 7}})
    shapes, notes = [], []
    ids = [r["id"] for r in runs]
    for s in found:
        if not s.verdict.startswith(("B higher", "B lower")):
            continue
        x = ids.index(s.after_run) + 0.5
        color = "#b00" if s.verdict.startswith("B higher") else "#070"
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x,
                       "y0": 0, "y1": 1, "line": {"color": color, "dash": "dash"}})
        word = "higher" if s.verdict.startswith("B higher") else "lower"
        notes.append({"x": x, "y": 1.02, "xref": "x", "yref": "paper", "showarrow": False,
                      "text": f"{html.escape(s.b)}: {word}", "font": {"color": color}})
    layout = _layout(name, label)
    layout.update(shapes=shapes, annotations=notes)
    return {"data": data, "layout": layout}


def _step_rows(found, unit):
    rows = []
    for s in found:
        cls = "higher" if s.verdict.startswith("B higher") else \
            "lower" if s.verdict.startswith("B lower") else ""
        d = "" if s.diff == (None, None) else \
            f"[{format_value(s.diff[0], unit) if s.diff[0] is not None else '…'}, " \
            f"{format_value(s.diff[1], unit) if s.diff[1] is not None else '…'}]"
        rows.append(f"<tr><td>{html.escape(s.figure)}</td><td>{html.escape(s.a)}</td>"
                    f"<td>{html.escape(s.b)}</td><td class='{cls}'>{html.escape(s.verdict)}"
                    f"</td><td>{html.escape(d)}</td></tr>")
    return rows


def build_trend(history, figures=None, by=None, where=None, confidence=0.95):
    """``(html, steps marked)``: the trend page of ``history``'s runs."""
    import plotly
    import plotly.offline
    check_keys(history, where, by)
    runs = history.runs(where)
    if not runs:
        raise UsageError("no run in the history matches", hint="rtrig history show lists them")
    names = figures or default_figures(history.figure_names())
    xs = [f"{r['id']}" + (f" · {group_of(r, by)}" if by else "") for r in runs]
    per_figure = {n: history.figures(n, runs) for n in names}
    for band in {n.rpartition(".")[0] for n in names if n.rpartition(".")[2] in _BANDS}:
        for stat in _BANDS:
            per_figure.setdefault(f"{band}.{stat}", history.figures(f"{band}.{stat}", runs))
    missing = [n for n in names if not per_figure[n]]
    if figures and missing:
        raise UsageError(f"no run holds figure {missing[0]!r}",
                         hint="rtrig history show --figure NAME; names: "
                              + ", ".join(history.figure_names()[:12]))
    j = judge(history, confidence)
    parts, rows, marked = [], [], 0
    for band in sorted({n.rpartition(".")[0] for n in names
                        if n.rpartition(".")[2] in _BANDS and not n.startswith("suite.")}):
        parts.append(_band_figure(band, runs, per_figure, xs))
    for n in names:
        vals = per_figure[n]
        if not vals:
            continue
        # the groups of the runs that hold the figure: a run without it (a cyclictest
        # run beside captures) neither ends a group nor is compared
        held = [r for r in runs if r["id"] in vals]
        grouped = groups(held, by) if by else [(str(r["id"]), [r]) for r in held]
        found = steps(history, n, grouped, vals, confidence, j)
        marked += sum(s.verdict.startswith(("B higher", "B lower")) for s in found)
        rows += _step_rows([s for s in found if s.verdict.startswith(("B higher", "B lower"))],
                           next(iter(vals.values()))[3])
        parts.append(_figure_plot(n, runs, vals, xs, by, found))
    return _page(history, runs, by, parts, rows, confidence, plotly), marked


def _page(history, runs, by, parts, rows, confidence, plotly):
    from ... import __version__
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = f"rtrig history: {history.where}"
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="note">{len(runs)} runs{f", grouped by {html.escape(by)}" if by else ""}'
            f"; generated {now} by rtrig {__version__} (plotly.js from plotly "
            f"{plotly.__version__}, embedded). Error bars: each run's 95 % bounds. A step is "
            f"marked where rtrig compare's rule, at {confidence:.0%} confidence, calls the later "
            "group higher or lower.</p>", "<h2>Steps</h2>"]
    if rows:
        body.append("<table><thead><tr><th>figure</th><th>A</th><th>B</th><th>verdict</th>"
                    "<th>B − A bounds</th></tr></thead><tbody>" + "".join(rows)
                    + "</tbody></table>")
    else:
        body.append('<p class="note">No step between consecutive groups is higher or lower.</p>')
    for i, fig in enumerate(parts):
        h = fig["layout"].get("height", 340)
        body.append(f'<div id="f{i}" style="height:{h}px"></div><script>(function(){{var F='
                    f'{figure_json(fig)};Plotly.newPlot("f{i}",F.data,F.layout,'
                    "{displaylogo:false,responsive:true});})();</script>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style>\n<script>"
            f"{plotly.offline.get_plotlyjs()}</script></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def write_trend(history, output, figures=None, by=None, where=None, confidence=0.95):
    """Write the trend page to ``output`` (a path, or ``-`` for stdout): ``(path, or
    None for stdout; bytes; steps marked)``."""
    out = None if str(output) == "-" else check_output(output)
    text, marked = build_trend(history, figures, by, where, confidence)
    data = text.encode("utf-8")
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return None, len(data), marked
    with atomic_output(out) as f:
        f.write(data)
    return out, len(data), marked
