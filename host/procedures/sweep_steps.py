# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's steps, measured on one rig (docs/sweep.md).

A :class:`Step` is what a sweep's search asks for: missed pulses on one channel at one
frequency (an MF step), the heartbeat rate without stimulus, or the load progress at
one frequency (an SF step). :class:`_Sweeper` measures steps on one rig (real, or one of
the parallel simulation twins): it turns a frequency into whole stimulus periods,
chooses the pulses and the stimulus jitter of a step, and returns each step's outcome
with the record a sweep capture keeps of it.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...capture import load
from ...channels import ChannelPlan
from ...errors import LinkError
from ...protocol import Reg
from ..rig.rig import POLL_S, register_max
from .beat import CONFIRM_FACTOR, step_pulses, target_tick
from .settings import CaptureSettings
from .twins import Cancelled

__all__ = ["Step"]

#: The host link's loss counters a sweep step records (:meth:`Rig.host_counters`).
_HOST_COUNTERS = ("crc_errors", "lost_packets", "bad_payloads", "duplicates", "setup_lost")

#: Records the rig's latency FIFO holds (gateware ``fifo_depth``, less a margin):
#: a step that produces records faster than the link drains them must fit in it.
_FIFO_RECORDS = 480


def _polls(first=POLL_S / 8):
    """The waits between a step's polls of the rig: doubling from ``first`` up to
    ``POLL_S``, so a short step (most of a sweep's: a miss ends one early) is seen to
    end soon after it does, and a long one is polled no more often than any run."""
    wait = first
    while True:
        yield wait
        wait = min(2 * wait, POLL_S)


@dataclass(frozen=True)
class Step:
    """A step a sweep's search asks for: ``kind`` ``mf`` (missed pulses on ``channel``
    at ``freq``), ``unloaded`` (the heartbeat rate without stimulus) or ``sf`` (load
    progress at ``freq``, against ``unloaded``: the rate and window that step found).
    ``again``: an MF confirmation where the last step at ``freq`` missed (it looks for
    a miss for longer, docs/sweep.md)."""
    kind: str
    freq: float
    phase: str
    figure: str
    channel: str | None = None
    again: bool = False
    unloaded: tuple | None = None

    @property
    def outcomes(self):
        """The outcomes a step may have, the clean one first (None: a value)."""
        return None if self.kind == "unloaded" else (False, True)


