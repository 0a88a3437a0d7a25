# SPDX-License-Identifier: BSD-2-Clause
"""HTML reports of captures: one self-contained, interactive file (docs/report.md).

The report is built in three layers so that each can be tested on its own; this
package hands on the names of all three:

* **plot data** (:mod:`rtrig.host.report.data`) —
  numpy reductions of millions of records to a few thousand numbers:
  :func:`latency_histogram`, :func:`exceedance`, :func:`envelope`,
  :func:`persistence`, :func:`channel_plot_data` (records in memory),
  :func:`stats_plot_data` (on-chip statistics) and :func:`sweep_plot_data`; and
  (:mod:`rtrig.host.report.reduction`) :class:`CaptureReduction`, the same numbers
  from a capture's chunks block by block. Nothing there draws.
* **figures** (:mod:`rtrig.host.report.figures`) — plotly.js figure dicts built from
  that data (:func:`histogram_figure`, :func:`tail_figure`, …).
* **page** (:mod:`rtrig.host.report.page`) — :func:`build_report` /
  :func:`write_report`, which put them into one HTML file with plotly.js embedded
  once (it works offline; no CDN). :func:`write_report` scans the capture files
  (:func:`rtrig.capture.scan`) instead of loading them, so its memory does not grow
  with the number of records.

Every plot shows binned data, never raw points, so the file stays small and the
browser fast however many pulses a capture holds; the binning never drops an
extreme (the min/max envelope keeps the global minimum and maximum, the tail plot
ends at the maximum).
"""

from .data import (
    ENVELOPE_BINS,
    HIST_BINS,
    MARKERS,
    PERSIST_BINS,
    TAIL_POINTS,
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
from .figures import (
    histogram_figure,
    overlay_histogram_figure,
    persistence_figure,
    persistence_image,
    sweep_figure,
    tail_figure,
    timeline_figure,
)
from .page import build_report, write_report
from .reduction import CaptureReduction

__all__ = [
    "channel_records", "latency_histogram", "exceedance", "envelope", "persistence",
    "channel_plot_data", "stats_plot_data", "capture_plot_data", "sweep_plot_data",
    "histogram_figure", "tail_figure", "timeline_figure", "persistence_figure",
    "persistence_image", "sweep_figure", "overlay_histogram_figure", "build_report",
    "write_report", "MARKERS", "ENVELOPE_BINS", "HIST_BINS", "PERSIST_BINS", "TAIL_POINTS",
    "CaptureReduction", "record_count",
]
