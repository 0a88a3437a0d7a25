# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the armed start (gateware/run_arm.py) in front of both stimulus
generators: a run starts at the rig time the host chose, whenever its write lands."""

import pytest
from amaranth import Module, Signal
from simrun import edges, run

from rtrig.gateware.run_arm import ARM_HOLD_LEAD, RunArm
from rtrig.gateware.stimulus_generator import StimulusGenerator
from rtrig.gateware.stimulus_generator_lean import LeanStimulusGenerator

STEP = 4



def armed_trace(at_cycle, lead_cycles, arm_cycle, gen_cls=StimulusGenerator, cycles=120,
                restart=1, stop_cycle=None, built_with_restart=True):
    arm, gen = RunArm(STEP, restart=built_with_restart), gen_cls()
    m = Module()
    m.submodules.arm, m.submodules.gen = arm, gen
    now = Signal(48)
    m.d.sync += now.eq(now + STEP)
    m.d.comb += [arm.now.eq(now), gen.start.eq(arm.start), arm.running.eq(gen.running)]
    s0, hold, armed = [], [], []

    async def tb(ctx):
        ctx.set(gen.period, 10)
        ctx.set(gen.high, 3)
        ctx.set(gen.count, 2)
        ctx.set(arm.at, at_cycle * STEP + 3)     # low bits below a cycle are ignored
        ctx.set(arm.lead, lead_cycles * STEP)
        ctx.set(arm.restart, restart)
        for c in range(cycles):
            ctx.set(arm.arm, c == arm_cycle)
            ctx.set(arm.stop, c == stop_cycle)
            assert ctx.get(now) == c * STEP
            s0.append(ctx.get(gen.stim0))
            hold.append(ctx.get(arm.hold))
            armed.append(ctx.get(arm.armed))
            await ctx.tick()

    run(m, tb, "run_arm")
    return s0, hold, armed


@pytest.mark.parametrize("gen_cls", [StimulusGenerator, LeanStimulusGenerator])
@pytest.mark.parametrize("arm_cycle", [3, 17, 41])
@pytest.mark.parametrize("lead", [0, 1, 9])
def test_the_first_pulse_rises_at_run_at_plus_lead_whenever_armed(gen_cls, arm_cycle, lead):
    at = 50
    s0, hold, armed = armed_trace(at, lead, arm_cycle, gen_cls)
    rises = [c for c, v in edges(s0) if v]
    assert rises == [at + lead, at + lead + 10]
    # The target is held from the cycle after the arm to ARM_HOLD_LEAD cycles before T.
    held = [c for c, v in enumerate(hold) if v]
    assert held == list(range(arm_cycle + 1, at - ARM_HOLD_LEAD))
    assert [c for c, v in enumerate(armed) if v] == list(range(arm_cycle + 1, at + lead - 1))


@pytest.mark.parametrize("gen_cls", [StimulusGenerator, LeanStimulusGenerator])
@pytest.mark.parametrize("arm_cycle", [3, 17, 41])
def test_a_rig_without_an_internal_target_starts_at_run_at_and_holds_nothing(gen_cls,
                                                                            arm_cycle):
    at = 50
    # Built without the restart, the lead and RESTART are ignored.
    s0, hold, armed = armed_trace(at, 9, arm_cycle, gen_cls, built_with_restart=False)
    assert [c for c, v in edges(s0) if v] == [at, at + 10]
    assert not any(hold)
    assert [c for c, v in enumerate(armed) if v] == list(range(arm_cycle + 1, at - 1))


def test_a_lean_arm_too_late_never_starts_and_stop_disarms_it():
    s0, _, armed = armed_trace(20, 0, 30, cycles=80, stop_cycle=70,
                               built_with_restart=False)
    assert not any(s0)
    assert armed[69] and not armed[72]


def test_without_restart_nothing_is_held():
    _, hold, _ = armed_trace(40, 0, 5, restart=0)
    assert not any(hold)


def test_a_run_armed_too_late_never_starts_and_stop_disarms_it():
    s0, hold, armed = armed_trace(20, 0, 30, cycles=80, stop_cycle=70)
    assert not any(s0)
    assert armed[69] and not armed[72] and not hold[72]
