# SPDX-License-Identifier: BSD-2-Clause
"""The model target tick by tick: :func:`simulate_cycles`, the literal
register-transfer description of ``rtrig.gateware.model.ModelTarget``, written in the
gateware's own shape. Slow (a few µs of Python per tick); it exists to cross-check the
event-driven :func:`rtrig.host.model.reference.simulate` in the tests, which must return
the same :class:`~rtrig.host.model.common.ModelResult` for the same inputs.

Each cycle reads the registers' current values only (:class:`_Registers`) and writes
their next values, block by block as the gateware's ``sync`` statements do: the
interrupt controller, the kernel tick, the running handler, LOAD and APP."""

from __future__ import annotations

from .common import (
    MASK32,
    Effective,
    ModelParams,
    ModelResult,
    ModelState,
    draw_jitter,
    start_run,
    xorshift32,
)

__all__ = ["simulate_cycles"]


def simulate_cycles(params: ModelParams, edges, *, high: int = 1, load: bool = False,
                    duration: int | None = None) -> ModelResult:
    """Tick-by-tick run of the model, written as the gateware's register transfers.

    Same inputs and result as :func:`~rtrig.host.model.reference.simulate`; a few µs of
    Python per tick.
    """
    c, e, res = start_run(params, edges, high, duration)
    irq_high = set()
    for t0 in e.tolist():
        irq_high.update(range(t0, t0 + high))
    last = int(e[-1]) if len(e) else -1

    cur = _Registers(c)
    now = 0
    while True:
        if duration is None:
            if (now > last and not cur.pend and cur.kind in (0, 3) and cur.app_phase == 0
                    and not cur.ev):
                break
        elif now >= duration:
            break
        cur = _cycle(c, cur, now in irq_high, now, load, res)
        now += 1
    res.heartbeat_edges = cur.toggles
    res.duration = now
    return res


class _Registers(ModelState):
    """The model's registers, with their values at the start of a cycle; ``toggles``
    counts the heartbeat's toggles (an observer, not a register of the gateware)."""

    def __init__(self, c: Effective):
        self.irq_prev = False
        self.npulse = 0        # pulses seen so far (the next edge's pulse number)
        self.tcnt = c.tick_period
        self.hb = 0            # the heartbeat pin
        self.reset(c)

    def hold(self) -> _Registers:
        """The next values, holding the current ones until a block assigns them."""
        nxt = _Registers.__new__(_Registers)
        nxt.__dict__ = self.__dict__.copy()
        return nxt


def _cycle(c: Effective, cur: _Registers, irq: bool, now: int, load: bool,
           res: ModelResult) -> _Registers:
    """One clock cycle: the combinational decisions from the current values, then the
    next values of every register."""
    edge = irq and not cur.irq_prev
    fire = c.tick_period != 0 and cur.tcnt == 0
    free = cur.kind == 0
    take_irq = free and (cur.pend or edge)
    take_tick = free and not (cur.pend or edge) and (cur.tick_pend or fire)
    thread = not (take_irq or take_tick or not free)
    load_runs = thread and load and cur.turn_load
    app_runs = thread and cur.app_phase != 0 and not load_runs

    nxt = cur.hold()
    if take_irq or edge:
        _interrupt_controller(c, cur, nxt, edge, take_irq, now, res)
    if take_tick:
        nxt.tick_pend = cur.tick_pend and fire
        if c.tick_service == 1:
            nxt.kind = 0
        else:
            nxt.kind, nxt.r = 3, c.tick_service - 1
    elif fire:
        nxt.tick_pend = True
    if cur.kind != 0:
        _handler(c, cur, nxt, now, res)
    if load_runs:
        _load(c, cur, nxt)
    if app_runs:
        _app(c, cur, nxt, now, res)

    if edge:
        nxt.npulse = cur.npulse + 1
    if fire:
        nxt.tcnt = c.tick_period - 1
    else:
        nxt.tcnt = (cur.tcnt - 1) & MASK32
    nxt.irq_prev = irq
    return nxt


