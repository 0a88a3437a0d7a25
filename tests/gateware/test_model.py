# SPDX-License-Identifier: BSD-2-Clause
"""Simulation tests of the model target against exact cycle counts and against the
cycle-exact Python reference (``rtrig.host.model.reference``)."""

import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtrig.gateware.model import PARAM_SETTLE, ModelTarget, TruthChannel
from rtrig.host.model.reference import ModelParams, periodic_edges, simulate


class Run:
    """What a testbench saw: truth records and pin edges (cycle numbers from 0)."""

    def __init__(self, n):
        self.n = n
        self.records = []           # (pulse, channel, missed, latency, completion)
        self.rises = {"isr": [], "app": []}
        self.falls = {"isr": [], "app": []}
        self.heartbeat_edges = 0
        self.overflow = 0

    def channel(self, ch):
        lat = np.full(self.n, -1, np.int64)
        comp = np.full(self.n, -1, np.int64)
        missed = np.zeros(self.n, bool)
        seen = np.zeros(self.n, int)
        for pulse, c, m, la, co in self.records:
            if c != ch:
                continue
            seen[pulse] += 1
            if m:
                missed[pulse] = True
                assert la == 0 and co == 0
            else:
                lat[pulse], comp[pulse] = la, co
        assert np.all(seen <= 1), "more than one record for a pulse"
        return lat, comp, missed, seen


def run_model(params, edges, *, high=1, load=False, cycles, hb_cycles=None, ready=None):
    """Reset the model with ``params``, drive irq high for ``high`` ticks from each
    edge (cycle 0 = first cycle after reset), watch ``cycles`` cycles.

    ``hb_cycles``: count heartbeat toggles visible in cycles 1..hb_cycles (default
    ``cycles``). ``ready``: function cycle → bool for the truth stream (default high).
    """
    dut = ModelTarget()
    edges = [int(e) for e in edges]
    irq_high = set()
    for e in edges:
        irq_high.update(range(e, e + high))
    hb_cycles = cycles if hb_cycles is None else hb_cycles
    run = Run(len(edges))

    async def bench(ctx):
        for name, value in params.gateware_ports().items():
            ctx.set(getattr(dut, name), value)
        ctx.set(dut.load_en, int(load))
        ctx.set(dut.truth.ready, 1)
        ctx.set(dut.reset, 1)
        await ctx.tick().repeat(PARAM_SETTLE)      # parameters settle while in reset
        ctx.set(dut.reset, 0)
        prev = {"isr": 0, "app": 0, "hb": 0}
        for k in range(cycles + 1):
            ctx.set(dut.irq, k in irq_high)
            if ready is not None:
                ctx.set(dut.truth.ready, ready(k))
            isr, app, hb = ctx.get(dut.isr_out), ctx.get(dut.app_out), ctx.get(dut.heartbeat)
            for name, v in (("isr", isr), ("app", app)):
                if v and not prev[name]:
                    run.rises[name].append(k)
                elif prev[name] and not v:
                    run.falls[name].append(k)
                prev[name] = v
            if hb != prev["hb"] and k <= hb_cycles:
                run.heartbeat_edges += 1
            prev["hb"] = hb
            if ctx.get(dut.truth.valid) and ctx.get(dut.truth.ready):
                p = ctx.get(dut.truth.payload)
                run.records.append((p.pulse, p.channel, p.missed, p.latency, p.completion))
            await ctx.tick()
        run.overflow = ctx.get(dut.truth_overflow)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if os.environ.get("RTRIG_VCD"):
        with sim.write_vcd(os.environ["RTRIG_VCD"]):
            sim.run()
    else:
        sim.run()
    return run


def P(**kw):
    base = dict(isr_entry=10, isr_jitter=0, isr_service=5, app_wake=8, app_service=6,
                load_quantum=20, heartbeat_work=4, tick_period=0, tick_service=0, app=True)
    base.update(kw)
    return ModelParams(**base)


def test_idle_latency_is_isr_entry():
    # one edge at cycle 3 on an idle CPU: isr_out high in [3+10, 3+15), APP raises
    # app_out after the ISR (15) and its wake time (8), for 6 ticks
    run = run_model(P(), [3], high=2, cycles=60)
    assert run.rises["isr"] == [13] and run.falls["isr"] == [18]
    assert run.rises["app"] == [26] and run.falls["app"] == [32]
    assert sorted(run.records) == [(0, TruthChannel.ISR, 0, 10, 15),
                                   (0, TruthChannel.APP, 0, 23, 29)]


