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

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "firmware" / "build" / "rtrig-soc"

pytestmark = pytest.mark.skipif(
    shutil.which("riscv64-unknown-elf-gcc") is None
    and not (BUILD / "canary_thread.bin").exists(),
    reason="no RISC-V firmware toolchain (make -C firmware toolchains) and no built image")


def _run_until_halt(image, seconds=120):
    """The SoC console once the image halted (its SIM_EXIT line) or ``seconds`` passed."""
    with open_rig(sim=True, soc=True, firmware=str(image)) as rig:
        t0 = time.monotonic()
        text = ""
        while time.monotonic() - t0 < seconds:
            text = rig.sim.console.read_text(errors="replace") if rig.sim.console.exists() else ""
            if "SIM_EXIT" in text:
                break
            time.sleep(0.2)
    return text


@pytest.mark.parametrize("image, owner_prio", [
    ("canary_thread.bin", 7),      # the victim thread, switched out by its yield
    ("canary_idle.bin", 255),      # the idle thread (K_NUM_PRIO - 1), in its own loop
])
def test_a_broken_canary_halts_the_kernel(image, owner_prio):
    text = _run_until_halt(BUILD / image)
    assert "canary: breaking" in text, text
    assert "not detected" not in text, text
    assert f"PANIC 0x000000E1 detail {owner_prio}" in text, text
    assert "SIM_EXIT 225" in text, text
