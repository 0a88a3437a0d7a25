# SPDX-License-Identifier: BSD-2-Clause
"""The SoC twin's recording (``RTRIG_SOC_RECORD``, docs/explain.md): its cost.

- free-running (the harness's ``--bench`` mode, no stimulus, so only the ring before
  each edge is filled): rig cycles per wall second, recording off and on;
- a capture of ``--count`` pulses at ``--freq`` (10 kHz: every SoC cycle is inside a
  recorded window, the worst case), wall time off and on.

Each pair alternates ``--reps`` times; the best of each is printed (the machine is
shared: the best is the least disturbed).
"""

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path


def _bench(exe, ram, cycles, record=None):
    args = [str(exe), "--bench", str(cycles), "--ram", str(ram)]
    if record:
        args += ["--record", str(record)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(out.split()[-2])


def _capture(tmp, freq, count, record):
    from rtrig.host import CaptureSettings, open_rig, run_capture
    if record:
        os.environ["RTRIG_SOC_RECORD"] = str(tmp / "r.rec")
    else:
        os.environ.pop("RTRIG_SOC_RECORD", None)
    s = CaptureSettings(freq=freq, count=count, target="soc", channels=("isr", "app"))
    t = time.perf_counter()
    with open_rig(sim=True, soc=True) as rig:
        run_capture(rig, s, tmp / "c.rtrig", progress=False)
    wall = time.perf_counter() - t
    size = (tmp / "r.rec").stat().st_size if record else 0
    return wall, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=2_000_000)
    ap.add_argument("--freq", type=float, default=10_000)
    ap.add_argument("--count", type=int, default=2_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    from rtrig.firmware import default_firmware
    from rtrig.host.sim import build
    from rtrig.host.sim.soc_ram import ram_file, soc_image
    exe = build(soc=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ram = ram_file(soc_image(default_firmware()), tmp)
        free = {"off": [], "on": []}
        cap = {"off": [], "on": []}
        size = 0
        for _ in range(a.reps):
            free["off"].append(_bench(exe, ram, a.cycles))
            free["on"].append(_bench(exe, ram, a.cycles, tmp / "b.rec"))
            cap["off"].append(_capture(tmp, a.freq, a.count, False)[0])
            wall, size = _capture(tmp, a.freq, a.count, True)
            cap["on"].append(wall)
    print("| SoC twin | recording off | recording on | on/off |")
    print("| --- | --- | --- | --- |")
    off, on = max(free["off"]), max(free["on"])
    print(f"| free-running, rig cycles/s | {off:,.0f} | {on:,.0f} | {off / on:.2f}× slower |")
    off, on = min(cap["off"]), min(cap["on"])
    print(f"| capture {a.count} pulses at {a.freq:g} Hz, wall s | {off:.2f} | {on:.2f} | "
          f"{on / off:.2f}× slower |")
    print(f"recording of the capture: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
