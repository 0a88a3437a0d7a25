# SPDX-License-Identifier: BSD-2-Clause
"""The report's figures: plotly.js figure dicts built from the plot data of
:mod:`rtrig.host.report.data` (histograms, tails, timelines, persistence, sweep
curves), and their JSON with numpy arrays as plotly.js typed arrays.

Figures are plain plotly.js figure dicts ({"data": [...], "layout": {...}}): they
are rendered by plotly.js in the page, so the Python side only has to produce
JSON. numpy arrays become plotly.js typed arrays (base64) in _to_json, which keeps
the file small.
"""

import base64
import html
import json
import math

import numpy as np

from ...units import format_hz

__all__ = ["histogram_figure", "tail_figure", "timeline_figure", "persistence_image",
           "persistence_figure", "sweep_figure", "overlay_histogram_figure", "figure_json",
           "channel_color", "PALETTE"]

_COLORS = {"isr": "#1f77b4", "app": "#d62728"}
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf"]
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


def channel_color(name, i=0):
    return _COLORS.get(name, PALETTE[i % len(PALETTE)])


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
        data.append(_bars(edges, counts, f"{name} {what}", channel_color(name), row))
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
        color = channel_color(name)
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
    with MF-ISR, MF-APP, interval channels' MF and SF marked."""
    f = sw["freq_hz"]
    data = []
    for i, (channel, y) in enumerate(sw["missed"].items()):
        label = f"{channel.upper() if channel in ('isr', 'app') else channel} missed"
        color = channel_color(channel, i + 1)       # intervals: past load's green
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
                         "mode": "lines+text", "text": ["", f"{label} {format_hz(hz)}"],
                         "textposition": "top right", "name": label, "showlegend": False,
                         "line": {"color": "#555", "dash": "dash", "width": 1},
                         "hovertemplate": f"{label} {format_hz(hz)}<extra></extra>"})
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


