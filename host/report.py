"""HTML reports of captures: one self-contained, interactive file (DESIGN §4).

The report is built in two layers so that each can be tested on its own:

* **plot data** (:mod:`rtrig.host.report_data`, its names re-exported here) —
  numpy reductions of millions of records to a few thousand numbers:
  :func:`latency_histogram`, :func:`exceedance`, :func:`envelope`,
  :func:`persistence`, :func:`channel_plot_data` (records in memory),
  :class:`CaptureReduction` (the same, from a capture's chunks block by block),
  :func:`stats_plot_data` (on-chip statistics) and :func:`sweep_plot_data`.
  Nothing there draws.
* **figures and page** (here) — plotly.js figure dicts built from that data
  (:func:`histogram_figure`, :func:`tail_figure`, …), and :func:`build_report` /
  :func:`write_report`, which put them into one HTML file with plotly.js embedded
  once (it works offline; no CDN). :func:`write_report` scans the capture files
  (:func:`rtrig.capture.scan`) instead of loading them, so its memory does not grow
  with the number of records.

Every plot shows binned data, never raw points, so the file stays small and the
browser fast however many pulses a capture holds; the binning never drops an
extreme (the min/max envelope keeps the global minimum and maximum, the tail plot
ends at the maximum).
"""

import base64
import datetime
import html
import json
import math
from pathlib import Path

import numpy as np

from ..capture import scan
from .analysis import PERCENTILES
from .errors import UsageError

# The plot data's names stay reachable here, where they were first defined.
from .report_data import (  # noqa: F401
    ENVELOPE_BINS,
    HIST_BINS,
    MARKERS,
    PERSIST_BINS,
    TAIL_POINTS,
    CaptureReduction,
    _channel_order,
    _lane,
    _lane_records,
    capture_plot_data,
    channel_plot_data,
    channel_records,
    envelope,
    exceedance,
    latency_histogram,
    persistence,
    record_count,
    stats_plot_data,
    sweep_plot_data,
)

__all__ = [
    "channel_records", "latency_histogram", "exceedance", "envelope", "persistence",
    "channel_plot_data", "stats_plot_data", "capture_plot_data", "sweep_plot_data",
    "histogram_figure", "tail_figure", "timeline_figure", "persistence_figure",
    "sweep_figure", "overlay_histogram_figure", "build_report", "write_report", "MARKERS",
]

_COLORS = {"isr": "#1f77b4", "app": "#d62728"}
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
            "#17becf"]


# --------------------------------------------------------------------------- figures
#
# Figures are plain plotly.js figure dicts ({"data": [...], "layout": {...}}): they
# are rendered by plotly.js in the page, so the Python side only has to produce
# JSON. numpy arrays become plotly.js typed arrays (base64) in _to_json, which keeps
# the file small.

_FONT = {"family": "sans-serif", "size": 12}
_AXIS = {"showgrid": True, "gridcolor": "#e5e5e5", "zeroline": False, "showline": True,
         "linecolor": "#888", "ticks": "outside", "automargin": True}


def _layout(height, title=None, **more):
    out = {"font": _FONT, "height": height, "margin": {"l": 70, "r": 30, "t": 50, "b": 50},
           "plot_bgcolor": "#fff", "paper_bgcolor": "#fff", "hovermode": "closest",
           "legend": {"orientation": "h", "y": -0.2}, "showlegend": True}
    if title:
        out["title"] = {"text": title, "x": 0.5}
    out.update(more)
    return out


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _us(ns):
    return _f32(np.asarray(ns, dtype=np.float64) / 1000.0)


def _color(name, i=0):
    return _COLORS.get(name, _PALETTE[i % len(_PALETTE)])


def _ax(prefix, row):
    """Axis reference of subplot ``row``: ('x', 1) → 'x', ('y', 2) → 'y2'."""
    return prefix if row == 1 else f"{prefix}{row}"


def _ax_key(prefix, row):
    return f"{prefix}axis" if row == 1 else f"{prefix}axis{row}"


