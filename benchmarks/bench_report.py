# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark of ``rtrig report`` (and the exports) on large synthetic captures.

For each sample count N (default 10^6 and 10^7; ``--large`` adds 10^8, a 2.2 GB
file) writes a capture of N latency records (N/2 pulses × ISR and APP, interleaved
pulse by pulse as the rig writes them, in chunks of 10^6 records) with realistic
distributions, rare outliers and a few misses, then runs ``rtrig report FILE -o
FILE.html`` as a child process and measures its wall time, CPU time (user +
system, from ``os.wait4``) and peak RSS (``ru_maxrss``). Budget (issue 4): at most
5 s CPU per 10^7 samples, 5 MB of HTML, and a peak RSS of at most 300 MB whatever
the sample count.

    .venv/bin/python benchmarks/bench_report.py [--samples N ...] [--large] [--keep DIR]
                                                [--exports]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rtrig.capture import CaptureWriter, load
from rtrig.host.integrations.export import export
from rtrig.protocol import LATENCY_DTYPE, ChanFlags

TICK_HZ = 120_000_000              # the default twin's tick (8.33 ns)
REPORT_BUDGET_S = 5.0               # CPU seconds per 10^7 samples
REPORT_BUDGET_BYTES = 5_000_000
REPORT_BUDGET_RSS = 300_000_000     # bytes, whatever the sample count
PULSES_PER_BLOCK = 1_000_000
CHUNK_RECORDS = 1_000_000


def synth_records(first, pulses, seed=1):
    """Pulses ``first .. first + pulses - 1`` of both channels, interleaved by pulse:
    ISR ~1.2 µs and APP ~15 µs with long tails, rare outliers and a few misses."""
    rng = np.random.default_rng([seed, first])
    period = 5000                                  # 20 kHz
    rec = np.zeros((pulses, 2), dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(first, first + pulses)[:, None]
    rec["stim_t"] = (100_000 + np.arange(first, first + pulses, dtype=np.uint64)
                     * period)[:, None]
    for ch, base, scale, service in ((0, 120, 8.0, 60), (1, 1500, 60.0, 200)):
        r = rec[:, ch]
        r["channel"] = ch
        lat = base + rng.gamma(2.0, scale, pulses)
        rare = rng.random(pulses) < 1e-4           # a kernel tick in the way
        lat[rare] += rng.uniform(100, 1700, rare.sum())
        r["latency"] = lat.astype(np.uint32)
        r["completion"] = r["latency"] + service + rng.integers(0, 20, pulses)
        if ch == 1:
            miss = rng.random(pulses) < 2e-5
            r["flags"][miss] = ChanFlags.MISSED
            r["latency"][miss] = 0
            r["completion"][miss] = 0
    return rec.reshape(-1)


def write_capture(path, samples):
    pulses = samples // 2
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
            "rtrig_version": "bench", "channels": ["isr", "app"], "load": True,
            "mode": "records", "raw_events": False,
            "target": {"kind": "model", "description": "synthetic benchmark data"},
            "stimulus": {"freq_hz": 20_000.0, "period_ticks": 5000, "high_ticks": 2500,
                         "count": pulses, "jitter_ticks": 0}}
    with CaptureWriter(path, meta) as w:
        for first in range(0, pulses, PULSES_PER_BLOCK):
            rec = synth_records(first, min(PULSES_PER_BLOCK, pulses - first))
            for s in range(0, len(rec), CHUNK_RECORDS):
                w.array(b"LATR", rec[s:s + CHUNK_RECORDS])
        w.close(final={"status": "complete", "records": 2 * pulses})


def timed(label, fn, results):
    """Run ``fn``; record (wall, CPU) seconds. The work is single-threaded numpy, so
    on an idle machine both agree; on a shared one CPU time is the fair figure."""
    t, cpu = time.perf_counter(), time.process_time()
    value = fn()
    results[label] = (time.perf_counter() - t, time.process_time() - cpu)
    print(f"{label:28s} {results[label][0]:7.2f} s wall {results[label][1]:7.2f} s CPU",
          flush=True)
    return value


def run_report(cap_path, out_path):
    """``rtrig report`` in a child process: ``(wall s, CPU s, peak RSS bytes)``."""
    t = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "rtrig", "report", str(cap_path),
                              "-o", str(out_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)      # this child's own usage
    wall = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode()
    child.stderr.close()
    if child.returncode:
        raise SystemExit(f"rtrig report failed ({child.returncode}):\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024    # kB on Linux


def bench(samples, work, exports):
    """Write, report (and export) one capture; True when within budget."""
    cap_path = work / f"bench-{samples}.rtrig"
    res = {}
    print(f"samples: {samples} ({samples // 2} pulses × 2 channels)")
    timed("write synthetic capture", lambda: write_capture(cap_path, samples), res)
    print(f"{'capture size':28s} {cap_path.stat().st_size / 1e6:7.1f} MB")
    out = cap_path.with_suffix(".html")
    wall, cpu, rss = run_report(cap_path, out)
    size = out.stat().st_size
    print(f"{'rtrig report (process)':28s} {wall:7.2f} s wall {cpu:7.2f} s CPU "
          f"{rss / 1e6:7.1f} MB peak RSS")
    print(f"{'report size':28s} {size / 1e6:7.2f} MB ({size} bytes)")
    if exports:
        cap = timed("rtrig.load", lambda: load(cap_path), res)
        for fmt in ("json", "cyclictest", "csv"):
            timed(f"export {fmt}", lambda f=fmt: export(cap, f, work / f"bench.{f}"), res)
        del cap
    budget_s = REPORT_BUDGET_S * max(1.0, samples / 1e7)
    ok = cpu <= budget_s and size <= REPORT_BUDGET_BYTES and rss <= REPORT_BUDGET_RSS
    print(f"budget ({budget_s:g} s CPU, {REPORT_BUDGET_BYTES / 1e6:g} MB, "
          f"{REPORT_BUDGET_RSS / 1e6:g} MB RSS): {'met' if ok else 'MISSED'}\n", flush=True)
    cap_path.unlink()
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, nargs="+", default=[1_000_000, 10_000_000],
                    metavar="N", help="sample counts to run [default: 10^6 10^7]")
    ap.add_argument("--large", action="store_true",
                    help="also run 10^8 samples (writes a 2.2 GB capture)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="work in DIR and keep the reports there (captures are deleted)")
    ap.add_argument("--exports", action="store_true", help="also time the exports")
    args = ap.parse_args(argv)
    sizes = args.samples + ([100_000_000] if args.large else [])
    tmp = tempfile.TemporaryDirectory()
    work = args.keep or Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    need = max(sizes) * LATENCY_DTYPE.itemsize * 1.1
    free = shutil.disk_usage(work).free
    if free < need:
        raise SystemExit(f"{work} has {free / 1e9:.1f} GB free, {need / 1e9:.1f} GB needed; "
                         "use --keep DIR on a larger disk")
    ok = all([bench(n, work, args.exports) for n in sizes])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
