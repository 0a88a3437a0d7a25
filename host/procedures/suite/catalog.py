# SPDX-License-Identifier: BSD-2-Clause
"""The suite's tests: their names and order (a bit each of the configuration's test
mask), the interrupt tests and the rows their iterations give, and the fixed delays
between what the rig times and what the target counts itself."""

import math

import numpy as np

from ....errors import UsageError
from ....framing import frame
from ....protocol import PacketType
from ....records import EVENT

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
STIM_FIXED_CYCLES = 7
_PART_OFFSET = {"isr": STIM_FIXED_CYCLES, "ist": 0, "isr0": STIM_FIXED_CYCLES,
                "isr1": STIM_FIXED_CYCLES, "both": STIM_FIXED_CYCLES}
#: The interrupt tests' highest pulse rate (an iteration, two 20 µs ISRs and a tick,
#: fits in a period) and jitter: each period is longer by 0 … IRQ_JITTER_S, so the
#: pulses meet the target's tick at every phase (a fixed 100 µs would lock to a 1 ms
#: tick). On a link that cannot carry an iteration's edges that fast, slower
#: (:func:`irq_freq`).
IRQ_FREQ = 10_000
IRQ_JITTER_S = 10e-6
#: Raw events of one iteration: the markers' rises (MARKER2 once per test) ...
EDGES_PER_ITERATION = 2
#: ... and of an interrupt test's: STIM0, STIM1, MARKER0 and MARKER1, both ways.
EDGES_PER_IRQ_ITERATION = 8
#: The share of the link's raw-event rate the suite's edges may take: the rest for the
#: host's polls, and the rig's event FIFO absorbs what comes in bursts.
LINK_SHARE = 0.8
#: The pause after each iteration the firmware takes at least (SoC cycles, 20 µs).
MIN_PAUSE_CYCLES = 1000


def link_events_per_s(baud):
    """Raw events a second a link of ``baud`` carries (8N1, one framed packet each)."""
    return baud / (10 * len(frame(PacketType.EVENT, 0, bytes(EVENT.payload_len))))


def irq_freq(baud):
    """The interrupt tests' pulse rate on a link of ``baud``: :data:`IRQ_FREQ`, or
    slower where the link would not carry every edge (the rig would drop events, and a
    test whose MARKER2 fall is dropped never ends)."""
    fits = LINK_SHARE * link_events_per_s(baud) / EDGES_PER_IRQ_ITERATION
    return min(IRQ_FREQ, math.floor(fits / 100) * 100)


def pause_cycles(baud, cpu_hz):
    """The pause after each iteration (cycles of a ``cpu_hz`` target) that keeps the
    markers' edges within a link of ``baud``, taking the iteration itself as no time."""
    per_iteration_s = EDGES_PER_ITERATION / (LINK_SHARE * link_events_per_s(baud))
    return max(MIN_PAUSE_CYCLES, math.ceil(per_iteration_s * cpu_hz))
#: One iteration as the rig saw it: MARKER0 rise (ticks), MARKER0 rise → MARKER1 rise
#: (ticks), and whether MARKER1 never rose (``interval`` then 0).
ITERATION_DTYPE = np.dtype([("start", "<u8"), ("interval", "<u8"), ("missed", "?")])


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


def index_name(index):
    """The suite test of TRACE index ``index``, or None when the suite has none."""
    return TESTS[index] if 0 <= index < len(TESTS) else None


def rows_of(name):
    """The rows an iteration of test ``name`` gives: ``name`` itself, or for an
    interrupt test ``name.part`` per part (:data:`_PARTS`)."""
    if name not in IRQ_TESTS:
        return (name,)
    return tuple(f"{name}.{p}" for p in _PARTS.get(name, _PAIR_PARTS))


def part_offset(row):
    """SoC cycles between what the rig times for ``row`` and the target's own count."""
    return _PART_OFFSET.get(row.rpartition(".")[2], 0) if "." in row else 0
