# SPDX-License-Identifier: BSD-2-Clause
"""Records mode: every pulse's latency record streamed over the link into a capture.

:func:`run_capture` is the procedure the CLI's ``capture`` runs (and selftest, and a
sweep step on a rig without on-chip statistics); a notebook can call it directly on
a :class:`~rtrig.host.rig.rig.Rig` from :func:`~rtrig.host.rig.connect.open_rig`.
"""

import contextlib
from pathlib import Path

from ...capture import load
from ...errors import UsageError
from ..analysis import capture_summary
from ..rig.connect import open_rig
from ..rig.drain import RecordDrain
from ..rig.run import CaptureResult, CaptureRun, Progress, capture_meta
from ..sim.console import check_soc_run
from .settings import CaptureSettings

__all__ = ["run_capture", "measure", "CaptureResult", "CaptureSettings", "open_rig"]

def run_capture(rig, settings, path, progress=True, on_block=None):
    """Run one capture into ``path``; returns a :class:`CaptureResult`.

    Records are written in blocks as they arrive; on KeyboardInterrupt (or a link
    failure) the stimulus is stopped, everything received so far is written, the
    file is closed with status ``interrupted`` and the exception propagates.
    """
    regs = settings.ticks(rig.tick_hz, rig.stim_step)
    plan = settings.plan
    # Zero the rig's counters and drop anything left over from an earlier run; the
    # host's link counters start with them, the pulse index from 0 (Rig.clear).
    rig.prepare(settings, regs, plan, drop_streams=True,
                EDGE_EN=settings.edge_enable)
    rig.enable_streams(settings.raw_events, settings.truth)

    # One record per pulse on a latency channel; an interval channel has one per start
    # edge, which only the rig's LAT_RECORDS tells at the end.
    expected = regs["count"] * len(plan)
    meta = capture_meta(rig, settings, regs, "records", plan)
    bar = Progress(expected, f"capture {settings.target} @ {settings.freq:g} Hz", progress)
    run = CaptureRun(rig, path, meta, bar)
    records = RecordDrain(rig, run.writer, on_block)

    def salvage(status):
        # each step on its own: a lost link fails the first, the rest still count
        with contextlib.suppress(Exception):
            rig.receive(wait=0.2)
        with contextlib.suppress(Exception):
            records.flush(notify=False)
        # The loss counters as far as they can be had: the rig's too while the link
        # answers, the host's own when it does not.
        out = {"records": records.latency, "expected_records": expected,
               "link": rig.host_counters()}
        try:
            out["link"] = rig.loss_counters(plan)[0]
        except Exception:
            pass
        return out

    run.salvage = salvage
    with run:
        rig.run(stim1=regs["stim1_offset"] is not None)
        records.collect(regs["timeout"], settings.raw_events, bar)
        records.flush()
        counters, pulses_issued = rig.loss_counters(plan)
        heartbeat = rig.heartbeat_edges()
        if plan.has_intervals:
            expected = rig.latency_records()
        rig.disable_streams()
        # Complete: every record the rig made arrived, and every pulse was ended.
        whole = records.latency >= expected and not counters["unended"]
        run.finish({"status": "complete" if whole else "incomplete",
                    "records": records.latency, "expected_records": expected,
                    "pulses_issued": pulses_issued, "heartbeat_edges": heartbeat,
                    "link": counters})
    cap = load(path)
    return CaptureResult(Path(path), capture_summary(cap), counters, meta, run.final)


def measure(rig, settings, path, mode="auto", bin_shift=None, progress=True, log=None):
    """One capture in ``mode``: ``records`` (:func:`run_capture`), ``statistics``
    (:func:`rtrig.host.procedures.stats.run_stats_capture`, with ``bin_shift``) or ``auto``
    (records when the link carries every record, :func:`~rtrig.host.procedures.stats.choose_mode`).
    ``log`` is told the mode auto chose. Returns the capture's result; on the SoC twin,
    a firmware that ended or never answered is an error once the file is written
    (:func:`rtrig.host.sim.console.check_soc_run`)."""
    from .stats import choose_mode, run_stats_capture
    if mode not in ("auto", "records", "statistics"):
        raise UsageError(f"unknown mode '{mode}'", hint="auto, records or statistics")
    if mode == "auto":
        regs = settings.ticks(rig.tick_hz, rig.stim_step)
        mode = choose_mode(settings.freq, settings.channels, rig.info["baud"],
                           settings.raw_events, count=regs["count"],
                           on_chip=rig.has_statistics())
        if log is not None:
            log(f"mode: {mode} (auto, from {settings.freq:g} Hz and the link at "
                f"{rig.info['baud']} baud)")
    if mode == "statistics":
        if (settings.raw_events or settings.truth) and log is not None:
            log("warning: raw events and truth records are not recorded in statistics "
                "mode (use --mode records at a lower rate)")
        res = run_stats_capture(rig, settings, path, bin_shift=bin_shift, progress=progress)
    else:
        res = run_capture(rig, settings, path, progress=progress)
    check_soc_run(rig, res.summary)
    return res
