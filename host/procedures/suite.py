# SPDX-License-Identifier: BSD-2-Clause
"""The kernel suite timed by the rig: every iteration of every test, from outside.

The target runs the ``suite`` program (``firmware/apps/suite``; the marker protocol in
docs/suite.md): per test, MARKER2 is high around its iterations; per iteration,
MARKER0 rises as the timed operation starts and MARKER1 as it completes. The rig
timestamps those edges (raw events, 10 ns on a 100 MHz rig) and the host pairs each
MARKER0 rise with the MARKER1 rise after it: one interval per iteration, cut into
tests by MARKER2. On the SoC twin the program also frames each test with TRACE words
(BEGIN with the test's index, its counts, END) and counts each iteration itself
(``mcycle``): a MARKER2 window is the test its BEGIN word names, whatever the order or
subset the program runs, and the counts are compared with the rig's figure iteration
by iteration. Without TRACE words (a real target) the windows are the tests of
``--tests``, in the order given.

Two events per iteration go over the link, so the iterations must be far enough apart
for it (docs/suite.md); an event the rig could not queue is counted
(``EVT_OVERFLOW``) and makes the run incomplete, never silently wrong.

One STIM0 pulse starts the run (the program waits for it), so a rig on a real board
runs the suite the same way on a firmware that follows docs/suite.md.
"""

import contextlib
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
from ..bounds import max_exceedance, rank_bounds
from ..rig.run import CaptureRun, Progress, capture_meta
from .settings import CaptureSettings

__all__ = ["TESTS", "IRQ_TESTS", "NESTED_OFFSETS_NS", "rows_of", "part_offset", "patch_config",
           "parse_trace", "wait_ready", "select_tests", "run_suite", "name_windows",
           "index_name", "split_tests", "iteration_figures", "SuiteResult", "ITERATION_DTYPE"]

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
#: … and only once the rig's clock has also run this long since the last go pulse: the
#: simulation twin may run far slower than real time (a loaded machine), and a go
#: pulse repeated while the program is still setting up its first test is a pulse
#: that test never asked for. On a board, rig time is real time and this never binds.
_GO_RETRY_RIG_S = 0.02


def select_tests(text, keep_order=False):
    """``"a,b"`` (or None: every test) → the names, in the program's order (or, with
    ``keep_order``, in the order given: a target without TRACE words runs them so)."""
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
    return tuple(names) if keep_order else tuple(t for t in TESTS if t in names)


