# SPDX-License-Identifier: BSD-2-Clause
"""The kernel on the simulated SoC, without the rig's stimulus.

The self-test (``apps/selftest``, the kernel tests that QEMU runs for Cortex-M) on the
riscv32 port: its trap path (the ISR called from the trap entry, nesting, the
switch's windows) under interrupts that ``board_irq_trigger`` raises itself.

The stack checks (docs/kernel.md; their history: docs/kernel-history.md, round 6): the
switch checks the outgoing thread's canary in its open window (``riscv_check_stack`` in trap.S), and the idle thread
checks its own before each wait. ``apps/canary`` breaks one canary word and gives up
the CPU; the kernel must halt with K_ERR_STACK_OVERFLOW (0xE1) and the owner's
priority, not run on ("canary: not detected", exit 1)."""

import re
import shutil
import time
from pathlib import Path

import pytest

from rtrig.host import open_rig
from rtrig.host.sim.console import read_console

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "firmware" / "build" / "rtrig-soc"

pytestmark = pytest.mark.skipif(
    shutil.which("riscv64-unknown-elf-gcc") is None
    and not (BUILD / "canary_thread.bin").exists(),
    reason="no RISC-V firmware toolchain (make -C firmware toolchains) and no built image")


def _run_until_halt(image, seconds=120):
    """``(exit_code, console lines)`` once the image ended (``SIM_EXIT``) or ``seconds``
    passed (exit code None)."""
    with open_rig(sim=True, soc=True, firmware=str(image)) as rig:
        t0 = time.monotonic()
        code, lines = read_console(rig.sim.console)
        while code is None and time.monotonic() - t0 < seconds:
            time.sleep(0.2)
            code, lines = read_console(rig.sim.console)
    return code, lines


def test_kernel_selftest_passes_on_the_soc():
    code, lines = _run_until_halt(BUILD / "selftest.bin", seconds=300)
    summary = [m for ln in lines if (m := re.match(r"selftest: PASS, (\d+) of (\d+) tests passed", ln))]
    assert code == 0 and summary, lines[-20:]
    passed, total = (int(x) for x in summary[0].groups())
    assert passed == total >= 16, lines
    assert not [ln for ln in lines if ln.startswith("FAIL")], lines
    # The interrupt tests ran on this port's trap path, not only the thread tests.
    assert {"PASS isr_wakes_ist", "PASS nested_interrupts"} <= set(lines), lines


@pytest.mark.parametrize("image, owner_prio", [
    ("canary_thread.bin", 7),      # the victim thread, switched out by its yield
    ("canary_idle.bin", 255),      # the idle thread (K_NUM_PRIO - 1), in its own loop
])
def test_a_broken_canary_halts_the_kernel(image, owner_prio):
    code, lines = _run_until_halt(BUILD / image)
    assert any(ln.startswith("canary: breaking") for ln in lines), lines
    assert "canary: not detected" not in lines, lines
    assert f"PANIC 0x000000E1 detail {owner_prio}" in lines, lines
    assert code == 0xE1, (code, lines)
