# SPDX-License-Identifier: BSD-2-Clause
"""A suite firmware of one's own (firmware/examples/own-suite, docs/suite.md, "Timing
your own firmware") on the SoC twin: a bare-metal loop, no rtrig kernel, that runs
tests 3, 12 and 1 in that order. Every row comes out under the name the firmware's
TRACE BEGIN word gives, never the mask's order, and agrees with the firmware's own
count; a firmware that skips a test, frames a test with another index or never begins
is reported as such, per test, never as another test's figures.

The broken firmwares are the example built with one -D switch each; every image runs
on the one SoC twin build (the twin reads its RAM image at start).
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from rtrig import load
from rtrig.errors import LinkError
from rtrig.host import open_rig
from rtrig.host.procedures.suite import patch_config, run_suite, wait_ready
from rtrig.host.report.suite import suite_iterations

ROOT = Path(__file__).resolve().parents[2]
CC = "riscv64-unknown-elf-gcc"
EXAMPLE = ROOT / "firmware" / "examples" / "own-suite"
ITERATIONS = 20



#: How far, in SoC cycles, the SoC twin's rig figure may be from the self-timed count:
#: one SoC cycle (the rig takes the SoC's outputs at every tick).
SOC_TOLERANCE_CYCLES = 1.0

pytestmark = pytest.mark.skipif(shutil.which(CC) is None,
                                reason="no RISC-V compiler (make -C firmware toolchains)")


def build(out, *defs):
    """The example, compiled with ``defs`` (``-D…``) as the Makefile compiles it."""
    elf, binary = out / "own_suite.elf", out / "own_suite.bin"
    subprocess.run([CC, "-march=rv32im_zicsr", "-mabi=ilp32", "-Os", "-ffreestanding",
                    "-nostdlib", "-Wall", "-Wextra", "-Werror",
                    f"-I{ROOT / 'firmware' / 'apps' / 'suite'}", *defs,
                    "-T", str(EXAMPLE / "link.ld"), "-Wl,--no-warn-rwx-segments",
                    "-o", str(elf), str(EXAMPLE / "own_suite.c")], check=True)
    subprocess.run([CC.replace("gcc", "objcopy"), "-O", "binary", str(elf), str(binary)],
                   check=True)
    return binary


def run(tmp_path, tests, *defs, stall_s=30.0):
    """``tests`` asked of the example built with ``defs``, on a twin of its own."""
    image = tmp_path / "patched.bin"
    image.write_bytes(patch_config(build(tmp_path, *defs).read_bytes(), ITERATIONS, tests))
    with open_rig(sim=True, soc=True, firmware=str(image)) as rig:
        wait_ready(rig)
        return run_suite(rig, tmp_path / "s.rtrig", tests, ITERATIONS, trace=rig.sim.trace,
                         progress=False, stall_s=stall_s)


def test_the_example_runs_its_own_order_named_by_its_trace_words(tmp_path):
    # asked in table order (1, 3, 12); the firmware runs 3, 12, 1
    res = run(tmp_path, ("sem_uncontended", "mutex_uncontended", "isr_to_ist"))
    assert res.final["status"] == "complete" and "trace_error" not in res.final
    rows = ["mutex_uncontended", "isr_to_ist.isr", "isr_to_ist.ist", "sem_uncontended"]
    assert list(res.tests) == rows
    assert res.final["suite"]["mismatch"] == {}
    assert res.final["suite"]["order"] == ["mutex_uncontended", "isr_to_ist",
                                           "sem_uncontended"]
    for name, t in res.tests.items():
        assert t["count"] == ITERATIONS and t["missed"] == 0, name
        # the header's default marker on rtrig-soc: rig = 2.4 × count ticks (+ 6 cycles
        # from a pulse), iteration by iteration, within a SoC cycle
        assert t["self_timed"]["agree"], (name, t)
        assert t["self_timed"]["max_diff_cycles"] <= SOC_TOLERANCE_CYCLES, (name, t)
    # the report and the CSV export cut the file the same way
    per_test, cycles = suite_iterations(load(res.path))
    assert list(per_test) == rows and sorted(cycles) == sorted(rows)


def test_a_test_asked_for_and_never_begun_is_reported_not_renamed(tmp_path):
    res = run(tmp_path, ("sem_uncontended", "mutex_uncontended"), "-DOWN_SUITE_SKIP")
    assert res.final["status"] == "complete"
    assert list(res.tests) == ["mutex_uncontended"]
    assert res.tests["mutex_uncontended"]["self_timed"]["agree"]
    assert res.final["suite"]["mismatch"] == {
        "sem_uncontended": "sem_uncontended asked for, never begun"}


def test_a_test_framed_with_another_index_is_named_by_that_index(tmp_path):
    # sem_uncontended's iterations under index 5: they are critical_section's rows
    # for the host, and both mismatches are said
    res = run(tmp_path, ("sem_uncontended", "mutex_uncontended"),
              "-DOWN_SUITE_WRONG_INDEX=5")
    assert list(res.tests) == ["mutex_uncontended", "critical_section"]
    assert all(t["self_timed"]["agree"] for t in res.tests.values())
    assert res.final["suite"]["mismatch"] == {
        "critical_section": "firmware ran critical_section, not asked for",
        "sem_uncontended": "sem_uncontended asked for, never begun"}


def test_a_firmware_that_never_begins_is_diagnosed_from_what_was_seen(tmp_path):
    with pytest.raises(LinkError) as err:
        run(tmp_path, ("sem_uncontended", "mutex_uncontended"), "-DOWN_SUITE_NEVER_BEGIN",
            stall_s=10.0)
    text = str(err.value)
    assert "no test began" in text
    assert "no TRACE word since the go pulse" in text and "no marker edge" in text
    assert "TRACE BEGIN" in err.value.hint and "make -C firmware" not in err.value.hint
