"""Simulation tests of the model target against exact cycle counts and against the
cycle-exact Python reference (``rtrig.host.model_ref``)."""

import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtrig.gateware.model import ModelTarget, TruthChannel
from rtrig.host.model_ref import ModelParams, periodic_edges, simulate


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
        await ctx.tick()
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
