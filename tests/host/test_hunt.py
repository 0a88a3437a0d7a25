# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig hunt`` (host/procedures/hunt.py): the worst phase of the target's tick found
with few pulses, against the truth of the model's reference probed at every phase,
and on the twin a recipe that replays the worst pulse."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import rtrig
from rtrig.host.cli.main import cli
from rtrig.host.model.common import ModelParams
from rtrig.host.procedures.hunt import ModelProbe, hunt, probe_period

# 120 MHz ticks: entry 1000 ns, service 2000 ns, a 100 µs tick serviced for 5000 ns
PARAMS = ModelParams(isr_entry=120, isr_service=240, tick_period=12000, tick_service=600,
                     app=False)


def _truth(start):
    probe = ModelProbe(PARAMS, 1, "isr", start=start)
    lat = [probe(probe_period(ph, 12000, 24000, 1), 2, False)[1][1]
           for ph in range(12000)]
    return int(max(lat))


def test_a_probe_lands_its_second_pulse_at_the_phase_asked():
    for phase in (0, 4, 11996, 6000):
        t = probe_period(phase, 12000, 5000, 4)
        assert t % 4 == 0 and t >= 5000 and t % 12000 == phase


@pytest.mark.parametrize("start", [0, 5555])
def test_the_hunt_reaches_the_worst_phase_with_few_pulses(start):
    truth = _truth(start)
    assert truth == 600 + 120 - 1                 # tick service + entry − 1 tick
    res = hunt(ModelProbe(PARAMS, 4, "isr", start=start), 12000, 4, 12000, 128, 120e6)
    # to one stimulus step (4 ticks): the probes move in steps
    assert truth - 3 <= res.worst_ticks <= truth
    # a uniformly spread pulse lands in that step with probability 4 / 12000
    assert res.pulses <= 0.1 * 12000 / 4
    assert res.phase_ticks % 4 == 0 and (res.phase_ticks, res.worst_ticks) in res.probes


def test_without_the_tick_the_hunt_finds_the_flat_worst():
    flat = ModelParams(isr_entry=120, isr_service=240, app=False)
    res = hunt(ModelProbe(flat, 4, "isr"), 12000, 4, 12000, 64, 120e6)
    assert res.worst_ticks == 120 and res.pilot_worst_ticks == 120


@pytest.mark.xdist_group("twin-hunt")
def test_the_twin_hunt_writes_a_recipe_that_replays_the_worst(tmp_path):
    recipe = tmp_path / "worst.rtrig"
    model = "isr_entry=1us,isr_service=2us,tick_period=20us,tick_service=2us,app=0"
    res = CliRunner().invoke(cli, ["--sim", "hunt", "--model", model, "--freq", "40k",
                                   "--pilot", "128", "-q", "--json", "-o", str(recipe)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    tick_ns = 1e9 / 120e6
    # the truth on this model: the tick's 2 µs service and the 1 µs entry, less a tick;
    # the hunt is within one stimulus step (4 ticks) of it
    truth = 240 + 120 - 1
    assert truth - 3 <= round(out["worst_ns"] / tick_ns) <= truth
    assert out["pulses"] == out["runs"] * 2 - 2 + 128
    rec = rtrig.load(recipe).channel("isr")
    assert round(rec["latency"][1]) == round(out["worst_ns"] / tick_ns)
    again = tmp_path / "again.rtrig"
    res = CliRunner().invoke(cli, ["--sim", "capture", "--replay", str(recipe), "-q",
                                   "-o", str(again)])
    assert res.exit_code == 0, res.output
    assert np.array_equal(rtrig.load(again).channel("isr")["latency"], rec["latency"])


@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                    reason="no RISC-V firmware toolchain")
@pytest.mark.xdist_group("twin-hunt-soc")
def test_the_soc_hunt_finds_a_pulse_that_explain_lays_to_the_kernel_tick(tmp_path):
    recipe = tmp_path / "worst.rtrig"
    res = CliRunner().invoke(cli, ["--sim", "hunt", "--target", "soc", "--freq", "2k",
                                   "--pilot", "64", "-q", "--json", "-o", str(recipe)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # worse than any pulse of the evenly spread pilot: a phase it did not meet
    assert out["worst_ns"] > out["pilot_worst_ns"]
    rec, again = tmp_path / "worst.rec", tmp_path / "again.rtrig"
    env = dict(os.environ, RTRIG_SOC_RECORD=str(rec))
    r = subprocess.run([sys.executable, "-m", "rtrig", "--sim", "capture", "--replay",
                        str(recipe), "-q", "-o", str(again)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lat = rtrig.load(again).channel("isr")["latency"]
    assert round(lat[1] * 1e9 / 120e6) == round(out["worst_ns"])
    r = subprocess.run([sys.executable, "-m", "rtrig", "explain", "-n", "1", "--channel",
                        "isr", "--recording", str(rec), str(again)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("isr pulse 1: "), r.stdout
    cats = next(ln for ln in lines if ln.strip().startswith("categories:"))
    assert "kernel tick" in cats, r.stdout
