# SPDX-License-Identifier: BSD-2-Clause
"""Highest stimulus rate at which on-chip statistics stay exact (``make bench``).

Loopback target with a known delay; for each rate, a statistics-mode capture must count
every pulse, with min = max = the delay and no drops. Prints a Markdown table;
``--write`` replaces the "## On-chip statistics" section of docs/performance.md.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from perfdoc import write_section

#: Fractions of the rig's clock: its highest rate is a period of four clock cycles.
RATES = [1 / 30, 1 / 12, 1 / 6, 1 / 4]


def main():
    from rtrig.host import CaptureSettings, open_rig
    from rtrig.host.procedures.stats import run_stats_capture
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pulses", type=int, default=20_000)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    rows = []
    with open_rig(sim=True) as rig, tempfile.TemporaryDirectory() as tmp:
        clock = rig.tick_hz / rig.stim_step
        delay_s = 2 / clock                     # two clock cycles: within every period
        delay_ns = delay_s * 1e9
        for frac in RATES:
            f = clock * frac
            s = CaptureSettings(freq=f, count=a.pulses, target="loopback", delay=delay_s,
                                duty=0.5)
            t0 = time.monotonic()
            res = run_stats_capture(rig, s, Path(tmp) / "s.rtrig", progress=False)
            isr = res.summary["isr"]
            exact = (isr["answered"] == a.pulses and isr["missed"] == 0
                     and isr["min_ns"] == isr["max_ns"]
                     and abs(isr["min_ns"] - delay_ns) < 1
                     and res.link.get("stat_drops", 0) == 0)
            rows.append((f, isr["answered"], isr["missed"], isr["min_ns"], isr["max_ns"],
                         res.link.get("stat_drops", 0), exact, time.monotonic() - t0))
    lines = ["## On-chip statistics", "",
             f"Measured with `.venv/bin/python benchmarks/bench_stats.py` "
             f"({time.strftime('%Y-%m-%d')}) on the default twin ({clock / 1e6:g} MHz rig): "
             f"loopback target, delay {delay_ns:.2f} ns (two clock cycles), "
             f"{a.pulses} pulses per rate, statistics mode (nothing streamed); the "
             f"highest rate is a period of four clock cycles, the least the host "
             f"sets.", "",
             "| stimulus | answered | missed | min | max | drops | exact | wall |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f, n, mi, lo, hi, dr, ok, w in rows:
        lines.append(f"| {f / 1e6:.4g} MHz | {n} | {mi} | {lo} ns | {hi} ns | {dr} | "
                     f"{'yes' if ok else 'NO'} | {w:.1f} s |")
    best = max((r[0] for r in rows if r[6]), default=None)
    lines += ["", f"Highest rate measured exact: {best / 1e6:.4g} MHz" if best else
              "No rate was exact.", ""]
    text = "\n".join(lines)
    print(text)
    if a.write:
        write_section(text)
    return 0 if best else 1


if __name__ == "__main__":
    sys.exit(main())