def test_minimum_durations_and_edge_at_cycle_0():
    # 0 behaves as 1: entry 1 tick, service 1 tick
    run = run_model(P(isr_entry=0, isr_service=0, app_wake=0, app_service=0), [0], cycles=10)
    assert run.rises["isr"] == [1] and run.falls["isr"] == [2]
    assert run.rises["app"] == [3] and run.falls["app"] == [4]


def check_against_reference(params, edges, *, high=1, load=False, duration=None):
    ref = simulate(params, edges, high=high, load=load, duration=duration)
    # records are due at the end of the cycle that finishes the work; give the
    # holding slots a few cycles to drain
    run = run_model(params, edges, high=high, load=load, cycles=ref.duration + 8,
                    hb_cycles=ref.duration)
    assert run.overflow == 0
    lat, comp, missed, seen = run.channel(TruthChannel.ISR)
    assert np.all(seen == 1)
    np.testing.assert_array_equal(lat, ref.isr_latency)
    np.testing.assert_array_equal(comp, ref.isr_completion)
    np.testing.assert_array_equal(missed, ref.isr_missed)
    lat_a, comp_a, missed_a, seen_a = run.channel(TruthChannel.APP)
    if params.app:
        assert np.all(seen_a == 1)
        np.testing.assert_array_equal(lat_a, ref.app_latency)
        np.testing.assert_array_equal(comp_a, ref.app_completion)
        np.testing.assert_array_equal(missed_a, ref.app_missed)
    else:
        assert not seen_a.any()
    assert run.heartbeat_edges == ref.heartbeat_edges
    # the records tell the truth about the pins: answered pulses are served in order
    e = np.asarray(edges)
    ok = ~ref.isr_missed
    np.testing.assert_array_equal(np.asarray(run.rises["isr"]) - e[ok], ref.isr_latency[ok])
    np.testing.assert_array_equal(np.asarray(run.falls["isr"]) - e[ok], ref.isr_completion[ok])
    if params.app:
        ok = ~ref.app_missed
        np.testing.assert_array_equal(np.asarray(run.rises["app"]) - e[ok], ref.app_latency[ok])
        np.testing.assert_array_equal(np.asarray(run.falls["app"]) - e[ok], ref.app_completion[ok])
    return ref


def _jittered(period, count, spread, seed):
    rng = np.random.default_rng(seed)
    return periodic_edges(period, count, extra=rng.integers(0, spread, count), start=2)


REFERENCE_CASES = {
    # name: (params, edges, high, load)
    "plain, slow pulses": (P(), periodic_edges(40, 12, start=1), 3, False),
    "overrun: latch and event losses": (
        P(isr_entry=7, isr_service=6, app_wake=9, app_service=8), periodic_edges(11, 25), 2, False),
    "jitter": (P(isr_entry=3, isr_jitter=17, isr_service=4, seed=0x1234_5679),
               _jittered(19, 40, 6, 1), 1, False),
    "kernel tick": (P(isr_entry=4, isr_service=5, tick_period=37, tick_service=9),
                    _jittered(23, 30, 9, 2), 4, False),
    "load round-robin": (P(isr_entry=4, isr_service=3, app_wake=5, app_service=4,
                           load_quantum=13, heartbeat_work=3), _jittered(31, 25, 20, 3), 2, True),
    "everything": (P(isr_entry=5, isr_jitter=9, isr_service=4, app_wake=6, app_service=7,
                     load_quantum=11, heartbeat_work=5, tick_period=53, tick_service=6,
                     seed=0xDEAD_BEEF), _jittered(21, 45, 15, 4), 1, True),
    "no app, load, tick": (P(app=False, isr_entry=2, isr_jitter=4, isr_service=9,
                             tick_period=29, tick_service=3, load_quantum=7,
                             heartbeat_work=2), _jittered(13, 30, 8, 5), 1, True),
}


@pytest.mark.parametrize("name", REFERENCE_CASES)
def test_matches_reference(name):
    params, edges, high, load = REFERENCE_CASES[name]
    ref = check_against_reference(params, edges, high=high, load=load)
    assert ref.pulses == len(edges)