def patch_config(image, iterations, tests, pause_cycles=1000):
    """A copy of the program ``image`` (bytes) with its configuration block set."""
    at = image.find(MAGIC)
    if at < 0 or at % 4:
        raise UsageError("the firmware has no suite configuration block (magic RTSUITE1)",
                         hint="a suite firmware holds the block, 4-byte aligned, in its image "
                              "(docs/suite.md, \"Timing your own firmware\"); rtrig's own "
                              "suite: `make -C firmware all` (suite.bin)")
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
                            hint="a suite firmware prints 'suite: ready' on CONSOLE_TX once "
                                 "it listens for the go pulse (docs/suite.md, \"Timing your "
                                 "own firmware\")")
        time.sleep(0.1)


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
    rise and the fall after it, for the k-th of ``tests`` (None: a window left out),
    each MARKER0 rise paired with the first MARKER1 rise after it (none before the next
    MARKER0 rise: missed). An interrupt test gives a row per part (:func:`rows_of`), an
    iteration per STIM0 pulse."""
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
        if name is None:
            continue
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


#: The percentiles of a suite test: name → fraction.
_SUITE_PERCENTILES = {"p50": 0.5, "p99": 0.99, "p9999": 0.9999}


def _warm_bounds(warm):
    """95 % bounds of each percentile (``p99_lo_ns``, ``p99_hi_ns``, …; None for a side
    too few iterations bound) and the maximum's exceedance bound
    (:mod:`rtrig.host.bounds`), from the sorted warm iterations in ns."""
    out = {}
    for name, q in _SUITE_PERCENTILES.items():
        lo, hi = rank_bounds(len(warm), q) if len(warm) else (None, None)
        out[f"{name}_lo_ns"] = None if lo is None else round(float(warm[lo]), 1)
        out[f"{name}_hi_ns"] = None if hi is None else round(float(warm[hi]), 1)
    out["max_exceedance"] = max_exceedance(len(warm))
    return out


def iteration_figures(its, tick_hz, counts=None, cycle_ticks=None, offset_cycles=0,
                      tolerance_ticks=None):
    """One test's figures (ns) from its iterations ``its`` (:data:`ITERATION_DTYPE`):
    count, cold (iteration 0), min, mean, p50, p99, p99.99 (each with its 95 % bounds),
    max (with its exceedance bound) over the iterations after the first, and with
    ``counts`` (the target's own cycle counts, ``cycle_ticks`` rig ticks each, not
    necessarily a whole number) their agreement with the rig: every iteration within
    ``tolerance_ticks`` (default one target cycle)."""
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
    out.update(_warm_bounds(np.sort(warm)))
    out["weak"] = [k for k, p in (("p99", 99), ("p9999", 99.99)) if not claimable(len(warm), p)]
    if counts is not None:
        c = np.asarray(counts, dtype=np.int64)
        n = min(len(c), len(its))
        diff = its["interval"][:n].astype(np.int64) - c[:n] * cycle_ticks \
            - offset_cycles * cycle_ticks
        diff = diff[~missed[:n]]
        worst = float(np.abs(diff).max()) if len(diff) else 0.0
        tolerance = cycle_ticks if tolerance_ticks is None else tolerance_ticks
        out["self_timed"] = {
            "agree": bool(len(c) == len(its) and worst <= tolerance + 1e-9),
            "max_diff_cycles": round(worst / cycle_ticks, 2),
            "iterations": int(len(c)),
        }
    return out


def _on_step(seconds, rig):
    """A duration the suite chooses, made a whole number of the rig's stimulus steps
    (rounded to ticks, then down to the step): the settings refuse any other, and the
    suite's own offsets (1.5 µs on a 13.33 ns tick, say) need not be one."""
    step = rig.stim_step
    return (round(seconds * rig.tick_hz) // step * step) / rig.tick_hz


def _start_pulses(rig, name, iterations, target, load):
    """The pulses of interrupt test ``name``: one per iteration at :data:`IRQ_FREQ`
    with :data:`IRQ_JITTER_S`, STIM1 at the test's offset, with the STIM and
    marker-falling edges recorded."""
    offset = IRQ_TESTS[name]
    s = CaptureSettings(freq=IRQ_FREQ, count=iterations, target=target, load=load,
                        jitter=_on_step(IRQ_JITTER_S, rig),
                        stim1_offset=None if offset is None else _on_step(offset * 1e-9, rig))
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
                "status": self.final.get("status"),
                "order": self.final["suite"]["order"],
                "mismatch": self.final["suite"]["mismatch"],
                **({"window_error": self.final["suite"]["window_error"]}
                   if self.final["suite"].get("window_error") else {})}


def index_name(index):
    """The suite test of TRACE index ``index``, or None when the suite has none."""
    return TESTS[index] if 0 <= index < len(TESTS) else None


