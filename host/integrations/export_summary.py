# SPDX-License-Identifier: BSD-2-Clause
"""The summary exports (docs/exports.md): ``json`` and ``summary-csv``.

``json`` is the capture's summary: metadata, how the capture ended, per-channel
statistics, sweep steps and results. ``summary-csv`` is the per-channel statistics of
that summary as CSV, one row per channel: counts, every figure in ns, each
percentile's 95 % bounds and the maximum's exceedance bound, for a spreadsheet.
"""

import json

from ...channels import sweep_figure_keys
from ...errors import UsageError
from ..analysis import PERCENTILES, channel_stats, stats_summary
from ..report.data import channel_records

__all__ = ["summary_json", "write_json", "write_summary_csv", "SUMMARY_COLUMNS"]


def summary_json(cap):
    """The capture's summary as a JSON-ready dict."""
    out = {
        "format": "rtrig-summary",
        "capture": str(cap.path),
        "meta": cap.meta,
        "final": cap.final,
        "complete": cap.complete,
        "tick_hz": cap.tick_hz,
        "channels": {name: channel_stats(rec, cap.tick_hz)
                     for name, rec in channel_records(cap).items()},
        "channels_from": "records",
        "raw_events": int(len(cap.events)),
    }
    if not out["channels"] and cap.stats and cap.stats.get("channels"):
        out["channels"] = stats_summary(cap.stats, cap.tick_hz)
        out["channels_from"] = "statistics"
    if cap.stats is not None:
        out["onchip_stats"] = cap.stats
    if cap.steps:
        out["steps"] = sorted(cap.steps, key=lambda s: s.get("freq_hz") or 0)
    if cap.meta.get("kind") == "sweep" and cap.final:
        # MF-ISR, MF-APP, every swept interval channel's MF and SF
        swept = (cap.meta.get("sweep") or {}).get("channels") or ()
        out["results"] = {k: cap.final.get(k) for k in sweep_figure_keys(swept)}
    return out


def write_json(cap, f):
    f.write((json.dumps(summary_json(cap), indent=2) + "\n").encode())


#: The columns of ``summary-csv`` after ``channel``: the keys of a channel's summary.
SUMMARY_COLUMNS = ["pulses", "answered", "missed", "missed_fraction", "min_ns", "mean_ns",
                   "std_ns", *(f"{p}{side}_ns" for p in PERCENTILES
                               for side in ("", "_lo", "_hi")),
                   "max_ns", "max_exceedance", "jitter_ns"]


def write_summary_csv(cap, f):
    """The per-channel statistics of :func:`summary_json` as CSV: a header, then one
    row per channel; an empty field where a figure is None (no sample, or too few to
    bound that side)."""
    channels = summary_json(cap)["channels"]
    if not channels:
        raise UsageError(f"{cap.path}: no latency channel to summarise",
                         hint="a sweep's figures are in --format json")
    lines = [",".join(["channel", *SUMMARY_COLUMNS])]
    for name, st in channels.items():
        lines.append(",".join([name, *("" if st.get(k) is None else f"{st[k]:g}"
                                       if isinstance(st[k], float) else str(st[k])
                                       for k in SUMMARY_COLUMNS)]))
    f.write(("\n".join(lines) + "\n").encode())

