"""Run the kernel suite (firmware/apps/suite, docs/suite.md) on the SoC twin once per
LOAD_EN level and check it from raw marker events: the TRACE framing, and every
iteration's rig interval MARKER0↑→MARKER1↑ against the firmware's own mcycle count.
Prints a table per run (SoC cycles):

    python firmware/tools/suite_raw.py [ITERATIONS]     # default: the image's 1000

The helpers are also what tests/host/test_suite_firmware.py uses.
"""

import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rtrig.host import CaptureSettings, open_rig
from rtrig.host.link import decode_events
from rtrig.protocol import PacketType, Reg

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware" / "build" / "rtrig-soc" / "suite.bin"

#: Rig ticks per SoC cycle (100 MHz rig, 50 MHz SoC).
TICKS_PER_CYCLE = 2
#: The tests in table order (docs/suite.md).
TESTS = ["event_wake", "sem_uncontended", "sem_wake", "mutex_uncontended", "mutex_handoff",
         "critical_section", "yield", "thread_switch_2", "thread_switch_10",
         "thread_switch_128", "priority_inversion", "priority_inversion_no_pi"]
MAGIC = b"RTSUITE1"
MARKER0, MARKER1, MARKER2 = 3, 4, 5
ITERATIONS = 6


def patch_config(image, iterations=1000, test_mask=(1 << len(TESTS)) - 1, pause=1000,
                 flags=0):
    """A copy of the suite image with its configuration block set."""
    at = image.find(MAGIC)
    assert at >= 0 and at % 4 == 0 and image.find(MAGIC, at + 1) < 0
    out = bytearray(image)
    struct.pack_into("<4I", out, at + 8, iterations, test_mask, pause, flags)
    return bytes(out)


def parse_trace(words):
    """TRACE words → [(test, loaded, [counts])] per run, checking the framing."""
    runs, run, cur = [], [], None
    for w in words:
        if w == 0x5EFFFFFF:
            assert cur is None, "run ended inside a test"
            runs.append(run)
            run = []
        elif w & 0xFFFF0000 == 0x5EFF0000:
            assert cur is not None and cur[0] == w & 0xFFFF, f"END {w:#x} without its BEGIN"
            run.append(cur)
            cur = None
        elif w & 0xFF000000 == 0x5E000000:
            assert cur is None, f"BEGIN {w:#x} inside a test"
            assert w & 0x00FE0000 == 0
            cur = (w & 0xFFFF, bool(w & 0x10000), [])
        else:
            assert cur is not None, f"count {w} outside a test"
            cur[2].append(w)
    assert cur is None and not run, "trace ends inside a run"
    return runs


def wait_ready(rig, timeout_s=60):
    """Wait for the firmware's "suite: ready": a go pulse before it is lost."""
    t0 = time.monotonic()
    while "suite: ready" not in rig.sim.console.read_text(errors="replace"):
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError("the suite never said ready")
        time.sleep(0.1)


def run_suite(rig, load=False, timeout_s=600):
    """One go pulse, raw MARKER0↑, MARKER1↑ and MARKER2 events until the firmware's
    RUN_END word; returns (trace words of this run, events)."""
    trace = rig.sim.trace
    before = len(trace.read_text().split()) if trace.exists() else 0
    s = CaptureSettings(freq=1000, count=1, target="soc", channels=("isr",), load=load)
    regs = s.ticks(rig.tick_hz, rig.stim_step)
    rig.stop()
    rig.configure_target(s, regs)
    # MARKER0↑, MARKER1↑ and both edges of MARKER2: what the check needs, and half the
    # link traffic of every edge.
    rising = (1 << MARKER0) | (1 << MARKER1) | (1 << MARKER2)
    rig.configure_stimulus(regs, (), EDGE_EN=rising | (1 << MARKER2) << 8)
    rig.clear(drop_streams=True)
    rig.enable_streams(raw_events=True)
    rig.run()
    events = []
    t0 = time.monotonic()
    words = []
    while time.monotonic() - t0 < timeout_s:
        rig.link.poll(wait=0.1)
        events.append(decode_events(rig.link.take(PacketType.EVENT)))
        words = [int(w) for w in trace.read_text().split()[before:]] if trace.exists() else []
        if 0x5EFFFFFF in words:
            break
    else:
        raise RuntimeError(f"no RUN_END within {timeout_s} s ({len(words)} TRACE words)")
    # The events trail the TRACE words (the link is slower than the firmware): take
    # them until the link has been quiet for a second, then stop the stream.
    quiet = time.monotonic()
    while time.monotonic() - quiet < 1.0:
        if rig.link.poll(wait=0.2):
            quiet = time.monotonic()
        events.append(decode_events(rig.link.take(PacketType.EVENT)))
    rig.link.write(Reg.STREAM_EN, 0)
    produced = rig.link.read1(Reg.EVT_RECORDS)
    assert rig.link.read1(Reg.EVT_OVERFLOW) == 0, "raw events dropped"
    assert sum(map(len, events)) == produced, "raw events lost on the link"
    return words, np.concatenate(events)


def intervals(events):
    """Per MARKER2 pulse (a test): the rig's MARKER0↑→MARKER1↑ intervals (ticks)."""
    ev = np.sort(events, order="t")
    tests, cur, start = [], None, None
    for t, inp, rising in zip(ev["t"].tolist(), ev["input"].tolist(), ev["rising"].tolist()):
        if inp == MARKER2:
            if rising:
                cur = []
            else:
                tests.append(cur)
                cur = None
        elif cur is None:
            raise AssertionError(f"marker {inp} edge at {t} outside MARKER2")
        elif inp == MARKER0 and rising:
            assert start is None, "MARKER0 rose twice before MARKER1"
            start = t
        elif inp == MARKER1 and rising:
            assert start is not None, "MARKER1 rose without MARKER0"
            cur.append(t - start)
            start = None
    assert cur is None
    return tests



def main(argv):
    image = FIRMWARE.read_bytes()
    if len(argv) > 1:
        image = patch_config(image, iterations=int(argv[1]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.bin"
        path.write_bytes(image)
        with open_rig(sim=True, soc=True, firmware=str(path)) as rig:
            wait_ready(rig)
            for load in (False, True):
                t0, r0 = time.monotonic(), rig.time()
                words, events = run_suite(rig, load=load, timeout_s=3600)
                (run,) = parse_trace(words)
                rig_ticks = intervals(events)
                print(f"\nLOAD_EN {'high' if load else 'low'}: {time.monotonic() - t0:.0f} s "
                      f"wall, {(rig.time() - r0) / rig.tick_hz:.3f} s rig time")
                print("| test | n | cold | min | p50 | p99 | max | max abs(rig - 2 x count), ticks |")
                print("| --- | --- | --- | --- | --- | --- | --- | --- |")
                for (test, _, counts), ticks in zip(run, rig_ticks):
                    c = np.array(counts)
                    d = np.abs(np.array(ticks) - TICKS_PER_CYCLE * c).max() \
                        if len(ticks) == len(c) else "count mismatch"
                    print(f"| {TESTS[test]} | {len(c)} | {c[0]} | {c.min()} | "
                          f"{np.median(c):.0f} | {np.percentile(c, 99):.0f} | {c.max()} | {d} |")
            print()
            print(rig.sim.console.read_text(errors="replace").strip())


if __name__ == "__main__":
    main(sys.argv)