def _stack(rows, titles, height_per=260, shared_x=False, x_title="", y_title=""):
    """Layout of ``rows`` subplots stacked vertically, each titled."""
    total = 80 + height_per * rows + (40 if rows > 1 else 0)
    gap = 95.0 / (total - 100) if rows > 1 else 0.0     # room for tick labels and a title
    h = (1.0 - gap * (rows - 1)) / rows
    lay = _layout(total)
    lay["annotations"] = []
    for r in range(1, rows + 1):
        top = 1.0 - (r - 1) * (h + gap)
        lay[_ax_key("x", r)] = {**_AXIS, "anchor": _ax("y", r),
                                "title": {"text": x_title if r == rows else ""}}
        lay[_ax_key("y", r)] = {**_AXIS, "anchor": _ax("x", r), "domain": [top - h, top],
                                "title": {"text": y_title}}
        if shared_x and r > 1:
            lay[_ax_key("x", r)]["matches"] = "x"
        lay["annotations"].append({"text": f"<b>{html.escape(titles[r - 1])}</b>",
                                   "xref": "paper", "yref": "paper", "x": 0.5, "y": top,
                                   "xanchor": "center", "yanchor": "bottom",
                                   "showarrow": False, "font": {"size": 13}})
    return lay


def _log_toggle(axes):
    """Buttons switching the given y axes between a linear and a log count axis."""
    def args(kind):
        return [{f"{a}.type": kind for a in axes}]
    return [{"type": "buttons", "direction": "left", "x": 1.0, "xanchor": "right",
             "y": 1.0, "yanchor": "bottom", "pad": {"b": 18}, "showactive": True, "active": 0,
             "buttons": [{"label": "linear counts", "method": "relayout",
                          "args": args("linear")},
                         {"label": "log counts", "method": "relayout", "args": args("log")}]}]


def _bars(edges_ns, counts, name, color, row=1):
    centers = (np.asarray(edges_ns[:-1]) + np.asarray(edges_ns[1:])) / 2
    width = float(edges_ns[1] - edges_ns[0]) / 1000.0 if len(edges_ns) > 1 else 0.01
    return {"type": "bar", "x": _us(centers), "y": np.asarray(counts, dtype=np.uint32),
            "width": width, "name": name, "showlegend": False,
            "marker": {"color": color, "line": {"width": 0}},
            "xaxis": _ax("x", row), "yaxis": _ax("y", row),
            "hovertemplate": "%{x:.3f} µs: %{y} pulses<extra>" + html.escape(name)
            + "</extra>"}


def histogram_figure(per_channel, completion=False):
    """Latency (or completion) histogram, one row per channel, with marker lines
    at min, mean, max and the percentiles (the numbers of the summary table)."""
    names = list(per_channel)
    what = "completion" if completion else "latency"
    lay = _stack(len(names), [f"{n.upper()} {what}" for n in names],
                 x_title="µs after the stimulus edge", y_title="pulses")
    lay["bargap"] = 0
    lay["shapes"] = []
    data = []
    for row, name in enumerate(names, 1):
        d = per_channel[name]
        edges, counts = d["completion_hist" if completion else "hist"]
        if len(counts) == 0:
            continue
        data.append(_bars(edges, counts, f"{name} {what}", _color(name), row))
        st = d["stats"]
        marks = ({"min": st["completion_min_ns"], "mean": st["completion_mean_ns"],
                  "max": st["completion_max_ns"]} if completion else d["markers"])
        for i, (label, ns) in enumerate(marks.items()):
            dash = "solid" if label in ("min", "max") else ("dot" if label == "mean" else "dash")
            lay["shapes"].append({"type": "line", "xref": _ax("x", row),
                                  "yref": f"{_ax('y', row)} domain", "x0": ns / 1000.0,
                                  "x1": ns / 1000.0, "y0": 0, "y1": 1,
                                  "line": {"color": "#444", "width": 1, "dash": dash}})
            lay["annotations"].append({"x": ns / 1000.0, "y": 0.97 - 0.09 * (i % 4),
                                       "xref": _ax("x", row),
                                       "yref": f"{_ax('y', row)} domain",
                                       "text": f"{label} {ns / 1000:.4g}", "showarrow": False,
                                       "xanchor": "left", "font": {"size": 10, "color": "#333"},
                                       "bgcolor": "rgba(255,255,255,0.75)"})
    lay["updatemenus"] = _log_toggle([_ax_key("y", r) for r in range(1, len(names) + 1)])
    return {"data": data, "layout": lay}


