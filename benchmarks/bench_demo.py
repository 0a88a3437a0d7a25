# SPDX-License-Identifier: BSD-2-Clause
"""``make demo``, cold and warm: the newcomer's first run and every run after it.

- **cold**: the simulation twin is not built yet (an empty ``$RTRIG_CACHE``), so the
  run includes Yosys and Verilator; the venv exists (package downloads aside);
- **warm**: the same again, with the twin built.

Each is timed as a whole ``make demo`` (selftest, an unloaded and a loaded capture, a
sweep finding MF-ISR, MF-APP and SF, the report). Budgets: warm ≤ 25 s, cold ≤ 3 min.
The self-test and the captures run at once, each on its own twin, and the sweep on
one twin per core (docs/sweep.md, "Parallel twins").

    .venv/bin/python benchmarks/bench_demo.py [--write]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfdoc import write_section

ROOT = Path(__file__).resolve().parents[1]
BUDGET_WARM_S = 25
BUDGET_COLD_S = 180


#: make's shell for the demo's recipes: each line run by bash and timed, appended to
#: $RTRIG_BENCH_TIMES as "seconds<TAB>command".
TIMED_SHELL = """#!/bin/bash
t0=$EPOCHREALTIME
/bin/bash "$@"
rc=$?
printf '%s\\t%s\\n' "$(awk "BEGIN {print $EPOCHREALTIME - $t0}")" "${@: -1}" \\
  | tr '\\n' ' ' | sed 's/ $/\\n/' >> "$RTRIG_BENCH_TIMES"
exit $rc
"""


def timed_demo(env, tmp):
    """Wall time of a whole ``make demo``, its figures, and each recipe line's time."""
    shell = Path(tmp) / "timed-shell"
    shell.write_text(TIMED_SHELL)
    shell.chmod(0o755)
    times = Path(tmp) / "times.tsv"
    times.write_text("")
    t0 = time.monotonic()
    proc = subprocess.run(["make", "-s", "demo", f"SHELL={shell}"], cwd=ROOT,
                          env=dict(env, RTRIG_BENCH_TIMES=str(times)),
                          capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"error: make demo failed:\n{proc.stderr[-2000:]}")
    figures = re.search(r"MF-ISR.*\n.*\n\| (.+) \|", proc.stdout)
    parts = [line.split("\t", 1) for line in times.read_text().splitlines() if "\t" in line]
    return (wall, figures.group(1).replace(" | ", " / ") if figures else "?",
            [(float(t), cmd) for t, cmd in parts])


def part_name(cmd):
    """A recipe line's short name: the rtrig subcommand, or what it is."""
    m = re.search(r"rtrig (?:--sim )?(\w+)", cmd)
    if "selftest" in cmd and "capture" in cmd:
        return "`rtrig selftest` and the two `rtrig capture`s, at once"
    if "build()" in cmd:
        return "twin build check (`make sim`)"
    if m:
        return f"`rtrig {m.group(1)}`" + (" (loaded)" if "--load" in cmd else "")
    return cmd.strip()[:40]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    a = ap.parse_args()
    before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="rtrig-bench-demo-") as cache:
        env = dict(os.environ, RTRIG_CACHE=cache)
        cold, figs_cold, _ = timed_demo(env, cache)
        warm, figs_warm, parts = timed_demo(env, cache)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    ok = warm <= BUDGET_WARM_S and cold <= BUDGET_COLD_S
    text = (
        "## Demo\n\n"
        f"Measured with `.venv/bin/python benchmarks/bench_demo.py` "
        f"({time.strftime('%Y-%m-%d')}, 2-core machine, load average before {before} "
        f"(other work), at the end {load}): "
        "a whole `make demo` (selftest, "
        "an unloaded and a loaded 500-pulse capture of the model's `fast` preset at "
        "8 kHz, the loaded sweep 20–250 kHz with 100 pulses per step and at most 4000, "
        "the report). The self-test and the two captures run at once, each on its own "
        f"twin, and the sweep on {len(os.sched_getaffinity(0))} twins in parallel "
        "(docs/sweep.md).\n\n"
        "| run | wall | budget | MF-ISR / MF-APP / SF |\n| --- | --- | --- | --- |\n"
        f"| cold (twin not built; venv present) | **{cold:.0f} s** | ≤ {BUDGET_COLD_S} s "
        f"| {figs_cold} |\n"
        f"| warm | **{warm:.0f} s** | ≤ {BUDGET_WARM_S} s | {figs_warm} |\n\n"
        "The twin is the ULX3S gateware (`--sim`). Where the warm run's time goes (each "
        "recipe line of `make demo`, timed by the shell make runs it in):\n\n"
        "| part | wall |\n| --- | --- |\n"
        + "".join(f"| {part_name(c)} | {t:.1f} s |\n" for t, c in parts if t >= 0.05)
        + ("" if ok else "\nOver budget at this load: the twins simulate without pause, "
           "so with other work on the two cores each gets less than a core "
           "(docs/sweep.md, \"Parallel twins\").\n"))
    print(text)
    if a.write:
        write_section(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