class _Sweeper:
    """The steps of a sweep measured on one rig (one of the parallel twins)."""

    def __init__(self, session, st, log):
        self.s = session
        self.st = st
        self.log = log
        self.tick_hz = session.tick_hz
        # Ticks per stimulus step (STIM_STEP): a rig with several samples per clock
        # makes periods and jitters of whole steps only.
        self.stim_step = session.stim_step
        self.tmp = tempfile.TemporaryDirectory(prefix="rtrig-sweep-")
        self.stim_jitter_ticks = self._auto_jitter()
        self.target_tick = target_tick(st.tick, st.target, st.model, self.tick_hz)
        self.on_chip = self._has_statistics()
        #: Has the step been given up (a step measured ahead on a parallel twin that
        #: no search needs any more, rtrig.host.procedures.twins)? Polled while it runs.
        self.cancelled = lambda: False

    def _has_statistics(self):
        """Does this rig's gateware keep on-chip statistics?"""
        try:
            return self.s.has_statistics()
        except LinkError:
            return False

    def _check_cancelled(self):
        if self.cancelled():
            raise Cancelled()

    def do(self, step):
        """Measure ``step`` (a :class:`Step`): ``(outcome, record, what)``, the record
        with this rig's link counters of the step."""
        if step.kind == "mf":
            return self.measure_missed(step.freq, step.channel, step.phase, step.figure,
                                       step.again)
        if step.kind == "unloaded":
            return self.measure_unloaded()
        return self.measure_progress(step.freq, step.phase, step.unloaded)

    # frequency ↔ period ----------------------------------------------------------
    def quantize(self, f):
        return self.tick_hz / self.period(f)

    def period(self, f):
        """The stimulus period nearest ``1/f``, in ticks: a whole number of stimulus
        steps, so the frequency recorded is the one made."""
        s = self.stim_step
        return max(4, s * round(self.tick_hz / f / s))

    def _auto_jitter(self):
        st = self.st
        if st.stim_jitter is not None:
            return ("abs", round(st.stim_jitter * self.tick_hz))
        if st.target == "model":
            tp = int((st.model or {}).get("tick_period", 0) or 0)
            if not tp:
                return ("abs", 0)       # no periodic activity to lock onto
            ts = max(1, int((st.model or {}).get("tick_service", 1) or 1))
            return ("tick", 2 * ts)     # ≤ 1 % of the period, see jitter_ticks()
        return ("rel", 0.005)           # unknown target: assume a kernel tick

    def jitter_ticks(self, period):
        """The stimulus jitter of a step of ``period`` ticks; the automatic ones in
        whole stimulus steps (a given ``--stim-jitter`` that is not was refused)."""
        kind, v = self.stim_jitter_ticks
        if kind == "abs":
            return v
        if kind == "tick":
            j = min(v, period // 100)
        else:
            j = int(period * v)
        return j - j % self.stim_step

    # one MF step on one channel ---------------------------------------------------
    def measure_missed(self, f, channel, phase, figure, again=False):
        """One MF step: ``(missed, record, what)``. ``again``: a confirmation where the
        last step at ``f`` missed, which looks for a miss for longer."""
        st = self.st
        T = self.period(f)
        J = self.jitter_ticks(T)
        # Enough pulses for the target's tick to meet every phase of the train
        # (rtrig.host.procedures.beat; docs/sweep.md, "Pulses per step").
        max_n = st.step_cap if self.on_chip else max(st.n_pulses, _FIFO_RECORDS)
        n, cover = step_pulses(T, self.target_tick, st.n_pulses, st.phase_gap, max_n, J)
        if self.target_tick and phase == "confirm" and again:
            # A miss was seen here: look for one again, for up to CONFIRM_FACTOR caps.
            n = max(n, min(CONFIRM_FACTOR * max_n, register_max(Reg.STIM_COUNT)))
        settings = CaptureSettings(
            freq=self.tick_hz / T, count=n, jitter=J / self.tick_hz, channels=(channel,),
            target=st.target, model=st.model, preset=st.preset, load=st.load,
            description=f"sweep step ({figure}, {phase})")
        t0 = time.monotonic()
        step_link = None
        if self.on_chip:
            # On-chip statistics: only the counts cross the link, so a step costs the
            # pulses' own time, not the link time of one record per pulse.
            got, missed, overflow, status, issued = self._count_misses(settings, channel)
        else:
            # (analysis imports scipy: only a rig without on-chip statistics needs it)
            from ..analysis import missed_mask
            from .measure import run_capture
            path = Path(self.tmp.name) / f"step-{time.monotonic_ns()}.rtrig"
            res = run_capture(self.s, settings, path, progress=False)
            rec = load(path).latency
            path.unlink(missing_ok=True)
            missed = int(missed_mask(rec).sum())
            got, issued = len(rec), n
            overflow = res.link.get("lat_overflow", res.link.get("overflows", 0))
            status = res.final.get("status")
            step_link = res.link            # the capture's own accounting (run_capture)
        frac = missed / got if got else None
        step = {"freq_hz": self.tick_hz / T, "mean_freq_hz": self.tick_hz / (T + J / 2),
                "period_ticks": T, "jitter_ticks": J, "pulses": issued, "records": got,
                "isr_missed": None, "app_missed": None, "load_progress": None,
                "missed": missed, "channel": channel, "figure": figure, "phase": phase,
                "overflow": overflow,
                "mode": "statistics" if self.on_chip else "records",
                "status": status, "pulses_saved": n - issued,
                "link": self._link(step_link, overflow), "cover_ticks": cover,
                "wall_s": round(time.monotonic() - t0, 3)}
        step[f"{channel}_missed"] = frac
        ended = f" (ended after {issued} of {n} pulses)" if issued < n else ""
        what = f"{channel} {missed}/{got} missed{ended}"
        if got < issued and missed == 0:
            # Lost records could have been misses: do not call the step clean.
            what += (f"; warning: {issued - got} of {issued} records lost (FIFO "
                     "overflow), the step counted as missing")
        return missed > 0 or got < issued, step, what

    def _count_misses(self, settings, channel):
        """One MF step in on-chip statistics mode, reading only the counts its verdict
        needs (no histogram). The first miss decides the step, so the stimulus is
        stopped as soon as one is counted (the rest of the pulses are saved); a step
        without a miss runs every pulse. Returns ``(records, missed, drops, status,
        pulses issued)``."""
        from .stats import program_statistics
        rig = self.s
        plan = settings.plan
        number = plan.number(channel)
        regs = program_statistics(rig, settings, plan, hb_window=0)[0]
        status = "complete"
        try:
            rig.run()
            for wait in _polls():
                time.sleep(wait)
                self._check_cancelled()
                if self.st.early_end and rig.read_stat_counts(number, ("missed",))["missed"]:
                    rig.halt()
                    status = "ended early"
                    break
                if not rig.running():
                    break
            issued = rig.pulses_issued()
            # Every issued pulse has its verdict once its window has closed.
            rig.wait_windows_closed(regs)
            c = rig.read_stat_counts(number, ("answered", "missed", "drops"))
        finally:
            with contextlib.suppress(LinkError):
                rig.stop(statistics=True)
        got = c["answered"] + c["missed"]
        if got + c["drops"] < issued and status == "complete":
            status = "incomplete"
        return got, c["missed"], c["drops"], status, issued

    def _link(self, counts, overflow=0):
        """A step's link counters: those of its capture (``counts``), or the host's,
        which restart at every step's CLEAR, with the rig's ``overflow``."""
        if counts is None:
            counts = self.s.host_counters()
            counts["overflows"] = overflow or 0
        return {k: counts.get(k, 0) for k in (*_HOST_COUNTERS, "overflows")}

    # load progress ---------------------------------------------------------------
    def _heartbeat_rate(self, f, window, enough=None):
        """Heartbeat edges per tick with LOAD on and, if ``f``, the stimulus running,
        over ``window`` ticks, or fewer once ``enough`` edges have been counted."""
        rig = self.s
        st = self.st
        T = self.period(f) if f else 1000
        settings = CaptureSettings(freq=self.tick_hz / T, count=1, target=st.target,
                                   model=st.model, preset=st.preset, load=True)
        regs = settings.ticks(self.tick_hz, rig.stim_step)
        # A continuous pulse train (count 0) matched on no channel: only the heartbeat
        # counter matters.
        regs = {**regs, "period": T, "count": 0, "jitter": 0, "stim1_offset": None}
        rig.prepare(settings, regs, ChannelPlan())
        try:
            if f:
                rig.run()
            # Let LOAD and the stimulus reach their steady state first.
            settle = max(20 * T, self.tick_hz // 2000)
            rig.wait_until(rig.time() + settle)
            hb1 = rig.heartbeat_edges()
            t1 = rig.time()
            for wait in _polls():
                time.sleep(wait)
                self._check_cancelled()
                hb2 = rig.heartbeat_edges()
                t2 = rig.time()
                if t2 >= t1 + window or (enough is not None and hb2 - hb1 >= enough):
                    break
        finally:
            with contextlib.suppress(LinkError):
                rig.halt()
        return (hb2 - hb1) / (t2 - t1), hb2 - hb1, t2 - t1

    def measure_unloaded(self):
        """The heartbeat rate with LOAD on and no stimulus, and the SF window, long
        enough for at least ``min_heartbeats`` unloaded edges: ``((rate, window),
        record, what)``."""
        window = self.tick_hz // 1000          # 1 ms, extended below if needed
        for _ in range(4):
            rate, edges, span = self._heartbeat_rate(None, window)
            if edges >= self.st.min_heartbeats or rate == 0:
                break
            window = int(min(self.tick_hz // 20,
                             1.2 * self.st.min_heartbeats / max(rate, 1e-12)))
        step = {"freq_hz": 0.0, "pulses": 0, "isr_missed": None, "app_missed": None,
                "load_progress": 1.0 if rate else None, "heartbeat_edges": edges,
                "window_ticks": span, "figure": "sf", "phase": "unloaded",
                "heartbeat_hz": rate * self.tick_hz, "link": self._link(None)}
        return ((rate, max(window, span)), step,
                f"unloaded heartbeat {rate * self.tick_hz:.4g} edges/s")

    def measure_progress(self, f, phase, unloaded):
        """One SF step: load progress (heartbeat rate against the unloaded one, of
        ``unloaded`` = (rate, window)) over the SF window: ``(starved, record, what)``.
        Once the window's edges could no longer fall below the threshold
        (``sf_threshold`` × the unloaded edges of a whole window), the verdict "not
        starved" is known and the step ends, given a tenth of ``min_heartbeats`` edges
        for the progress figure it records."""
        unloaded_rate, hb_window = unloaded
        T = self.period(f)
        window = max(hb_window, self.st.n_pulses * T)
        enough = None
        if self.st.early_end:
            enough = max(math.ceil(self.st.sf_threshold * unloaded_rate * window),
                         self.st.min_heartbeats // 10)
        t0 = time.monotonic()
        rate, edges, span = self._heartbeat_rate(f, window, enough)
        progress = rate / unloaded_rate
        step = {"freq_hz": self.tick_hz / T, "period_ticks": T, "jitter_ticks": 0,
                "pulses": int(span // T), "isr_missed": None, "app_missed": None,
                "load_progress": progress, "heartbeat_edges": edges, "window_ticks": span,
                "pulses_saved": max(0, int(window // T) - int(span // T)),
                "figure": "sf", "phase": phase, "link": self._link(None),
                "wall_s": round(time.monotonic() - t0, 3)}
        ended = f" (ended after {span / window:.0%} of the window)" if span < window else ""
        return progress < self.st.sf_threshold, step, f"load progress {progress:.4f}{ended}"

