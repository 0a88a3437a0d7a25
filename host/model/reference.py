# SPDX-License-Identifier: BSD-2-Clause
"""Cycle-exact reference of the model target (``rtrig.gateware.model.ModelTarget``).

The semantics are defined in ``docs/model.md``; this module implements them twice:

* :func:`simulate` — event driven: it jumps from one state change to the next, so
  a run costs a few Python steps per stimulus pulse and per kernel tick, whatever
  the durations are. Use it for sweeps.
* :func:`rtrig.host.model.cycles.simulate_cycles` — the literal tick-by-tick
  register-transfer description, written in the same shape as the gateware. Slow; it
  exists to cross-check the event-driven version in the tests.

MF and SF of a parameter set, found with :func:`simulate`, are in
:mod:`rtrig.host.model.figures`.

Both return a :class:`ModelResult` with one entry per stimulus pulse, identical to
the truth records of the gateware for the same inputs, including the jitter drawn
from the xorshift32 generator.

All times are integer ticks of the rig clock (``TICK_NS`` = 10 ns). Stimulus edge
times count from cycle 0, the first cycle after the model's soft reset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from ...protocol import MODEL_PARAM_REGS

__all__ = [
    "TICK_NS",
    "ModelParams",
    "ModelResult",
    "xorshift32",
    "jitter_sequence",
    "periodic_edges",
    "simulate",
    "simulate_periodic",
]

TICK_NS = 10
_MASK32 = 0xFFFF_FFFF


@dataclass(frozen=True)
class ModelParams:
    """Run-time parameters of the model target, all durations in ticks (10 ns).

    A duration of 0 behaves as 1 (every phase lasts at least one tick), except
    ``isr_jitter`` (a range, 0 = no jitter) and ``tick_period`` (0 = no kernel tick).
    ``app`` is the gateware's ``app_enable``; ``seed`` seeds the jitter generator and
    must be nonzero for jitter to be drawn (xorshift32 stays at 0 from 0).
    """

    isr_entry: int = 100
    isr_jitter: int = 0
    isr_service: int = 100
    app_wake: int = 100
    app_service: int = 100
    load_quantum: int = 1000
    heartbeat_work: int = 100
    tick_period: int = 0
    tick_service: int = 0
    app: bool = True
    seed: int = 0x2545F491

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "app":
                continue
            if not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= _MASK32:
                raise ValueError(f"{f.name} must be an integer in 0..2**32-1, got {v!r}")

    @classmethod
    def from_ns(cls, **kwargs) -> ModelParams:
        """Build from durations in ns (``isr_entry_ns=…``), rounded to whole ticks.

        Accepted names: ``isr_entry_ns``, ``isr_jitter_ns``, ``isr_service_ns``,
        ``app_wake_ns``, ``app_service_ns``, ``load_quantum_ns``, ``heartbeat_work_ns``,
        ``tick_period_ns``, ``tick_service_ns`` (numbers), ``app`` (bool), ``seed`` (int).
        Missing names take the dataclass defaults.
        """
        out = {}
        for key, value in kwargs.items():
            if key == "app":
                out[key] = bool(value)
            elif key == "seed":
                try:
                    out[key] = int(value, 0) if isinstance(value, str) else int(value)
                except (TypeError, ValueError):
                    raise ValueError(f"seed must be an integer, got {value!r}") from None
            elif key.endswith("_ns") and key[:-3] in _DURATIONS:
                try:
                    ns = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"{key} must be a number of ns, got {value!r}") from None
                if not math.isfinite(ns):
                    raise ValueError(f"{key} must be a finite number of ns, got {value!r}")
                out[key[:-3]] = int(round(ns / TICK_NS))
            else:
                raise TypeError(f"unknown model parameter {key!r}")
        return cls(**out)

    def to_ns(self) -> dict:
        """The inverse of :meth:`from_ns`."""
        d = {f"{k}_ns": getattr(self, k) * TICK_NS for k in _DURATIONS}
        d["app"] = self.app
        d["seed"] = self.seed
        return d

    def gateware_ports(self) -> dict:
        """Port name → value for ``ModelTarget`` (``app`` becomes ``app_enable``); the
        ports are those of :data:`rtrig.protocol.MODEL_PARAM_REGS`, the one mapping of
        model parameters to ports and registers."""
        d = {port: getattr(self, port) for port in MODEL_PARAM_REGS}
        d["app_enable"] = int(self.app)
        return d


#: The parameters counted in ticks (all but the seed).
_DURATIONS = tuple(p for p in MODEL_PARAM_REGS if p != "seed")


@dataclass
class ModelResult:
    """Per-pulse truth of one run (arrays indexed by pulse number, from 0).

    ``*_latency`` / ``*_completion`` are ticks from the pulse's irq rising edge to the
    pin's rising / falling edge; -1 where the pulse was missed or had not finished
    when the run ended. ``app_*`` arrays are empty when ``params.app`` is false.
    ``heartbeat_edges`` counts heartbeat toggles visible on the pin in cycles
    ``1 .. duration`` (i.e. caused by LOAD work in cycles ``0 .. duration-1``).
    """

    isr_latency: np.ndarray
    isr_completion: np.ndarray
    isr_missed: np.ndarray
    app_latency: np.ndarray
    app_completion: np.ndarray
    app_missed: np.ndarray
    heartbeat_edges: int
    duration: int

    @property
    def pulses(self) -> int:
        return len(self.isr_latency)

    def any_missed(self, channel: str) -> bool:
        return bool(np.any(self.isr_missed if channel == "isr" else self.app_missed))


def xorshift32(x: int) -> int:
    """Marsaglia's xorshift32 step (shifts 13, 17, 5), as in the gateware."""
    x ^= (x << 13) & _MASK32
    x ^= x >> 17
    x ^= (x << 5) & _MASK32
    return x


