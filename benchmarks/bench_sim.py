# SPDX-License-Identifier: BSD-2-Clause
"""Simulation twin and host link benchmarks (``make bench``).

- simulator speed: rig cycles per wall second, free-running, no link traffic (the
  harness's ``--bench`` mode), and the rig time that makes per wall second, for the
  rig alone, the rig with the model target and the rig with the reference SoC of the
  default twin, the ULX3S gateware (30 MHz, four samples per clock; with the SoC, the
  ``soc`` target), and the iCEBreaker's rig (``--sim-board icebreaker``);
- link throughput: latency records per rig-second delivered while the link is
  saturated (100 kHz loopback stimulus, more records than the line can carry), on the
  line-rate twin (3 Mbaud, a real rig's link) and on the fast twin (7.5 Mbaud).

Prints a Markdown table; ``--write`` replaces the "## Simulation twin and link"
section of docs/performance.md.
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import time

from perfdoc import write_section

#: Twins timed: label → keyword arguments of ``rtrig.host.sim.build``.
TWINS = {
    "ULX3S rig alone (no model target)": {"with_model": False},
    "ULX3S rig + model target (`--sim`)": {},
    "ULX3S `soc` target: rig + reference SoC (50 MHz) (`--sim --target soc`)": {"soc": True},
    "iCEBreaker rig (24 MHz, four samples per clock) + model (`--sim-board icebreaker`)":
        {"board": "icebreaker"},
}


def clock_hz(build_kwargs):
    """The rig clock of a twin build: its board's."""
    from rtrig.host.sim import sim_board
    return sim_board(build_kwargs.get("board")).clk_freq