def name_windows(traced, windows, asked):
    """Which test each of the rig's ``windows`` MARKER2 windows holds, and what differs
    between the tests ``asked`` for (the mask or ``--tests``) and those that ran.

    ``traced``: the run's tests as the firmware framed them (:func:`parse_trace`), or
    None without TRACE words (then the windows are ``asked``, in that order: the
    user's word for it). The k-th window is the k-th test BEGIN (the firmware writes
    BEGIN before MARKER2 rises and END after it falls); when the two counts differ no
    window is named. Returns ``(order, mismatch, error)``: the name per window (None:
    unnamed; a test run twice keeps its first window), ``{test: what differs}`` and the
    reason no window is named (or None)."""
    if traced is None:
        order = [asked[k] if k < len(asked) else None for k in range(windows)]
        mismatch = {f"window {k}": f"MARKER2 window {k} beyond the {len(asked)} tests of "
                    "--tests" for k in range(len(asked), windows)}
        mismatch.update({n: f"{n} asked for, never begun" for n in asked[windows:]})
        return order, mismatch, None
    ran = [index_name(t["index"]) for t in traced]
    mismatch = {}
    for t, name in zip(traced, ran, strict=True):
        if name is None:
            mismatch[f"test {t['index']}"] = (f"firmware ran test {t['index']}, which the "
                                              f"suite does not have (0..{len(TESTS) - 1})")
        elif name not in asked:
            mismatch[name] = f"firmware ran {name}, not asked for"
        if name is not None and ran.count(name) > 1:
            mismatch[name] = f"firmware ran {name} {ran.count(name)} times; the first is kept"
    mismatch.update({n: f"{n} asked for, never begun" for n in asked if n not in ran})
    order = [n if n is not None and n not in ran[:k] else None for k, n in enumerate(ran)]
    if len(traced) != windows:
        return [None] * windows, mismatch, (
            f"the firmware's TRACE words frame {len(traced)} tests, the rig saw {windows} "
            "MARKER2 windows: no window is named (each test needs its BEGIN word, then "
            "MARKER2 high around its iterations, docs/suite.md)")
    return order, mismatch, None


def run_suite(rig, path, tests=TESTS, iterations=1000, target="soc", load=False,
              trace=None, cycle_ticks=None, offset_cycles=0, progress=True, stall_s=_STALL_S):
    """Run the suite once on ``rig`` and write ``path``; returns a :class:`SuiteResult`.

    ``tests``: those asked for. ``trace``: the TRACE file of the SoC twin; each MARKER2
    window is then the test its BEGIN word names (:func:`name_windows`), whatever the
    order, and the run ends with the firmware's end-of-run word. Without it (None: a
    real target) the windows are ``tests`` in the order given, and no self-timed counts.
    A target that starts no new test for ``stall_s`` seconds is an error saying what
    was last seen (what was recorded is kept, the file closed as interrupted).
    ``cycle_ticks``: rig ticks per target cycle of the self-timed counts (default: the
    reference SoC's, ``TICK_HZ`` / 50 MHz: 2 on the default twin, 2.4 on the ECP5
    boards'). A count agrees within one target cycle (the phase at which the SoC sees
    an interrupt) and, on a rig that samples the SoC's outputs once per clock of
    several ticks (the ECP5 boards' 33.33 ns), the ticks beyond the first of that clock
    (the rig dates an edge to the start of the cycle that saw it)."""
    if cycle_ticks is None:
        from ...gateware.soc import SOC_CLK_HZ
        cycle_ticks = rig.tick_hz / SOC_CLK_HZ
    tolerance_ticks = cycle_ticks + rig.stim_step - 1
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
                     "timed": "MARKER0 rising → MARKER1 rising",
                     "named_by": "TRACE BEGIN words" if trace is not None
                     else "the order of --tests (no TRACE words)"}
    if any(t in IRQ_TESTS for t in tests) and not rig.has_caps(Caps.INTERVALS):
        raise UsageError("the interrupt tests need STIM1 and STIM edge events, which this "
                         "rig's gateware lacks (the compact iCE40 build)")
    run = CaptureRun(rig, path, meta, Progress(len(tests), f"suite on {target}", progress))
    events = _SuiteEvents(rig, run.writer, tests, iterations, target, load, _Trace(trace))
    run.salvage = events.salvage
    with run:
        _await_suite_end(rig, events, run.progress, stall_s)
        events.take()
        rig.disable_streams()
        events.take()
        counters, _ = rig.loss_counters(ChannelPlan())
        recorded = events.all()
        traced, trace_error = events.trace.tests()
        if trace_error:                     # the counts are not trusted; the names are
            traced = [{"index": i, "counts": None} for i in events.trace.begins()]
        order, mismatch, window_error = name_windows(traced, events.ended, tests)
        figures, cycles = _suite_figures(recorded, order, traced or [], rig.tick_hz,
                                         cycle_ticks, offset_cycles, mismatch,
                                         tolerance_ticks)
        lost = counters["evt_overflow"] + counters["lost_packets"]
        final = run.finish({"status": "incomplete" if lost else "complete",
                            "events": int(len(recorded)), "link": counters,
                            **({"trace_error": trace_error} if trace_error else {}),
                            "suite": {"tests": figures, "self_timed_cycles": cycles,
                                      "cycle_ticks": cycle_ticks,
                                      "offset_cycles": offset_cycles, "order": order,
                                      "mismatch": mismatch,
                                      **({"window_error": window_error}
                                         if window_error else {})}})
    return SuiteResult(Path(path), figures, counters, final)