def test_reference_cases_exercise_what_they_claim():
    # guard against a case silently losing its point after a parameter edit
    r = {k: simulate(p, e, high=h, load=ld) for k, (p, e, h, ld) in REFERENCE_CASES.items()}
    assert r["overrun: latch and event losses"].isr_missed.any()
    ov = r["overrun: latch and event losses"]
    assert (ov.app_missed & ~ov.isr_missed).any()
    assert len(set(r["jitter"].isr_latency.tolist())) > 5
    assert r["load round-robin"].heartbeat_edges > 20
    assert r["everything"].app_missed.any() and r["everything"].heartbeat_edges > 0


def recs(run, ch):
    lat, comp, missed, _ = run.channel(ch)
    return lat.tolist(), comp.tolist(), missed.tolist()


def test_pending_latch_loses_third_edge():
    # C = 10 + 5. Edge 0 is served at once; edge 4 waits in the latch and is taken at
    # 15; edge 8 finds the latch set and is lost. Edge 15 arrives in the cycle the
    # latch is taken: it sets the latch again (not lost) and is served from 30.
    run = run_model(P(app=False), [0, 4, 8, 15], cycles=50)
    assert run.rises["isr"] == [10, 25, 40]
    assert run.falls["isr"] == [15, 30, 45]
    assert recs(run, TruthChannel.ISR) == ([10, 21, -1, 25], [15, 26, -1, 30],
                                           [False, False, True, False])
    assert recs(run, TruthChannel.APP) == ([-1] * 4, [-1] * 4, [False] * 4)
    assert run.rises["app"] == []


def test_lost_pulse_also_misses_app():
    run = run_model(P(isr_entry=10, isr_service=5), [0, 4, 8], cycles=80)
    assert recs(run, TruthChannel.APP)[2] == [False, False, True]


def test_app_event_loss_and_isr_preempting_app():
    # ISRs (2 + 2) at 0, 6, 12, 18. APP job 0 is ready at 4 and gets cycles 4-5,
    # 10-11, 16-17, 22-25 (10 wake ticks), so app_out rises at 26 and falls at 36.
    # Pulse 1's event waits; pulses 2 and 3 find the event still set: lost.
    # Job 1 then runs 36-45 (wake), 46-55 (service).
    run = run_model(P(isr_entry=2, isr_service=2, app_wake=10, app_service=10),
                    [0, 6, 12, 18], high=3, cycles=70)
    assert recs(run, TruthChannel.ISR) == ([2] * 4, [4] * 4, [False] * 4)
    assert run.rises["app"] == [26, 46] and run.falls["app"] == [36, 56]
    assert recs(run, TruthChannel.APP) == ([26, 40, -1, -1], [36, 50, -1, -1],
                                           [False, False, True, True])


def test_tick_delays_isr_and_wins_no_tie():
    # tick every 20 ticks costs 7: fires at 20, 40, 60.
    # edge 22: tick runs 20-26, ISR entry 27-29 -> latency 8.
    # edge 40 coincides with the tick: the ISR goes first (40-44), tick 45-51.
    # edge 46 waits for that tick: ISR from 52, rises 55 -> latency 9.
    run = run_model(P(app=False, isr_entry=3, isr_service=2, tick_period=20, tick_service=7),
                    [22, 40, 46], cycles=70)
    assert run.rises["isr"] == [30, 43, 55]
    assert recs(run, TruthChannel.ISR)[0] == [8, 3, 9]


def test_tick_preempts_app_service():
    # ISR 12-16, APP wake 17-20, app_out up at 21; the tick at 30 (7 ticks) stops
    # APP for 7 cycles with app_out held high: falls at 38 instead of 31.
    run = run_model(P(isr_entry=3, isr_service=2, app_wake=4, app_service=10,
                      tick_period=30, tick_service=7), [12], cycles=50)
    assert run.rises["app"] == [21] and run.falls["app"] == [38]
    assert recs(run, TruthChannel.APP)[:2] == ([9], [26])


