"""Benchmark of ``rtrig report`` and the exports on a large synthetic capture.

Writes a capture of N latency records (default 10^7: 5·10^6 pulses × ISR and APP)
with realistic distributions and rare outliers, then times loading it, building the
HTML report and the exports, and prints the report's size. Budget (issue 4): the
report of 10^7 samples in at most 5 s and 5 MB.

    .venv/bin/python benchmarks/bench_report.py [--samples 10000000] [--keep DIR]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rtrig.capture import CaptureWriter, load
from rtrig.host.export import export
from rtrig.host.report import build_report
from rtrig.protocol import LATENCY_DTYPE, ChanFlags

TICK_HZ = 100_000_000
REPORT_BUDGET_S = 5.0
REPORT_BUDGET_BYTES = 5_000_000


def synth_records(pulses, seed=1):
    """ISR ~1.2 µs and APP ~15 µs with long tails, rare outliers and a few misses."""
    rng = np.random.default_rng(seed)
    period = 5000                                  # 20 kHz
    stim_t = 100_000 + np.arange(pulses, dtype=np.uint64) * period
    out = []
    for ch, base, scale, service in ((0, 120, 8.0, 60), (1, 1500, 60.0, 200)):
        rec = np.zeros(pulses, dtype=LATENCY_DTYPE)
        rec["pulse"] = np.arange(pulses)
        rec["stim_t"] = stim_t
        rec["channel"] = ch
        lat = base + rng.gamma(2.0, scale, pulses)
        rare = rng.random(pulses) < 1e-4           # a kernel tick in the way
        lat[rare] += rng.uniform(100, 1700, rare.sum())
        rec["latency"] = lat.astype(np.uint32)
        rec["completion"] = rec["latency"] + service + rng.integers(0, 20, pulses)
        if ch == 1:
            miss = rng.random(pulses) < 2e-5
            rec["flags"][miss] = ChanFlags.MISSED
            rec["latency"][miss] = 0
            rec["completion"][miss] = 0
        out.append(rec)
    return out


def write_capture(path, samples):
    pulses = samples // 2
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
            "rtrig_version": "bench", "channels": ["isr", "app"], "load": True,
            "mode": "records", "raw_events": False,
            "target": {"kind": "model", "description": "synthetic benchmark data"},
            "stimulus": {"freq_hz": 20_000.0, "period_ticks": 5000, "high_ticks": 2500,
                         "count": pulses, "jitter_ticks": 0}}
    with CaptureWriter(path, meta) as w:
        for rec in synth_records(pulses):
            for s in range(0, len(rec), 1_000_000):
                w.array(b"LATR", rec[s:s + 1_000_000])
        w.close(final={"status": "complete", "records": samples})


def timed(label, fn, results):
    """Run ``fn``; record (wall, CPU) seconds. The work is single-threaded numpy, so
    on an idle machine both agree; on a shared one CPU time is the fair figure."""
    t, cpu = time.perf_counter(), time.process_time()
    value = fn()
    results[label] = (time.perf_counter() - t, time.process_time() - cpu)
    print(f"{label:28s} {results[label][0]:7.2f} s wall {results[label][1]:7.2f} s CPU",
          flush=True)
    return value


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the files in DIR")
    ap.add_argument("--exports", action="store_true", help="also time the exports")
    args = ap.parse_args(argv)
    tmp = tempfile.TemporaryDirectory()
    work = args.keep or Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    cap_path = work / "bench.rtrig"
    res = {}
    print(f"samples: {args.samples} ({args.samples // 2} pulses × 2 channels)")
    timed("write synthetic capture", lambda: write_capture(cap_path, args.samples), res)
    cap = timed("rtrig.load", lambda: load(cap_path), res)
    html = timed("report (build_report)", lambda: build_report([cap]), res)
    data = html.encode()
    (work / "bench.html").write_bytes(data)
    print(f"{'report size':28s} {len(data) / 1e6:7.2f} MB ({len(data)} bytes)")
    if args.exports:
        for fmt in ("json", "cyclictest", "csv"):
            timed(f"export {fmt}", lambda f=fmt: export(cap, f, work / f"bench.{f}"), res)
    ok = res["report (build_report)"][1] <= REPORT_BUDGET_S and len(data) <= REPORT_BUDGET_BYTES
    print(f"budget ({REPORT_BUDGET_S:g} s CPU, {REPORT_BUDGET_BYTES / 1e6:g} MB): "
          f"{'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
