# SPDX-License-Identifier: BSD-2-Clause
"""The target's own rhythm: whether a capture's latencies depend on where its pulses
fall in a periodic activity of the target (a kernel tick, a timer ISR, a polling
loop), which period, and how much of that period's phase the capture sampled.

A pulse's **phase** is its rising edge's time modulo the target period ``P``, in
``bins`` equal bins. A capture's **phase coverage** is the share of those bins its
pulses fell in. A pulse train whose period is locked to ``P`` (25 µs against a 100 µs
tick: 4 pulses a tick) meets the same few phases over and over; its samples then
describe those phases, not the target, and two such captures of one set-up differ
by where each started. :data:`LOCKED` is the coverage under which a capture counts as
locked.

Where ``P`` comes from, in this order (the capture's ``rhythm.source``):

``given``      ``--target-period`` (0: the target has none);
``target``     the model target's tick (its ``tick_period``);
``estimated``  found in the capture itself: the period whose folding of the latencies
               on the stimulus times separates them best (an analysis of variance of
               their ranks over the phase bins, on a grid of trial periods fine
               enough that a fold drifts by less than half a bin over the capture),
               kept only if significant after allowing for the number of trials;
``assumed``    none of those: 1 ms, the tick of most kernels and of rt_test
               (reported, and used to choose the stimulus, never to judge).

Whether latencies **depend** on the phase is a Kruskal–Wallis test of each
channel's latencies across the phase bins (records only: a statistics-mode capture
has no per-pulse times; its coverage comes from its stimulus settings,
:func:`train_times`).

:func:`detune` chooses the stimulus period a capture uses by default
(``--phases cover``): the asked-for period if its pulses already cover the phases,
else the nearest period, a few stimulus steps away, whose pulses do.
"""

import numpy as np

from ..gateware.stimulus_generator import lfsr32_next
from ..records import LATENCY_DTYPE
from .procedures.beat import DEFAULT_TICK_S

__all__ = ["PHASE_BINS", "LOCKED", "COVER", "DEPENDENT_P", "ASSUMED_PERIOD_S", "phase_bins",
           "coverage", "train_times", "detune", "dependence", "estimate_period",
           "capture_rhythm", "jitter_draws", "describe", "locked_notes"]

#: Phase bins of a target period (fewer for short captures, :func:`phase_bins`).
PHASE_BINS = 64
#: A capture that covers less than this share of its phase bins is locked.
LOCKED = 0.9
#: The coverage :func:`detune` asks for.
COVER = 0.95
#: Below this p-value (after the trial-period correction) a dependence is claimed.
DEPENDENT_P = 1e-3
#: The period assumed when none is given, known or found (``source`` "assumed"): the
#: tick sweeps assume too (rt_test's and most kernels' 1 ms).
ASSUMED_PERIOD_S = DEFAULT_TICK_S
#: :func:`detune` moves the period by at most this share of it.
MAX_DETUNE = 0.01
#: The evenness :func:`detune` asks of the phase bins' pulse counts.
EVEN = 0.15


