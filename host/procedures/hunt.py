# SPDX-License-Identifier: BSD-2-Clause
"""The worst case hunted, not stumbled upon (``rtrig hunt``): the stimulus phase in the
target's own period at which a channel's latency is highest.

A target that the rig restarts for every run (the model and the SoC of the twin,
:meth:`rtrig.host.rig.rig.Rig.run`) meets each run's first pulse at the same place of
its rhythm, so a pulse's *phase* — its time after the run's first pulse, modulo the
target period ``P`` — names the same moment of the target in every run. The hunt:

1. **Pilot**: a short capture whose period is moved to meet every phase of ``P``
   (``--phases cover``, :func:`rtrig.host.rhythm.detune`): the latency at each phase.
2. **Bracket**: the worst phase lies near the pilot's slowest pulse, within the gaps
   to the phases met beside it; probes spread over that bracket narrow it down.
3. **Refine**: probes around the slowest probe, ± the last spacing at a quarter of
   it, until they are one stimulus step apart.

A probe is a run of two pulses whose period is ``m·P + φ``: its second pulse falls at
phase ``φ`` (``m`` whole periods on, so the first pulse's work is long done). The
slowest probe is the **recipe**: a capture file that ``rtrig capture --replay``
runs again, its second pulse at the worst phase.

The search runs on any :class:`Probe` (a callable ``(period, count, cover) →
(phases, latencies, path)``): the rig's (:class:`RigProbe`), or a model's for
benchmarks and tests.
"""

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["hunt", "HuntResult", "RigProbe", "ModelProbe", "probe_period"]


@dataclass
class HuntResult:
    """What a hunt found: the worst latency (ticks) and its phase (ticks after the
    run's first pulse, modulo ``period``), the pulses it took, every probe
    ``(phase, latency)``, and the recipe (the worst probe's capture file)."""
    worst_ticks: int
    phase_ticks: int
    period_ticks: float
    pulses: int
    runs: int
    step: int
    tick_hz: float
    recipe: object = None
    probes: list = field(default_factory=list)
    pilot_worst_ticks: int = 0

    def to_json(self):
        ns = 1e9 / self.tick_hz
        return {"worst_ns": round(self.worst_ticks * ns, 1),
                "phase_ns": round(self.phase_ticks * ns, 1),
                "target_period_ns": round(self.period_ticks * ns, 1),
                "resolution_ns": round(self.step * ns, 3),
                "pilot_worst_ns": round(self.pilot_worst_ticks * ns, 1),
                "pulses": self.pulses, "runs": self.runs,
                "recipe": None if self.recipe is None else str(self.recipe)}


def probe_period(phase, period, min_period, step):
    """The period (ticks, a multiple of ``step``) of a two-pulse probe whose second
    pulse falls at ``phase`` of ``period``, at least ``min_period`` after the first."""
    phase = int(round(phase / step)) * step % max(int(round(period)), 1)
    m = max(1, math.ceil((min_period - phase) / period))
    return int(round((m * period + phase) / step)) * step


def _worst(phases, lat):
    """Index of the slowest answered pulse (latency < 0: missed), or None."""
    ok = np.flatnonzero(lat >= 0)
    return None if len(ok) == 0 else int(ok[np.argmax(lat[ok])])


def _bracket(phases, i, period):
    """``(lo, hi)``: the phases either side of pulse ``i``'s that the pilot met
    (circular), widened so the worst phase between them is inside."""
    ph = np.sort(np.mod(phases, period))
    p = float(np.mod(phases[i], period))
    k = int(np.searchsorted(ph, p))
    below = ph[k - 1] if k > 0 else ph[-1] - period
    above = ph[k + 1] if k + 1 < len(ph) else ph[0] + period
    return min(below, p - 1), max(above, p + 1)