def tail_figure(series):
    """Exceedance (1 − CDF) on a log axis. ``series``: list of ``(label, x_ns, p,
    color)`` or ``(label, x_ns, p, color, dash)``."""
    data = []
    for label, x, p, color, *dash in series:
        if len(x) == 0:
            continue
        data.append({"type": "scatter", "x": _us(x), "y": _f32(p), "name": label,
                     "mode": "lines+markers", "marker": {"size": 3, "color": color},
                     "line": {"shape": "vh", "color": color, "width": 1.5,
                              "dash": dash[0] if dash else "solid"},
                     "hovertemplate": "≥ %{x:.3f} µs: %{y:.3g}<extra>" + html.escape(label)
                     + "</extra>"})
    lay = _layout(420, "Tail: fraction of pulses with latency ≥ x (1 − CDF)")
    lay["xaxis"] = {**_AXIS, "title": {"text": "latency, µs"}}
    lay["yaxis"] = {**_AXIS, "type": "log", "title": {"text": "P(latency ≥ x)"},
                    "exponentformat": "power"}
    return {"data": data, "layout": lay}


def timeline_figure(per_channel, stim_freq=None):
    """Latency against pulse index: min/max envelope band and mean per bin."""
    names = list(per_channel)
    x_title = "pulse index"
    if stim_freq:
        x_title += f" (1 pulse = {1e6 / stim_freq:.4g} µs at {stim_freq:g} Hz)"
    lay = _stack(len(names), [f"{n.upper()} latency by pulse (min/max band, mean)"
                              for n in names], height_per=230, shared_x=True, y_title="µs")
    lay[_ax_key("x", len(names))]["title"] = {"text": x_title}
    lay["showlegend"] = False
    data = []
    for row, name in enumerate(names, 1):
        env = per_channel[name]["envelope"]
        color = _color(name)
        x = np.asarray(env["pulse"], dtype=np.uint32)
        axes = {"xaxis": _ax("x", row), "yaxis": _ax("y", row)}
        data.append({"type": "scatter", "x": x, "y": _us(env["min"]), "mode": "lines",
                     "name": f"{name} min", "line": {"color": color, "width": 0.7}, **axes,
                     "hovertemplate": "pulse %{x}: min %{y:.3f} µs<extra></extra>"})
        data.append({"type": "scatter", "x": x, "y": _us(env["max"]), "mode": "lines",
                     "name": f"{name} max", "line": {"color": color, "width": 0.7},
                     "fill": "tonexty", "fillcolor": "rgba(120,120,120,0.3)", **axes,
                     "hovertemplate": "pulse %{x}: max %{y:.3f} µs<extra></extra>"})
        if len(env["count"]) and env["count"].max() > 1:
            data.append({"type": "scatter", "x": x, "y": _us(env["mean"]), "mode": "lines",
                         "name": f"{name} mean", "line": {"color": "#222", "width": 1},
                         **axes, "hovertemplate": "pulse %{x}: mean %{y:.3f} µs"
                         "<extra></extra>"})
        mp, mc = per_channel[name]["missed_at"]
        if len(mp):
            top = float(np.max(env["max"])) / 1000 if len(env["max"]) else 0.0
            data.append({"type": "scatter", "x": np.asarray(mp, dtype=np.uint32),
                         "y": np.full(len(mp), top, dtype=np.float32), "mode": "markers",
                         "name": f"{name} missed", **axes,
                         "marker": {"symbol": "x", "color": "#000", "size": 7},
                         "customdata": np.asarray(mc, dtype=np.uint32),
                         "hovertemplate": "from pulse %{x}: %{customdata} missed"
                         "<extra></extra>"})
    return {"data": data, "layout": lay}


