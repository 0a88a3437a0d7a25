# SPDX-License-Identifier: BSD-2-Clause
"""No constant of the first rig's 100 MHz clock (10 ns ticks) is left in the code: every
board samples its inputs four times a clock (8.33 ns ticks on the ECP5 boards and the
default twin, 10.42 ns on the iCEBreaker), and a figure computed with 10 ns is 20 % off.
Unit tests may still pick 100 MHz as an arbitrary rig; the code users run may not."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("host", "rtrig", "gateware", "rig", "benchmarks", "firmware")
#: The old tick as the code spelled it: a 10 ns tick or cycle, a 100 MHz clock or rate.
OLD_TICK = re.compile(r"TICK_NS\s*=\s*10\b|tick_hz\s*=\s*(100e6|1e8|100_000_000)\b"
                      r"|TICK_HZ\s*=\s*(100e6|1e8|100_000_000)\b|\b100\s?MHz"
                      r"|\(10 ns\)|\b10 ns (tick|cycle)")


def _code_files():
    out = subprocess.run(["git", "ls-files", *ROOMS], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [ROOT / p for p in out if p.endswith((".py", ".c", ".h", ".S", ".cpp"))]


def test_the_pattern_finds_the_old_tick():
    for line in ("TICK_NS = 10", "def f(tick_hz=100e6):", "TICK_HZ = 100_000_000",
                 "at 100 MHz", "ticks (10 ns)", "a 10 ns tick"):
        assert OLD_TICK.search(line), line
    for line in ("TICK_NS = 1e9 / TICK_HZ", "TICK_HZ = 120_000_000", "'10 ns' (4 digits)",
                 "sizes = [100_000_000]"):
        assert not OLD_TICK.search(line), line


def test_no_code_keeps_the_100_mhz_tick():
    files = _code_files()
    assert any(p.name == "common.py" for p in files)     # the search reads the tree
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
             for p in files for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
             if OLD_TICK.search(line)]
    assert not found, "the 100 MHz rig's tick is gone: " + "; ".join(found)