class _Trace:
    """The TRACE file of the SoC twin (or None), read as it grows: the words of this
    run, after those of earlier runs in a long session."""

    def __init__(self, path):
        self.path = None if path is None else Path(path)
        self.offset, self.rest, self.words = 0, "", []
        self.before = len(self.read())
        self._begins, self._end, self._scanned = [], None, self.before

    def read(self):
        """Every word so far (the file's new lines appended)."""
        if self.path is None or not self.path.exists():
            return self.words
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        lines = (self.rest + data.decode(errors="replace")).split("\n")
        self.rest = lines.pop()             # a line still being written
        for line in lines:
            try:
                self.words.append(int(line) & 0xFFFFFFFF)
            except ValueError:
                pass
        return self.words

    def _scan(self):
        words = self.read()
        while self._end is None and self._scanned < len(words):
            w = words[self._scanned]
            if w == TRACE_RUN_END:
                self._end = self._scanned + 1
            elif _is_begin(w):
                self._begins.append(w & 0xFFFF)
            self._scanned += 1
        return words

    def run(self):
        """This run's words so far (up to its end-of-run word: a go pulse during the
        run starts another one after it)."""
        words = self._scan()
        return words[self.before:self._end if self._end is not None else len(words)]

    def begins(self):
        """The test index of each BEGIN word of this run so far."""
        self._scan()
        return self._begins

    def ended(self):
        """The run's end-of-run word is in."""
        self._scan()
        return self._end is not None

    def tests(self):
        """This run's tests (:func:`parse_trace`; None without a TRACE file) and the
        error that made them untrusted (or None)."""
        if self.path is None:
            return None, None
        try:
            runs = parse_trace(self.run())
        except ValueError as e:
            return [], str(e)
        return (runs[0] if runs else []), None


def _is_begin(w):
    return w & 0xFF000000 == TRACE_BEGIN and w & 0xFFFF0000 != TRACE_END


def _describe_word(w, begins):
    """A TRACE word as the stall report shows it."""
    if w == TRACE_RUN_END:
        return "0x5EFFFFFF (end of the run)"
    name = index_name(w & 0xFFFF)
    which = name or f"test {w & 0xFFFF}, which the suite does not have"
    if w & 0xFFFF0000 == TRACE_END:
        return f"0x{w:08X} (END of {which})"
    if _is_begin(w):
        return f"0x{w:08X} (BEGIN of {which})"
    return f"{w} (a count of {index_name(begins[-1]) if begins else 'no test'})"


