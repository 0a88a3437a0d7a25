# SPDX-License-Identifier: BSD-2-Clause
"""Frequency sweep: MF-ISR, MF-APP and SF between two frequencies (docs/sweep.md).

MF (max frequency) of a channel is the lowest stimulus frequency at which the
channel misses a pulse; SF (saturation frequency) the lowest at which the target's
LOAD task no longer runs (load progress below a threshold). Each is found by
:func:`rtrig.host.procedures.search.search_threshold` over measurement steps made here.
``docs/sweep.md`` explains the choices (pulse counts, stimulus jitter, how load
progress is measured).

:func:`run_sweep` drives a rig (real or the simulation twin) and writes every
measured step as a ``STEP`` chunk of a sweep capture, so an interrupted sweep keeps
its curve.
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ...capture import load
from ...channels import (
    CHANNEL_HELP,
    SWEEP_NAMES,
    ChannelPlan,
    is_interval,
    mf_key,
    sweep_figure_keys,
    sweep_figure_name,
)
from ...errors import LinkError, UsageError
from ...protocol import Reg
from ...units import format_hz
from ..rig.rig import POLL_S, register_max
from ..rig.run import CaptureRun, now, rig_meta
from ..sim.console import check_soc_run
from .beat import CONFIRM_FACTOR, step_pulses, target_tick
from .search import Threshold, search_threshold
from .settings import CaptureSettings
from .twins import Cancelled, run_parallel

__all__ = ["SweepSettings", "SweepResult", "Threshold", "search_threshold", "run_sweep",
           "default_pulses", "FIGURES"]

#: Figure name → what it is, for tables and reasons. A sweep of an interval channel
#: adds that channel's MF (``mf_stim0+..marker0+_hz``, :func:`rtrig.channels.mf_key`).
FIGURES = SWEEP_NAMES

#: The host link's loss counters a sweep step records (:meth:`Rig.host_counters`).
_HOST_COUNTERS = ("crc_errors", "lost_packets", "bad_payloads", "duplicates", "setup_lost")

#: Records the rig's latency FIFO holds (gateware ``fifo_depth``, less a margin):
#: a step that produces records faster than the link drains them must fit in it.
_FIFO_RECORDS = 480


def default_pulses(detect=0.01, margin=2.0):
    """Pulses per MF step so that a miss ``detect`` (relative) above MF shows.

    Below the critical period T_c (one pulse's worth of CPU work) the backlog grows by
    T_c − T per pulse and the first pulse is lost once it exceeds one period, after
    about T/(T_c − T) ≈ 1/detect pulses. ``margin`` covers the start-up transient and
    the pending latch/queued event that absorb the first period of backlog.
    """
    return int(math.ceil(margin / detect))


@dataclass
class SweepSettings:
    """What to sweep. Frequencies in Hz, times in seconds.

    ``pulses`` per MF step (None: :func:`default_pulses`); ``resolution`` is the
    relative width of the final bracket; ``factor`` the geometric bracketing step;
    ``stim_jitter`` extra random delay per period (None: automatic, see
    docs/sweep.md); ``sf_threshold`` the load progress below which LOAD counts as
    starved. SF is sought only with ``load``. ``channels``: ``isr``, ``app`` and any
    interval channels (``stim0+..marker0+``), each swept on its own for its MF (a miss:
    a start edge whose end edge has not come when the next start comes).
    ``early_end``: a step ends as soon as its verdict is known (the first miss of an MF
    step; an SF step's heartbeats past what the threshold needs), so the missed
    fraction and load progress it records cover the pulses it ran; False runs every
    pulse of every step.
    """
    f_from: float
    f_to: float
    target: str = "external"
    model: dict | None = None
    preset: str | None = None
    load: bool = False
    sf_threshold: float = 0.01
    resolution: float = 0.005
    pulses: int | None = None
    factor: float = 2.0
    stim_jitter: float | None = None
    confirm: bool = True
    channels: tuple = ("isr", "app")
    min_heartbeats: int = 2000
    early_end: bool = True
    tick: float | None = None
    phase_gap: float = 0.02
    max_pulses: int | None = None

    def validate(self, tick_hz=None, step=1):
        """Check the settings (raises UsageError); returns ``self``. With the rig's
        ``tick_hz`` (and ``STIM_STEP``) also that the steps at both ends of the range
        fit the rig's registers, before the first step runs."""
        for name in ("f_from", "f_to"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise UsageError(f"--{name[2:]} must be a positive frequency, got {v!r}",
                                 hint="e.g. --from 10k --to 200k")
        if self.f_from >= self.f_to:
            raise UsageError(f"--from ({format_hz(self.f_from)}) must be below --to "
                             f"({format_hz(self.f_to)})")
        if not 0 < self.resolution < 0.5:
            raise UsageError(f"resolution must be between 0 and 50 %, got {self.resolution:g}",
                             hint="e.g. --resolution 0.5%")
        if not (self.factor > 1 + self.resolution and math.isfinite(self.factor)):
            raise UsageError(f"bracketing factor must be above 1 + resolution, got {self.factor:g}")
        if not 0 < self.sf_threshold < 1:
            raise UsageError(f"--sf-threshold must be between 0 and 1, got {self.sf_threshold:g}")
        if self.pulses is not None and self.pulses < 2:
            raise UsageError(f"--pulses must be at least 2, got {self.pulses}")
        if self.pulses is not None and self.pulses > register_max(Reg.STIM_COUNT):
            raise UsageError(f"--pulses {self.pulses} is more than the rig counts: at most "
                             f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)")
        if self.tick is not None and not (self.tick >= 0 and math.isfinite(self.tick)):
            raise UsageError("--tick must be a finite duration of 0 (no tick) or more")
        if not 0 < self.phase_gap < 0.5:
            raise UsageError(f"phase gap must be between 0 and 50 %, got {self.phase_gap:g}")
        if not self.n_pulses <= self.step_cap <= register_max(Reg.STIM_COUNT):
            raise UsageError(f"--max-pulses must be between the pulses per step "
                             f"({self.n_pulses}) and {register_max(Reg.STIM_COUNT)}, "
                             f"got {self.max_pulses}")
        if self.stim_jitter is not None and not (self.stim_jitter >= 0 and
                                                 math.isfinite(self.stim_jitter)):
            raise UsageError("stimulus jitter must be a finite duration of 0 or more")
        for ch in self.channels:
            ChannelPlan.of((ch,))               # each step times one channel
            if self.channels.count(ch) > 1:
                raise UsageError(f"channel '{ch}' is named twice")
        if not self.channels and not self.load:
            raise UsageError("no channel to sweep and no --load: nothing to find",
                             hint=CHANNEL_HELP)
        if tick_hz is not None:
            # The slowest step (longest period, plus jitter) and the fastest.
            for option, f in (("--from", self.f_from), ("--to", self.f_to)):
                probe = CaptureSettings(freq=f, count=self.n_pulses,
                                        jitter=self.stim_jitter or 0.0,
                                        channels=tuple(self.channels[:1]) or ("isr",),
                                        target=self.target, model=self.model)
                try:
                    probe.ticks(tick_hz, step)
                except UsageError as e:
                    raise UsageError(f"{option} {format_hz(f)}: {e}", hint=e.hint) from None
        return self

    @property
    def n_pulses(self):
        return self.pulses if self.pulses is not None else default_pulses()

    @property
    def step_cap(self):
        """Most pulses an MF step sends (``max_pulses``; None: 20000, or ``pulses`` if
        more)."""
        return self.max_pulses if self.max_pulses is not None else max(20_000, self.n_pulses)


# --- measurements on a rig ---------------------------------------------------------

@dataclass
class SweepResult:
    path: Path
    figures: dict              # mf_isr_hz, mf_app_hz, sf_hz → Threshold
    reasons: dict
    steps: list
    meta: dict
    final: dict = field(default_factory=dict)

    def value(self, name):
        t = self.figures.get(name)
        return None if t is None else t.hz

    def to_json(self):
        out = {name: self.value(name) for name in self.figures}
        out["reasons"] = {k: v for k, v in self.reasons.items() if v}
        out["below_hz"] = {k: (t.below_hz if t else None) for k, t in self.figures.items()}
        out["confirmed"] = {k: (t.confirmed if t else None) for k, t in self.figures.items()}
        out["steps"] = self.steps
        out["unloaded_heartbeat_hz"] = self.final.get("unloaded_heartbeat_hz")
        out["pulses_per_step"] = self.meta["sweep"]["pulses"]
        out["capture"] = str(self.path)
        out["status"] = self.final.get("status")
        out["link"] = self.final.get("link")
        out["wall_s"] = self.final.get("wall_s")
        return out


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


class _Record:
    """The steps of a sweep as its searches take them: written to the capture
    (``writer``), logged, their link counters summed (``link_totals``)."""

    def __init__(self, writer, log, twins=1):
        self.w = writer
        self.log = log
        self.twins = twins
        self.steps = []
        self.link_totals = {}
        self.t_start = time.monotonic()

    def take(self, result):
        """Record a measured step (``(outcome, record, what)``); returns its outcome."""
        outcome, step, what = result
        for k, v in step["link"].items():
            self.link_totals[k] = self.link_totals.get(k, 0) + v
        step["index"] = len(self.steps)
        self.steps.append(step)
        self.w.json(b"STEP", step)
        el = time.monotonic() - self.t_start
        fig = sweep_figure_name(f"{step['figure']}_hz")
        where = f", {self.twins} twins in parallel" if self.twins > 1 else ""
        self.log(f"step {step['index'] + 1:3d}  {fig:7s} {step['phase']:8s} "
                 f"{format_hz(step['freq_hz']) if step['freq_hz'] else 'no stimulus':>12}: "
                 f"{what}  [{el:.1f} s{where}]")
        return outcome

    @property
    def unloaded_rate(self):
        """The unloaded heartbeat rate (edges per second), once measured."""
        for s in self.steps:
            if s.get("phase") == "unloaded":
                return s["heartbeat_hz"]
        return None


def _chains(st, quantize, app_on):
    """The sweep's searches as chains (:mod:`rtrig.host.procedures.twins`): each asks
    for its :class:`Step`\\ s and writes its figures to ``out`` (name → (Threshold or
    None, reason)) as it finds them. MF-APP then MF-ISR (a lost pulse misses its APP
    job too, so where APP misses nothing ISR misses nothing either: the ISR search
    starts there); each interval channel (its own edges decide its misses: nothing
    above bounds it); the unloaded rate then SF."""
    def search(ask, channel, figure, known=None):
        missed_at = {}                  # frequency → whether its last step missed

        def measure(f, phase):
            again = phase == "confirm" and missed_at.get(f, False)
            missed_at[f] = ask(Step("mf", f, phase, figure, channel, again))
            return missed_at[f]
        return search_threshold(
            measure, st.f_from, st.f_to, resolution=st.resolution, factor=st.factor,
            quantize=quantize, known_clear=known, confirm=st.confirm,
            what=f"{channel if is_interval(channel) else channel.upper()} miss")

    def mf_chain(ask, out):
        known = None
        if "app" in st.channels and app_on:
            t = search(ask, "app", "mf_app")
            out["mf_app_hz"] = (t, t.reason)
            known = t.below_hz
        elif "app" not in st.channels:
            out["mf_app_hz"] = (None, "APP channel not swept")
        else:
            out["mf_app_hz"] = (None, "the model's APP thread is disabled (app=0)")
        if "isr" in st.channels:
            t = search(ask, "isr", "mf_isr", known)
            out["mf_isr_hz"] = (t, t.reason)
        else:
            out["mf_isr_hz"] = (None, "ISR channel not swept")

    def interval_chain(ch):
        def chain(ask, out):
            key = mf_key(ch)
            t = search(ask, ch, key.removesuffix("_hz"))
            out[key] = (t, t.reason)
        return chain

    def sf_chain(ask, out):
        if not st.load:
            out["sf_hz"] = (None, "no --load: SF needs the target's load task running")
            return
        unloaded = ask(Step("unloaded", 0.0, "unloaded", "sf"))
        if unloaded[0] == 0:
            out["sf_hz"] = (None, "no heartbeat with load on and no stimulus: LOAD never runs")
            return
        t = search_threshold(
            lambda f, phase: ask(Step("sf", f, phase, "sf", unloaded=unloaded)),
            st.f_from, st.f_to, resolution=st.resolution, factor=st.factor,
            quantize=quantize, confirm=st.confirm,
            what=f"load progress below {st.sf_threshold:g}")
        out["sf_hz"] = (t, t.reason)

    return [mf_chain, *(interval_chain(ch) for ch in st.channels if is_interval(ch)),
            sf_chain]


def _meta(session, st, sw, twins):
    return {
        **rig_meta(session), "kind": "sweep",
        "target": {"kind": st.target, "model": st.model, "preset": st.preset},
        "load": st.load, "mode": "records",
        "sweep": {"from_hz": st.f_from, "to_hz": st.f_to, "resolution": st.resolution,
                  "factor": st.factor, "pulses": st.n_pulses,
                  "sf_threshold": st.sf_threshold, "confirm": st.confirm,
                  "early_end": st.early_end, "stim_jitter_s": st.stim_jitter,
                  "channels": list(st.channels),
                  "stim_jitter": list(sw.stim_jitter_ticks),
                  "tick_ticks": sw.target_tick, "phase_gap": st.phase_gap,
                  "max_pulses": st.step_cap, "twins": twins},
        "start_time": now(),
    }


def run_sweep(session, settings, path, log=None, twins=()):
    """Find MF-ISR, MF-APP and (with ``settings.load``) SF; returns a
    :class:`SweepResult`. Every step is written to the sweep capture at ``path`` as
    it is measured; on KeyboardInterrupt or a link failure the capture is closed with
    status ``interrupted`` / ``link lost`` and the exception propagates.

    ``twins``: further open rigs of the same gateware (simulation twins) to measure
    steps on at once with ``session`` (:mod:`rtrig.host.procedures.twins`): each search
    records the same steps as on ``session`` alone, in its order."""
    st = settings.validate()
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if st.target == "model" and st.model is None:
        from ..model.common import ModelParams
        st.model = asdict(ModelParams())
    app_on = st.target != "model" or bool((st.model or {}).get("app", True))
    rigs = [session, *twins]
    if any((r.tick_hz, r.stim_step, r.info.get("build_hash")) !=
           (session.tick_hz, session.stim_step, session.info.get("build_hash")) for r in twins):
        raise UsageError("the twins of a sweep must all run the same gateware")
    sweepers = [_Sweeper(r, st, log) for r in rigs]
    sw = sweepers[0]
    meta = _meta(session, st, sw, len(rigs))
    chains = _chains(st, sw.quantize, app_on)
    found = {}                  # figure → (Threshold or None, reason), as found
    run = CaptureRun(session, path, meta, salvage=lambda status: _final(rec, found, status))
    rec = _Record(run.writer, log, len(rigs))
    if len(rigs) > 1:
        log(f"sweep: {len(rigs)} twins in parallel, one step each; a search's steps "
            "are recorded in its own order")
    try:
        with run:
            if len(rigs) == 1:
                for chain in chains:
                    chain(lambda step: rec.take(sw.do(step)), found)
            else:
                run_parallel(chains, sweepers, rec.take, found)
            run.finish(_final(rec, found, "complete"))
    finally:
        for s in sweepers:
            s.tmp.cleanup()
    for r in rigs:
        check_soc_run(r)        # an SoC firmware that ended (SIM_EXIT) is an error
    names = sweep_figure_keys(st.channels)
    figures = {name: found.get(name, (None, None))[0] for name in names}
    reasons = {name: found.get(name, (None, None))[1] for name in names}
    return SweepResult(Path(path), figures, reasons, rec.steps, meta, run.final)


def _final(rec, found, status):
    figures = {name: t for name, (t, _) in found.items()}
    return {
        "status": status, "end_time": now(),
        "wall_s": round(time.monotonic() - rec.t_start, 2),
        **{name: (t.hz if t else None) for name, t in figures.items()},
        "reasons": {k: r for k, (_, r) in found.items() if r},
        "figures": {k: (t.to_json() if t else None) for k, t in figures.items()},
        "steps": len(rec.steps),
        "pulses_simulated": int(sum(s.get("pulses", 0) for s in rec.steps)),
        "pulses_saved": int(sum(s.get("pulses_saved", 0) for s in rec.steps)),
        "link": dict(rec.link_totals),
        "unloaded_heartbeat_hz": rec.unloaded_rate,
    }


def curve(steps):
    """The measured curve as numpy arrays sorted by frequency (stimulus steps only):
    ``freq_hz``, ``isr_missed``, ``app_missed``, ``load_progress`` (NaN where a step
    did not measure that quantity)."""
    pts = sorted((s for s in steps if s.get("freq_hz")), key=lambda s: s["freq_hz"])
    out = {"freq_hz": np.array([s["freq_hz"] for s in pts], dtype=float)}
    for k in ("isr_missed", "app_missed", "load_progress"):
        out[k] = np.array([np.nan if s.get(k) is None else s[k] for s in pts], dtype=float)
    return out