def hunt(probe, period, step, pilot_period, pilot_count, tick_hz, points=8, log=None):
    """Hunt the worst phase with ``probe`` (see the module); ``period``: the target
    period, ``step``: the stimulus step (ticks); the pilot runs ``pilot_count`` pulses
    near ``pilot_period``. Returns a :class:`HuntResult` (its recipe: the slowest
    probe's file)."""
    say = log or (lambda m: None)
    whole = int(round(period))
    phases, lat, _ = probe(pilot_period, pilot_count, True)
    i = _worst(phases, lat)
    if i is None:
        raise ValueError("the pilot had no answered pulse: nothing to hunt")
    pulses, runs = len(lat), 1
    pilot = (int(lat[i]), int(round(phases[i])) % whole)
    say(f"pilot: {pulses} pulses, slowest {pilot[0]} ticks at phase {pilot[1]}")
    min_period = max(pilot_period, 4 * int(np.max(lat)) + 4 * step)
    probes, best = {}, None

    def run(phase):
        nonlocal best, pulses, runs
        t = probe_period(phase, period, min_period, step)
        ph, la, path = probe(t, 2, False)
        pulses, runs = pulses + len(la), runs + 1
        if len(la) < 2 or la[1] < 0:
            return
        at = int(round(ph[1])) % whole
        probes[at] = int(la[1])
        if best is None or la[1] > best[0]:
            best = (int(la[1]), at, path)

    lo, hi = _bracket(phases, i, period)
    spacing = max(step, int((hi - lo) / points) // step * step)
    for phase in [*np.arange(lo, hi + spacing, spacing), pilot[1]]:
        run(phase)
    say(f"bracket: {len(probes)} probes {spacing} ticks apart, slowest "
        f"{best[0] if best else None} ticks")
    # Narrow down: around the slowest probe, ± the last spacing at a quarter of it,
    # until the probes are one stimulus step apart.
    centre = best[1] if best else pilot[1]
    while True:
        fine = max(step, spacing // 4 // step * step)
        for phase in range(int(centre - spacing), int(centre + spacing) + 1, fine):
            if (int(round(phase / step)) * step) % whole not in probes:
                run(phase)
        centre = best[1] if best else centre
        if fine == step:
            break
        spacing = fine
    if best is None:
        raise ValueError("no probe was answered: nothing to hunt")
    say(f"refine: {len(probes)} probes in all, slowest {best[0]} ticks at phase {best[1]}")
    return HuntResult(best[0], best[1], period, pulses, runs, step, tick_hz, best[2],
                      sorted(probes.items()), pilot[0])


class ModelProbe:
    """Probes on the model target's reference (:mod:`rtrig.host.model.reference`,
    cycle-exact with the gateware): ``params`` (ticks), each run's first pulse
    ``start`` ticks into the model's tick, ``channel`` "isr" or "app"."""

    def __init__(self, params, step, channel="isr", start=0):
        self.params, self.step, self.channel, self.start = params, step, channel, start

    def __call__(self, period, count, cover):
        from ..model.reference import simulate
        from ..rhythm import detune, train_times
        if cover:
            period, _ = detune(period, self.params.tick_period, count, self.step)
        edges = self.start + train_times({"period_ticks": period}, count, self.step)
        r = simulate(self.params, edges, high=self.step)
        lat = getattr(r, f"{self.channel}_latency").astype(np.int64)
        lat = np.where(getattr(r, f"{self.channel}_missed"), -1, lat)
        return (edges - edges[0]).astype(np.float64), lat, None


class RigProbe:
    """Probes on an open rig: each a records capture (``folder``/probe-N.rtrig) of
    ``settings`` (:class:`~rtrig.host.procedures.settings.CaptureSettings`, one
    channel) with the period and count of the probe; phases from each run's first
    pulse (the rig restarts the target for every run)."""

    def __init__(self, rig, settings, folder, channel):
        self.rig, self.settings, self.folder, self.channel = rig, settings, folder, channel
        self.n = 0

    def __call__(self, period, count, cover):
        import dataclasses

        from ...capture import load
        from ..analysis import missed_mask
        from .measure import run_capture
        self.n += 1
        path = self.folder / f"probe-{self.n}.rtrig"
        s = dataclasses.replace(self.settings, freq=self.rig.tick_hz / period, count=count,
                                phases="cover" if cover else "as-set",
                                channels=(self.channel,))
        run_capture(self.rig, s, path, progress=False)
        rec = load(path).channel(self.channel)
        st = rec["stim_t"].astype(np.int64)
        lat = np.where(missed_mask(rec), -1, rec["latency"].astype(np.int64))
        return (st - st[0]).astype(np.float64), lat, path