class _SuiteEvents:
    """The raw events of one suite run on their way from the rig to the capture file,
    with the tests that have begun and ended (MARKER2 rises and falls) counted as they
    come, the test each MARKER2 window holds (the TRACE BEGIN word, or the order of
    ``tests`` without TRACE words), and the pulses of each interrupt test sent while it
    runs."""

    def __init__(self, rig, writer, tests, iterations, target, load, trace):
        self.rig, self.writer, self.trace = rig, writer, trace
        self.tests, self.iterations, self.target, self.load = tests, iterations, target, load
        self.parts = []
        self.begun = self.ended = 0          # MARKER2 rises and falls seen so far
        self.last_edge = None                # (input, rising, t) of the last marker edge
        self.driving = None                  # the window whose pulses run
        self.driven = set()

    def take(self):
        ev = self.rig.take_events()
        if len(ev):
            self.writer.array(b"EVNT", ev)
            self.parts.append(ev)
            edge = ev["rising"][ev["input"] == Input.MARKER2]
            self.begun += int(edge.sum())
            self.ended += int(len(edge) - edge.sum())
            marks = ev[np.isin(ev["input"], (Input.MARKER0, Input.MARKER1, Input.MARKER2))]
            if len(marks):
                last = marks[np.argmax(marks["t"])]
                self.last_edge = (int(last["input"]), int(last["rising"]), int(last["t"]))

    def window_name(self, k):
        """The test of MARKER2 window ``k`` as far as known: its name, ``"test N"`` for
        an index the suite lacks, or None (no BEGIN word for it yet)."""
        if self.trace.path is None:
            return self.tests[k] if k < len(self.tests) else None
        begins = self.trace.begins()
        if k >= len(begins):
            return None
        return index_name(begins[k]) or f"test {begins[k]}"

    def order(self):
        """The test of each window so far (None: unnamed)."""
        return [n if n in TESTS else None for n in map(self.window_name, range(self.begun))]

    def all(self):
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=EVENT_DTYPE)

    def salvage(self, status):
        with contextlib.suppress(Exception):     # a lost link: keep what was taken
            self.take()
        return {"events": int(sum(len(e) for e in self.parts)),
                "link": self.rig.host_counters(), "suite": {"order": self.order()}}

    def drive(self):
        """An interrupt test has begun (its ISRs attached): send its pulses; it has
        ended: stop them."""
        rig, k = self.rig, self.begun - 1
        if self.driving is not None and self.ended > self.driving:
            rig.halt()
            rig.record_edges(_EDGE_EN)
            self.driving = None
        if self.driving is None and k >= 0 and self.ended == k and k not in self.driven:
            name = self.window_name(k)
            if name in IRQ_TESTS:
                _start_pulses(rig, name, self.iterations, self.target, self.load)
                self.driving = k
            if name is not None:            # named (or no BEGIN word yet: look again)
                self.driven.add(k)

    def done(self):
        """Every test has ended: with TRACE words, the firmware's end-of-run word is in
        and every test it framed has had its MARKER2 window; without, every test of
        ``tests`` has."""
        if self.trace.path is None:
            return self.ended >= len(self.tests)
        return self.trace.ended() and self.begun == self.ended >= len(self.trace.begins())


def _await_suite_end(rig, events, bar, stall_s):
    """Send the go pulse (again until the first test begins) and take the events until
    the run is over (:meth:`_SuiteEvents.done`) and the link has gone quiet; a
    :class:`LinkError` (:func:`_stalled`) once no test has begun or ended for
    ``stall_s`` seconds."""
    rig.run()
    last_change, seen, quiet_since = time.monotonic(), -1, None
    last_go, started = last_change, False
    go_ticks, retry_ticks = rig.time(), round(_GO_RETRY_RIG_S * rig.tick_hz)
    while True:
        got = rig.receive(wait=0.05)
        events.take()
        events.drive()
        now = time.monotonic()
        started = started or events.begun > 0 or bool(events.trace.run())
        if not started and now - last_go > _GO_RETRY_S and not rig.running():
            t = rig.time()
            events.take()           # what arrived before the time did
            started = events.begun > 0 or bool(events.trace.run())
            if not started and t - go_ticks >= retry_ticks:
                rig.run()
                last_go, go_ticks = now, t
        quiet_since = None if got else (quiet_since or now)
        edges = events.ended + events.begun
        if edges != seen:                   # a test began or ended: progress
            seen, last_change = edges, now
            bar.update(events.ended)
        if events.done():
            if quiet_since is not None and now - quiet_since > 0.3:
                return
        elif now - last_change > stall_s:
            raise _stalled(events, rig.tick_hz, stall_s)


_MARKERS = {Input.MARKER0: "MARKER0", Input.MARKER1: "MARKER1", Input.MARKER2: "MARKER2"}


