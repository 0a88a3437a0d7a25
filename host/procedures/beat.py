# SPDX-License-Identifier: BSD-2-Clause
"""How long an MF step must run to meet the target's periodic disturbance in every phase.

Near MF a miss often needs the target's kernel tick (or any other periodic work) to
land at one particular phase of the pulse train: a few µs of extra CPU work early in
a pulse's handling tips the backlog over, the same work a little later does not. A
step of a few hundred pulses meets only a few ticks, at phases set by where the step
happened to start, so the same step at the same frequency may or may not miss.

The tick's phase against the pulse train moves by ``tick_period mod period`` from one
tick to the next (the beat between the pulse frequency and the nearest harmonic of the
tick frequency). :func:`cover_ticks` counts the ticks after which these phases have
left no gap wider than ``gap`` (a fraction of the pulse period) anywhere in the
period; :func:`step_pulses` turns that into the pulses of a step. A step without a
miss over that many pulses has met the tick in every phase (to ``gap``), so a
re-measurement of it meets the same phases again. docs/sweep.md gives the reasons and
the cost.
"""

import math

import numpy as np

__all__ = ["max_phase_gap", "cover_ticks", "step_pulses", "target_tick", "DEFAULT_TICK_S",
           "CONFIRM_FACTOR"]


def max_phase_gap(ratio, k):
    """Widest gap (fraction of the period, wrap-around included) between the phases
    ``frac(i * ratio)`` of ticks ``i = 0 … k-1``; ``ratio`` is the tick period in pulse
    periods."""
    if k < 2:
        return 1.0
    ph = np.sort(np.mod(np.arange(k, dtype=np.float64) * ratio, 1.0))
    return float(max(np.max(np.diff(ph), initial=0.0), 1.0 - ph[-1] + ph[0]))


def cover_ticks(period, tick_period, gap, limit=100_000):
    """Fewest ticks whose phases against a pulse train of ``period`` leave no gap wider
    than ``gap`` × ``period``; None if ``limit`` ticks do not (a tick period close to a
    small multiple or fraction of the pulse period: the phases repeat). Both periods in
    the same unit; a tick period of 0 (none) needs no tick: 0.

    More ticks only add phases, so the widest gap never grows with ``k``: the count is
    found by doubling and then bisecting."""
    if not tick_period:
        return 0
    if not (period > 0 and 0 < gap < 1):
        raise ValueError("period must be positive and gap between 0 and 1")
    ratio = tick_period / period
    need = max(2, math.ceil(1 / gap))       # fewer points cannot leave gaps ≤ gap
    if need > limit:
        return None
    hi = need
    while max_phase_gap(ratio, hi) > gap:
        if hi >= limit:
            return None
        hi = min(2 * hi, limit)
    lo = max(need - 1, hi // 2)             # lo fails (or is below need), hi covers
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if max_phase_gap(ratio, mid) <= gap:
            hi = mid
        else:
            lo = mid
    return hi


def step_pulses(period, tick_period, base, gap, max_pulses, jitter=0):
    """Pulses of one MF step and the ticks it covers: ``(pulses, ticks)``.

    ``period`` and ``jitter`` are the stimulus's (the mean period is ``period +
    jitter/2``), ``tick_period`` the target's tick (0: none), all in the same unit;
    ``base`` the pulses a step sends anyway (the backlog's start-up, docs/sweep.md). The
    step runs ``ticks + 1`` tick periods, so that the last covering tick's effect is in
    it, and never fewer than ``base`` pulses nor more than ``max_pulses``. ``ticks`` is
    None when the step cannot cover every phase to ``gap`` within ``max_pulses``
    (see :func:`cover_ticks`); it then sends ``max_pulses``."""
    if not tick_period:
        return base, 0
    mean = period + jitter / 2
    limit = max(2, int(max_pulses * mean // tick_period))
    k = cover_ticks(mean, tick_period, gap, limit)
    if k is None:
        return max(base, max_pulses), None
    n = math.ceil((k + 1) * tick_period / mean)
    if n > max_pulses:
        return max(base, max_pulses), None
    return max(base, n), k


#: The confirmation at a frequency where a step missed looks for a miss again for up to
#: this many times the pulse cap (``--max-pulses``); it ends at the first. Near MF the
#: misses of a target with a tick are also rare in time (docs/sweep.md).
CONFIRM_FACTOR = 5

#: The tick assumed for a target whose tick is not given: the rt_test firmware's and
#: most kernels' 1 ms.
DEFAULT_TICK_S = 1e-3


def target_tick(tick_s, target, model, tick_hz):
    """The target's tick period in rig ticks (0: none): ``tick_s`` if given (seconds,
    0 for none), else the model's ``tick_period`` on the model target, else
    :data:`DEFAULT_TICK_S`."""
    if tick_s is not None:
        return round(tick_s * tick_hz)
    if target == "model":
        return int((model or {}).get("tick_period", 0) or 0)
    return round(DEFAULT_TICK_S * tick_hz)
