"""The kernel suite (firmware/apps/suite, docs/suite.md) on the SoC twin, run by
:func:`rtrig.host.suite.run_suite` as ``rtrig suite`` runs it: the TRACE framing, one
MARKER2 pulse per test, every iteration's rig interval MARKER0↑→MARKER1↑ against the
firmware's own mcycle count (±1 SoC cycle), and the priority-inversion bounds the test
programs set (known spins)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from rtrig import load
from rtrig.firmware import FIRMWARE_DIR, SUITE_IMAGE
from rtrig.host import open_rig
from rtrig.host.suite import TESTS, parse_trace, patch_config, run_suite, wait_ready
from rtrig.protocol import Reg

FIRMWARE = FIRMWARE_DIR / SUITE_IMAGE

pytestmark = [
    pytest.mark.skipif(
        shutil.which("riscv64-unknown-elf-gcc") is None and not FIRMWARE.exists(),
        reason="no RISC-V firmware toolchain (make -C firmware toolchains) and no built image"),
]

ITERATIONS = 6


@pytest.fixture(scope="module")
def suite_rig(tmp_path_factory):
    subprocess.run(["make", "-C", str(FIRMWARE_DIR), "-s", SUITE_IMAGE], check=True,
                   capture_output=True)
    image = tmp_path_factory.mktemp("suite") / "suite.bin"
    image.write_bytes(patch_config(FIRMWARE.read_bytes(), ITERATIONS, TESTS))
    with open_rig(sim=True, soc=True, firmware=str(image)) as rig:
        wait_ready(rig)
        yield rig


def test_suite_iterations_agree_with_the_targets_own_counts(suite_rig, tmp_path):
    res = run_suite(suite_rig, tmp_path / "s.rtrig", iterations=ITERATIONS,
                    trace=suite_rig.sim.trace, progress=False)
    assert res.final["status"] == "complete" and "trace_error" not in res.final
    assert list(res.tests) == list(TESTS)
    for name, t in res.tests.items():
        assert t["count"] == ITERATIONS and t["missed"] == 0, name
        # rig ticks = 2 × mcycle count, iteration by iteration (no fixed offset)
        assert t["self_timed"]["agree"] and t["self_timed"]["iterations"] == ITERATIONS, name
        assert t["self_timed"]["max_diff_cycles"] <= 1, name
    cycles = res.final["suite"]["self_timed_cycles"]
    # Inheritance bounds H's wait by L's critical section (1000 cycles) plus the
    # kernel's block and hand-off; without it M's 4000-cycle spin and its switches add.
    pi = sorted(cycles["priority_inversion"])[ITERATIONS // 2]
    no_pi = sorted(cycles["priority_inversion_no_pi"])[ITERATIONS // 2]
    assert 1000 <= pi < 1000 + 4000 // 2, (pi, no_pi)
    assert 4000 <= no_pi - pi < 4000 + 1000, (pi, no_pi)
    # the file holds what the result says: one MARKER2 pulse per test
    cap = load(res.path)
    assert cap.meta["mode"] == "suite" and cap.final["suite"]["tests"] == res.tests
    assert (cap.events["input"] == 5).sum() == 2 * len(TESTS)

    # A second go pulse runs the whole suite again, without a reset (the same twin, in
    # this same test: a test of its own could get a twin of its own); LOAD_EN high at
    # a test's start marks it loaded (and LOAD toggles HEARTBEAT).
    res = run_suite(suite_rig, tmp_path / "l.rtrig", iterations=ITERATIONS, load=True,
                    trace=suite_rig.sim.trace, progress=False)
    assert all(t["count"] == ITERATIONS for t in res.tests.values())
    words = [int(w) for w in Path(suite_rig.sim.trace).read_text().split()]
    runs = parse_trace(words)
    assert len(runs) == 2 and all(t["loaded"] for t in runs[-1])
    assert not any(t["loaded"] for t in runs[0])
    assert suite_rig.link.read1(Reg.HB_COUNT) > 0, "LOAD toggled HEARTBEAT"