def persistence_image(pers, rows_per_lane=8, gap=3):
    """The persistence lanes as one image: per lane a low row, edge rows and a
    high row (bottom to top), lanes framed by empty rows; returns ``(counts,
    y_ticks, labels)``."""
    lanes = pers["lanes"]
    nbins = len(lanes[0][1]) if lanes else 0
    # lanes separated, and framed, by ``gap`` empty (black) rows
    height = len(lanes) * (rows_per_lane + gap) + gap
    z = np.zeros((height, nbins), dtype=np.int64)
    ticks_y, labels = [], []
    for i, (name, low, edge, high) in enumerate(reversed(lanes)):
        base = gap + i * (rows_per_lane + gap)
        z[base] = low
        z[base + 1: base + rows_per_lane - 1] = edge
        z[base + rows_per_lane - 1] = high
        ticks_y.append(base + (rows_per_lane - 1) / 2)
        labels.append(name)
    return z, ticks_y, labels


def persistence_figure(pers):
    """Scope persistence: pixel intensity ~ log of the pulses drawn through it."""
    z, ticks_y, labels = persistence_image(pers)
    nbins = z.shape[1]
    n = max(pers["pulses"], 1)
    scale = 255.0 / math.log1p(n)
    zi = np.round(np.log1p(z) * scale).astype(np.uint8)
    cb_counts = [c for c in (1, 10, 100, 1000, 10**4, 10**5, 10**6, 10**7) if c <= n]
    data = [{"type": "heatmap", "z": zi, "x": _us((np.arange(nbins) + 0.5) * pers["bin_ns"]),
             "y": np.arange(z.shape[0], dtype=np.uint16),
             "zmin": 0, "zmax": 255, "zsmooth": False,
             "colorscale": [[0, "#000"], [0.02, "#063"], [0.5, "#2c4"], [0.85, "#bf6"],
                            [1, "#fff"]],
             "colorbar": {"title": {"text": "pulses"},
                          "tickvals": [math.log1p(c) * scale for c in cb_counts],
                          "ticktext": [f"{c:g}" for c in cb_counts]},
             "hovertemplate": "%{x:.3f} µs<extra></extra>"}]
    lay = _layout(130 + 8 * z.shape[0],
                  f"Persistence: {pers['pulses']} pulses overlaid at the stimulus edge "
                  f"(from {pers['source']}, {pers['bin_ns']:.3g} ns per column)",
                  plot_bgcolor="#000")
    lay["xaxis"] = {**_AXIS, "showgrid": False, "title": {"text": "µs after the stimulus edge"}}
    lay["yaxis"] = {**_AXIS, "showgrid": False, "tickvals": ticks_y, "ticktext": labels,
                    "range": [-0.5, z.shape[0] - 0.5], "showline": False, "ticks": ""}
    return {"data": data, "layout": lay}


def sweep_figure(sw):
    """Missed fraction per channel and load progress against stimulus frequency,
    with MF-ISR, MF-APP and SF marked."""
    f = sw["freq_hz"]
    data = []
    for key, label, color in (("isr_missed", "ISR missed", _COLORS["isr"]),
                              ("app_missed", "APP missed", _COLORS["app"])):
        y = sw[key]
        if len(y) and not np.all(np.isnan(y)):
            data.append({"type": "scatter", "x": f, "y": y, "name": label,
                         "mode": "lines+markers", "line": {"color": color},
                         "hovertemplate": "%{x:.4s}Hz: %{y:.3g}<extra>" + label + "</extra>"})
    if len(f) and not np.all(np.isnan(sw["load_progress"])):
        data.append({"type": "scatter", "x": f, "y": sw["load_progress"],
                     "name": "load progress", "yaxis": "y2", "mode": "lines+markers",
                     "line": {"color": "#2ca02c", "dash": "dot"},
                     "hovertemplate": "%{x:.4s}Hz: %{y:.3g}<extra>load</extra>"})
    # Marks are traces, not shapes, so their positions are plain data on the log axis.
    for i, (label, hz) in enumerate(sw["marks"].items()):
        if hz:
            data.append({"type": "scatter", "x": [hz, hz], "y": [0, 1.0 - 0.07 * i],
                         "mode": "lines+text", "text": ["", f"{label} {_fmt_hz(hz)}"],
                         "textposition": "top right", "name": label, "showlegend": False,
                         "line": {"color": "#555", "dash": "dash", "width": 1},
                         "hovertemplate": f"{label} {_fmt_hz(hz)}<extra></extra>"})
    lay = _layout(440, "Sweep: missed fraction and load progress against frequency")
    lay["xaxis"] = {**_AXIS, "type": "log", "title": {"text": "stimulus frequency, Hz"}}
    lay["yaxis"] = {**_AXIS, "range": [-0.02, 1.08], "title": {"text": "missed fraction"}}
    lay["yaxis2"] = {**_AXIS, "overlaying": "y", "side": "right", "range": [-0.02, 1.08],
                     "showgrid": False, "title": {"text": "load progress (relative)"}}
    return {"data": data, "layout": lay}


