# SPDX-License-Identifier: BSD-2-Clause
"""The kernel suite timed by the rig: every iteration of every test, from outside.

The target runs the ``suite`` program (``firmware/apps/suite``; the marker protocol in
docs/suite.md): per test, MARKER2 is high around its iterations; per iteration,
MARKER0 rises as the timed operation starts and MARKER1 as it completes. The rig
timestamps those edges (raw events, 10 ns on a 100 MHz rig) and the host pairs each
MARKER0 rise with the MARKER1 rise after it: one interval per iteration, cut into
tests by MARKER2. On the SoC twin the program also counts each iteration itself
(``mcycle``) and writes the counts as TRACE words; they are compared with the rig's
figure iteration by iteration.

Two events per iteration go over the link, so the iterations must be far enough apart
for it (docs/suite.md); an event the rig could not queue is counted
(``EVT_OVERFLOW``) and makes the run incomplete, never silently wrong.

One STIM0 pulse starts the run (the program waits for it), so a rig on a real board
runs the suite the same way on a firmware that follows docs/suite.md.
"""

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...channels import ChannelPlan
from ...errors import LinkError, UsageError
from ...protocol import STIM_INPUT, Caps, Input
from ...records import EVENT_DTYPE
from ...units import format_s
from ..analysis import claimable, ticks_to_ns
from ..rig.run import CaptureRun, Progress, capture_meta
from .settings import CaptureSettings

__all__ = ["TESTS", "IRQ_TESTS", "NESTED_OFFSETS_NS", "rows_of", "part_offset", "patch_config", "parse_trace", "wait_ready", "select_tests", "run_suite",
           "split_tests", "iteration_figures", "SuiteResult", "ITERATION_DTYPE"]

#: STIM1's offsets after STIM0 in the nested-interrupt tests, ns.
NESTED_OFFSETS_NS = (1500, 3000, 4500, 6000, 7500)
#: The interrupt tests, driven by the rig's pulses, and STIM1's offset in each (ns;
#: None: STIM0 alone). ``_high_first``: line 0 (STIM0) has the higher priority, else
#: line 1 (STIM1, the second pulse) has it and preempts line 0's ISR.
IRQ_TESTS = {"isr_to_ist": None, "irq_simultaneous": 0,
             **{f"irq_nested_{o}ns": o for o in NESTED_OFFSETS_NS},
             **{f"irq_nested_{o}ns_high_first": o for o in NESTED_OFFSETS_NS}}
#: The suite's tests, in the program's order (index = bit of the config's test mask).
TESTS = ("event_wake", "sem_uncontended", "sem_wake", "mutex_uncontended", "mutex_handoff",
         "critical_section", "yield", "thread_switch_2", "thread_switch_10",
         "thread_switch_128", "priority_inversion", "priority_inversion_no_pi") \
    + tuple(IRQ_TESTS)
#: What one iteration of an interrupt test holds, in the order of its TRACE counts:
#: isr (STIM0↑ → MARKER0↑, the ISR), ist (MARKER0↑ → MARKER1↑, the ISR to its thread);
#: isr0/isr1 (each line's pulse → its ISR's marker rising), both (STIM0↑ → the later
#: of the two markers falling: both serviced).
_PARTS = {"isr_to_ist": ("isr", "ist")}
_PAIR_PARTS = ("isr0", "isr1", "both")
#: SoC cycles the rig sees that the target's own count of a part does not hold: the
#: IRQ pin's synchroniser and the interrupt block before the edge's stamp, and the
#: marker store after its ``mcycle`` read (docs/soc.md, "Fixed delays").
STIM_FIXED_CYCLES = 6
_PART_OFFSET = {"isr": STIM_FIXED_CYCLES, "ist": 0, "isr0": STIM_FIXED_CYCLES,
                "isr1": STIM_FIXED_CYCLES, "both": STIM_FIXED_CYCLES}
