# SPDX-License-Identifier: BSD-2-Clause
"""The model target tick by tick: :func:`simulate_cycles`, the literal
register-transfer description of ``rtrig.gateware.model.ModelTarget``, written in the
gateware's own shape. Slow (~1 µs of Python per tick); it exists to cross-check the
event-driven :func:`rtrig.host.model.reference.simulate` in the tests, which must return the
same :class:`~rtrig.host.model.reference.ModelResult` for the same inputs."""

from __future__ import annotations

from .reference import (
    _MASK32,
    ModelParams,
    ModelResult,
    _check_edges,
    _check_ends,
    _Eff,
    _jitter,
    _new_arrays,
    xorshift32,
)

__all__ = ["simulate_cycles"]


def simulate_cycles(params: ModelParams, edges, *, high: int = 1, load: bool = False,
                    duration: int | None = None) -> ModelResult:
    """Tick-by-tick run of the model, written as the gateware's register transfers.

    Same inputs and result as :func:`simulate`; ~1 µs of Python per tick.
    """
    c = _Eff(params)
    e = _check_edges(edges, high)
    _check_ends(c, duration)
    n = len(e)
    il, ic, im, al, ac, am = _new_arrays(n, c.app)
    irq_high = set()
    for t0 in e.tolist():
        irq_high.update(range(t0, t0 + high))
    last = int(e[-1]) if n else -1

    # registers (values at the start of the current cycle)
    irq_prev = False
    now = 0
    npulse = 0
    pend = False
    pend_pulse = pend_t0 = 0
    tcnt = c.tick_period
    tick_pend = False
    x = c.seed
    kind = 0          # 0 none, 1 isr entry, 2 isr service, 3 tick
    r = 0
    isr_pulse = isr_t0 = 0
    app_phase = 0
    app_r = 0
    app_pulse = app_t0 = 0
    ev = False
    ev_pulse = ev_t0 = 0
    turn_load = True
    q = c.quantum
    h = c.hb
    hb = 0
    toggles = 0

    while True:
        if duration is None:
            if now > last and not pend and kind in (0, 3) and app_phase == 0 and not ev:
                break
        elif now >= duration:
            break
        irq = now in irq_high
        edge = irq and not irq_prev
        fire = c.tick_period != 0 and tcnt == 0
        free = kind == 0
        take_irq = free and (pend or edge)
        take_tick = free and not (pend or edge) and (tick_pend or fire)
        thread = not (take_irq or take_tick or not free)
        load_runs = thread and load and turn_load
        app_runs = thread and app_phase != 0 and not load_runs

        # next-state, computed from the current values only
        n_pend, n_pend_pulse, n_pend_t0 = pend, pend_pulse, pend_t0
        n_kind, n_r = kind, r
        n_isr_pulse, n_isr_t0 = isr_pulse, isr_t0
        n_x = x
        n_tick_pend = tick_pend
        n_app_phase, n_app_r, n_app_pulse, n_app_t0 = app_phase, app_r, app_pulse, app_t0
        n_ev, n_ev_pulse, n_ev_t0 = ev, ev_pulse, ev_t0
        n_turn_load, n_q, n_h, n_hb = turn_load, q, h, hb

        if take_irq:
            if pend:
                n_isr_pulse, n_isr_t0 = pend_pulse, pend_t0
                n_pend = edge
                if edge:
                    n_pend_pulse, n_pend_t0 = npulse, now
            else:
                n_isr_pulse, n_isr_t0 = npulse, now
            entry = max(1, c.entry + _jitter(x, c.jitter))
            if entry == 1:
                n_kind, n_r = 2, c.service
                il[n_isr_pulse] = now + 1 - n_isr_t0
            else:
                n_kind, n_r = 1, entry - 1
            n_x = xorshift32(x)
        elif edge:
            if pend:
                im[npulse] = True
                if c.app:
                    am[npulse] = True
            else:
                n_pend, n_pend_pulse, n_pend_t0 = True, npulse, now

        if take_tick:
            n_tick_pend = tick_pend and fire
            if c.tick_service == 1:
                n_kind = 0
            else:
                n_kind, n_r = 3, c.tick_service - 1
        elif fire:
            n_tick_pend = True

        if kind != 0:
            if r == 1:
                if kind == 1:
                    n_kind, n_r = 2, c.service
                    il[isr_pulse] = now + 1 - isr_t0
                elif kind == 2:
                    n_kind = 0
                    ic[isr_pulse] = now + 1 - isr_t0
                    if c.app:
                        if app_phase == 0:
                            n_app_phase, n_app_r = 1, c.wake
                            n_app_pulse, n_app_t0 = isr_pulse, isr_t0
                        elif not ev:
                            n_ev, n_ev_pulse, n_ev_t0 = True, isr_pulse, isr_t0
                        else:
                            am[isr_pulse] = True
                else:
                    n_kind = 0
            else:
                n_r = r - 1

        if load_runs:
            if h == 1:
                n_h, n_hb = c.hb, hb ^ 1
                toggles += 1
            else:
                n_h = h - 1
            if q == 1:
                n_q = c.quantum
                n_turn_load = app_phase == 0
            else:
                n_q = q - 1
        if app_runs:
            if app_r == 1:
                if app_phase == 1:
                    n_app_phase, n_app_r = 2, c.app_service
                    al[app_pulse] = now + 1 - app_t0
                else:
                    ac[app_pulse] = now + 1 - app_t0
                    n_turn_load, n_q = True, c.quantum
                    if ev:
                        n_ev = False
                        n_app_phase, n_app_r = 1, c.wake
                        n_app_pulse, n_app_t0 = ev_pulse, ev_t0
                    else:
                        n_app_phase = 0
            else:
                n_app_r = app_r - 1

        if edge:
            npulse += 1
        if fire:
            tcnt = c.tick_period - 1
        else:
            tcnt = (tcnt - 1) & _MASK32
        irq_prev = irq
        pend, pend_pulse, pend_t0 = n_pend, n_pend_pulse, n_pend_t0
        kind, r = n_kind, n_r
        isr_pulse, isr_t0 = n_isr_pulse, n_isr_t0
        x = n_x
        tick_pend = n_tick_pend
        app_phase, app_r, app_pulse, app_t0 = n_app_phase, n_app_r, n_app_pulse, n_app_t0
        ev, ev_pulse, ev_t0 = n_ev, n_ev_pulse, n_ev_t0
        turn_load, q, h, hb = n_turn_load, n_q, n_h, n_hb
        now += 1

    return ModelResult(il, ic, im, al, ac, am, toggles, now)