def overlay_histogram_figure(name, entries):
    """One channel of several captures: histograms on common bins, as fractions."""
    data = []
    for label, (edges, counts), color in entries:
        if len(counts):
            centers = (np.asarray(edges[:-1]) + np.asarray(edges[1:])) / 2
            data.append({"type": "scatter", "x": _us(centers),
                         "y": _f32(counts / max(counts.sum(), 1)), "name": label,
                         "mode": "lines" if len(counts) > 1 else "lines+markers",
                         "line": {"shape": "hvh", "color": color},
                         "hovertemplate": "%{x:.3f} µs: %{y:.3g}<extra>" + html.escape(label)
                         + "</extra>"})
    lay = _layout(380, f"{name.upper()} latency of every capture (fraction of answered pulses)")
    lay["xaxis"] = {**_AXIS, "title": {"text": "µs after the stimulus edge"}}
    lay["yaxis"] = {**_AXIS, "title": {"text": "fraction of pulses"}}
    lay["updatemenus"] = _log_toggle(["yaxis"])
    return {"data": data, "layout": lay}


_DTYPES = {np.dtype(np.float64): "f8", np.dtype(np.float32): "f4", np.dtype(np.int32): "i4",
           np.dtype(np.uint32): "u4", np.dtype(np.int16): "i2", np.dtype(np.uint16): "u2",
           np.dtype(np.int8): "i1", np.dtype(np.uint8): "u1"}


def _jsonable(obj):
    """numpy arrays → plotly.js typed-array specs (base64); numbers → Python."""
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        a = obj
        if a.dtype not in _DTYPES:
            a = a.astype(np.float64 if a.dtype.kind == "f" else np.int32)
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
        spec = {"dtype": _DTYPES[a.dtype], "bdata": base64.b64encode(a.tobytes()).decode()}
        if a.ndim > 1:
            spec["shape"] = ", ".join(str(d) for d in a.shape)
        return spec
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def figure_json(fig):
    """A figure dict as JSON for ``Plotly.newPlot`` (safe inside a <script>)."""
    text = json.dumps(_jsonable(fig), separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/")


# --------------------------------------------------------------------------- page


def _fmt_hz(hz):
    from .units import format_hz
    return format_hz(hz)


def _fmt_us(ns, digits=4):
    if ns is None:
        return "—"
    return f"{ns / 1000:.{digits}g}"


def _table(heads, rows, cls=""):
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in heads)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _claimable(answered, percent):
    """A percentile is backed by data when ≥ 10 samples lie at or beyond it."""
    return answered * (1 - percent / 100.0) >= 10


_SUMMARY_HEADS = ["channel", "min", "max", "jitter", "mean", "p50", "p99", "p99.9", "p99.99",
                  "missed", "pulses"]