#: The interrupt tests' pulse rate (an iteration, two 20 µs ISRs and a tick, fits in
#: a period) and jitter: each period is longer by 0 … IRQ_JITTER_S, so the pulses meet
#: the target's tick at every phase (a fixed 100 µs would lock to a 1 ms tick).
IRQ_FREQ = 10_000
IRQ_JITTER_S = 10e-6
#: One iteration as the rig saw it: MARKER0 rise (ticks), MARKER0 rise → MARKER1 rise
#: (ticks), and whether MARKER1 never rose (``interval`` then 0).
ITERATION_DTYPE = np.dtype([("start", "<u8"), ("interval", "<u8"), ("missed", "?")])
#: The configuration block's magic in the program image (docs/suite.md).
MAGIC = b"RTSUITE1"
#: TRACE words framing a test and a run (docs/suite.md).
TRACE_BEGIN, TRACE_END, TRACE_RUN_END = 0x5E000000, 0x5EFF0000, 0x5EFFFFFF
#: Raw events kept (``EDGE_EN``): MARKER0 and MARKER1 rising, MARKER2 both ways.
_EDGE_EN = 1 << Input.MARKER0 | 1 << Input.MARKER1 | 1 << Input.MARKER2 \
    | 1 << (8 + Input.MARKER2)
#: During an interrupt test also: both markers falling, and STIM0/STIM1 both ways.
_IRQ_EDGE_EN = _EDGE_EN | 1 << (8 + Input.MARKER0) | 1 << (8 + Input.MARKER1) | 1 << 16
#: The start pulse: one STIM0 pulse of 50 µs.
_GO_FREQ = 10_000
#: Seconds without a new test beginning or ending before the run is given up.
_STALL_S = 120.0
#: Seconds between go pulses until the first test begins: a pulse that reaches the
#: program before it listens (still starting up) is lost, so it is repeated — but only
#: until MARKER2 first rises, since a pulse during a run would start a second one.
_GO_RETRY_S = 2.0


def select_tests(text):
    """``"a,b"`` (or None: every test) → the names, in the program's order."""
    if not text:
        return TESTS
    names = [t.strip() for t in text.split(",")]
    if not any(names):
        raise UsageError(f"--tests {text!r} names no suite test",
                         hint="tests: " + ", ".join(TESTS))
    if "" in names:
        raise UsageError(f"--tests {text!r} has an empty name (two commas, or one at an end)")
    unknown = [n for n in names if n not in TESTS]
    if unknown:
        raise UsageError(f"unknown suite test '{unknown[0]}'", hint="tests: " + ", ".join(TESTS))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--tests names '{twice[0]}' more than once")
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
    """TRACE words → the runs they hold, each a list of tests ``{"index", "loaded",
    "counts"}`` in order. Broken framing (a count outside a test, an END that is not
    the open test's, a run that ends inside a test, words after the last RUN_END) is
    a :class:`ValueError` naming it: the counts are then not trusted."""
    runs, run, cur = [], [], None
    for w in words:
        if w == TRACE_RUN_END:
            if cur is not None:
                raise ValueError(f"the run ended inside test {cur['index']}")
            runs.append(run)
            run = []
        elif w & 0xFFFF0000 == TRACE_END:
            if cur is None or cur["index"] != w & 0xFFFF:
                raise ValueError(f"END of test {w & 0xFFFF} without its BEGIN")
            run.append(cur)
            cur = None
        elif w & 0xFF000000 == TRACE_BEGIN:
            if cur is not None:
                raise ValueError(f"BEGIN of test {w & 0xFFFF} inside test {cur['index']}")
            cur = {"index": w & 0xFFFF, "loaded": bool(w >> 16 & 1), "counts": []}
        elif cur is None:
            raise ValueError(f"count {w} outside a test")
        else:
            cur["counts"].append(int(w))
    if cur is not None or run:
        raise ValueError("the trace ends inside a run")
    return runs


def wait_ready(rig, timeout_s=120):
    """On the SoC twin: wait until the program has said ``suite: ready`` on its console
    (it listens for the go pulse from then on)."""
    t0 = time.monotonic()
    while "suite: ready" not in rig.sim.console.read_text(errors="replace"):
        if time.monotonic() - t0 > timeout_s:
            raise LinkError(f"the SoC did not say 'suite: ready' within {format_s(timeout_s)}",
                            hint="is --firmware the suite program (firmware/apps/suite)?")
        time.sleep(0.1)


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


def rows_of(name):
    """The rows an iteration of test ``name`` gives: ``name`` itself, or for an
    interrupt test ``name.part`` per part (:data:`_PARTS`)."""
    if name not in IRQ_TESTS:
        return (name,)
    return tuple(f"{name}.{p}" for p in _PARTS.get(name, _PAIR_PARTS))


def part_offset(row):
    """SoC cycles between what the rig times for ``row`` and the target's own count."""
    return _PART_OFFSET.get(row.rpartition(".")[2], 0) if "." in row else 0


