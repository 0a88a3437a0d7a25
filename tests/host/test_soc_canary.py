"""The riscv32 port's stack checks on the simulated SoC (docs/kernel.md, round 6): the
switch checks the outgoing thread's canary in its open window (``riscv_check_stack``
in trap.S), and the idle thread checks its own before each wait. ``apps/canary``
breaks one canary word and gives up the CPU; the kernel must halt with
K_ERR_STACK_OVERFLOW (0xE1) and the owner's priority, not run on ("canary: not
detected", exit 1)."""

import shutil
import time
from pathlib import Path

import pytest

from rtrig.host import open_rig
from rtrig.host.soc_console import read_console

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
