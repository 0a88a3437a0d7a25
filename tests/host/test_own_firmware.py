# SPDX-License-Identifier: BSD-2-Clause
"""A user's own firmware on the simulated SoC (docs/own-firmware.md): a firmware that
ends (``SIM_EXIT``) or never answers is a one-line error with a non-zero exit, not a
"complete" capture of missed pulses; ``--console FILE`` keeps the SoC's console, and
the run's temporary files are removed.

One tiny image (``firmware/ends_on_load.c``: silent, and ending with ``SIM_EXIT 66``
once LOAD_EN rises) is compiled per session; it runs on the SoC twin's one build.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CC = "riscv64-unknown-elf-gcc"
SOURCE = Path(__file__).with_name("firmware") / "ends_on_load.c"
LINK = ROOT / "firmware" / "examples" / "own" / "link.ld"

pytestmark = pytest.mark.skipif(shutil.which(CC) is None,
                                reason="no RISC-V compiler (make -C firmware toolchains)")


@pytest.fixture(scope="session")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("fw")
    elf, binary = out / "ends_on_load.elf", out / "ends_on_load.bin"
    subprocess.run([CC, "-march=rv32im_zicsr", "-mabi=ilp32", "-Os", "-ffreestanding",
                    "-nostdlib", "-T", str(LINK), "-Wl,--no-warn-rwx-segments",
                    "-o", str(elf), str(SOURCE)], check=True)
    subprocess.run([CC.replace("gcc", "objcopy"), "-O", "binary", str(elf), str(binary)],
                   check=True)
    return binary


def capture(image, tmp_path, *extra, command=("capture", "--freq", "5k", "--count", "20")):
    """``rtrig capture`` (or ``command``) of the image with TMPDIR in ``tmp_path/tmp``
    (to see what the run leaves there)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.run(
        [sys.executable, "-m", "rtrig", *command, "--sim", "--target", "soc",
         "--firmware", str(image), "--channels", "isr,app",
         "-q", "-o", str(tmp_path / "c.rtrig"), *extra],
        capture_output=True, text=True, timeout=900, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, sorted(p.name for p in tmp.iterdir())


def error_lines(proc):
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]


def test_a_firmware_that_exits_is_an_error(image, tmp_path):
    proc, _ = capture(image, tmp_path, "--load")
    assert proc.returncode == 5, proc.stderr
    [line] = error_lines(proc)
    assert "SIM_EXIT 66" in line
    assert "giving up" in line            # the console's last line, quoted
    assert "complete" not in proc.stdout


def test_a_sweep_of_a_firmware_that_exits_is_an_error(image, tmp_path):
    proc, _ = capture(image, tmp_path, "--load",
                      command=("sweep", "--from", "1k", "--to", "4k"))
    assert proc.returncode == 5, proc.stderr
    [line] = error_lines(proc)
    assert "SIM_EXIT 66" in line
    assert "| SF |" not in proc.stdout


def test_a_silent_firmware_is_an_error(image, tmp_path):
    proc, _ = capture(image, tmp_path, "--no-load")
    assert proc.returncode == 5, proc.stderr
    [line] = error_lines(proc)
    assert "never answered" in line and "isr, app" in line and "20 pulses" in line
    assert "broken: ready" in line
    assert "complete" not in proc.stdout


def test_the_console_is_shown_and_the_temporary_folder_removed(image, tmp_path):
    console = tmp_path / "console.txt"
    proc, left = capture(image, tmp_path, "--load", "--console", str(console))
    assert proc.returncode == 5, proc.stderr
    text = console.read_text()
    assert text.startswith("broken: ready\n")
    assert "broken: LOAD_EN seen, giving up\n" in text and "SIM_EXIT 66" in text
    assert str(console) in proc.stderr    # the hint names the kept console
    assert not [n for n in left if n.startswith("rtrig-soc-")], left
    # Without --console too, the run's temporary folder goes.
    proc, left = capture(image, tmp_path, "--no-load")
    assert proc.returncode == 5
    assert not [n for n in left if n.startswith("rtrig-soc-")], left


def test_an_image_over_64_kib_is_refused_before_any_build(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"\x13\0\0\0" * (64 * 1024 // 4 + 1))    # 64 KiB + one nop
    proc, _ = capture(big, tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = error_lines(proc)
    assert "65540 bytes does not fit 65536" in line
    assert "building the simulation twin" not in proc.stderr


def test_every_firmware_runs_on_one_twin_build(image, tmp_path):
    # The RAM image is read at start (--ram), not built in: the user's image and the
    # project's take the same simulator, and each runs its own code on it.
    from rtrig.host import open_rig
    from rtrig.host.sim import build
    exe = build(soc=True, firmware=str(image))
    assert exe == build(soc=True)
    console = tmp_path / "console.txt"
    with open_rig(sim=True, soc=True, firmware=str(image), console=str(console),
                  log=lambda m: None) as rig:
        assert rig.sim.exe == exe
        rig.wait_until(rig.time() + rig.tick_hz // 1000)     # 1 ms of the run
    assert console.read_text().startswith("broken: ready\n")
    # Without an image the SoC twin refuses to start rather than run zeros.
    proc = subprocess.run([str(exe), "--bench", "10"], capture_output=True, text=True)
    assert proc.returncode == 2 and "needs --ram FILE" in proc.stderr
