"""Frequency sweep: MF-ISR, MF-APP and SF between two frequencies (DESIGN §4).

MF (max frequency) of a channel is the lowest stimulus frequency at which the
channel misses a pulse; SF (saturation frequency) the lowest at which the target's
LOAD task no longer runs (load progress below a threshold). Both are thresholds of a
predicate that turns from false to true as the frequency rises, so each is found by
:func:`search_threshold`: bracket upwards in geometric steps, bisect (geometrically)
to a relative resolution, then confirm by measuring again just below and at the
found frequency. ``docs/sweep.md`` explains the choices (pulse counts, stimulus
jitter, how load progress is measured).

:func:`run_sweep` drives a rig session (real or the simulation twin) and writes
every measured step as a ``STEP`` chunk of a sweep capture, so an interrupted sweep
keeps its curve. The search logic itself knows nothing of rigs and is tested against
fake measurement functions.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__
from ..capture import CaptureWriter, load
from ..protocol import ChanFlags, Reg, StimCtrl
from .errors import LinkError, UsageError
from .measure import DRAIN_TICKS, CaptureSettings, configure_target, run_capture
from .units import format_hz

__all__ = ["SweepSettings", "SweepResult", "Threshold", "search_threshold", "run_sweep",
           "default_pulses", "FIGURES"]

#: Figure name → what it is, for tables and reasons.
FIGURES = {"mf_isr_hz": "MF-ISR", "mf_app_hz": "MF-APP", "sf_hz": "SF"}

#: The host link's loss counters a sweep step records (rtrig.host.link.LINK_COUNTERS).
_HOST_COUNTERS = ("crc_errors", "lost_packets", "bad_payloads", "duplicates")
#: Seconds between polls of the rig while a step runs (see ``stats.POLL_S``).
_POLL_S = 0.02

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
    starved. SF is sought only with ``load``. ``early_end``: a step ends as soon as its
    verdict is known (the first miss of an MF step; an SF step's heartbeats past what
    the threshold needs), so the missed fraction and load progress it records cover
    the pulses it ran; False runs every pulse of every step.
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

    def validate(self, tick_hz=None, step=1):
        """Check the settings (raises UsageError); returns ``self``. With the rig's
        ``tick_hz`` (and ``STIM_STEP``) also that the steps at both ends of the range
        fit the rig's registers, before the first step runs."""
        from .measure import register_max
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
        if self.stim_jitter is not None and not (self.stim_jitter >= 0 and
                                                 math.isfinite(self.stim_jitter)):
            raise UsageError("stimulus jitter must be a finite duration of 0 or more")
        for ch in self.channels:
            if ch not in ("isr", "app"):
                raise UsageError(f"unknown channel '{ch}'", hint="channels are: isr, app")
        if not self.channels and not self.load:
            raise UsageError("no channel to sweep and no --load: nothing to find",
                             hint="channels are: isr, app")
        if tick_hz is not None:
            # The slowest step (longest period, plus jitter) and the fastest.
            for option, f in (("--from", self.f_from), ("--to", self.f_to)):
                probe = CaptureSettings(freq=f, count=self.n_pulses,
                                        jitter=self.stim_jitter or 0.0,
                                        channels=self.channels or ("isr",),
                                        target=self.target, model=self.model)
                try:
                    probe.ticks(tick_hz, step)
                except UsageError as e:
                    raise UsageError(f"{option} {format_hz(f)}: {e}", hint=e.hint) from None
        return self

    @property
    def n_pulses(self):
        return self.pulses if self.pulses is not None else default_pulses()


# --- the search, independent of any rig ---------------------------------------------

@dataclass
class Threshold:
    """Result of one search: ``hz`` is the lowest frequency with the event (None if not
    found in the range, then ``reason`` says why); ``below_hz`` the highest frequency
    measured without it; ``confirmed`` whether the re-measurements agreed."""
    hz: float | None
    below_hz: float | None = None
    reason: str | None = None
    confirmed: bool | None = None
    steps: int = 0

    def to_json(self):
        return asdict(self)


def _identity(f):
    return f


