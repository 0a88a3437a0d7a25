# SPDX-License-Identifier: BSD-2-Clause
"""The report's page: summary tables, the description of each capture, and
:func:`build_report` / :func:`write_report`, which put the figures of
:mod:`rtrig.host.report.figures` into one HTML file with plotly.js embedded once."""

import datetime
import html

from ...capture import scan
from ...channels import channel_order
from ...errors import UsageError
from ...outputs import atomic_output, check_output
from ...units import format_hz
from ..analysis import PERCENTILES, claimable
from .closed_loop import closed_loop_section
from .data import (
    record_count,
    sweep_plot_data,
)
from .figures import (
    PALETTE,
    channel_color,
    figure_json,
    histogram_figure,
    overlay_histogram_figure,
    persistence_figure,
    sweep_figure,
    tail_figure,
    timeline_figure,
)
from .reduction import CaptureReduction
from .suite import suite_section
from .verdicts import verdict_table

__all__ = ["build_report", "write_report"]


def _fmt_us(ns, digits=4):
    if ns is None:
        return "—"
    return f"{ns / 1000:.{digits}g}"


def _table(heads, rows, cls=""):
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in heads)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


_SUMMARY_HEADS = ["channel", "min", "max", "jitter", "mean", "p50", "p99", "p99.9", "p99.99",
                  "missed", "pulses"]


def _bounds_line(st, key):
    """A percentile's 95 % bounds under its value (µs); — for a side too few samples
    bound."""
    if st.get(f"{key}_ns") is None or f"{key}_lo_ns" not in st:
        return ""
    lo, hi = st[f"{key}_lo_ns"], st[f"{key}_hi_ns"]
    return f'<br><span class="ci">[{_fmt_us(lo)}, {_fmt_us(hi)}]</span>'


def _exceedance_line(st):
    """Under the maximum: the answered samples and the bound they support on how
    often a pulse exceeds it."""
    p = st.get("max_exceedance")
    if p is None:
        return ""
    return (f'<br><span class="ci" title="at 95 % confidence, at most this fraction of '
            f'pulses exceeds the maximum">n {st["answered"]}, ≤{100 * p:.2g} % above</span>')


def _summary_rows(per_channel, label=None):
    rows = []
    for name, d in per_channel.items():
        st = d["stats"]
        pct = []
        for key, percent in PERCENTILES.items():
            cell = _fmt_us(st[f"{key}_ns"])
            if st[f"{key}_ns"] is not None and not claimable(st["answered"], percent):
                cell = f'<span class="weak" title="fewer than 10 samples beyond">{cell}*</span>'
            pct.append(cell + _bounds_line(st, key))
        missed = f"{st['missed']}"
        if st["pulses"]:
            missed += f" ({100 * st['missed_fraction']:.3g} %)"
        first = html.escape(name.upper() if label is None else f"{label} · {name.upper()}")
        rows.append([first, _fmt_us(st["min_ns"]), _fmt_us(st["max_ns"]) + _exceedance_line(st),
                     _fmt_us(st["jitter_ns"]), _fmt_us(st["mean_ns"]), *pct, missed,
                     f"{st['pulses']}"])
    return rows


#: Under each summary table: what the bounds are and what they assume.
_BOUNDS_NOTE = ('<p class="note">[lo, hi] under a percentile: its 95 % confidence bounds, '
                "two measured samples chosen by order statistics (the binomial method): "
                "exact and free of any assumption about the shape of the distribution, but "
                "they assume independent samples; latencies locked to a periodic kernel "
                "tick are not quite independent (see docs/report.md). — : too few samples "
                "to bound that side. The maximum has no interval: under it, the number of "
                "samples n and the bound, at 95 %, on the fraction of pulses above it "
                "(about 3 / n).</p>")


