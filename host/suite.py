"""The kernel suite timed by the rig: every iteration of every test, from outside.

The target runs the ``suite`` program (``firmware/apps/suite``; the marker protocol in
docs/suite.md): per test, MARKER2 is high around its iterations; per iteration,
MARKER0 rises as the timed operation starts and MARKER1 as it completes. The rig times
each iteration on one interval channel, ``marker0+..marker1+``, and records MARKER2's
edges as raw events, which cut the records into tests. On the SoC twin the program
also counts each iteration itself (``mcycle``) and writes the counts as TRACE words;
they are compared with the rig's figure iteration by iteration.

One STIM0 pulse starts the run (the program waits for it), so a rig on a real board
runs the suite the same way on a firmware that follows docs/suite.md.
"""

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import LinkError, UsageError
from ..protocol import Input, PacketType
from ..units import format_s
from .analysis import missed_mask, ticks_to_ns
from .link import decode_events, decode_latency
from .run import CaptureRun, Progress, capture_meta
from .settings import CaptureSettings

__all__ = ["TESTS", "CHANNEL", "patch_config", "parse_trace", "select_tests", "run_suite",
           "split_tests", "iteration_figures", "SuiteResult"]

#: The suite's tests, in the program's order (index = bit of the config's test mask).
TESTS = ("event_wake", "sem_uncontended", "sem_wake", "mutex_uncontended", "mutex_handoff",
         "critical_section", "yield", "thread_switch_2", "thread_switch_10",
         "thread_switch_128", "priority_inversion", "priority_inversion_no_pi")
#: The interval every test is timed on.
CHANNEL = "marker0+..marker1+"
#: The configuration block's magic in the program image (docs/suite.md).
MAGIC = b"RTSUITE1"
#: TRACE words framing a test and a run (docs/suite.md).
TRACE_BEGIN, TRACE_END, TRACE_RUN_END = 0x5E000000, 0x5EFF0000, 0x5EFFFFFF
#: Raw events kept: MARKER2 rising and falling (``EDGE_EN`` bits 5 and 13).
_EDGE_EN = 1 << Input.MARKER2 | 1 << (8 + Input.MARKER2)
#: The start pulse: one STIM0 pulse of 50 µs.
_GO_FREQ = 10_000
#: How long an iteration may take at most (the interval channel's window).
_WINDOW_S = 0.01
#: Seconds without a new test beginning or ending before the run is given up.
_STALL_S = 120.0


def select_tests(text):
    """``"a,b"`` (or None: every test) → the names, in the program's order."""
    if not text:
        return TESTS
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in TESTS]
    if unknown:
        raise UsageError(f"unknown suite test '{unknown[0]}'", hint="tests: " + ", ".join(TESTS))
    return tuple(t for t in TESTS if t in names)


def patch_config(image, iterations, tests, pause_cycles=1000):
    """A copy of the program ``image`` (bytes) with its configuration block set."""
    at = image.find(MAGIC)
    if at < 0 or at % 4:
        raise UsageError("the firmware has no suite configuration block (magic RTSUITE1)",
                         hint="build it with `make -C firmware all` (suite.bin)")
    if not 0 < iterations < 1 << 32:
        raise UsageError(f"iterations must be at least 1, got {iterations}")
    mask = sum(1 << TESTS.index(t) for t in tests)
    words = np.array([iterations, mask, pause_cycles, 0], dtype="<u4").tobytes()
    start = at + len(MAGIC)
    return image[:start] + words + image[start + len(words):]


def parse_trace(words):
    """TRACE words → the tests of one run: [{"index", "loaded", "counts"}] in order, and
    whether the run's end word was seen. Words outside a test are ignored."""
    tests, cur, ended = [], None, False
    for w in words:
        if w == TRACE_RUN_END:
            ended = True
            break
        if w & 0xFFFF0000 == TRACE_END:
            if cur is not None:
                tests.append(cur)
            cur = None
        elif w & 0xFF000000 == TRACE_BEGIN:
            cur = {"index": w & 0xFFFF, "loaded": bool(w >> 16 & 1), "counts": []}
        elif cur is not None:
            cur["counts"].append(int(w))
    return tests, ended


def _read_trace(path):
    if path is None or not Path(path).exists():
        return []
    words = []
    for line in Path(path).read_text().split():
        try:
            words.append(int(line) & 0xFFFFFFFF)
        except ValueError:
            pass
    return words


def split_tests(records, events, tests):
    """The records of each test: those whose start lies between the k-th MARKER2 rise
    and fall (``events``), for the k-th of ``tests``."""
    m2 = events[events["input"] == Input.MARKER2]
    rises = m2["t"][m2["rising"] == 1].astype(np.int64)
    falls = m2["t"][m2["rising"] == 0].astype(np.int64)
    out = {}
    t = records["stim_t"].astype(np.int64)
    for k, name in enumerate(tests):
        if k >= len(rises):
            break
        end = falls[falls > rises[k]]
        hi = end[0] if len(end) else np.iinfo(np.int64).max
        out[name] = records[(t >= rises[k]) & (t < hi)]
    return out


def _percent_weak(n, p):
    """Fewer than 10 samples lie beyond percentile ``p`` of ``n``: too short to claim."""
    return n * (1 - p / 100) < 10