def search_threshold(measure, f_from, f_to, *, resolution=0.005, factor=2.0,
                     quantize=_identity, known_clear=None, confirm=True, rounds=3,
                     what="event"):
    """Lowest frequency in [f_from, f_to] at which ``measure`` reports the event.

    ``measure(freq, phase) -> bool`` runs one step (``phase`` is ``"bracket"``,
    ``"bisect"`` or ``"confirm"``); the event is assumed absent below some frequency
    and present above it. ``quantize`` maps a frequency to one the stimulus can make
    (integer-tick periods); the bisection stops early when two such frequencies are
    adjacent. ``known_clear``: a frequency already known free of the event (the
    bracket starts there without measuring it). Returns a :class:`Threshold`.
    """
    steps = 0
    history = {}           # freq → last outcome

    def m(f, phase):
        nonlocal steps
        steps += 1
        r = bool(measure(f, phase))
        history[f] = r
        return r

    lo_lim, hi_lim = quantize(f_from), quantize(f_to)
    if known_clear is not None and lo_lim <= quantize(known_clear) < hi_lim:
        lo = quantize(known_clear)
        history[lo] = False
    else:
        lo = lo_lim
        if m(lo, "bracket"):
            return Threshold(None, None, f"{what} already at {format_hz(lo)} (the low end "
                             "of the range): the threshold is at or below it",
                             steps=steps)
    hi = None
    while hi is None:
        if lo >= hi_lim:
            return Threshold(None, lo, f"no {what} up to {format_hz(hi_lim)}", steps=steps)
        nf = min(quantize(lo * factor), hi_lim)
        if nf <= lo:
            nf = hi_lim
        if m(nf, "bracket"):
            hi = nf
        else:
            lo = nf

    confirmed = None
    for _ in range(rounds):
        while hi / lo > 1 + resolution:
            mid = quantize(math.sqrt(lo * hi))
            if not lo < mid < hi:
                break                   # adjacent stimulus periods: finest possible
            if m(mid, "bisect"):
                hi = mid
            else:
                lo = mid
        if not confirm:
            break
        # Confirm: no event just below, the event at the found frequency.
        if m(lo, "confirm"):
            # The boundary is lower than the bisection believed (a rare worst case
            # seen only now): bisect again below, from the last clear frequency.
            hi = lo
            clear = [f for f, r in history.items() if not r and f < lo]
            if not clear:
                return Threshold(None, None, f"{what} already at {format_hz(lo)} on "
                                 "re-measurement: the threshold is at or below the low "
                                 "end of the range", confirmed=False, steps=steps)
            lo = max(clear)
            confirmed = False
            continue
        confirmed = m(hi, "confirm")
        break
    return Threshold(hi, lo, None, confirmed, steps)


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
        out = {name: self.value(name) for name in FIGURES}
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


def _missed_mask(rec):
    """Missed records: the MISSED flag, or a record with no response times at all (a
    real answer has a latency of at least one tick; some gateware builds deliver
    missed records with the flag byte cleared)."""
    return ((rec["flags"] & ChanFlags.MISSED) != 0) | ((rec["latency"] == 0) &
                                                      (rec["completion"] == 0))