def _next(times, after, limit):
    """For each of ``after``: the first of the sorted ``times`` at or after it, and
    whether there is one before ``limit``."""
    i = np.searchsorted(times, after, side="left")
    found = i < len(times)
    at = times[np.minimum(i, max(len(times) - 1, 0))] if len(times) else np.zeros_like(after)
    found &= at < limit
    return np.where(found, at, 0), found


def _rows(start, end, ok):
    r = np.zeros(len(start), dtype=ITERATION_DTYPE)
    r["start"] = start
    r["interval"] = np.where(ok, end - start, 0)
    r["missed"] = ~ok
    return r


def _irq_iterations(name, t, kind, rising):
    """The iterations of interrupt test ``name`` from the events inside its MARKER2
    window (``t``, ``kind``, ``rising``), one per STIM0 pulse, as ``{row: iterations}``."""
    def edges(code, up=True):
        return t[(kind == code) & (rising == (1 if up else 0))]
    s0 = edges(STIM_INPUT[0])
    limit = np.append(s0[1:], np.iinfo(np.int64).max)     # the next pulse
    m0, m0_end = _next(edges(Input.MARKER0), s0, limit)
    rows = rows_of(name)
    if name == "isr_to_ist":
        m1, m1_end = _next(edges(Input.MARKER1), m0, limit)
        return {rows[0]: _rows(s0, m0, m0_end), rows[1]: _rows(m0, m1, m0_end & m1_end)}
    s1, s1_ok = _next(edges(STIM_INPUT[1]), s0, limit)
    m1, m1_end = _next(edges(Input.MARKER1), s1, limit)
    f0, f0_ok = _next(edges(Input.MARKER0, False), m0, limit)
    f1, f1_ok = _next(edges(Input.MARKER1, False), m1, limit)
    both_ok = m0_end & f0_ok & s1_ok & m1_end & f1_ok
    return {rows[0]: _rows(s0, m0, m0_end), rows[1]: _rows(s1, m1, s1_ok & m1_end),
            rows[2]: _rows(s0, np.maximum(f0, f1), both_ok)}


def split_tests(events, tests):
    """The iterations of each test (:data:`ITERATION_DTYPE`): between the k-th MARKER2
    rise and the fall after it, for the k-th of ``tests``, each MARKER0 rise paired with
    the first MARKER1 rise after it (none before the next MARKER0 rise: missed). An
    interrupt test gives a row per part (:func:`rows_of`), an iteration per STIM0 pulse."""
    order = np.argsort(events["t"], kind="stable")
    ev = events[order]
    t = ev["t"].astype(np.int64)
    m2 = ev["input"] == Input.MARKER2
    rises = t[m2 & (ev["rising"] == 1)]
    falls = t[m2 & (ev["rising"] == 0)]
    out = {}
    for k, name in enumerate(tests):
        if k >= len(rises):
            break
        end = falls[falls > rises[k]]
        hi = end[0] if len(end) else np.iinfo(np.int64).max
        if name in IRQ_TESTS:
            w = (t >= rises[k]) & (t < hi)
            out.update(_irq_iterations(name, t[w], ev["input"][w], ev["rising"][w]))
            continue
        inside = (t >= rises[k]) & (t < hi) & (ev["rising"] == 1)
        kinds, times = ev["input"][inside], t[inside]
        its, start = [], None
        for kind, when in zip(kinds, times, strict=True):
            if kind == Input.MARKER0:
                if start is not None:
                    its.append((start, 0, True))
                start = when
            elif kind == Input.MARKER1 and start is not None:
                its.append((start, when - start, False))
                start = None
        if start is not None:
            its.append((start, 0, True))
        out[name] = np.array(its, dtype=ITERATION_DTYPE)
    return out