def _summary_rows(per_channel, label=None):
    rows = []
    for name, d in per_channel.items():
        st = d["stats"]
        pct = []
        for key, percent in PERCENTILES.items():
            cell = _fmt_us(st[f"{key}_ns"])
            if st[f"{key}_ns"] is not None and not _claimable(st["answered"], percent):
                cell = f'<span class="weak" title="fewer than 10 samples beyond">{cell}*</span>'
            pct.append(cell)
        missed = f"{st['missed']}"
        if st["pulses"]:
            missed += f" ({100 * st['missed_fraction']:.3g} %)"
        first = html.escape(name.upper() if label is None else f"{label} · {name.upper()}")
        rows.append([first, _fmt_us(st["min_ns"]), _fmt_us(st["max_ns"]),
                     _fmt_us(st["jitter_ns"]), _fmt_us(st["mean_ns"]), *pct, missed,
                     f"{st['pulses']}"])
    return rows


def _describe(cap):
    m = cap.meta
    tgt = m.get("target") or {}
    stim = m.get("stimulus") or {}
    bits = []
    desc = tgt.get("description") or ""
    kind = tgt.get("kind", "?")
    if tgt.get("preset"):
        kind += f" (preset {tgt['preset']})"
    if kind.startswith("loopback") and tgt.get("delay_ticks") is not None:
        kind += f", delay {tgt['delay_ticks'] * 1e9 / cap.tick_hz:g} ns"
    bits.append(("target", html.escape(kind + (f" — {desc}" if desc else ""))))
    if stim:
        s = _fmt_hz(stim.get("freq_hz"))
        if stim.get("period_ticks") and stim.get("high_ticks") is not None:
            s += f", duty {stim['high_ticks'] / stim['period_ticks']:.2g}"
        if stim.get("jitter_ticks"):
            s += f", jitter 0..{stim['jitter_ticks'] * 1e9 / cap.tick_hz:g} ns"
        if stim.get("count"):
            s += f", {stim['count']} pulses"
        bits.append(("stimulus", html.escape(s)))
    load = "on (LOAD task running)" if m.get("load") else "off"
    hb = (cap.stats or {}).get("heartbeat") or {}
    if m.get("load") and hb.get("windows"):
        load += (f"; heartbeat {hb.get('min')}..{hb.get('max')} edges per "
                 f"{hb.get('window_ticks', 0) * 1e9 / cap.tick_hz / 1000:g} µs window")
    bits.append(("load", html.escape(load)))
    if m.get("mode"):
        bits.append(("mode", html.escape(str(m["mode"]))))
    bits.append(("timebase", f"{cap.tick_hz / 1e6:g} MHz, {1e9 / cap.tick_hz:g} ns per tick"))
    rig = "simulation twin" if m.get("simulation") else f"board {m.get('board', '?')}"
    bits.append(("rig", html.escape(f"{rig}, gateware {m.get('gateware_hash', '?')}, "
                                    f"rtrig {m.get('rtrig_version', '?')}")))
    status = (cap.final or {}).get("status", "cut off (no final chunk)")
    if cap.truncated:
        status += ", torn last chunk"
    bits.append(("status", html.escape(status)))
    link = (cap.final or {}).get("link") or {}
    if link:
        bits.append(("link", _link_counters(link)))
    if m.get("start_time"):
        bits.append(("started", html.escape(str(m["start_time"]))))
    bits.append(("records", f"{record_count(cap, b'LATR')} latency records, "
                            f"{record_count(cap, b'EVNT')} raw events"))
    return "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in bits)


def _link_counters(link):
    """Every loss counter of a capture's ``final["link"]``; a nonzero one in bold red,
    with what it means as its tooltip."""
    from .link import LINK_COUNTERS
    out = []
    for k, (_, label, meaning) in LINK_COUNTERS.items():
        if k not in link:
            continue
        text = html.escape(f"{link[k]} {label}")
        if link[k]:
            text = (f'<span class="loss" style="color:#b00;font-weight:bold" '
                    f'title="{html.escape(meaning)}">{text}</span>')
        out.append(text)
    return ", ".join(out)


class _Page:
    """The page being built: HTML parts and figures (each a div and a script)."""

    def __init__(self):
        self.parts = []
        self.figures = []

    def add(self, text):
        self.parts.append(text)

    def figure(self, fig):
        self.figures.append(fig)
        div = f"fig{len(self.figures)}"
        h = fig["layout"].get("height", 450)
        self.parts.append(
            f'<div id="{div}" class="plot" style="height:{h}px"></div>\n'
            f"<script>(function(){{var F={figure_json(fig)};"
            f'Plotly.newPlot("{div}",F.data,F.layout,{{displaylogo:false,responsive:true}});'
            "})();</script>")


