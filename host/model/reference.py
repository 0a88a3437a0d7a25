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

All times are integer ticks of the rig clock (``TICK_NS`` = 8.33 ns on the default twin). Stimulus edge
times count from cycle 0, the first cycle after the model's soft reset.

The parameters, the result and the checks of a run's inputs, which both
implementations share, are in :mod:`rtrig.host.model.common` (and importable from
here); each implementation keeps its own simulation.
"""

from __future__ import annotations

import math

import numpy as np

from .common import (
    TICK_NS,
    Effective,
    ModelParams,
    ModelResult,
    ModelState,
    draw_jitter,
    start_run,
    xorshift32,
)

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

_INF = math.inf


def jitter_sequence(seed: int, jitter: int, n: int) -> np.ndarray:
    """The jitter added to the first ``n`` ISR entries after a reset with ``seed``."""
    out = np.empty(n, dtype=np.int64)
    x = seed
    for i in range(n):
        out[i] = draw_jitter(x, jitter)
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
    c, e, res = start_run(params, edges, high, duration)
    run = _EventRun(c, e.tolist(), duration, res)
    while not run.ended():
        span = run.take_inputs()
        # the CPU for those cycles: a handler, else LOAD on its turn, else APP
        if run.kind:
            run.handler_works(span)
        elif load and run.turn_load:
            run.load_works(span)
        elif run.app_phase:
            run.app_works(span)
        else:
            run.idle(span)
    res.heartbeat_edges = run.toggles
    res.duration = int(run.t_end)
    return res


class _EventRun(ModelState):
    """One event-driven run: the model's state at cycle ``t``, and the steps that move
    it on. Each step jumps to the next state change: an edge, a tick, the end of a
    phase, or the end of a quantum while APP waits."""

    def __init__(self, c: Effective, edges: list, duration: int | None, res: ModelResult):
        self.c, self.edges, self.n, self.res = c, edges, len(edges), res
        self.t = 0
        self.t_end = duration
        self.ei = 0                                         # the next edge
        self.nf = c.tick_period if c.tick_period else _INF  # the next kernel tick fire
        self.reset(c)

    def ended(self) -> bool:
        """Whether the run ends at ``t``. Without a duration it ends at the first cycle
        after the last edge at which no pulse work is left, and ``t_end`` is set."""
        if self.t_end is not None:
            return self.t >= self.t_end
        if (self.ei == self.n and not self.pend and self.kind in (0, 3)
                and self.app_phase == 0 and not self.ev):
            self.t_end = self.t
            return True
        return False

    def take_inputs(self):
        """Cycle ``t`` at the interrupt level (see :meth:`_interrupt_level`); returns the
        cycles from ``t`` to the next input: edge, tick fire or end of run (may be inf)."""
        t, ei = self.t, self.ei
        edge = ei < self.n and self.edges[ei] == t
        fire = t == self.nf
        if edge or fire or self.kind == 0 and (self.pend or self.tick_pend):
            self._interrupt_level(edge, fire)
        nxt = self.edges[self.ei] if self.ei < self.n else _INF
        if self.nf < nxt:
            nxt = self.nf
        if self.t_end is not None and self.t_end < nxt:
            nxt = self.t_end
        return nxt - t

    def _interrupt_level(self, edge: bool, fire: bool) -> None:
        # An edge is taken, left pending or (when one is pending already) missed; a
        # tick fire is taken or left pending.
        c, t, ei = self.c, self.t, self.ei
        free = self.kind == 0
        take_irq = free and (self.pend or edge)
        take_tick = free and not (self.pend or edge) and (self.tick_pend or fire)
        if take_irq:
            if self.pend:
                self.isr_pulse, self.isr_t0 = self.pend_pulse, self.pend_t0
                self.pend = edge
                if edge:
                    self.pend_pulse, self.pend_t0 = ei, t
            else:
                self.isr_pulse, self.isr_t0 = ei, t
            self.kind = 1
            self.r = max(1, c.entry + draw_jitter(self.x, c.jitter))
            self.x = xorshift32(self.x)
        elif edge:
            if self.pend:
                self.res.isr_missed[ei] = True
                if c.app:
                    self.res.app_missed[ei] = True
            else:
                self.pend, self.pend_pulse, self.pend_t0 = True, ei, t
        if edge:
            self.ei += 1
        if take_tick:
            self.tick_pend = self.tick_pend and fire
            self.kind = 3
            self.r = c.tick_service
        elif fire:
            self.tick_pend = True
        if fire:
            self.nf += c.tick_period

    def handler_works(self, span) -> None:
        """The running handler works ``span`` cycles, or to the end of its phase."""
        c = self.c
        span = min(span, self.r)
        self.r -= span
        self.t += span
        if self.r != 0:
            return
        if self.kind == 1:
            self.kind = 2
            self.r = c.service
            self.res.isr_latency[self.isr_pulse] = self.t - self.isr_t0
        elif self.kind == 2:
            self.kind = 0
            self.res.isr_completion[self.isr_pulse] = self.t - self.isr_t0
            if c.app:
                self._signal_app()
        else:
            self.kind = 0

    def _signal_app(self) -> None:
        # the ISR's event wakes APP, or waits for APP's job, or is lost behind another
        if self.app_phase == 0:
            self.app_phase, self.app_r = 1, self.c.wake
            self.app_pulse, self.app_t0 = self.isr_pulse, self.isr_t0
        elif not self.ev:
            self.ev, self.ev_pulse, self.ev_t0 = True, self.isr_pulse, self.isr_t0
        else:
            self.res.app_missed[self.isr_pulse] = True

    def load_works(self, span) -> None:
        """LOAD works ``span`` cycles, or to the end of its quantum when APP waits."""
        c = self.c
        if self.app_phase == 0:
            # Nothing can make APP ready before the next input event: run on,
            # renewing the quantum as it expires.
            if span == _INF:
                raise ValueError("infinite run: give a duration")
            if span >= self.q:
                self.q = c.quantum - (span - self.q) % c.quantum
            else:
                self.q -= span
        else:
            span = min(span, self.q)
            self.q -= span
            if self.q == 0:
                self.q = c.quantum
                self.turn_load = False
        if span >= self.h:
            self.toggles += 1 + (span - self.h) // c.hb
            self.h = c.hb - (span - self.h) % c.hb
        else:
            self.h -= span
        self.t += span

    def app_works(self, span) -> None:
        """APP works ``span`` cycles, or to the end of its phase; at the end of its job
        LOAD gets a fresh quantum and a queued event wakes APP again."""
        c = self.c
        span = min(span, self.app_r)
        self.app_r -= span
        self.t += span
        if self.app_r != 0:
            return
        if self.app_phase == 1:
            self.app_phase, self.app_r = 2, c.app_service
            self.res.app_latency[self.app_pulse] = self.t - self.app_t0
            return
        self.res.app_completion[self.app_pulse] = self.t - self.app_t0
        self.turn_load = True
        self.q = c.quantum
        if self.ev:
            self.ev = False
            self.app_phase, self.app_r = 1, c.wake
            self.app_pulse, self.app_t0 = self.ev_pulse, self.ev_t0
        else:
            self.app_phase = 0

    def idle(self, span) -> None:
        """Nothing runs until the next input."""
        if span == _INF:
            # idle forever: only reachable with duration=None and no work left,
            # which ended() catches first.
            raise AssertionError("idle without end")
        self.t += span


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