def _completion_rows(per_channel):
    rows = []
    for name, d in per_channel.items():
        st = d["stats"]
        rows.append([name.upper(), _fmt_us(st["completion_min_ns"]),
                     _fmt_us(st["completion_max_ns"]),
                     _fmt_us(st["completion_jitter_ns"]),
                     _fmt_us(st["completion_mean_ns"]),
                     _fmt_us(st["completion_p50_ns"]) + _bounds_line(st, "completion_p50"),
                     _fmt_us(st["completion_p99_ns"]) + _bounds_line(st, "completion_p99"),
                     f"{st['answered']}"])
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
        s = format_hz(stim.get("freq_hz"))
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
    from ..rig.loss import LINK_COUNTERS
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
.note{color:#555;font-size:12px} .ci{color:#777;font-size:11px;white-space:nowrap} nav a{margin-right:12px} .plot{margin:8px 0 18px}
"""


def _capture_section(page, cap, label, per_channel, pers, elf=None, stages=None):
    page.add(f'<h2 id="{html.escape(label)}">{html.escape(label)}: '
             f"{html.escape(cap.path.name)}</h2>")
    page.add(f'<table class="meta">{_describe(cap)}</table>')
    if cap.meta.get("mode") == "suite":
        suite_section(page, cap, _table)
    if per_channel:
        if any(".." in name for name in per_channel):
            page.add("<h3>Channels, µs (isr/app: stimulus rising edge → response rising "
                     "edge; START..END: the interval between those edges)</h3>")
        else:
            page.add("<h3>Latency, µs (stimulus rising edge → response rising edge)</h3>")
        page.add(_table(_SUMMARY_HEADS, _summary_rows(per_channel)))
        page.add("<h3>Completion, µs (stimulus rising edge → response falling edge)</h3>")
        page.add(_table(["channel", "min", "max", "jitter", "mean", "p50", "p99", "answered"],
                        _completion_rows(per_channel)))
        page.add('<p class="note">* fewer than 10 samples lie beyond this percentile: the '
                 "capture is too short to claim it. Percentiles are measured samples "
                 "(inverted CDF), never interpolations.</p>")
        page.add(_BOUNDS_NOTE)
        closed_loop_section(page, cap, _table)
        stats_mode = any(d["envelope"] is None for d in per_channel.values())
        if stats_mode:
            res = {d["resolution_ns"] for d in per_channel.values()}
            outside = ", ".join(f"{n.upper()} {d['outside'][0]} below / {d['outside'][1]} above"
                                for n, d in per_channel.items())
            page.add('<p class="note">Statistics mode: the rig accumulated the figures and a '
                     f"histogram of {', '.join(f'{r:g} ns' for r in sorted(res))} bins "
                     "on chip; percentiles are the lower edge of their bin (their bounds "
                     "widen to whole bins), min, max and "
                     "mean are exact. Histogram range: "
                     f"{outside}. Per-pulse views (latency by pulse, persistence) need a "
                     "records-mode capture.</p>")
        page.figure(histogram_figure(per_channel))
        if any(len(d["completion_hist"][1]) for d in per_channel.values()):
            page.figure(histogram_figure(per_channel, completion=True))
        page.figure(tail_figure([(name, *d["tail"], channel_color(name))
                                 for name, d in per_channel.items()]))
        if not stats_mode:
            stim = cap.meta.get("stimulus") or {}
            page.figure(timeline_figure(per_channel, stim.get("freq_hz")))
    if pers and pers["lanes"] and pers["pulses"]:
        page.figure(persistence_figure(pers))
    if elf is not None or stages:
        from .explain import explain_section, stages_section
        if stages:
            stages_section(page, cap, _table, stages)
        if elf is not None:
            explain_section(page, cap, _table, elf)
    if cap.steps:
        sw = sweep_plot_data(cap)
        page.add("<h3>Sweep</h3>")
        marks = [[k, format_hz(v) if v else "not found"] for k, v in sw["marks"].items()]
        page.add(_table(["figure", "frequency"], marks))
        page.figure(sweep_figure(sw))
        cols = [f"{c}_missed" for c in sw["missed"]] + ["load_progress"]
        heads = [f"{c.upper() if c in ('isr', 'app') else c} missed" for c in sw["missed"]]
        rows = [[format_hz(s.get("freq_hz")),
                 *("—" if s.get(k) is None else f"{100 * s[k]:.3g} %" for k in cols)]
                for s in sorted(cap.steps, key=lambda s: s.get("freq_hz") or 0)]
        page.add(_table(["frequency", *heads, "load progress"], rows))


def _labels(captures, labels):
    labels = list(labels or [])
    for i in range(len(labels), len(captures)):
        stem = captures[i].path.stem
        labels.append(stem if stem not in labels else f"{stem}-{i + 1}")
    return labels


def build_report(captures, title=None, labels=None, cyclictest=(), elf=None,
                 stages=None):
    """The report of one or more captures, as an HTML string.

    ``captures``: loaded (:func:`rtrig.load`) or scanned (:func:`rtrig.capture.scan`)
    captures; the numbers are the same, but a scanned capture's records are read
    block by block (see :class:`CaptureReduction`) and never held whole.
    ``cyclictest``: parsed cyclictest histograms shown beside them
    (:mod:`rtrig.host.integrations.cyclictest`). ``elf``: the SoC firmware's ELF, for
    the section "Why the slowest pulses were slow" of captures recorded by the SoC twin.
    ``stages``: marker edges as stages (``"marker1+,marker2+"``), a table of each.
    """
    import plotly
    import plotly.offline

    from ... import __version__
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
        verdict_table(page, captures, labels, reductions, _table)
        rows = []
        for lb, d in zip(labels, datas, strict=True):
            rows += _summary_rows(d, label=lb)
        page.add(_table(_SUMMARY_HEADS, rows))
        page.add(_BOUNDS_NOTE)
        names = sorted({n for d in datas for n in d}, key=channel_order)
        for name in names:
            entries = [(lb, d[name]["hist"], PALETTE[i % len(PALETTE)])
                       for i, (lb, d) in enumerate(zip(labels, datas, strict=True)) if name in d]
            page.figure(overlay_histogram_figure(name, entries))
        # colour by capture (as in the histograms above), dash by channel
        page.figure(tail_figure([(f"{lb} · {name}", *d[name]["tail"],
                                  PALETTE[i % len(PALETTE)], ["solid", "dash", "dot"][j % 3])
                                 for i, (lb, d) in enumerate(zip(labels, datas, strict=True))
                                 for j, name in enumerate(d)]))
    if cyclictest:
        from ..integrations.cyclictest import report_section
        report_section(page, cyclictest, datas, labels)
    for cap, lb, d, pers in zip(captures, labels, datas, perss, strict=True):
        _capture_section(page, cap, lb, d, pers, elf, stages)
    js = plotly.offline.get_plotlyjs()
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style>\n"
            f'<script type="text/javascript">{js}</script></head><body>\n'
            + "\n".join(page.parts) + "\n</body></html>\n")


def write_report(paths, output, title=None, cyclictest=(), elf=None, stages=None):
    """Report on the capture files ``paths``: write the HTML report to ``output``.

    The files are scanned, not loaded: their records are read block by block, so
    memory stays bounded whatever their size. Returns ``(output_path, bytes_written)``.
    """
    out = check_output(output)
    caps = [scan(p) for p in paths]
    data = build_report(caps, title=title, cyclictest=cyclictest, elf=elf,
                        stages=stages).encode("utf-8")
    with atomic_output(out) as f:
        f.write(data)
    return out, len(data)