_CSS = """
body{font-family:sans-serif;margin:0 auto;max-width:1300px;padding:0 16px;color:#222}
h1{font-size:22px;margin:18px 0 4px} h2{font-size:18px;border-bottom:1px solid #ccc;
margin-top:32px} h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3} table.meta th,table.meta td{text-align:left}
td:first-child{text-align:left;font-weight:bold} .weak{color:#999}
.note{color:#555;font-size:12px} nav a{margin-right:12px} .plot{margin:8px 0 18px}
"""


def _capture_section(page, cap, label, per_channel, pers):
    page.add(f'<h2 id="{html.escape(label)}">{html.escape(label)}: '
             f"{html.escape(cap.path.name)}</h2>")
    page.add(f'<table class="meta">{_describe(cap)}</table>')
    if per_channel:
        page.add("<h3>Latency, µs (stimulus rising edge → response rising edge)</h3>")
        page.add(_table(_SUMMARY_HEADS, _summary_rows(per_channel)))
        comp_rows = []
        for name, d in per_channel.items():
            st = d["stats"]
            comp_rows.append([name.upper(), _fmt_us(st["completion_min_ns"]),
                              _fmt_us(st["completion_max_ns"]),
                              _fmt_us(st["completion_jitter_ns"]),
                              _fmt_us(st["completion_mean_ns"]),
                              _fmt_us(st["completion_p50_ns"]), _fmt_us(st["completion_p99_ns"]),
                              f"{st['answered']}"])
        page.add("<h3>Completion, µs (stimulus rising edge → response falling edge)</h3>")
        page.add(_table(["channel", "min", "max", "jitter", "mean", "p50", "p99", "answered"],
                        comp_rows))
        page.add('<p class="note">* fewer than 10 samples lie beyond this percentile: the '
                 "capture is too short to claim it. Percentiles are measured samples "
                 "(inverted CDF), never interpolations.</p>")
        stats_mode = any(d["envelope"] is None for d in per_channel.values())
        if stats_mode:
            res = {d["resolution_ns"] for d in per_channel.values()}
            outside = ", ".join(f"{n.upper()} {d['outside'][0]} below / {d['outside'][1]} above"
                                for n, d in per_channel.items())
            page.add('<p class="note">Statistics mode: the rig accumulated the figures and a '
                     f"histogram of {', '.join(f'{r:g} ns' for r in sorted(res))} bins "
                     "on chip; percentiles are the lower edge of their bin, min, max and "
                     "mean are exact. Histogram range: "
                     f"{outside}. Per-pulse views (latency by pulse, persistence) need a "
                     "records-mode capture.</p>")
        page.figure(histogram_figure(per_channel))
        if any(len(d["completion_hist"][1]) for d in per_channel.values()):
            page.figure(histogram_figure(per_channel, completion=True))
        page.figure(tail_figure([(name, *d["tail"], _color(name))
                                 for name, d in per_channel.items()]))
        if not stats_mode:
            stim = cap.meta.get("stimulus") or {}
            page.figure(timeline_figure(per_channel, stim.get("freq_hz")))
    if pers and pers["lanes"] and pers["pulses"]:
        page.figure(persistence_figure(pers))
    if cap.steps:
        sw = sweep_plot_data(cap)
        page.add("<h3>Sweep</h3>")
        marks = [[k, _fmt_hz(v) if v else "not found"] for k, v in sw["marks"].items()]
        page.add(_table(["figure", "frequency"], marks))
        page.figure(sweep_figure(sw))
        rows = [[_fmt_hz(s.get("freq_hz")),
                 *("—" if s.get(k) is None else f"{100 * s[k]:.3g} %"
                   for k in ("isr_missed", "app_missed", "load_progress"))]
                for s in sorted(cap.steps, key=lambda s: s.get("freq_hz") or 0)]
        page.add(_table(["frequency", "ISR missed", "APP missed", "load progress"], rows))


