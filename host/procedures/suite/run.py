# SPDX-License-Identifier: BSD-2-Clause
"""One run of the suite on a rig: the go pulse, the raw marker events taken as they
come and written to the capture file, the interrupt tests' pulses sent while each
runs, and the figures at the end."""

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....channels import ChannelPlan
from ....errors import UsageError
from ....protocol import Caps, Input
from ....records import EVENT_DTYPE
from ...rig.run import CaptureRun, Progress, capture_meta
from ..settings import CaptureSettings
from .catalog import IRQ_JITTER_S, IRQ_TESTS, TESTS, index_name, irq_freq
from .figures import _suite_figures
from .stall import _stalled
from .trace import _Trace
from .windows import name_windows

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


def _on_step(seconds, rig):
    """A duration the suite chooses, made a whole number of the rig's stimulus steps
    (rounded to ticks, then down to the step): the settings refuse any other, and the
    suite's own offsets (1.5 µs on a 13.33 ns tick, say) need not be one."""
    step = rig.stim_step
    return (round(seconds * rig.tick_hz) // step * step) / rig.tick_hz


def _start_pulses(rig, name, iterations, target, load):
    """The pulses of interrupt test ``name``: one per iteration at :func:`irq_freq` of
    the rig's link with :data:`IRQ_JITTER_S`, STIM1 at the test's offset, with the STIM
    and marker-falling edges recorded."""
    offset = IRQ_TESTS[name]
    s = CaptureSettings(freq=irq_freq(rig.info["baud"]), count=iterations, target=target, load=load,
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
    boards'). A count agrees within one target cycle: the phase at which the SoC sees
    an interrupt, and the rig's ticks (the rig takes the SoC's outputs at every tick)."""
    if cycle_ticks is None:
        from ....gateware.soc import SOC_CLK_HZ
        cycle_ticks = rig.tick_hz / SOC_CLK_HZ
    tolerance_ticks = cycle_ticks
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
                         "rig's gateware lacks (the iCEBreaker's build)")
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

    def count(self):
        """Raw events taken so far."""
        return int(sum(len(e) for e in self.parts))

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
            # ...and every event the rig made by then is in: a host that fell behind a
            # twin finds the rig's clock far on while the run's first edges still wait
            # in the rig's queue, and a go pulse sent then would start a second run.
            if not started and t - go_ticks >= retry_ticks and \
                    rig.all_records_in(0, events.count()):
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