def _jitter(x: int, jitter: int) -> int:
    # Multiply-high scaling: uniform on 0..jitter up to a bias below (jitter+1)/2**32.
    return (x * (jitter + 1)) >> 32


def jitter_sequence(seed: int, jitter: int, n: int) -> np.ndarray:
    """The jitter added to the first ``n`` ISR entries after a reset with ``seed``."""
    out = np.empty(n, dtype=np.int64)
    x = seed
    for i in range(n):
        out[i] = _jitter(x, jitter)
        x = xorshift32(x)
    return out


def periodic_edges(period: int, count: int, *, extra=None, start: int = 0) -> np.ndarray:
    """Rising-edge times ``start + n*period + extra[n]`` for n = 0 .. count-1."""
    t = start + period * np.arange(count, dtype=np.int64)
    if extra is not None:
        extra = np.asarray(extra, dtype=np.int64)
        if extra.shape != (count,):
            raise ValueError("extra must have one delay per period")
        t = t + extra
    return t


def _check_edges(edges, high: int) -> np.ndarray:
    e = np.asarray(edges, dtype=np.int64).reshape(-1)
    if high < 1:
        raise ValueError("high time must be at least 1 tick")
    if e.size:
        if e[0] < 0:
            raise ValueError("edge times must be >= 0")
        if np.any(np.diff(e) <= high):
            raise ValueError("each edge must follow the previous one by more than the high time")
    return e


class _Eff:
    """Effective (clamped) durations shared by both implementations."""

    def __init__(self, p: ModelParams):
        self.entry = p.isr_entry
        self.jitter = p.isr_jitter
        self.service = max(1, p.isr_service)
        self.wake = max(1, p.app_wake)
        self.app_service = max(1, p.app_service)
        self.quantum = max(1, p.load_quantum)
        self.hb = max(1, p.heartbeat_work)
        self.tick_period = p.tick_period
        self.tick_service = max(1, p.tick_service)
        self.app = bool(p.app)
        self.seed = p.seed & _MASK32


def _check_ends(c: _Eff, duration: int | None) -> None:
    if duration is None and c.tick_period and c.tick_service >= c.tick_period:
        # the tick takes every cycle: threads never run, so the run never settles
        raise ValueError("tick_service >= tick_period starves the threads: give a duration")


def _new_arrays(n: int, app: bool):
    m = n if app else 0
    return (np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.zeros(n, bool),
            np.full(m, -1, np.int64), np.full(m, -1, np.int64), np.zeros(m, bool))


