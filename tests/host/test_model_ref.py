# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the model target's Python reference (closed forms, both implementations
against each other, presets)."""

import dataclasses
import math
import random
import time

import numpy as np
import pytest

from rtrig.host.model.cycles import simulate_cycles
from rtrig.host.model.figures import load_progress, mf_app, mf_isr, sf
from rtrig.host.model.presets import PRESETS, PRESETS_NS, preset
from rtrig.host.model.reference import (
    TICK_NS,
    ModelParams,
    jitter_sequence,
    periodic_edges,
    simulate,
    simulate_periodic,
    xorshift32,
)

FIELDS = ("isr_latency", "isr_completion", "isr_missed",
          "app_latency", "app_completion", "app_missed")


def test_from_ns_and_back():
    p = ModelParams.from_ns(isr_entry_ns=1_400, isr_jitter_ns=2_300, isr_service_ns=5_300,
                            app_wake_ns=7_700, app_service_ns=20_000, load_quantum_ns=31_000,
                            heartbeat_work_ns=10_000, tick_period_ns=1_000_000,
                            tick_service_ns=1_500, app=False, seed=7)
    assert (p.isr_entry, p.isr_jitter, p.isr_service, p.tick_period) == (168, 276, 636, 120_000)
    assert TICK_NS == pytest.approx(1e9 / 120e6)         # the default twin's 8.33 ns
    assert p.app is False and p.seed == 7
    assert ModelParams.from_ns(**p.to_ns()) == p
    with pytest.raises(TypeError):
        ModelParams.from_ns(isr_entry=3)
    with pytest.raises(ValueError):
        ModelParams(isr_entry=-1)


def test_idle_latencies():
    p = ModelParams(isr_entry=30, isr_service=20, app_wake=40, app_service=50)
    r = simulate(p, [5])
    assert (r.isr_latency[0], r.isr_completion[0]) == (30, 50)
    assert (r.app_latency[0], r.app_completion[0]) == (90, 140)
    assert r.duration == 5 + 140


def test_edge_validation():
    with pytest.raises(ValueError):
        simulate(ModelParams(), [0, 3], high=3)   # gap must exceed the high time
    with pytest.raises(ValueError):
        simulate(ModelParams(), [5, 4])


def test_xorshift_and_jitter_sequence():
    assert xorshift32(1) == 270369      # Marsaglia's 13/17/5 from 1
    j = jitter_sequence(0x9E37_79B9, 99, 20_000)
    assert j.min() == 0 and j.max() == 99
    counts = np.bincount(j, minlength=100)
    assert counts.min() > 140 and counts.max() < 260     # 200 expected per value
    assert jitter_sequence(0, 99, 10).tolist() == [0] * 10


@pytest.mark.parametrize("entry,service", [(1, 1), (3, 2), (30, 20), (7, 50)])
def test_mf_isr_closed_form(entry, service):
    # no tick, no jitter: a period of E+S is sustained, E+S-1 misses
    p = ModelParams(isr_entry=entry, isr_service=service, app=False)
    c = entry + service
    if c == 2:
        assert mf_isr(p) == math.inf        # a 2-tick period is the fastest stimulus
        return
    assert mf_isr(p) == pytest.approx(1e9 / ((c - 1) * TICK_NS))
    assert not simulate_periodic(p, c, 5000).any_missed("isr")


@pytest.mark.parametrize("e,s,w,a,q", [(30, 20, 40, 50, 200), (5, 3, 11, 2, 17), (12, 9, 1, 40, 64)])
def test_mf_app_closed_forms(e, s, w, a, q):
    p = ModelParams(isr_entry=e, isr_service=s, app_wake=w, app_service=a, load_quantum=q)
    assert mf_app(p) == pytest.approx(1e9 / ((e + s + w + a - 1) * TICK_NS))
    # loaded: after each APP job LOAD gets a full quantum
    assert mf_app(p, load=True) == pytest.approx(1e9 / ((e + s + w + a + q - 1) * TICK_NS))


def test_sf_isr_only():
    # app off, no tick: LOAD keeps T - C of every period; progress (T-C)/T < 1 %
    # below T = C/0.99
    p = ModelParams(isr_entry=300, isr_service=700, app=False, heartbeat_work=10)
    T = 1e9 / (sf(p) * TICK_NS)
    assert 1000 <= T <= 1000 / 0.99 + 1
    assert load_progress(p, 2000) == pytest.approx(0.5, abs=0.01)


def test_event_driven_equals_cycle_by_cycle():
    rng = random.Random(20261122)
    for _ in range(150):
        p = ModelParams(
            isr_entry=rng.randint(0, 20), isr_jitter=rng.choice([0, 0, 5, 30]),
            isr_service=rng.randint(0, 20), app_wake=rng.randint(0, 20),
            app_service=rng.randint(0, 30), load_quantum=rng.randint(0, 40),
            heartbeat_work=rng.randint(0, 15), tick_period=rng.choice([0, 0, 1, 37, 100]),
            tick_service=rng.randint(0, 20), app=rng.random() < 0.7,
            seed=rng.randint(1, 2**32 - 1))
        load = rng.random() < 0.5
        high = rng.randint(1, 5)
        gaps = [rng.randint(high + 1, 80) for _ in range(rng.randint(1, 40))]
        edges = np.cumsum([rng.randint(0, 10)] + gaps[1:])
        duration = None if rng.random() < 0.5 else rng.randint(1, 3000)
        if p.tick_period and max(1, p.tick_service) >= p.tick_period:
            with pytest.raises(ValueError):
                simulate(p, edges, high=high, duration=None)
            duration = 500      # saturated by the tick: never settles
        a = simulate(p, edges, high=high, load=load, duration=duration)
        b = simulate_cycles(p, edges, high=high, load=load, duration=duration)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f"{f} {p}")
        assert (a.heartbeat_edges, a.duration) == (b.heartbeat_edges, b.duration), p


def test_event_driven_is_fast():
    p = preset("ce30")
    edges = periodic_edges(10_000, 20_000, extra=np.random.default_rng(0).integers(0, 5000, 20_000))
    t = time.perf_counter()
    r = simulate(p, edges, high=100, load=True)
    assert time.perf_counter() - t < 5.0
    assert r.pulses == 20_000 and not r.isr_missed.any()


def test_periodic_stimulus_with_extra_delays():
    e = periodic_edges(100, 4, extra=[0, 5, 0, 9], start=3)
    assert e.tolist() == [3, 108, 203, 312]


def test_presets():
    assert set(PRESETS) >= {"ce212", "ce30", "cenet", "fast"}
    assert set(PRESETS_NS) == set(PRESETS)
    with pytest.raises(KeyError):
        preset("nope")
    fast = preset()
    for f in (mf_isr(fast, pulses=300), mf_app(fast, pulses=300),
              mf_app(fast, pulses=300, load=True)):
        assert 10e3 <= f <= 200e3


def test_ce30_preset_tracks_the_paper():
    # docs/method.md: CE 3.0 MF-ISR 127 kHz, MF-APP 28 kHz, loaded MF-APP 15 kHz
    p = preset("ce30")
    assert mf_isr(p, pulses=500) == pytest.approx(127e3, rel=0.05)
    assert mf_app(p, pulses=500) == pytest.approx(28e3, rel=0.05)
    assert mf_app(p, pulses=500, load=True) == pytest.approx(15e3, rel=0.05)
    r = simulate(dataclasses.replace(p, isr_jitter=0), [1000])
    assert r.isr_latency[0] == 168 and r.app_latency[0] == 1728   # 1.4 µs, 14.4 µs


def test_model_parameters_are_the_register_map_s():
    # One mapping (rtrig.protocol.MODEL_PARAM_REGS) names the model's ports, the
    # ModelParams fields and their registers; the gateware's ModelTarget has each port.
    from dataclasses import fields

    from rtrig.gateware.model import ModelTarget
    from rtrig.protocol import MODEL_PARAM_REGS, Reg

    names = {f.name for f in fields(ModelParams)}
    assert names == set(MODEL_PARAM_REGS) | {"app"}
    ports = ModelParams().gateware_ports()
    assert set(ports) == set(MODEL_PARAM_REGS) | {"app_enable"}
    target = ModelTarget()
    target._MustUse__silence = True    # its ports only; never elaborated
    for port, reg in MODEL_PARAM_REGS.items():
        assert hasattr(target, port) and reg in Reg.__members__