def sim_speed(cycles, **build_kwargs):
    import tempfile

    from rtrig.host.sim import build, ram_file, soc_image
    exe = build(**build_kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        # the SoC twin reads its RAM image at start: the project's rt_test
        ram = ["--ram", str(ram_file(soc_image(), tmp))] if build_kwargs.get("soc") else []
        out = subprocess.run([str(exe), "--bench", str(cycles), *ram], capture_output=True,
                             text=True, check=True).stdout
    return float(re.search(r"([\d.]+) cycles/s", out).group(1))


def link_throughput(seconds, sim_link="line", drain_s=30.0):
    from rtrig.host import CaptureSettings, open_rig
    with open_rig(sim=True, sim_link=sim_link, log=lambda m: None) as rig:
        s = CaptureSettings(freq=100_000, count=None, target="loopback", delay=1e-6)
        regs = {**s.ticks(rig.tick_hz, rig.stim_step), "count": 0}   # a continuous train
        rig.prepare(s, regs, s.plan)
        rig.enable_streams()
        rig.run()
        rig.receive(wait=1.0)
        taken = len(rig.take_latency())
        t0 = rig.time()
        n0 = rig.link_bytes[0]
        end = time.monotonic() + seconds
        got = 0
        while time.monotonic() < end:
            rig.receive(wait=0.1)
            got += len(rig.take_latency())
        t1 = rig.time()
        n1 = rig.link_bytes[0]
        # Counted as run_capture counts them, once the train has stopped and every
        # record is in or counted lost: records the rig's full FIFO dropped are its
        # overflows, not packets lost on the link.
        rig.halt()
        rig.wait_windows_closed(regs)
        taken += got
        end = time.monotonic() + drain_s
        while not rig.all_records_in(taken) and time.monotonic() < end:
            rig.receive(wait=0.1)
            taken += len(rig.take_latency())
        counters, _ = rig.loss_counters(s.plan)
        rig.disable_streams()
        rig_s = (t1 - t0) / rig.tick_hz
        baud = rig.info["baud"]
        return {"records_per_s": got / rig_s, "wire_bytes_per_s": (n1 - n0) / rig_s,
                "line_fraction": (n1 - n0) * 10 / rig_s / baud, "baud": baud,
                "overflow": counters["lat_overflow"], "crc_errors": counters["crc_errors"],
                "lost_packets": counters["lost_packets"]}


def round_trip(poll_cycles, n=300):
    """Wall seconds per register read on the fast twin, the harness serving its socket
    every ``poll_cycles`` cycles."""
    from rtrig.host.rig.connect import connect
    from rtrig.host.sim import SimRig
    with SimRig(log=lambda m: None, poll_cycles=poll_cycles) as sim, \
            connect(sim.url, simrig=sim) as rig:
        t0 = time.monotonic()
        for _ in range(n):
            rig.pulses_issued()         # one register read
        return (time.monotonic() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cycles", type=int, default=2_000_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    a = ap.parse_args()
    def speed(kw):
        try:
            return sim_speed(a.cycles, **kw)
        except Exception as e:                  # e.g. no RISC-V toolchain for the SoC
            print(f"{kw}: not measured ({e})", file=sys.stderr)
            return None

    def cell(v, kw):
        return (f"{v / 1e6:.2f} M cycles/s, {v / clock_hz(kw) * 1e3:.1f} ms"
                if v else "not measured")

    speeds = {label: speed(kw) for label, kw in TWINS.items()}
    links = {name: link_throughput(a.seconds, name) for name in ("line", "fast")}
    polls = {p: round_trip(p) for p in (16, 128, 1024)}
    host = f"{platform.machine()}, Python {platform.python_version()}"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = "".join(f"| {label} | {cell(v, TWINS[label])} |\n" for label, v in speeds.items())
    lrows = "".join(
        f"| {name} ({lt['baud'] / 1e6:g} Mbaud) | {lt['records_per_s']:.0f} /s | "
        f"{lt['line_fraction'] * 100:.1f} % | {lt['overflow']} | {lt['crc_errors']} / "
        f"{lt['lost_packets']} |\n" for name, lt in links.items())
    text = (
        "## Simulation twin and link\n\n"
        f"Measured with `.venv/bin/python benchmarks/bench_sim.py --cycles {a.cycles} "
        f"--seconds {a.seconds:g}` ({host}, {time.strftime('%Y-%m-%d')}, 2-core machine, "
        f"load average at the end {load}: the figures fall with the machine's load). "
        "Simulator speed: the harness's "
        "`--bench` mode (free-running, no link traffic), rig clock cycles per wall "
        "second, and the rig time that makes per wall second.\n\n"
        "| twin build | speed, rig time per wall second |\n| --- | --- |\n" + rows + "\n"
        "The default twin is the ULX3S gateware (the OrangeCrab builds the same rig): "
        "30 MHz, four samples per clock, four latency channels. With the SoC it is the "
        "`soc` target's gateware as the board has it: two latency channels beside the SoC "
        "and no model target, its 30 MHz rig and 50 MHz SoC each on its own clock. Each "
        "twin is the one a user gets with those options.\n\n"
        "Link throughput (100 kHz loopback, one 24-byte latency record per pulse: 8× what "
        "the line-rate link carries, 3.2× the fast one), per second of rig time:\n\n"
        "| twin link | records delivered | wire bytes / line capacity (8N1) | records "
        "dropped at the rig (counted, LAT_OVERFLOW) | CRC errors / lost packets |\n"
        "| --- | --- | --- | --- | --- |\n" + lrows + "\n"
        "Register round trip on the fast twin (300 reads of `SCRATCH`, wall time per "
        "read) with the harness serving its socket every N rig cycles: "
        + ", ".join(f"N = {p}: {v * 1e3:.2f} ms" for p, v in polls.items())
        + " (the harness's default is 128).\n\n"
        "The fast twin's link (UART divisor 4, the smallest the rig's receiver takes) "
        "moves 2.5× the bytes of the line-rate twin (divisor 10) per simulated cycle; the "
        "rig reports the rate it has (register `BAUD`), so `--mode auto` decides from "
        "it.\n")
    print(text)
    if a.write:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
