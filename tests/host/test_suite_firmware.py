"""The kernel suite firmware (firmware/apps/suite, docs/suite.md) on the SoC twin: its
TRACE framing, its marker protocol as the rig sees it in raw events, and every
iteration's rig interval MARKER0↑→MARKER1↑ against the firmware's own mcycle count,
±1 SoC cycle (helpers: firmware/tools/suite_raw.py)."""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rtrig.host import open_rig
from rtrig.protocol import Reg

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("suite_raw",
                                               ROOT / "firmware" / "tools" / "suite_raw.py")
sr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sr)

pytestmark = pytest.mark.skipif(
    shutil.which("riscv64-unknown-elf-gcc") is None and not sr.FIRMWARE.exists(),
    reason="no RISC-V firmware toolchain (make -C firmware toolchains) and no built image")

ITERATIONS = 6


@pytest.fixture(scope="module")
def suite_rig(tmp_path_factory):
    if not sr.FIRMWARE.exists():
        subprocess.run(["make", "-C", str(ROOT / "firmware"), "all"], check=True,
                       capture_output=True)
    image = tmp_path_factory.mktemp("suite") / "suite.bin"
    image.write_bytes(sr.patch_config(sr.FIRMWARE.read_bytes(), iterations=ITERATIONS))
    with open_rig(sim=True, soc=True, firmware=str(image)) as rig:
        sr.wait_ready(rig)
        yield rig


def test_suite_framing_and_self_timing(suite_rig):
    words, events = sr.run_suite(suite_rig)
    (run,) = sr.parse_trace(words)
    assert [t for t, _, _ in run] == list(range(len(sr.TESTS)))
    assert all(not loaded for _, loaded, _ in run)
    assert all(len(counts) == ITERATIONS for _, _, counts in run)
    rig = sr.intervals(events)
    assert len(rig) == len(sr.TESTS), "one MARKER2 pulse per test"
    for (test, _, counts), ticks in zip(run, rig):
        assert len(ticks) == ITERATIONS, sr.TESTS[test]
        diff = np.array(ticks) - sr.TICKS_PER_CYCLE * np.array(counts)
        assert np.abs(diff).max() <= sr.TICKS_PER_CYCLE, (sr.TESTS[test], counts, ticks)
    # Ground truth the comparison could miss: inheritance bounds the wait by L's
    # critical section (1000 cycles) plus the kernel's block and hand-off; without it
    # M's spin (4000 cycles) and its switches add (docs/suite.md).
    pi, no_pi = np.median(run[10][2]), np.median(run[11][2])
    assert 1000 <= pi < 1000 + 4000 // 2, (pi, no_pi)
    assert 4000 <= no_pi - pi < 4000 + 1000, (pi, no_pi)


def test_suite_runs_again_on_the_next_go_pulse(suite_rig):
    """A second go pulse runs the whole suite again, without a reset; LOAD_EN high at a
    test's start marks it loaded."""
    words, _ = sr.run_suite(suite_rig, load=True)
    (run,) = sr.parse_trace(words)
    assert len(run) == len(sr.TESTS)
    assert all(loaded for _, loaded, _ in run)
    assert suite_rig.link.read1(Reg.HB_COUNT) > 0, "LOAD toggled HEARTBEAT"


def test_parse_trace_rejects_broken_framing():
    ok = [0x5E000003, 5, 6, 0x5EFF0003, 0x5EFFFFFF]
    assert sr.parse_trace(ok) == [[(3, False, [5, 6])]]
    for bad in ([0x5E000003, 5, 0x5EFF0004, 0x5EFFFFFF],      # END of another test
                [5, 0x5EFFFFFF],                               # count outside a test
                [0x5E000003, 5, 0x5EFFFFFF]):                  # run ends inside a test
        with pytest.raises(AssertionError):
            sr.parse_trace(bad)