def test_app_waits_for_load_quantum():
    # LOAD holds the CPU with a 10-tick quantum from cycle 0. Edge 5: ISR 5-8; APP is
    # ready at 9 but LOAD still has 5 ticks of quantum (9-13); APP wakes 14-16,
    # app_out 17-20. LOAD (one heartbeat toggle per tick of work) gets every other
    # cycle of 0..39: 40 - 4 (ISR) - 7 (APP) = 29 toggles.
    params = P(isr_entry=2, isr_service=2, app_wake=3, app_service=4, load_quantum=10,
               heartbeat_work=1)
    run = run_model(params, [5], load=True, cycles=40)
    assert run.rises["app"] == [17] and run.falls["app"] == [21]
    assert run.heartbeat_edges == 29
    # unloaded, APP runs as soon as the ISR ends
    run = run_model(params, [5], load=False, cycles=40)
    assert run.rises["app"] == [12] and run.heartbeat_edges == 0


def test_queued_app_job_yields_to_a_fresh_quantum():
    # Two pulses close together: job 0 waits for LOAD's quantum (as above), job 1
    # was queued in the event and waits for a fresh full quantum after job 0.
    params = P(isr_entry=2, isr_service=2, app_wake=3, app_service=4, load_quantum=10,
               heartbeat_work=1)
    run = run_model(params, [5, 8], load=True, cycles=60)
    # ISR 1: 9-12. LOAD 13-17 finishes its quantum, job 0 18-24 (rise 21, fall 25),
    # LOAD 25-34, job 1 35-41 (rise 38, fall 42).
    assert run.rises["app"] == [21, 38] and run.falls["app"] == [25, 42]


def test_heartbeat_rate_with_tick():
    # No stimulus, 700 cycles, a toggle every 7 ticks of LOAD work: 100 toggles;
    # a tick of 10 every 50 (fires 50..650, 13 times) leaves 570 ticks: 81 toggles.
    assert run_model(P(heartbeat_work=7), [], load=True, cycles=700).heartbeat_edges == 100
    run = run_model(P(heartbeat_work=7, tick_period=50, tick_service=10), [], load=True,
                    cycles=700)
    assert run.heartbeat_edges == 81
    assert run_model(P(heartbeat_work=7), [], load=False, cycles=100).heartbeat_edges == 0


def test_jitter_follows_reference_sequence():
    from rtrig.host.model.reference import jitter_sequence
    params = P(isr_entry=4, isr_jitter=20, isr_service=3, app=False, seed=0xACE1_2345)
    edges = periodic_edges(40, 20)
    run = run_model(params, edges, cycles=20 * 40)
    expect = 4 + jitter_sequence(params.seed, 20, 20)
    assert recs(run, TruthChannel.ISR)[0] == expect.tolist()
    assert len(set(expect.tolist())) > 8


def test_ready_low_counts_overflow_without_stalling():
    # Three slow pulses with the consumer not ready until cycle 150: pulse 0's ISR
    # and APP records wait in their slots; the four records of pulses 1 and 2 are
    # dropped and counted. The pins keep working.
    run = run_model(P(), [0, 40, 80], cycles=160, ready=lambda k: k >= 150)
    assert run.overflow == 4
    assert run.rises["isr"] == [10, 50, 90]
    assert sorted(run.records) == [(0, TruthChannel.ISR, 0, 10, 15),
                                   (0, TruthChannel.APP, 0, 23, 29)]


def test_soft_reset_mid_run():
    dut = ModelTarget()
    params = P(isr_entry=5, isr_service=20)
    seen = []

    async def bench(ctx):
        for name, value in params.gateware_ports().items():
            ctx.set(getattr(dut, name), value)
        ctx.set(dut.truth.ready, 1)
        ctx.set(dut.reset, 1)
        await ctx.tick().repeat(PARAM_SETTLE)      # parameters settle while in reset
        ctx.set(dut.reset, 0)
        ctx.set(dut.irq, 1)
        await ctx.tick().repeat(10)
        assert ctx.get(dut.isr_out) == 1
        ctx.set(dut.irq, 0)
        ctx.set(dut.reset, 1)
        await ctx.tick()
        ctx.set(dut.reset, 0)
        assert ctx.get(dut.isr_out) == 0 and ctx.get(dut.truth.valid) == 0
        await ctx.tick()
        ctx.set(dut.irq, 1)     # edge at cycle 1 after the second reset
        for _ in range(40):
            if ctx.get(dut.truth.valid):
                seen.append(ctx.get(dut.truth.payload))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    isr = [(p.pulse, p.latency, p.completion) for p in seen if p.channel == TruthChannel.ISR]
    assert isr == [(0, 5, 25)]
