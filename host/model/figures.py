# SPDX-License-Identifier: BSD-2-Clause
"""MF and SF of a model parameter set, from the event-driven reference
(:func:`rtrig.host.model.reference.simulate`): the figures a sweep of the model target must
find. Each is the threshold period of a predicate that holds below it, found by
:func:`_largest_true`."""

from __future__ import annotations

import math

from .common import TICK_NS, Effective, ModelParams
from .reference import simulate, simulate_periodic

__all__ = ["mf_isr", "mf_app", "sf", "load_progress"]


def _largest_true(pred, hi_guess: int, lo: int = 2, limit: int = 1 << 32) -> int | None:
    """Largest integer period T >= lo with pred(T) true, assuming pred is true below
    some threshold and false above it (bracket by doubling, then bisect).
    Returns None if pred(lo) is false."""
    if not pred(lo):
        return None
    hi = max(hi_guess, lo + 1)
    while pred(hi):
        lo = hi
        hi *= 2
        if hi > limit:
            return lo
    # pred(lo) true, pred(hi) false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _work_guess(p: ModelParams) -> int:
    c = Effective(p)
    w = max(1, c.entry + c.jitter) + c.service + c.wake + c.app_service + c.quantum
    if c.tick_period:
        w += c.tick_service
    return 2 * w


def _hz(period: int | None) -> float:
    return math.inf if period is None else 1e9 / (period * TICK_NS)


def _mf(p: ModelParams, channel: str, pulses: int, load: bool) -> float:
    def pred(T):
        res = simulate_periodic(p, T, pulses, load=load)
        return res.any_missed(channel)
    return _hz(_largest_true(pred, _work_guess(p)))


def mf_isr(params: ModelParams, *, pulses: int = 1000, load: bool = False) -> float:
    """MF-ISR in Hz: the lowest periodic stimulus frequency (integer-tick periods,
    ``pulses`` pulses, first edge at cycle 0) at which an ISR pulse is missed.
    ``math.inf`` if even a 2-tick period misses nothing."""
    return _mf(params, "isr", pulses, load)


def mf_app(params: ModelParams, *, pulses: int = 1000, load: bool = False) -> float:
    """MF-APP in Hz, as :func:`mf_isr` for the APP channel (needs ``params.app``)."""
    if not params.app:
        raise ValueError("MF-APP needs params.app")
    return _mf(params, "app", pulses, load)


def load_progress(params: ModelParams, period: int, *, pulses: int = 1000,
                  min_heartbeats: int = 1000) -> float:
    """Heartbeat edges with a periodic stimulus over ``pulses`` periods (extended so
    that the unloaded run has at least ``min_heartbeats`` edges), divided by the
    edges of the same run without stimulus (kernel tick still running)."""
    c = Effective(params)
    count = max(pulses, -(-min_heartbeats * c.hb // period))
    duration = count * period
    unloaded = simulate(params, [], load=True, duration=duration).heartbeat_edges
    if unloaded == 0:
        raise ValueError("LOAD never runs without stimulus")
    loaded = simulate_periodic(params, period, count, load=True, duration=duration)
    return loaded.heartbeat_edges / unloaded


def sf(params: ModelParams, threshold: float = 0.01, *, pulses: int = 1000) -> float:
    """SF in Hz: the lowest periodic stimulus frequency at which load progress
    (:func:`load_progress`) drops below ``threshold``. ``math.inf`` if it never does."""
    def pred(T):
        return load_progress(params, T, pulses=pulses) < threshold
    return _hz(_largest_true(pred, _work_guess(params)))