def _interrupt_controller(c: Effective, cur: _Registers, nxt: _Registers, edge: bool,
                          take_irq: bool, now: int, res: ModelResult) -> None:
    # An edge or the pending pulse enters the ISR when the CPU is free; an edge while
    # one is pending is missed.
    if take_irq:
        if cur.pend:
            nxt.isr_pulse, nxt.isr_t0 = cur.pend_pulse, cur.pend_t0
            nxt.pend = edge
            if edge:
                nxt.pend_pulse, nxt.pend_t0 = cur.npulse, now
        else:
            nxt.isr_pulse, nxt.isr_t0 = cur.npulse, now
        entry = max(1, c.entry + draw_jitter(cur.x, c.jitter))
        if entry == 1:
            nxt.kind, nxt.r = 2, c.service
            res.isr_latency[nxt.isr_pulse] = now + 1 - nxt.isr_t0
        else:
            nxt.kind, nxt.r = 1, entry - 1
        nxt.x = xorshift32(cur.x)
    elif edge:
        if cur.pend:
            res.isr_missed[cur.npulse] = True
            if c.app:
                res.app_missed[cur.npulse] = True
        else:
            nxt.pend, nxt.pend_pulse, nxt.pend_t0 = True, cur.npulse, now


def _handler(c: Effective, cur: _Registers, nxt: _Registers, now: int,
             res: ModelResult) -> None:
    # The running handler counts down its phase; the ISR's end signals APP.
    if cur.r != 1:
        nxt.r = cur.r - 1
    elif cur.kind == 1:
        nxt.kind, nxt.r = 2, c.service
        res.isr_latency[cur.isr_pulse] = now + 1 - cur.isr_t0
    elif cur.kind == 2:
        nxt.kind = 0
        res.isr_completion[cur.isr_pulse] = now + 1 - cur.isr_t0
        if not c.app:
            return
        if cur.app_phase == 0:
            nxt.app_phase, nxt.app_r = 1, c.wake
            nxt.app_pulse, nxt.app_t0 = cur.isr_pulse, cur.isr_t0
        elif not cur.ev:
            nxt.ev, nxt.ev_pulse, nxt.ev_t0 = True, cur.isr_pulse, cur.isr_t0
        else:
            res.app_missed[cur.isr_pulse] = True
    else:
        nxt.kind = 0


def _load(c: Effective, cur: _Registers, nxt: _Registers) -> None:
    # LOAD's heartbeat work and quantum count down; at the quantum's end APP (if
    # ready) gets its turn.
    if cur.h == 1:
        nxt.h, nxt.hb = c.hb, cur.hb ^ 1
        nxt.toggles = cur.toggles + 1
    else:
        nxt.h = cur.h - 1
    if cur.q == 1:
        nxt.q = c.quantum
        nxt.turn_load = cur.app_phase == 0
    else:
        nxt.q = cur.q - 1


def _app(c: Effective, cur: _Registers, nxt: _Registers, now: int,
         res: ModelResult) -> None:
    # APP counts down its phase; at its job's end LOAD gets a fresh quantum and a
    # queued event wakes APP again.
    if cur.app_r != 1:
        nxt.app_r = cur.app_r - 1
    elif cur.app_phase == 1:
        nxt.app_phase, nxt.app_r = 2, c.app_service
        res.app_latency[cur.app_pulse] = now + 1 - cur.app_t0
    else:
        res.app_completion[cur.app_pulse] = now + 1 - cur.app_t0
        nxt.turn_load, nxt.q = True, c.quantum
        if cur.ev:
            nxt.ev = False
            nxt.app_phase, nxt.app_r = 1, c.wake
            nxt.app_pulse, nxt.app_t0 = cur.ev_pulse, cur.ev_t0
        else:
            nxt.app_phase = 0
