# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps on one twin and on parallel twins: the demo's and the SoC's, whole commands.

Each sweep is run as ``rtrig sweep --sim … --json --twins N`` in a child process (twin
start-up and Python imports included, the twins already built), for N = 1 and N = the
usable cores (or ``--twins``), and timed from the outside:

* **demo**: ``make demo``'s sweep (model preset ``fast``, loaded, 20–250 kHz, 100
  pulses per step, at most 4000);
* **soc**: ``rtrig sweep --sim --target soc --from 20k --to 80k`` (the reference SoC
  running ``rt_test``; the 1 ms kernel tick's rule for the steps, docs/sweep.md).
  Budget: ≤ 90 s.

    .venv/bin/python benchmarks/bench_sweep_twins.py [--only demo|soc] [--twins N] [--write]

``--write`` replaces the "## Sweeps on parallel twins" section of docs/performance.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfdoc import write_section

from rtrig.units import format_hz

ROOT = Path(__file__).resolve().parents[1]
RTRIG = str(Path(sys.executable).with_name("rtrig"))
BUDGET_SOC_S = 90

NOTE = ("Each search records the steps it records on one twin where a step's result "
        "depends on its settings alone (docs/sweep.md, \"Parallel twins\"). The SoC twin "
        "runs freely, its kernel tick at whatever phase the last step left it, so its "
        "steps' pulse counts and the figure within a step or two of the bisection differ "
        "from run to run, on one twin as on two.\n")

SWEEPS = {
    "demo": ["--target", "model", "--preset", "fast", "--load", "--from", "20k", "--to",
             "250k", "--pulses", "100", "--max-pulses", "4000"],
    "soc": ["--target", "soc", "--from", "20k", "--to", "80k"],
}


def timed(args, twins, tmp):
    out = Path(tmp) / f"sweep-{twins}.rtrig"
    cmd = [RTRIG, "sweep", "--sim", *args, "--json", "-q", "--twins", str(twins),
           "-o", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    res = json.loads(proc.stdout)
    return {"twins": twins, "wall_s": round(wall, 1), "sweep_s": res["wall_s"],
            "steps": len(res["steps"]),
            "pulses": sum(s.get("pulses", 0) for s in res["steps"]),
            "load": os.getloadavg()[0],
            "figures": " / ".join(format_hz(res.get(k)) if res.get(k) else "—"
                                  for k in ("mf_isr_hz", "mf_app_hz", "sf_hz"))}


def row(name, r):
    return (f"| {name} | {r['twins']} | {r['steps']} | {r['pulses']} | {r['sweep_s']:.1f} s "
            f"| **{r['wall_s']:.1f} s** | {r['load']:.1f} | {r['figures']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(SWEEPS))
    ap.add_argument("--twins", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    a = ap.parse_args()
    # the twins (and the SoC's firmware) built first, outside the timed runs
    from rtrig.firmware import default_firmware
    from rtrig.host.sim import build
    build()
    build(soc=True, firmware=default_firmware())
    rows, soc = [], None
    with tempfile.TemporaryDirectory(prefix="rtrig-bench-twins-") as tmp:
        for name, args in SWEEPS.items():
            if a.only and name != a.only:
                continue
            for n in (1, a.twins):
                r = timed(args, n, tmp)
                print(f"{name}: {r}", file=sys.stderr)
                rows.append(row(name, r))
                if name == "soc" and n == a.twins:
                    soc = r
    text = (
        "## Sweeps on parallel twins\n\n"
        f"Command: `.venv/bin/python benchmarks/bench_sweep_twins.py` "
        f"({time.strftime('%Y-%m-%d')}, 2-core machine shared with other work: the "
        "1-minute load average at the end of each run is in the table). Each row is a "
        "whole `rtrig sweep --sim … --json --twins N` (twin start-up and imports "
        "included, the twins built). *demo*: `make demo`'s sweep (`--target model "
        "--preset fast --load --from 20k --to 250k --pulses 100 --max-pulses 4000`); "
        "*soc*: `--target soc --from 20k --to 80k` (the reference SoC running `rt_test`, "
        f"steps covering its 1 ms tick; budget ≤ {BUDGET_SOC_S} s). *sweep*: the sweep's "
        "own `wall_s`.\n\n"
        "| sweep | twins | steps | pulses | sweep | wall | load | MF-ISR / MF-APP / SF |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
        + NOTE)
    print(text)
    if a.write:
        write_section(text)
    return 0 if soc is None or soc["wall_s"] <= BUDGET_SOC_S else 1


if __name__ == "__main__":
    sys.exit(main())
