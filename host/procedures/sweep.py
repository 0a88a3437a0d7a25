# SPDX-License-Identifier: BSD-2-Clause
"""Frequency sweep: MF-ISR, MF-APP and SF between two frequencies (docs/sweep.md).

MF (max frequency) of a channel is the lowest stimulus frequency at which the
channel misses a pulse; SF (saturation frequency) the lowest at which the target's
LOAD task no longer runs (load progress below a threshold). Each is found by
:func:`rtrig.host.procedures.search.search_threshold` over measurement steps
(:mod:`rtrig.host.procedures.sweep_steps`). ``docs/sweep.md`` explains the choices
(pulse counts, stimulus jitter, how load progress is measured).

:func:`run_sweep` drives a rig (real or the simulation twin) through the sweep's
searches and writes every measured step as a ``STEP`` chunk of a sweep capture, so an
interrupted sweep keeps its curve; :func:`curve` reads that curve back. Its settings
and its result are defined in :mod:`rtrig.host.procedures.sweep_settings`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ...channels import is_interval, mf_key, sweep_figure_keys, sweep_figure_name
from ...errors import UsageError
from ...units import format_hz
from ..rig.run import CaptureRun, now, rig_meta
from ..sim.console import check_soc_run
from .search import Threshold, search_threshold
from .sweep_settings import FIGURES, SweepResult, SweepSettings, default_pulses
from .sweep_steps import Step, _Sweeper
from .twins import run_parallel

__all__ = ["SweepSettings", "SweepResult", "Threshold", "search_threshold", "run_sweep",
           "default_pulses", "FIGURES"]


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