def simulate(params: ModelParams, edges, *, high: int = 1, load: bool = False,
             duration: int | None = None) -> ModelResult:
    """Event-driven run of the model.

    Parameters
    ----------
    edges : array of int
        irq rising-edge times in ticks, strictly increasing, gaps > ``high``.
    high : int
        irq high time in ticks (only checked: the model reacts to rising edges).
    load : bool
        ``load_en`` held at this value for the whole run.
    duration : int or None
        Number of cycles to run. ``None`` runs until the first cycle after the last
        edge at which no pulse work is left (nothing pending, no ISR, no APP job).
    """
    c = _Eff(params)
    e = _check_edges(edges, high)
    _check_ends(c, duration)
    n = len(e)
    il, ic, im, al, ac, am = _new_arrays(n, c.app)
    elist = e.tolist()
    INF = math.inf

    t = 0
    ei = 0
    nf = c.tick_period if c.tick_period else INF  # next kernel tick fire
    pend = False
    pend_pulse = pend_t0 = 0
    tick_pend = False
    x = c.seed
    kind = 0          # 0 none, 1 isr entry, 2 isr service, 3 tick
    r = 0
    isr_pulse = isr_t0 = 0
    app_phase = 0     # 0 inactive, 1 wake, 2 service
    app_r = 0
    app_pulse = app_t0 = 0
    ev = False
    ev_pulse = ev_t0 = 0
    turn_load = True
    q = c.quantum
    h = c.hb
    toggles = 0
    t_end = duration

    while True:
        if t_end is None:
            if ei == n and not pend and kind in (0, 3) and app_phase == 0 and not ev:
                t_end = t
                break
        elif t >= t_end:
            break
        edge = ei < n and elist[ei] == t
        fire = t == nf
        # --- interrupt level, cycle t -------------------------------------------
        take_irq = kind == 0 and (pend or edge)
        take_tick = kind == 0 and not (pend or edge) and (tick_pend or fire)
        if take_irq:
            if pend:
                isr_pulse, isr_t0 = pend_pulse, pend_t0
                pend = edge
                if edge:
                    pend_pulse, pend_t0 = ei, t
            else:
                isr_pulse, isr_t0 = ei, t
            kind = 1
            r = max(1, c.entry + _jitter(x, c.jitter))
            x = xorshift32(x)
        elif edge:
            if pend:
                im[ei] = True
                if c.app:
                    am[ei] = True
            else:
                pend, pend_pulse, pend_t0 = True, ei, t
        if edge:
            ei += 1
        if take_tick:
            tick_pend = tick_pend and fire
            kind = 3
            r = c.tick_service
        elif fire:
            tick_pend = True
        if fire:
            nf += c.tick_period
        # --- run length: cycles until the next input event ----------------------
        nxt = elist[ei] if ei < n else INF
        if nf < nxt:
            nxt = nf
        if t_end is not None and t_end < nxt:
            nxt = t_end
        L = nxt - t  # may be inf
        if kind:
            L = min(L, r)
            r -= L
            t += L
            if r == 0:
                if kind == 1:
                    kind = 2
                    r = c.service
                    il[isr_pulse] = t - isr_t0
                elif kind == 2:
                    kind = 0
                    ic[isr_pulse] = t - isr_t0
                    if c.app:
                        if app_phase == 0:
                            app_phase, app_r = 1, c.wake
                            app_pulse, app_t0 = isr_pulse, isr_t0
                        elif not ev:
                            ev, ev_pulse, ev_t0 = True, isr_pulse, isr_t0
                        else:
                            am[isr_pulse] = True
                else:
                    kind = 0
            continue
        load_runs = load and turn_load
        if load_runs:
            if app_phase == 0:
                # Nothing can make APP ready before the next input event: run on,
                # renewing the quantum as it expires.
                if L == INF:
                    raise ValueError("infinite run: give a duration")
                if L >= q:
                    q = c.quantum - (L - q) % c.quantum
                else:
                    q -= L
            else:
                L = min(L, q)
                q -= L
                if q == 0:
                    q = c.quantum
                    turn_load = False
            if L >= h:
                toggles += 1 + (L - h) // c.hb
                h = c.hb - (L - h) % c.hb
            else:
                h -= L
            t += L
        elif app_phase:
            L = min(L, app_r)
            app_r -= L
            t += L
            if app_r == 0:
                if app_phase == 1:
                    app_phase, app_r = 2, c.app_service
                    al[app_pulse] = t - app_t0
                else:
                    ac[app_pulse] = t - app_t0
                    turn_load = True
                    q = c.quantum
                    if ev:
                        ev = False
                        app_phase, app_r = 1, c.wake
                        app_pulse, app_t0 = ev_pulse, ev_t0
                    else:
                        app_phase = 0
        else:
            if L == INF:
                # idle forever: only reachable with duration=None and no work left,
                # which the quiescence test above catches first.
                raise AssertionError("idle without end")
            t += L

    return ModelResult(il, ic, im, al, ac, am, toggles, int(t_end))


def simulate_periodic(params: ModelParams, period: int, count: int, *, high: int | None = None,
                      extra=None, start: int = 0, load: bool = False,
                      duration: int | None = None) -> ModelResult:
    """:func:`simulate` with a periodic stimulus (see :func:`periodic_edges`).

    ``high`` defaults to ``period // 2``.
    """
    if high is None:
        high = max(1, period // 2)
    edges = periodic_edges(period, count, extra=extra, start=start)
    return simulate(params, edges, high=high, load=load, duration=duration)