def iteration_figures(rec, tick_hz, counts=None, cycle_ticks=None, offset_cycles=0):
    """One test's figures (ns): count, cold (iteration 0), min, mean, p50, p99, p99.99,
    max over the iterations after the first, and with ``counts`` (the target's own
    cycle counts, ``cycle_ticks`` rig ticks each) their agreement with the rig."""
    missed = missed_mask(rec)
    lat = ticks_to_ns(rec["latency"], tick_hz)
    out = {"count": int(len(rec)), "missed": int(missed.sum()),
           "cold_ns": round(float(lat[0]), 1) if len(rec) and not missed[0] else None}
    warm = lat[1:][~missed[1:]]
    if len(warm):
        pct = np.percentile(warm, [50, 99, 99.99], method="inverted_cdf")
        out.update(min_ns=round(float(warm.min()), 1), mean_ns=round(float(warm.mean()), 1),
                   p50_ns=round(float(pct[0]), 1), p99_ns=round(float(pct[1]), 1),
                   p9999_ns=round(float(pct[2]), 1), max_ns=round(float(warm.max()), 1))
    else:
        out.update(dict.fromkeys(("min_ns", "mean_ns", "p50_ns", "p99_ns", "p9999_ns",
                                  "max_ns")))
    out["weak"] = [k for k, p in (("p99", 99), ("p9999", 99.99)) if _percent_weak(len(warm), p)]
    if counts is not None:
        c = np.asarray(counts, dtype=np.int64)
        n = min(len(c), len(rec))
        diff = rec["latency"][:n].astype(np.int64) - c[:n] * cycle_ticks \
            - offset_cycles * cycle_ticks
        diff = diff[~missed[:n]]
        worst = int(np.abs(diff).max()) if len(diff) else 0
        out["self_timed"] = {
            "agree": bool(len(c) == len(rec) and worst <= cycle_ticks),
            "max_diff_cycles": round(worst / cycle_ticks, 2),
            "iterations": int(len(c)),
        }
    return out


@dataclass
class SuiteResult:
    path: Path
    tests: dict
    link: dict
    final: dict

    def to_json(self):
        return {"tests": self.tests, "capture": str(self.path), "link": self.link,
                "status": self.final.get("status")}


def run_suite(rig, path, tests=TESTS, iterations=1000, target="soc", load=False,
              trace=None, cycle_ticks=2, offset_cycles=0, progress=True, stall_s=_STALL_S):
    """Run the suite once on ``rig`` and write ``path``; returns a :class:`SuiteResult`.

    ``trace``: the TRACE file of the SoC twin (None: no self-timed counts). The run ends
    when every test's MARKER2 has fallen and its records are in; a target that starts
    no new test for ``stall_s`` seconds is an error (what was recorded is kept)."""
    settings = CaptureSettings(freq=_GO_FREQ, count=1, target=target, load=load,
                               channels=(CHANNEL,), timeout=_WINDOW_S,
                               description="kernel suite")
    regs = settings.ticks(rig.tick_hz, rig.stim_step)
    rig.stop()
    rig.configure_target(settings, regs)
    rig.configure_stimulus(regs, settings.channels, EDGE_EN=_EDGE_EN)
    rig.clear(drop_streams=True)
    rig.enable_streams(raw_events=True)
    meta = capture_meta(rig, settings, regs, "suite")
    meta["suite"] = {"tests": list(tests), "iterations": iterations, "channel": CHANNEL,
                     "loaded": load}
    bar = Progress(len(tests), f"suite on {target}", progress)
    run = CaptureRun(rig, path, meta, bar)
    lat_parts, ev_parts = [], []
    link = rig.link

    def take():
        lat = decode_latency(link.take(PacketType.LATENCY))
        ev = decode_events(link.take(PacketType.EVENT))
        run.writer.array(b"LATR", lat)
        run.writer.array(b"EVNT", ev)
        lat_parts.append(lat)
        ev_parts.append(ev)

    def falls():
        return sum(int(((e["input"] == Input.MARKER2) & (e["rising"] == 0)).sum())
                   for e in ev_parts)

    run.salvage = lambda status: (take(), {"link": rig.host_counters()})[1]
    with run:
        rig.run()
        last_change, seen, ended_at = time.monotonic(), -1, None
        while True:
            got = link.poll(wait=0.05)
            take()
            done = falls()
            now = time.monotonic()
            if done != seen:
                seen, last_change = done, now
                bar.update(done)
            if done >= len(tests):
                ended_at = ended_at or now
                # the last records (complete at MARKER1's fall) arrive right after
                if not got and now - ended_at > 0.2:
                    break
            elif now - last_change > stall_s:
                raise LinkError(f"the target stopped: {done} of {len(tests)} suite tests "
                                f"ended, none for {format_s(stall_s)}",
                                hint="does the firmware follow docs/suite.md (the suite "
                                     "program waits for one STIM0 pulse)?")
        take()
        counters, _ = rig.loss_counters(settings.channels)
        link_words = _read_trace(trace)
        traced, _ended = parse_trace(link_words)
        records = np.concatenate(lat_parts) if lat_parts else decode_latency(b"")
        events = np.concatenate(ev_parts) if ev_parts else decode_events(b"")
        records = records[np.argsort(records["stim_t"], kind="stable")]
        per_test = split_tests(records, events, tests)
        figures, cycles = {}, {}
        for k, name in enumerate(tests):
            counts = None
            if trace is not None and k < len(traced):
                counts = traced[k]["counts"]
                cycles[name] = counts
            figures[name] = iteration_figures(per_test.get(name, records[:0]), rig.tick_hz,
                                         counts, cycle_ticks, offset_cycles)
        final = run.finish({"status": "complete", "records": int(len(records)),
                            "link": counters,
                            "suite": {"tests": figures, "self_timed_cycles": cycles,
                                      "cycle_ticks": cycle_ticks,
                                      "offset_cycles": offset_cycles}})
    return SuiteResult(Path(path), figures, counters, final)


