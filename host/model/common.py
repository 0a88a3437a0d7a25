# SPDX-License-Identifier: BSD-2-Clause
"""What the two references of the model target share: its parameters
(:class:`ModelParams`, in ticks, with their validation and conversion from ns), the
effective durations a run derives from them (:class:`Effective`), the checks of a
run's inputs and its result container (:func:`start_run`, :class:`ModelResult`), and
the gateware's jitter generator (:func:`xorshift32`, :func:`draw_jitter`).

The simulations themselves stay apart, each in its own module (the event-driven
:func:`rtrig.host.model.reference.simulate` and the tick-by-tick
:func:`rtrig.host.model.cycles.simulate_cycles`), so that each cross-checks the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from ...protocol import MODEL_PARAM_REGS

__all__ = [
    "TICK_HZ",
    "TICK_NS",
    "MASK32",
    "ModelParams",
    "ModelResult",
    "Effective",
    "ModelState",
    "xorshift32",
    "draw_jitter",
    "start_run",
]

#: The default twin's tick (the ULX3S rig: its 30 MHz clock sampled four times), in
#: which the model's parameters are given where no rig's own tick is named.
TICK_HZ = 120_000_000
TICK_NS = 1e9 / TICK_HZ
#: The model's registers and its jitter generator are 32 bits wide.
MASK32 = 0xFFFF_FFFF


@dataclass(frozen=True)
class ModelParams:
    """Run-time parameters of the model target, all durations in ticks
    (:data:`TICK_NS`, 8.33 ns, where no other rig's tick is named).

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
            if not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= MASK32:
                raise ValueError(f"{f.name} must be an integer in 0..2**32-1, got {v!r}")

    @classmethod
    def from_ns(cls, *, ns_per_tick=TICK_NS, **kwargs) -> ModelParams:
        """Build from durations in ns (``isr_entry_ns=…``), rounded to whole ticks of
        ``ns_per_tick`` ns (the rig's tick: 8.33 ns on the default twin; a board's twin
        runs the model in its own ticks).

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
                out[key[:-3]] = int(round(ns / ns_per_tick))
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

    @classmethod
    def empty(cls, pulses: int, app: bool) -> ModelResult:
        """Nothing known yet of ``pulses`` pulses: latencies and completions -1, nothing
        missed, no heartbeat; the ``app_*`` arrays empty without ``app``."""
        m = pulses if app else 0
        return cls(np.full(pulses, -1, np.int64), np.full(pulses, -1, np.int64),
                   np.zeros(pulses, bool), np.full(m, -1, np.int64),
                   np.full(m, -1, np.int64), np.zeros(m, bool), 0, 0)


class Effective:
    """The durations a run uses, derived from :class:`ModelParams`: a duration of 0
    behaves as 1 tick, except ``jitter`` (a range) and ``tick_period`` (0: no tick)."""

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
        self.seed = p.seed & MASK32


class ModelState:
    """The state both references carry through a run, set to its values after the
    model's soft reset by :meth:`reset`: the interrupt level (the pending pulse and
    tick, the running handler and its ticks left, the jitter generator) and the threads
    (APP's job and its queued event, LOAD's quantum and heartbeat work), with the
    heartbeat toggles counted so far. ``*_pulse`` are pulse numbers and ``*_t0`` their
    irq edges' cycles."""

    def reset(self, c: Effective) -> None:
        self.pend = False
        self.pend_pulse = self.pend_t0 = 0
        self.tick_pend = False
        self.x = c.seed
        self.kind = 0          # 0 none, 1 isr entry, 2 isr service, 3 tick
        self.r = 0
        self.isr_pulse = self.isr_t0 = 0
        self.app_phase = 0     # 0 inactive, 1 wake, 2 service
        self.app_r = 0
        self.app_pulse = self.app_t0 = 0
        self.ev = False
        self.ev_pulse = self.ev_t0 = 0
        self.turn_load = True
        self.q = c.quantum
        self.h = c.hb
        self.toggles = 0


def xorshift32(x: int) -> int:
    """Marsaglia's xorshift32 step (shifts 13, 17, 5), as in the gateware."""
    x ^= (x << 13) & MASK32
    x ^= x >> 17
    x ^= (x << 5) & MASK32
    return x


def draw_jitter(x: int, jitter: int) -> int:
    """The jitter (0 .. ``jitter`` ticks) drawn from the generator's state ``x``."""
    # Multiply-high scaling: uniform on 0..jitter up to a bias below (jitter+1)/2**32.
    return (x * (jitter + 1)) >> 32


def start_run(params: ModelParams, edges, high: int, duration: int | None):
    """The checked inputs of one run: ``(Effective, edge times, empty ModelResult)``.

    ``edges`` must be at least 0 and strictly increasing with gaps above ``high``
    (>= 1); a run whose kernel tick takes every cycle needs a ``duration``."""
    c = Effective(params)
    e = _check_edges(edges, high)
    if duration is None and c.tick_period and c.tick_service >= c.tick_period:
        # the tick takes every cycle: threads never run, so the run never settles
        raise ValueError("tick_service >= tick_period starves the threads: give a duration")
    return c, e, ModelResult.empty(len(e), c.app)


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