def iteration_figures(its, tick_hz, counts=None, cycle_ticks=None, offset_cycles=0):
    """One test's figures (ns) from its iterations ``its`` (:data:`ITERATION_DTYPE`):
    count, cold (iteration 0), min, mean, p50, p99, p99.99, max over the iterations
    after the first, and with ``counts`` (the target's own cycle counts,
    ``cycle_ticks`` rig ticks each) their agreement with the rig."""
    missed = its["missed"]
    lat = ticks_to_ns(its["interval"], tick_hz)
    out = {"count": int(len(its)), "missed": int(missed.sum()),
           "cold_ns": round(float(lat[0]), 1) if len(its) and not missed[0] else None}
    warm = lat[1:][~missed[1:]]
    if len(warm):
        pct = np.percentile(warm, [50, 99, 99.99], method="inverted_cdf")
        out.update(min_ns=round(float(warm.min()), 1), mean_ns=round(float(warm.mean()), 1),
                   p50_ns=round(float(pct[0]), 1), p99_ns=round(float(pct[1]), 1),
                   p9999_ns=round(float(pct[2]), 1), max_ns=round(float(warm.max()), 1))
    else:
        out.update(dict.fromkeys(("min_ns", "mean_ns", "p50_ns", "p99_ns", "p9999_ns",
                                  "max_ns")))
    out["weak"] = [k for k, p in (("p99", 99), ("p9999", 99.99)) if not claimable(len(warm), p)]
    if counts is not None:
        c = np.asarray(counts, dtype=np.int64)
        n = min(len(c), len(its))
        diff = its["interval"][:n].astype(np.int64) - c[:n] * cycle_ticks \
            - offset_cycles * cycle_ticks
        diff = diff[~missed[:n]]
        worst = int(np.abs(diff).max()) if len(diff) else 0
        out["self_timed"] = {
            "agree": bool(len(c) == len(its) and worst <= cycle_ticks),
            "max_diff_cycles": round(worst / cycle_ticks, 2),
            "iterations": int(len(c)),
        }
    return out