def _stalled(events, tick_hz, stall_s):
    """The :class:`LinkError` of a run that stopped: what was last seen (the last TRACE
    word and the last marker edge, each with its test) and what that asks of the
    firmware."""
    traced = events.trace.path is not None
    words, begins = events.trace.run(), events.trace.begins()
    k = events.begun - 1
    name = events.window_name(k) if k >= 0 else None
    inside = events.begun > events.ended
    if events.last_edge is None:
        edge = "no marker edge since the go pulse"
    else:
        inp, rising, t = events.last_edge
        edge = (f"last marker edge {_MARKERS.get(inp, inp)} {'rising' if rising else 'falling'}"
                f" at {format_s(t / tick_hz)}, "
                + (f"inside window {k} ({name or 'unnamed'})" if inside
                   else f"after window {k} ({name or 'unnamed'})" if k >= 0
                   else "before any MARKER2 window"))
    word = ("no TRACE word since the go pulse" if not words
            else f"last TRACE word {_describe_word(words[-1], begins)}")
    asked = len(begins) if traced and events.trace.ended() else len(events.tests)
    msg = (f"the target stopped: {events.ended} of {asked} suite tests ended, no test "
           f"began or ended for {format_s(stall_s)}; "
           + (f"{word}; " if traced else "") + edge)
    if events.begun == 0 and (not traced or not words):
        hint = ("after the go pulse (one STIM0 rising edge: the interrupt block's PENDING "
                "bit 0) the firmware must frame each test: TRACE BEGIN (0x5E000000 | "
                "index), then MARKER2 high around its iterations (docs/suite.md, "
                "\"Timing your own firmware\")")
        if not traced:
            hint = "no MARKER2 window began: " + hint.replace("TRACE BEGIN (0x5E000000 | "
                                                              "index), then ", "")
    elif inside:
        hint = (f"{name or 'the test'} is still running (MARKER2 high): "
                + ("an interrupt test ends after one pulse per iteration; a pulse the "
                   "firmware missed stalls it" if name in IRQ_TESTS
                   else "it lowers MARKER2 after its last iteration"))
    elif traced and not events.trace.ended():
        hint = ("the firmware must write TRACE 0x5EFFFFFF (end of the run) after its last "
                "test (docs/suite.md, \"Timing your own firmware\")")
    elif traced:
        hint = (f"the firmware framed {len(begins)} tests in TRACE words, the rig saw "
                f"{events.begun} MARKER2 windows: each BEGIN word needs its MARKER2 window")
    else:
        hint = ("without TRACE words the rig expects one MARKER2 window per test of --tests, "
                "in that order")
    return LinkError(msg, hint=hint)


def _suite_figures(events, order, traced, tick_hz, cycle_ticks, offset_cycles, mismatch,
                   tolerance_ticks):
    """Each row's figures (:func:`iteration_figures`) from the run's ``events``, the
    MARKER2 windows named by ``order`` (None: left out), with the target's own counts
    (``traced``, window by window); and those counts by row. A window whose iteration
    count is not the firmware's is added to ``mismatch``."""
    per_test = split_tests(events, order)
    figures, cycles = {}, {}
    for k, name in enumerate(order):
        if name is None:
            continue
        rows = rows_of(name)
        counts_of = {}
        if k < len(traced) and traced[k]["counts"] is not None:
            for j, row in enumerate(rows):
                counts_of[row] = cycles[row] = traced[k]["counts"][j::len(rows)]
        for row in rows:
            its = per_test.get(row, np.zeros(0, dtype=ITERATION_DTYPE))
            counts = counts_of.get(row)
            if counts is not None and len(counts) != len(its):
                mismatch.setdefault(name, f"the rig saw {len(its)} iterations of {name}, "
                                          f"the firmware counted {len(counts)}")
            figures[row] = iteration_figures(its, tick_hz, counts, cycle_ticks,
                                             offset_cycles + part_offset(row),
                                             tolerance_ticks)
    return figures, cycles
