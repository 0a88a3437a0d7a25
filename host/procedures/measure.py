# SPDX-License-Identifier: BSD-2-Clause
"""Records mode: every pulse's latency record streamed over the link into a capture.

:func:`run_capture` is the procedure the CLI's ``capture`` runs (and selftest, and a
sweep step on a rig without on-chip statistics); a notebook can call it directly on
a :class:`~rtrig.host.rig.rig.Rig` from :func:`~rtrig.host.rig.connect.open_rig`.
"""

import contextlib
import time
from pathlib import Path

from ...capture import load
from ...errors import UsageError
from ..analysis import capture_summary
from ..rig.connect import open_rig
from ..rig.rig import DRAIN_TICKS
from ..rig.run import CaptureResult, CaptureRun, Progress, capture_meta
from ..sim.console import check_soc_run
from .settings import CaptureSettings

__all__ = ["run_capture", "measure", "CaptureResult", "CaptureSettings", "open_rig"]

#: Seconds between checks of the stimulus and the record counters while a capture runs
#: (one to three register reads: ~1 ms on the simulation twin, less on a rig).
_CHECK_S = 0.05
#: After the counters agree, the link must have been quiet this long (truth records,
#: which no counter counts, arrive by then) before the capture ends.
_QUIET_S = 0.1
#: Seconds between writes of the records received to the file (and at most
#: :data:`_FLUSH_RECORDS` records held in memory in between).
_FLUSH_S = 0.5
_FLUSH_RECORDS = 20_000
#: Raw-event edges enabled with ``raw_events``: the six inputs, both edges, and the
#: stimulus output (``EDGE_EN``, docs/protocol.md).
_ALL_EDGES = 0x3F | 0x3F << 8 | 1 << 16


class _Records:
    """The records of one run on their way from the rig to the capture file."""

    def __init__(self, rig, writer, on_block=None):
        self.rig, self.writer, self.on_block = rig, writer, on_block
        self.latency = 0
        self.events = 0

    def flush(self, notify=True):
        rig = self.rig
        lat = rig.take_latency()
        self.latency += len(lat)
        self.writer.array(b"LATR", lat)
        ev = rig.take_events()
        self.events += len(ev)
        self.writer.array(b"EVNT", ev)
        self.writer.array(b"TRTH", rig.take_truth())
        if notify and self.on_block is not None:
            self.on_block(self.latency)

    def drained(self, raw_events):
        """Has every record the rig produced reached the host (or been counted lost)?"""
        return self.rig.all_records_in(self.latency, self.events if raw_events else None)


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
                EDGE_EN=_ALL_EDGES if settings.raw_events else 0)
    rig.enable_streams(settings.raw_events, settings.truth)

    # One record per pulse on a latency channel; an interval channel has one per start
    # edge, which only the rig's LAT_RECORDS tells at the end.
    expected = regs["count"] * len(plan)
    meta = capture_meta(rig, settings, regs, "records", plan)
    bar = Progress(expected, f"capture {settings.target} @ {settings.freq:g} Hz", progress)
    run = CaptureRun(rig, path, meta, bar)
    records = _Records(rig, run.writer, on_block)

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
        _collect(rig, records, regs, settings.raw_events, bar)
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


def _collect(rig, records, regs, raw_events, bar):
    """Take records from the link until the pulse train has ended, every window has
    closed, every record is in (or counted lost) and the link has gone quiet."""
    last_flush = time.monotonic()
    last_check = 0.0
    stim_done_at = None
    quiet_since = None
    edges_off = False
    while True:
        got = rig.receive(wait=0.05)
        t = time.monotonic()
        pending = rig.latency_pending()
        if t - last_flush > _FLUSH_S or pending > _FLUSH_RECORDS:
            records.flush()
            last_flush = t
            pending = 0
        bar.update(records.latency + pending)
        quiet_since = None if got else (quiet_since or t)
        if t - last_check <= _CHECK_S:
            continue
        last_check = t
        if stim_done_at is None:
            if not rig.running():
                stim_done_at = rig.time()
            continue
        # Every window has closed once the rig's clock has passed the last pulse by the
        # timeout; then everything the rig produced must have arrived and the link gone
        # quiet (the twin may run slower than real time, so "quiet" is judged after the
        # counts agree).
        if rig.time() <= stim_done_at + regs["timeout"] + DRAIN_TICKS:
            continue
        if raw_events and not edges_off:
            # A target that keeps toggling its markers (a tick traced on them) would
            # never let the event count settle: the run's raw events end with its
            # last window.
            rig.record_edges(0)
            edges_off = True
            continue
        if records.drained(raw_events):
            if quiet_since is not None and t - quiet_since > _QUIET_S:
                return
        elif quiet_since is not None and t - quiet_since > 5.0:
            return          # the rest is lost: counted by loss_counters, not waited for


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
                           settings.raw_events, count=regs["count"])
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