def _start_pulses(rig, name, iterations, target, load):
    """The pulses of interrupt test ``name``: one per iteration at :data:`IRQ_FREQ`
    with :data:`IRQ_JITTER_S`, STIM1 at the test's offset, with the STIM and
    marker-falling edges recorded."""
    offset = IRQ_TESTS[name]
    s = CaptureSettings(freq=IRQ_FREQ, count=iterations, target=target, load=load,
                        jitter=IRQ_JITTER_S,
                        stim1_offset=None if offset is None else offset * 1e-9)
    regs = s.ticks(rig.tick_hz, rig.stim_step)
    rig.configure_stimulus(regs, ChannelPlan(), EDGE_EN=_IRQ_EDGE_EN)
    rig.run(stim1=offset is not None)


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
    when every test's MARKER2 has fallen and the link has gone quiet; a target that
    starts no new test for ``stall_s`` seconds is an error (what was recorded is kept,
    the file closed as interrupted)."""
    settings = CaptureSettings(freq=_GO_FREQ, count=1, target=target, load=load,
                               description="kernel suite")
    regs = settings.ticks(rig.tick_hz, rig.stim_step)
    # One go pulse and the markers' raw events: no latency channel.
    rig.prepare(settings, regs, ChannelPlan(), drop_streams=True, EDGE_EN=_EDGE_EN)
    rig.enable_streams(raw_events=True)
    # META as suite files have always held it: channel_names of the settings' default
    # channel (isr), the channels matched none.
    meta = capture_meta(rig, settings, regs, "suite", settings.plan)
    meta["channels"] = []
    meta["raw_events"] = True
    meta["suite"] = {"tests": list(tests), "iterations": iterations, "loaded": load,
                     "timed": "MARKER0 rising → MARKER1 rising"}
    if any(t in IRQ_TESTS for t in tests) and not rig.has_caps(Caps.INTERVALS):
        raise UsageError("the interrupt tests need STIM1 and STIM edge events, which this "
                         "rig's gateware lacks (the compact iCE40 build)")
    run = CaptureRun(rig, path, meta, Progress(len(tests), f"suite on {target}", progress))
    before = len(_read_trace(trace))        # words of earlier runs in a long session
    events = _SuiteEvents(rig, run.writer, tests, iterations, target, load)
    run.salvage = events.salvage
    with run:
        _await_suite_end(rig, events, trace, before, run.progress, stall_s)
        events.take()
        rig.disable_streams()
        events.take()
        counters, _ = rig.loss_counters(ChannelPlan())
        traced, trace_error = _traced_tests(trace, before)
        recorded = events.all()
        figures, cycles = _suite_figures(recorded, tests, traced, rig.tick_hz,
                                         cycle_ticks, offset_cycles)
        lost = counters["evt_overflow"] + counters["lost_packets"]
        final = run.finish({"status": "incomplete" if lost else "complete",
                            "events": int(len(recorded)), "link": counters,
                            **({"trace_error": trace_error} if trace_error else {}),
                            "suite": {"tests": figures, "self_timed_cycles": cycles,
                                      "cycle_ticks": cycle_ticks,
                                      "offset_cycles": offset_cycles}})
    return SuiteResult(Path(path), figures, counters, final)


class _SuiteEvents:
    """The raw events of one suite run on their way from the rig to the capture file,
    with the tests that have begun and ended (MARKER2 rises and falls) counted as they
    come, and the pulses of each interrupt test sent while it runs."""

    def __init__(self, rig, writer, tests, iterations, target, load):
        self.rig, self.writer = rig, writer
        self.tests, self.iterations, self.target, self.load = tests, iterations, target, load
        self.parts = []
        self.begun = self.ended = 0          # MARKER2 rises and falls seen so far
        self.driving = None                  # the interrupt test whose pulses run
        self.driven = set()

    def take(self):
        ev = self.rig.take_events()
        if len(ev):
            self.writer.array(b"EVNT", ev)
            self.parts.append(ev)
            edge = ev["rising"][ev["input"] == Input.MARKER2]
            self.begun += int(edge.sum())
            self.ended += int(len(edge) - edge.sum())

    def all(self):
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=EVENT_DTYPE)

    def salvage(self, status):
        self.take()
        return {"events": int(sum(len(e) for e in self.parts)),
                "link": self.rig.host_counters()}

    def drive(self):
        """An interrupt test has begun (its ISRs attached): send its pulses; it has
        ended: stop them."""
        rig, tests = self.rig, self.tests
        k = self.begun - 1
        if self.driving is not None and self.ended > self.driving:
            rig.halt()
            rig.record_edges(_EDGE_EN)
            self.driving = None
        if self.driving is None and k >= 0 and self.ended == k and k < len(tests) \
                and tests[k] in IRQ_TESTS and k not in self.driven:
            _start_pulses(rig, tests[k], self.iterations, self.target, self.load)
            self.driving = k
            self.driven.add(k)


def _await_suite_end(rig, events, trace, before, bar, stall_s):
    """Send the go pulse (again until the first test begins) and take the events until
    every test has ended, the self-timed counts are in (``trace`` from word ``before``)
    and the link has gone quiet; a :class:`LinkError` once no test has begun or ended
    for ``stall_s`` seconds."""
    tests = events.tests
    rig.run()
    last_change, seen, quiet_since = time.monotonic(), -1, None
    last_go, started = last_change, False
    while True:
        got = rig.receive(wait=0.05)
        events.take()
        events.drive()
        done = events.ended
        now = time.monotonic()
        started = started or events.begun > 0
        if not started and now - last_go > _GO_RETRY_S and not rig.running():
            rig.run()
            last_go = now
        quiet_since = None if got else (quiet_since or now)
        edges = events.ended + events.begun
        if edges != seen:                   # a test began or ended: progress
            seen, last_change = edges, now
            bar.update(done)
        if done >= len(tests):
            # the self-timed counts are all written once the run's end word is in
            traced = trace is None or TRACE_RUN_END in _read_trace(trace)[before:]
            if traced and quiet_since is not None and now - quiet_since > 0.3:
                return
        elif now - last_change > stall_s:
            raise LinkError(f"the target stopped: {done} of {len(tests)} suite tests "
                            f"ended, no test began or ended for {format_s(stall_s)}",
                            hint="does the firmware follow docs/suite.md (the suite "
                                 "program waits for one STIM0 pulse)?")


def _traced_tests(trace, before):
    """The tests of the last run in the TRACE file ``trace`` after word ``before``
    (:func:`parse_trace`), and the error that made its counts untrusted (or None)."""
    if trace is None:
        return [], None
    try:
        runs = parse_trace(_read_trace(trace)[before:])
    except ValueError as e:
        return [], str(e)
    return (runs[-1] if runs else []), None


def _suite_figures(events, tests, traced, tick_hz, cycle_ticks, offset_cycles):
    """Each row's figures (:func:`iteration_figures`) from the run's ``events``, with
    the target's own counts of ``traced`` tests; and those counts by row."""
    per_test = split_tests(events, tests)
    figures, cycles = {}, {}
    for k, name in enumerate(tests):
        rows = rows_of(name)
        for j, row in enumerate(rows):
            counts = None
            if k < len(traced):
                counts = traced[k]["counts"][j::len(rows)]
                cycles[row] = counts
            its = per_test.get(row, np.zeros(0, dtype=ITERATION_DTYPE))
            figures[row] = iteration_figures(its, tick_hz, counts, cycle_ticks,
                                             offset_cycles + part_offset(row))
    return figures, cycles