def _labels(captures, labels):
    labels = list(labels or [])
    for i in range(len(labels), len(captures)):
        stem = captures[i].path.stem
        labels.append(stem if stem not in labels else f"{stem}-{i + 1}")
    return labels


def build_report(captures, title=None, labels=None, cyclictest=()):
    """The report of one or more captures, as an HTML string.

    ``captures``: loaded (:func:`rtrig.load`) or scanned (:func:`rtrig.capture.scan`)
    captures; the numbers are the same, but a scanned capture's records are read
    block by block (see :class:`CaptureReduction`) and never held whole.
    ``cyclictest``: parsed cyclictest histograms shown beside them
    (:mod:`rtrig.host.cyclictest`).
    """
    import plotly
    import plotly.offline

    from .. import __version__
    if not captures and not cyclictest:
        raise UsageError("no capture to report on")
    labels = _labels(captures, labels)
    reductions = [CaptureReduction(cap) for cap in captures]       # pass 1 of each
    # Several captures share histogram bins per channel so they overlay exactly.
    ranges = {}
    if len(captures) > 1:
        for red in reductions:
            for name, (lo, hi) in red.latency_ranges().items():
                a, b = ranges.get(name, (lo, hi))
                ranges[name] = (min(a, lo), max(b, hi))
    datas, perss = [], []
    for red in reductions:                                           # pass 2 of each
        per_channel, pers = red.plot_data(ranges)
        datas.append(per_channel)
        perss.append(pers)
    title = title or ("rtrig report: " + ", ".join([*labels, *(h.name for h in cyclictest)]))
    page = _Page()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page.add(f"<h1>{html.escape(title)}</h1>")
    page.add(f'<p class="note">Generated {now} by rtrig {__version__} (plotly.js from plotly '
             f"{plotly.__version__}, embedded). Latency is measured pin to pin by the rig's own "
             "clock; every plot is binned from all samples and keeps the extremes.</p>")
    if len(captures) > 1:
        page.add("<nav>" + "".join(f'<a href="#{html.escape(lb)}">{html.escape(lb)}</a>'
                                   for lb in labels) + '<a href="#compare">comparison</a></nav>')
        page.add('<h2 id="compare">Comparison</h2>')
        rows = []
        for lb, d in zip(labels, datas, strict=True):
            rows += _summary_rows(d, label=lb)
        page.add(_table(_SUMMARY_HEADS, rows))
        names = sorted({n for d in datas for n in d}, key=_channel_order)
        for name in names:
            entries = [(lb, d[name]["hist"], _PALETTE[i % len(_PALETTE)])
                       for i, (lb, d) in enumerate(zip(labels, datas, strict=True)) if name in d]
            page.figure(overlay_histogram_figure(name, entries))
        # colour by capture (as in the histograms above), dash by channel
        page.figure(tail_figure([(f"{lb} · {name}", *d[name]["tail"],
                                  _PALETTE[i % len(_PALETTE)], ["solid", "dash", "dot"][j % 3])
                                 for i, (lb, d) in enumerate(zip(labels, datas, strict=True))
                                 for j, name in enumerate(d)]))
    if cyclictest:
        from .cyclictest import report_section
        report_section(page, cyclictest, datas, labels)
    for cap, lb, d, pers in zip(captures, labels, datas, perss, strict=True):
        _capture_section(page, cap, lb, d, pers)
    js = plotly.offline.get_plotlyjs()
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style>\n"
            f'<script type="text/javascript">{js}</script></head><body>\n'
            + "\n".join(page.parts) + "\n</body></html>\n")


def write_report(paths, output, title=None, cyclictest=()):
    """Report on the capture files ``paths``: write the HTML report to ``output``.

    The files are scanned, not loaded: their records are read block by block, so
    memory stays bounded whatever their size. Returns ``(output_path, bytes_written)``.
    """
    caps = [scan(p) for p in paths]
    data = build_report(caps, title=title, cyclictest=cyclictest).encode("utf-8")
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out, len(data)