def phase_bins(n):
    """Bins for ``n`` pulses: :data:`PHASE_BINS`, fewer for short captures (at least 8
    pulses a bin, so that an evenly spread capture covers them all), at least 4."""
    return int(min(PHASE_BINS, max(4, n // 8)))


def coverage(times, period, bins):
    """Share of the ``bins`` phase bins of ``period`` that ``times`` fall in (same
    unit); None without a period or times."""
    times = np.asarray(times)
    if not period or len(times) == 0:
        return None
    b = np.floor(np.mod(times, period) * (bins / period)).astype(np.int64)
    return len(np.unique(np.clip(b, 0, bins - 1))) / bins


def jitter_draws(seed, jitter, n):
    """The gateware's extra delays (in clock cycles) of the first ``n`` periods of a
    train (:class:`~rtrig.gateware.stimulus_generator.StimulusGenerator`): the first
    0, then the values of the LFSR seeded with ``seed`` that pass rejection sampling
    of ``0..jitter``, the step taken in the first rise's cycle discarded. Assumes each
    draw is done before the next rise (periods of 64 cycles or more: a draw needs more
    than that with a probability below 2^-64)."""
    out = np.zeros(n, dtype=np.int64)
    if jitter <= 0 or n <= 1:
        return out
    mask = (1 << int(jitter).bit_length()) - 1
    x = lfsr32_next(seed)                     # the first rise's step, discarded
    for i in range(1, n):
        while True:
            x = lfsr32_next(x)
            if (x & mask) <= jitter:
                out[i] = x & mask
                break
    return out


def train_times(stimulus, n, step):
    """Rising times (ticks, from the first rise) of the first ``n`` pulses of a train of
    the ``stimulus`` settings (a capture's ``META.stimulus``) on a rig of stimulus
    step ``step``; None for bursts (their times are in the records)."""
    if stimulus.get("burst"):
        return None
    period = int(stimulus["period_ticks"])
    jitter = int(stimulus.get("jitter_ticks") or 0)
    step = max(1, int(step))
    draws = jitter_draws(int(stimulus.get("seed", 1)), jitter // step, n) * step
    return np.concatenate([[0], np.cumsum(period + draws[:-1])]) if n else np.zeros(0)


def _spread(times, period, bins):
    """(coverage, evenness): the share of phase bins met and the relative standard
    deviation of the bins' pulse counts (0: every bin alike)."""
    b = np.clip(np.floor(np.mod(times, period) * (bins / period)).astype(np.int64), 0, bins - 1)
    c = np.bincount(b, minlength=bins)
    return float(np.count_nonzero(c)) / bins, float(c.std() / c.mean())


def detune(period, target_period, n, step, jitter=0, want=COVER):
    """``(period, coverage)``: the stimulus period (ticks, a multiple of ``step``) for
    ``n`` pulses to meet the phases of ``target_period`` evenly: ``period`` itself if
    its pulses cover at least ``want`` of the phase bins with counts within
    :data:`EVEN` of each other (relative standard deviation; a random spread of ``n``
    pulses has about ``sqrt(bins / n)``), or when there is no target period or jitter
    spreads the phases; else the nearest multiple of ``step`` within
    :data:`MAX_DETUNE` of it that does (the shorter of two equally near), else the
    most even one found."""
    if not target_period or n < 2:
        return period, None
    bins = phase_bins(n)
    if jitter:
        t = train_times({"period_ticks": period, "jitter_ticks": jitter}, n, step)
        return period, coverage(t, target_period, bins)
    k = np.arange(n, dtype=np.int64)
    c0, e0 = _spread(k * period, target_period, bins)
    if c0 >= want and e0 <= EVEN:
        return period, c0
    best = (c0, -e0, period)
    for d in range(step, max(step, int(period * MAX_DETUNE)) + 1, step):
        for p in (period - d, period + d):
            if p <= step:
                continue
            c, e = _spread(k * p, target_period, bins)
            if c >= want and e <= EVEN:
                return p, c
            best = max(best, (c, -e, p))
    return best[2], best[0]


def dependence(phases, latency, bins):
    """Kruskal–Wallis p-value of ``latency`` across the ``bins`` bins of ``phases``
    (fractions of the period, 0..1); None when fewer than two bins hold two samples."""
    b = np.clip(np.floor(np.asarray(phases) * bins).astype(np.int64), 0, bins - 1)
    y = np.asarray(latency, dtype=np.float64)
    groups = [y[b == i] for i in np.unique(b)]
    groups = [g for g in groups if len(g) >= 2]
    if len(groups) < 2 or np.all(y == y[0]):
        return None
    from scipy import stats  # ~0.9 s to import: kept off the CLI's start-up
    return float(stats.kruskal(*groups).pvalue)


def _eta2(t, r, periods, bins):
    """The share of the variance of ``r`` (ranks) between the phase bins, for each of
    ``periods`` (all in ticks); vectorised over the periods."""
    n = len(r)
    total = float(np.sum((r - r.mean()) ** 2))
    out = np.empty(len(periods))
    for i in range(0, len(periods), 256):
        p = periods[i:i + 256, None]
        b = np.floor(np.mod(t[None, :], p) * (bins / p)).astype(np.int64)
        b = np.clip(b, 0, bins - 1) + bins * np.arange(len(p))[:, None]
        cnt = np.bincount(b.ravel(), minlength=len(p) * bins).reshape(len(p), bins)
        s = np.bincount(b.ravel(), weights=np.tile(r, len(p)),
                        minlength=len(p) * bins).reshape(len(p), bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            between = np.nansum(np.where(cnt > 0, s * s / cnt, 0.0), axis=1) - n * r.mean() ** 2
        out[i:i + 256] = between / total if total > 0 else 0.0
    return out


def estimate_period(times, latency, lo, hi, bins=16):
    """``(period, p)``: the trial period in ``[lo, hi]`` (ticks) whose phase bins
    separate the ranks of ``latency`` best, refined, and its p-value (an F test of that
    separation, times the number of trial periods); None if none is significant at
    :data:`DEPENDENT_P` or the capture is too short (fewer than 64 pulses, or shorter
    than four times ``lo``).

    Periods shorter than twice the mean pulse spacing are not tried: a periodic train
    cannot tell them from their aliases (a period ``P`` and the ones of frequency
    ``|1/P + m/T|`` fold a train of period ``T`` alike), and above it only ``P``'s
    multiples compete, which the shortest-of-the-best rule sets aside."""
    t = np.asarray(times, dtype=np.float64)
    y = np.asarray(latency, dtype=np.float64)
    if len(t) > 4000:                       # enough to find a period, bounded work
        t, y = t[:4000], y[:4000]
    n = len(t)
    if n < 64 or np.all(y == y[0]):
        return None
    t = t - t[0]
    span = float(t[-1])
    hi = min(hi, span / 4)
    lo = max(lo, 2 * span / (n - 1))
    if not (span > 0 and hi > lo > 0):
        return None
    from scipy import stats  # ~0.9 s to import: kept off the CLI's start-up
    r = stats.rankdata(y)
    # Periods 1/P on a grid even in frequency: a fold of the capture drifts by at most
    # half a bin between neighbours.
    df = 1.0 / (2 * bins * span)
    freqs = np.arange(1.0 / hi, 1.0 / lo, df)
    if len(freqs) == 0:
        return None
    periods = 1.0 / freqs
    e = _eta2(t, r, periods, bins)
    # A tick seen at P separates as well folded at 2P, 3P, ...: of the trial periods
    # that separate nearly as well as the best, the shortest is the fundamental.
    best = int(np.flatnonzero(e >= 0.9 * np.max(e))[-1])
    fine = 1.0 / np.linspace(freqs[max(best - 1, 0)], freqs[min(best + 1, len(freqs) - 1)], 41)
    ef = _eta2(t, r, fine, bins)
    period, eta = float(fine[int(np.argmax(ef))]), float(np.max(ef))
    if eta >= 1:
        p = 0.0
    else:
        f = (eta / (bins - 1)) / ((1 - eta) / (n - bins))
        p = float(stats.f.sf(f, bins - 1, n - bins)) * len(freqs)
    return (period, min(p, 1.0)) if p < DEPENDENT_P else None


#: Records read to find a capture's rhythm (the first ones; bounded memory).
MAX_RECORDS = 1_000_000


def _records_times(cap):
    """``{channel: (stim_t, latency, answered)}`` of a records capture, loaded
    (:func:`rtrig.load`) or scanned (:func:`rtrig.capture.scan`; its first
    :data:`MAX_RECORDS` records)."""
    from .analysis import missed_mask
    lat = getattr(cap, "latency", None)
    if lat is None:
        lat = np.concatenate([b for _, b in zip(range(MAX_RECORDS // 65536 + 1),
                                                cap.blocks(b"LATR", 65536))] or
                             [np.zeros(0, dtype=LATENCY_DTYPE)])
    out = {}
    for c in sorted(set(lat["channel"].tolist())):
        rec = lat[lat["channel"] == c]
        rec = rec[np.argsort(rec["pulse"], kind="stable")]
        out[cap.channel_name(c)] = (rec["stim_t"].astype(np.int64),
                                    rec["latency"].astype(np.int64), ~missed_mask(rec))
    return out


def capture_rhythm(cap, lo_s=5e-6, hi_s=20e-3):
    """The rhythm of a capture (loaded or scanned): a dict with ``period_ns``, ``source`` (see the
    module), ``bins``, ``bin_ns``, ``coverage`` (share of the period's phase bins its
    pulses met; None without a period or times), ``locked`` (coverage below
    :data:`LOCKED`), ``dependence`` (per channel, the Kruskal–Wallis p-value across
    the bins, None per channel without records) and ``phase_dependent`` (some channel
    depends on the phase at :data:`DEPENDENT_P`; None without records).

    The rhythm the capture was set up for (``META.rhythm``: given or the target's) is
    used as it is; without one, records are searched (:func:`estimate_period`) and
    else :data:`ASSUMED_PERIOD_S` is reported."""
    tick_hz = cap.tick_hz
    meta_r = cap.meta.get("rhythm") or {}
    period, source = meta_r.get("period_ticks"), meta_r.get("source")
    if source in ("assumed", "unknown"):
        period, source = None, None         # look in the records first
    elif source == "none":
        period = None                       # no rhythm: given as 0, or a tickless model
    if source is None:
        model = ((cap.meta.get("target") or {}).get("model") or {})
        if (cap.meta.get("target") or {}).get("kind") == "model" and model.get("tick_period"):
            period, source = int(model["tick_period"]), "target"
    data = {}
    if cap.meta.get("mode") != "statistics":
        data = {k: v for k, v in _records_times(cap).items() if len(v[0])}
    times = None
    if data:
        times = next(iter(data.values()))[0]
    elif (stim := cap.meta.get("stimulus")):
        n = int((cap.final or {}).get("pulses_issued") or stim.get("count") or 0)
        times = train_times(stim, min(n, 100_000), _step(cap))
    if source is None and data:
        best = None
        for st, lat, ok in data.values():
            if np.count_nonzero(ok) >= 64:
                found = estimate_period(st[ok], lat[ok], lo_s * tick_hz, hi_s * tick_hz)
                if found and (best is None or found[1] < best[1]):
                    best = found
        if best:
            period, source = best[0], "estimated"
    if source is None:
        period, source = ASSUMED_PERIOD_S * tick_hz, "assumed"
    n = 0 if times is None else len(times)
    bins = phase_bins(n)
    out = {"period_ns": None if not period else round(period * 1e9 / tick_hz, 1),
           "source": source, "bins": bins,
           "bin_ns": None if not period else round(period / bins * 1e9 / tick_hz, 1),
           "coverage": None, "locked": None, "dependence": None, "phase_dependent": None}
    if not period or times is None or n == 0:
        return out
    cov = coverage(times, period, bins)
    out["coverage"] = round(cov, 4)
    out["locked"] = bool(cov < LOCKED)
    if data:
        dep = {}
        for name, (st, lat, ok) in data.items():
            dep[name] = (dependence(np.mod(st[ok], period) / period, lat[ok], bins)
                         if np.count_nonzero(ok) >= 2 * bins else None)
        out["dependence"] = dep
        known = [p for p in dep.values() if p is not None]
        out["phase_dependent"] = (min(known) < DEPENDENT_P) if known else None
    if source == "assumed":
        # an assumption never judges a capture: only a period given, known or found
        out["locked"] = None
    return out


def _step(cap):
    """The stimulus step of the rig that made ``cap`` (the period is a multiple of it)."""
    stim = cap.meta.get("stimulus") or {}
    return int(stim.get("step_ticks") or 1)


def describe(r):
    """One line for a capture's rhythm dict (:func:`capture_rhythm`), or None."""
    if not r or not r.get("period_ns"):
        return None
    p = r["period_ns"]
    per = f"{p / 1000:.4g} µs" if p < 1e6 else f"{p / 1e6:.4g} ms"
    src = {"given": "given", "target": "the target's tick", "estimated": "found in the "
           "latencies", "assumed": "assumed"}.get(r["source"], r["source"])
    text = f"target period {per} ({src})"
    if r.get("coverage") is not None:
        text += (f": the pulses met {r['coverage']:.0%} of its {r['bins']} phase bins "
                 f"of {r['bin_ns'] / 1000:.3g} µs")
    if r.get("phase_dependent"):
        text += "; latencies depend on the phase"
    elif r.get("phase_dependent") is False:
        text += "; no phase dependence found"
    if r.get("locked"):
        text += (" — phase-locked: the figures describe the phases met, not the target "
                 "(--phases cover, or a frequency not locked to it)")
    return text



def locked_notes(a_cap, b_cap, verdict):
    """One line per capture of a comparison that met only some phases of the target's
    period (:func:`capture_rhythm`: locked, and its latencies depend on the phase or,
    without records, may): its figures describe the phases it met, so a difference
    between A and B may be where each started, not the target; the comparison's
    channels then say ``verdict``."""
    out = []
    for cap, label in ((a_cap, "A"), (b_cap, "B")):
        r = capture_rhythm(cap)
        if r.get("locked") and r.get("phase_dependent") is not False:
            out.append(f"{label} is phase-locked: its pulses met {r['coverage']:.0%} of the "
                       f"phases of the target period {r['period_ns'] / 1000:.4g} µs "
                       f"({r['source']}); verdicts say {verdict!r} (capture with "
                       "--phases cover, or at a frequency not locked to the period)")
    return out