class _Sweeper:
    def __init__(self, session, st, writer, log):
        self.s = session
        self.st = st
        self.w = writer
        self.log = log
        self.tick_hz = session.tick_hz
        self.steps = []
        self.link_totals = {}
        self.t_start = time.monotonic()
        self.tmp = tempfile.TemporaryDirectory(prefix="rtrig-sweep-")
        self.unloaded_rate = None
        self.hb_window = None
        self.stim_jitter_ticks = self._auto_jitter()
        self.on_chip = self._has_statistics()

    def _has_statistics(self):
        """Does this rig's gateware keep on-chip statistics?"""
        try:
            from ..protocol import Reg
            return "STAT_CTRL" in Reg.__members__ and self.s.link.read1(Reg.STAT_INFO) != 0
        except Exception:
            return False

    # frequency ↔ period ----------------------------------------------------------
    def quantize(self, f):
        return self.tick_hz / max(4, round(self.tick_hz / f))

    def period(self, f):
        return max(4, round(self.tick_hz / f))

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
        kind, v = self.stim_jitter_ticks
        if kind == "abs":
            return v
        if kind == "tick":
            return min(v, period // 100)
        return int(period * v)

    # one records-mode capture on one channel ---------------------------------------
    def measure_missed(self, f, channel, phase, figure):
        st = self.st
        T = self.period(f)
        J = self.jitter_ticks(T)
        n = st.n_pulses
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
            path = Path(self.tmp.name) / f"step-{len(self.steps)}.rtrig"
            res = run_capture(self.s, settings, path, progress=False)
            rec = load(path).latency
            path.unlink(missing_ok=True)
            missed = int(_missed_mask(rec).sum())
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
                "status": status, "pulses_saved": n - issued, "link": step_link,
                "wall_s": round(time.monotonic() - t0, 3)}
        step[f"{channel}_missed"] = frac
        ended = f" (ended after {issued} of {n} pulses)" if issued < n else ""
        self._record(step, f"{channel} {missed}/{got} missed{ended}")
        if got < issued and missed == 0:
            # Lost records could have been misses: do not call the step clean.
            self.log(f"warning: {issued - got} of {issued} records lost at "
                     f"{format_hz(step['freq_hz'])} "
                     "(FIFO overflow); counting the step as missing")
            return True
        return missed > 0

    def _count_misses(self, settings, channel):
        """One MF step in on-chip statistics mode, reading only the counts its verdict
        needs (no histogram). The first miss decides the step, so the stimulus is
        stopped as soon as one is counted (the rest of the pulses are saved); a step
        without a miss runs every pulse. Returns ``(records, missed, drops, status,
        pulses issued)``."""
        from .stats import program_statistics, read_counts
        link = self.s.link
        regs = program_statistics(self.s, settings, hb_window=0)[0]
        status = "complete"
        try:
            link.write(Reg.STIM_CTRL, StimCtrl.RUN)
            while True:
                time.sleep(_POLL_S)
                if self.st.early_end and read_counts(link, channel, ("missed",))["missed"]:
                    link.write(Reg.STIM_CTRL, 0)
                    status = "ended early"
                    break
                if (link.read1(Reg.STIM_STATUS) & 1) == 0:
                    break
            issued = link.read1(Reg.STIM_PULSES)
            # Every issued pulse has its verdict once the rig's clock has passed the
            # last one by the response timeout (plus the statistics pipeline).
            self._wait_until(link.time() + regs["timeout"] + DRAIN_TICKS)
            c = read_counts(link, channel, ("answered", "missed", "drops"))
        finally:
            with contextlib.suppress(LinkError):
                link.write(Reg.STIM_CTRL, 0)
                link.write(Reg.STAT_CTRL, 0)
        got = c["answered"] + c["missed"]
        if got + c["drops"] < issued and status == "complete":
            status = "incomplete"
        return got, c["missed"], c["drops"], status, issued

    # load progress ---------------------------------------------------------------
    def _heartbeat_rate(self, f, window, enough=None):
        """Heartbeat edges per tick with LOAD on and, if ``f``, the stimulus running,
        over ``window`` ticks, or fewer once ``enough`` edges have been counted."""
        link = self.s.link
        st = self.st
        T = self.period(f) if f else 1000
        settings = CaptureSettings(freq=self.tick_hz / T, count=1, target=st.target,
                                   model=st.model, preset=st.preset, load=True)
        regs = settings.ticks(self.tick_hz, self.s.stim_step)
        link.write(Reg.STIM_CTRL, 0)
        link.write(Reg.STREAM_EN, 0)
        link.write(Reg.LAT_CH_EN, 0)
        configure_target(link, settings, regs)
        link.configure(STIM_PERIOD=T, STIM_HIGH=regs["high"], STIM_COUNT=0,
                       STIM_JITTER=0, STIM_SEED=1)
        link.write(Reg.CLEAR, 1)
        try:
            if f:
                link.write(Reg.STIM_CTRL, StimCtrl.RUN)
            # Let LOAD and the stimulus reach their steady state first.
            settle = max(20 * T, self.tick_hz // 2000)
            self._wait_until(link.time() + settle)
            hb1 = link.read1(Reg.HB_COUNT)
            t1 = link.time()
            while True:
                time.sleep(_POLL_S)
                hb2 = link.read1(Reg.HB_COUNT)
                t2 = link.time()
                if t2 >= t1 + window or (enough is not None and hb2 - hb1 >= enough):
                    break
        finally:
            with contextlib.suppress(LinkError):
                link.write(Reg.STIM_CTRL, 0)
        return (hb2 - hb1) / (t2 - t1), hb2 - hb1, t2 - t1

    def _wait_until(self, t_rig):
        link = self.s.link
        while link.time() < t_rig:
            time.sleep(_POLL_S)

    def measure_unloaded(self):
        """Heartbeat rate with LOAD on and no stimulus; sets the SF window so that it
        holds at least ``min_heartbeats`` unloaded edges."""
        window = self.tick_hz // 1000          # 1 ms, extended below if needed
        for _ in range(4):
            rate, edges, span = self._heartbeat_rate(None, window)
            if edges >= self.st.min_heartbeats or rate == 0:
                break
            window = int(min(self.tick_hz // 20,
                             1.2 * self.st.min_heartbeats / max(rate, 1e-12)))
        self.unloaded_rate = rate
        self.hb_window = max(window, span)
        step = {"freq_hz": 0.0, "pulses": 0, "isr_missed": None, "app_missed": None,
                "load_progress": 1.0 if rate else None, "heartbeat_edges": edges,
                "window_ticks": span, "figure": "sf", "phase": "unloaded",
                "heartbeat_hz": rate * self.tick_hz}
        self._record(step, f"unloaded heartbeat {rate * self.tick_hz:.4g} edges/s")
        return rate

    def measure_progress(self, f, phase):
        """One SF step: load progress (heartbeat rate against the unloaded one) over
        the SF window. Once the window's edges could no longer fall below the
        threshold (``sf_threshold`` × the unloaded edges of a whole window), the verdict
        "not starved" is known and the step ends, given a tenth of ``min_heartbeats``
        edges for the progress figure it records."""
        T = self.period(f)
        window = max(self.hb_window, self.st.n_pulses * T)
        enough = None
        if self.st.early_end:
            enough = max(math.ceil(self.st.sf_threshold * self.unloaded_rate * window),
                         self.st.min_heartbeats // 10)
        t0 = time.monotonic()
        rate, edges, span = self._heartbeat_rate(f, window, enough)
        progress = rate / self.unloaded_rate
        step = {"freq_hz": self.tick_hz / T, "period_ticks": T, "jitter_ticks": 0,
                "pulses": int(span // T), "isr_missed": None, "app_missed": None,
                "load_progress": progress, "heartbeat_edges": edges, "window_ticks": span,
                "pulses_saved": max(0, int(window // T) - int(span // T)),
                "figure": "sf", "phase": phase, "wall_s": round(time.monotonic() - t0, 3)}
        ended = f" (ended after {span / window:.0%} of the window)" if span < window else ""
        self._record(step, f"load progress {progress:.4f}{ended}")
        return progress < self.st.sf_threshold

    # bookkeeping -----------------------------------------------------------------
    def _record(self, step, what):
        # The host's link counters restart at every step's CLEAR: the step keeps its
        # own, the sweep their totals (SweepResult.final["link"]).
        counts = step.get("link")
        if counts is None:                  # a step without latency records
            link = self.s.link
            counts = {k: getattr(link, k, 0) for k in _HOST_COUNTERS}
            counts["overflows"] = step.get("overflow", 0) or 0
        counts = {k: counts.get(k, 0) for k in (*_HOST_COUNTERS, "overflows")}
        step["link"] = counts
        for k, v in counts.items():
            self.link_totals[k] = self.link_totals.get(k, 0) + v
        step["index"] = len(self.steps)
        self.steps.append(step)
        self.w.json(b"STEP", step)
        el = time.monotonic() - self.t_start
        fig = FIGURES.get(f"{step['figure']}_hz", step["figure"])
        self.log(f"step {step['index'] + 1:3d}  {fig:7s} {step['phase']:8s} "
                 f"{format_hz(step['freq_hz']) if step['freq_hz'] else 'no stimulus':>12}: "
                 f"{what}  [{el:.1f} s]")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def run_sweep(session, settings, path, log=None):
    """Find MF-ISR, MF-APP and (with ``settings.load``) SF; returns a
    :class:`SweepResult`. Every step is written to the sweep capture at ``path`` as
    it is measured; on KeyboardInterrupt or a link failure the capture is closed with
    status ``interrupted`` / ``link lost`` and the exception propagates."""
    st = settings.validate()
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if st.target == "model" and st.model is None:
        from .model_ref import ModelParams
        st.model = asdict(ModelParams())
    app_on = st.target != "model" or bool((st.model or {}).get("app", True))
    tick_hz = session.tick_hz
    meta = {
        "format": "rtrig-capture", "kind": "sweep", "rtrig_version": __version__,
        "gateware_version": session.info["version"],
        "gateware_hash": f"{session.info['build_hash']:08x}",
        "board": session.info["board"], "simulation": session.sim is not None,
        "tick_hz": tick_hz,
        "target": {"kind": st.target, "model": st.model, "preset": st.preset},
        "load": st.load, "mode": "records",
        "sweep": {"from_hz": st.f_from, "to_hz": st.f_to, "resolution": st.resolution,
                  "factor": st.factor, "pulses": st.n_pulses,
                  "sf_threshold": st.sf_threshold, "confirm": st.confirm,
                  "early_end": st.early_end,
                  "stim_jitter_s": st.stim_jitter, "channels": list(st.channels)},
        "start_time": _now(),
    }
    writer = CaptureWriter(path, meta)
    sw = _Sweeper(session, st, writer, log)
    meta["sweep"]["stim_jitter"] = list(sw.stim_jitter_ticks)
    figures = {name: None for name in FIGURES}
    reasons = {name: None for name in FIGURES}
    status = "complete"

    def mf(channel, figure, known_clear=None):
        return search_threshold(
            lambda f, ph: sw.measure_missed(f, channel, ph, figure), st.f_from, st.f_to,
            resolution=st.resolution, factor=st.factor, quantize=sw.quantize,
            known_clear=known_clear, confirm=st.confirm, what=f"{channel.upper()} miss")

    try:
        known = None
        if "app" in st.channels and app_on:
            t = figures["mf_app_hz"] = mf("app", "mf_app")
            reasons["mf_app_hz"] = t.reason
            # A lost pulse misses its APP job too, so where APP misses nothing, ISR
            # misses nothing either: the ISR search starts there.
            known = t.below_hz
        elif "app" not in st.channels:
            reasons["mf_app_hz"] = "APP channel not swept"
        else:
            reasons["mf_app_hz"] = "the model's APP thread is disabled (app=0)"
        if "isr" in st.channels:
            t = figures["mf_isr_hz"] = mf("isr", "mf_isr", known)
            reasons["mf_isr_hz"] = t.reason
        else:
            reasons["mf_isr_hz"] = "ISR channel not swept"
        if not st.load:
            reasons["sf_hz"] = "no --load: SF needs the target's load task running"
        elif sw.measure_unloaded() == 0:
            reasons["sf_hz"] = "no heartbeat with load on and no stimulus: LOAD never runs"
        else:
            t = figures["sf_hz"] = search_threshold(
                sw.measure_progress, st.f_from, st.f_to, resolution=st.resolution,
                factor=st.factor, quantize=sw.quantize, confirm=st.confirm,
                what=f"load progress below {st.sf_threshold:g}")
            reasons["sf_hz"] = t.reason
    except (KeyboardInterrupt, LinkError) as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "link lost"
        writer.close(final=_final(sw, figures, reasons, status))
        sw.tmp.cleanup()
        raise
    except BaseException:
        writer.close(final=_final(sw, figures, reasons, "failed"))
        sw.tmp.cleanup()
        raise
    final = _final(sw, figures, reasons, status)
    writer.close(final=final)
    sw.tmp.cleanup()
    return SweepResult(Path(path), figures, reasons, sw.steps, meta, final)


def _final(sw, figures, reasons, status):
    return {
        "status": status, "end_time": _now(),
        "wall_s": round(time.monotonic() - sw.t_start, 2),
        **{name: (t.hz if t else None) for name, t in figures.items()},
        "reasons": {k: v for k, v in reasons.items() if v},
        "figures": {k: (t.to_json() if t else None) for k, t in figures.items()},
        "steps": len(sw.steps),
        "pulses_simulated": int(sum(s.get("pulses", 0) for s in sw.steps)),
        "pulses_saved": int(sum(s.get("pulses_saved", 0) for s in sw.steps)),
        "link": dict(sw.link_totals),
        "unloaded_heartbeat_hz": (sw.unloaded_rate * sw.tick_hz
                                  if sw.unloaded_rate is not None else None),
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
