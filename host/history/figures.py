# SPDX-License-Identifier: BSD-2-Clause
"""The figures of a capture file as a history :class:`~.store.Run`.

Nothing is computed anew: a capture's percentiles, their bounds, the extremes and
the maximum's exceedance bound are :func:`rtrig.host.analysis.capture_summary`'s
(records or on-chip statistics alike); missed pulses get
:func:`rtrig.host.bounds.fraction_bounds`; a channel's samples are
:func:`rtrig.host.report.compare.channel_samples` (value counts, or a histogram),
kept so that a step between two groups of runs is judged by ``compare`` itself. A
sweep gives MF-ISR, MF-APP, each interval channel's MF and SF with their resolution
(the highest frequency measured clear as ``lo``, the first failing as ``hi``); a
suite run gives its rows.

Figure names are ``channel.figure`` (``isr.p99``, ``app.max``, ``isr.missed``),
``mf_isr``, ``sf``, and ``suite.TEST.figure``; times are in ns, frequencies in Hz,
fractions as fractions.
"""

from pathlib import Path

from ...capture import load
from ...errors import CaptureFormatError
from ..analysis import PERCENTILES, answered_counts, capture_summary, capture_warnings
from ..bounds import fraction_bounds
from .connect import HistoryError
from .store import Run

__all__ = ["run_of_capture", "capture_figures", "samples_json", "setup_of_meta",
           "SUITE_FIGURES"]

#: A suite row's figures (ns, except the count).
SUITE_FIGURES = ("count", "cold", "min", "mean", "p50", "p99", "p9999", "max")


def setup_of_meta(meta):
    """``(board, target, settings)`` of a capture's metadata."""
    board = meta.get("board")
    if meta.get("simulation") and not isinstance(board, str):
        board = "sim"       # the twin, whose BOARD register is the simulated board's code
    board = board or "unknown"
    target = meta.get("target") or {}
    name = " ".join(str(v) for v in (target.get("kind"), target.get("preset")) if v)
    stim = meta.get("stimulus") or {}
    settings = {"mode": meta.get("mode") or "records", "load": bool(meta.get("load")),
                "tick_hz": meta.get("tick_hz"), "channels": meta.get("channels"),
                "freq_hz": stim.get("freq_hz"), "jitter_ticks": stim.get("jitter_ticks"),
                "simulation": bool(meta.get("simulation")),
                "rtrig_version": meta.get("rtrig_version")}
    for key in ("sweep", "suite"):
        if meta.get(key):
            settings[key] = meta[key]
    return str(board), name or "unknown", settings


def samples_json(s):
    """A :class:`~rtrig.host.report.compare.Samples` as a JSON-able dict."""
    return {"values": [int(v) for v in s.values], "counts": [int(c) for c in s.counts],
            "pulses": int(s.pulses), "missed": int(s.missed), "tick_hz": float(s.tick_hz),
            "hist": s.hist}


def capture_figures(summary):
    """``[(name, value, lo, hi, unit)]`` of a capture's summary
    (:func:`~rtrig.host.analysis.capture_summary`)."""
    out = []
    for ch, st in summary.items():
        for key in PERCENTILES:
            out.append((f"{ch}.{key}", st[f"{key}_ns"], st.get(f"{key}_lo_ns"),
                        st.get(f"{key}_hi_ns"), "ns"))
        for key in ("min", "mean", "max"):
            out.append((f"{ch}.{key}", st[f"{key}_ns"], None, None, "ns"))
        out.append((f"{ch}.max_exceedance", st.get("max_exceedance"), None, None, "fraction"))
        lo, hi = fraction_bounds(st["missed"], st["pulses"])
        out.append((f"{ch}.missed", st["missed_fraction"], lo, hi, "fraction"))
        out.append((f"{ch}.pulses", st["pulses"], None, None, "count"))
    return out


def _sweep_figures(final):
    out = []
    for key, fig in ((final or {}).get("figures") or {}).items():
        fig = fig or {}
        hz, below = fig.get("hz"), fig.get("below_hz")
        # the value: the first failing frequency; unfound, the highest measured clear
        out.append((key.removesuffix("_hz"), hz if hz is not None else below, below, hz, "Hz"))
    return out


def _suite_figures(final):
    out = []
    for test, row in (((final or {}).get("suite") or {}).get("tests") or {}).items():
        for key in SUITE_FIGURES:
            value = row.get(key if key == "count" else f"{key}_ns")
            out.append((f"suite.{test}.{key}", value, None, None,
                        "count" if key == "count" else "ns"))
    return out


def _kind(meta):
    if meta.get("kind") == "sweep":
        return "sweep"
    mode = meta.get("mode") or "records"
    return {"suite": "suite", "statistics": "statistics"}.get(mode, "capture")


def run_of_capture(path, labels=None):
    """The :class:`Run` of the capture file ``path`` (a capture, statistics run,
    sweep or suite run), or :class:`HistoryError` in one line."""
    from ..report.compare import channel_samples
    try:
        cap = load(path)
    except FileNotFoundError:
        raise HistoryError(f"no such capture file: {path}") from None
    except CaptureFormatError as e:
        raise HistoryError(f"{path}: {e}", hint=e.hint) from None
    board, target, settings = setup_of_meta(cap.meta)
    kind = _kind(cap.meta)
    run = Run(kind, str(Path(path)), board, target, settings,
              (cap.final or {}).get("status") or "unfinished", dict(labels or {}))
    if kind == "sweep":
        run.figures = _sweep_figures(cap.final)
    elif kind == "suite":
        run.figures = _suite_figures(cap.final)
    else:
        run.figures = capture_figures(capture_summary(cap))
        run.samples = {ch: samples_json(s) for ch, s in channel_samples(cap).items()}
    run.warnings = capture_warnings(cap, answered_counts(cap) if kind not in ("sweep", "suite")
                                    else None)
    return run
