# SPDX-License-Identifier: BSD-2-Clause
"""Where the kernel's cycles go, from the rig's timestamps of the marker pins.

Reads captures of the trace builds of rt_test (``rtrig capture --raw`` of
``firmware/build/rtrig-soc/rt_trace1.bin`` or ``rt_trace2.bin``; the marker maps are
in ``firmware/apps/rt_test/rt_trace.h``) and prints Markdown tables for
docs/kernel.md:

    python firmware/tools/trace_breakdown.py path CAPTURE       # RT_TRACE=1 capture
    python firmware/tools/trace_breakdown.py sections CAPTURE   # RT_TRACE=2 capture
    python firmware/tools/trace_breakdown.py masked CAPTURE     # RT_TRACE=2, nesting build
    python firmware/tools/trace_breakdown.py long CAPTURE       # the same, stretches > 2 µs
    python firmware/tools/trace_breakdown.py tick CAPTURE       # RT_TRACE=3 capture

``path``: the interrupt path of every pulse cut at its trace points, in SoC cycles
(median, min, max over the pulses that did not meet another trap or masked section).
``sections``: every non-preemptible section the capture saw (traps, and masked
sections of threads without the idle thread's wait), the longest of each kind, and
for the pulses whose ISR latency exceeds the median by more than 2 µs, what held
the CPU when the edge came.
``masked``: with nested interrupts a trap is no longer masked from entry to exit;
every stretch with interrupts off (MARKER0 or MARKER1 high, outside wfi), named.
``long``: those stretches longer than 100 SoC cycles (2 µs), one by one.
``tick``: the tick interrupts (traps without ISR_OUT and with the tick's entry and
exit pulses) cut at those pulses and at the switch, with and without a switch.
"""

import sys
from collections import defaultdict

import numpy as np

from rtrig.capture import load
from rtrig.protocol import STIM_INPUT, Input

SOC_HZ = 50_000_000


def _edges(cap):
    """{input: (rise times, fall times)} in rig ticks, and ticks per SoC cycle."""
    ev = cap.events
    per_cycle = cap.tick_hz / SOC_HZ
    out = {}
    for i in set(int(x) for x in ev["input"]):
        sel = ev[ev["input"] == i]
        out[i] = (np.sort(sel["t"][sel["rising"] == 1].astype(np.int64)),
                  np.sort(sel["t"][sel["rising"] == 0].astype(np.int64)))
    return out, per_cycle


def _intervals(rises, falls):
    """(start, end) pairs of high intervals."""
    pairs = []
    j = 0
    for r in rises:
        j = np.searchsorted(falls, r, side="right")
        if j < len(falls):
            pairs.append((int(r), int(falls[j])))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _after(times, t):
    i = np.searchsorted(times, t, side="left")
    return int(times[i]) if i < len(times) else None


def _inside(iv, t):
    """The interval of iv that holds t, or None."""
    i = np.searchsorted(iv[:, 0], t, side="right") - 1
    if i >= 0 and iv[i, 0] <= t < iv[i, 1]:
        return iv[i]
    return None


def path(cap):
    e, pc = _edges(cap)
    stim = e[STIM_INPUT[0]][0]
    trap = _intervals(*e[Input.MARKER0])
    m1 = e[Input.MARKER1][0]
    m2 = e[Input.MARKER2][0]
    isr_r, isr_f = e[Input.ISR_OUT]
    app_r = e[Input.APP_OUT][0]
    steps = ["edge → trap entry marker", "trap entry → dispatch", "dispatch → ISR_OUT rise",
             "ISR_OUT high (the test's ISR)", "ISR_OUT fall → IST woken",
             "IST woken → scheduler switch", "switch → trap exit (mret)",
             "trap exit → APP_OUT rise", "edge → ISR_OUT rise (ISR latency)",
             "edge → APP_OUT rise (APP latency)", "trap entry → trap exit (CPU per pulse)"]
    rows = defaultdict(list)
    clean = 0
    for s in stim:
        if _inside(trap, s) is not None:
            continue                      # the edge met another trap: not the plain path
        t_in = _after(trap[:, 0], s)
        if t_in is None:
            continue
        k = np.searchsorted(trap[:, 0], t_in)
        t_out = int(trap[k, 1])
        d = _after(m1, t_in)
        i_r = _after(isr_r, t_in)
        if d is None or i_r is None or not (t_in <= d <= i_r <= t_out):
            continue
        i_f = _after(isr_f, i_r)
        w = _after(m2, i_f)
        sw = _after(m1, w) if w is not None else None
        a = _after(app_r, i_r)
        if None in (i_f, w, sw, a) or not (i_f <= w <= sw <= t_out <= a):
            continue
        pts = [s, t_in, d, i_r, i_f, w, sw, t_out, a]
        for n in range(8):
            rows[steps[n]].append((pts[n + 1] - pts[n]) / pc)
        rows[steps[8]].append((i_r - s) / pc)
        rows[steps[9]].append((a - s) / pc)
        rows[steps[10]].append((t_out - t_in) / pc)
        clean += 1
    print(f"{clean} of {len(stim)} pulses on the plain path (no other trap at the edge); "
          f"SoC cycles (20 ns), rig ticks / {pc:g}\n")
    print("| step | median | min | max |\n| --- | --- | --- | --- |")
    for name in steps:
        v = np.array(rows[name])
        if len(v):
            print(f"| {name} | {np.median(v):.1f} | {v.min():.1f} | {v.max():.1f} |")


def sections(cap, top=8):
    e, pc = _edges(cap)
    stim = e[STIM_INPUT[0]][0]
    trap = _intervals(*e[Input.MARKER0])
    masked = _intervals(*e[Input.MARKER1])
    wait = _intervals(*e[Input.MARKER2])
    isr_r = e[Input.ISR_OUT][0]

    def busy(a, b):
        """Cycles of [a, b) not spent waiting in wfi."""
        w = wait[(wait[:, 1] > a) & (wait[:, 0] < b)]
        idle = sum(min(b, int(y)) - max(a, int(x)) for x, y in w)
        return (b - a - idle) / pc

    kinds = defaultdict(list)
    for a, b in trap:
        if _after(isr_r, a) is not None and _after(isr_r, a) < b:
            kind = "trap: stimulus interrupt"
        elif _inside(wait, a - 1) is not None:
            kind = "trap: timer tick"          # taken from the idle thread's wfi
        elif _inside(masked, a - 1) is not None:
            kind = "trap: ecall (thread asks for a switch)"
        else:
            kind = "trap: timer tick"
        kinds[kind].append(((b - a) / pc, a))
    for a, b in masked:
        # a thread's masked span ends with its ecall trap or its unlock
        k = np.searchsorted(trap[:, 0], a)
        end = b
        if k < len(trap) and trap[k, 0] < b:
            end = trap[k, 0]
        if _inside(wait, end - 1) is not None or (len(wait) and _after(wait[:, 0], a) is not None
                                                  and _after(wait[:, 0], a) < end):
            kinds["idle thread: masked, before/after wfi"].append((busy(a, end), a))
        else:
            kinds["thread: masked section"].append(((end - a) / pc, a))
    print("| section | count | median | max | max µs |\n| --- | --- | --- | --- | --- |")
    for kind in sorted(kinds, key=lambda k: -max(x for x, _ in kinds[k])):
        v = np.array([x for x, _ in kinds[kind]])
        print(f"| {kind} | {len(v)} | {np.median(v):.0f} | {v.max():.0f} | "
              f"{v.max() / SOC_HZ * 1e6:.2f} |")
    # slow pulses: what held the CPU when the edge came
    lat = []
    for s in stim:
        r = _after(isr_r, s)
        if r is not None:
            lat.append((r - s, s))
    med = np.median([x for x, _ in lat])
    slow = [(x, s) for x, s in lat if x - med > 2e-6 * cap.tick_hz]
    cause = defaultdict(list)
    for x, s in slow:
        iv = _inside(trap, s)
        if iv is not None:
            name = next(k for k in kinds if any(a == iv[0] for _, a in kinds[k]))
        elif _inside(masked, s) is not None:
            name = "thread: masked section"
        else:
            name = "other"
        cause[name].append(x / cap.tick_hz * 1e6)
    print(f"\nISR latency median {med / cap.tick_hz * 1e6:.2f} µs; "
          f"{len(slow)} of {len(lat)} pulses more than 2 µs above it; at their edge the CPU was in:\n")
    print("| held by | pulses | worst ISR latency µs |\n| --- | --- | --- |")
    for name, v in sorted(cause.items(), key=lambda kv: -max(kv[1])):
        print(f"| {name} | {len(v)} | {max(v):.2f} |")


def _merge(iv):
    """Union of (start, end) intervals, sorted, overlapping ones merged."""
    out = []
    for a, b in sorted((int(a), int(b)) for a, b in iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def masked(cap, near=30, window=50):
    """Print :func:`masked_kinds` as a Markdown table: count, median, 99th
    percentile and maximum of each kind."""
    kinds = masked_kinds(cap, near, window)
    print("| section | count | median | p99 | max | max µs |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for kind in sorted(kinds, key=lambda k: -np.median(kinds[k])):
        v = np.array(kinds[kind])
        print(f"| {kind} | {len(v)} | {np.median(v):.0f} | {np.percentile(v, 99):.0f} | "
              f"{v.max():.0f} | {v.max() / SOC_HZ * 1e6:.2f} |")


def long_stretches(cap, limit=100, near=30, window=50):
    """Print every stretch of :func:`masked_stretches` longer than ``limit`` SoC
    cycles: when (ms after the capture's first stimulus edge), how long, its kind, and
    the stretch before it (kind and gap), which tells a nested trap from a plain one."""
    rows = masked_stretches(cap, near, window)
    print("| ms | cycles | section | before it (gap, cycles) |\n"
          "| --- | --- | --- | --- |")
    n = 0
    for i, (a, cycles, kind) in enumerate(rows):
        if cycles <= limit:
            continue
        n += 1
        before = "—"
        if i > 0:
            pa, pcycles, pkind = rows[i - 1]
            before = f"{pkind} ({a - pa - pcycles:.0f})"
        print(f"| {a / SOC_HZ * 1e3:.3f} | {cycles:.0f} | {kind} | {before} |")
    print(f"\n{n} of {len(rows)} stretches longer than {limit} cycles")


def masked_kinds(cap, near=30, window=50):
    """:func:`masked_stretches` by kind: {kind: [SoC cycles of each stretch]}."""
    kinds = defaultdict(list)
    for _, cycles, kind in masked_stretches(cap, near, window):
        kinds[kind].append(cycles)
    return dict(kinds)


def masked_stretches(cap, near=30, window=50):
    """Every stretch with interrupts off, for a build with nested interrupts
    (RT_TRACE=2 and K_CONFIG_NESTING=1): MARKER0 is high while a trap runs masked
    (entry until its handler opens interrupts or its switch opens a window, closing
    again until mret), MARKER1 while code running with interrupts open holds the mask
    (a thread, a handler that opened, the IST wake-up in the switch's window, the
    idle thread outside its wait). Their union is the time with interrupts off; each
    stretch is named from its edges and its neighbours (``near`` SoC cycles; a
    switch window lasts up to ``window``). Returns [(start in SoC cycles after the
    capture's first stimulus edge, length in SoC cycles, kind)] in time order."""
    e, pc = _edges(cap)
    m0r, m0f = e[Input.MARKER0]
    m1r = set(int(x) for x in e[Input.MARKER1][0])
    m2r, m2f = (e[Input.MARKER2] if Input.MARKER2 in e
                else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    isr_r = e[Input.ISR_OUT][0]
    t0 = int(e[STIM_INPUT[0]][0][0])
    pieces = _merge(list(_intervals(m0r, m0f)) + list(_intervals(*e[Input.MARKER1])))
    near_t, win_t = near * pc, window * pc

    def close(times, lo, hi):
        i = np.searchsorted(times, lo, side="left")
        return i < len(times) and times[i] <= hi

    wait = _intervals(m2r, m2f) if len(m2r) else np.zeros((0, 2), np.int64)
    out = []
    tick_part = "tick handler: kernel part (k_tick_announce_from_isr, one wake-up each)"
    prev = None                        # (end, kind) of the last stretch
    for a, b in pieces:
        in_wait = _inside(wait, a) is not None   # the idle thread waits: a handler runs
        after_lock = prev is not None and prev[1] == tick_part and a - prev[0] <= near_t
        window_before = close(m0f, a - win_t, a - 1)     # a switch window just closed
        window_after = close(m0r, b + 1, b + win_t)      # and another follows
        if a in m1r and close(isr_r, a - 12 * near_t, a):
            kind = "IST wake-up in the switch's window (k_event_set)"
        elif close(isr_r, a, b - 1):
            kind = "stimulus trap: entry, ISR, self-timing, until its switch window opens"
        elif a not in m1r and window_before and window_after:
            kind = "switch to a preempted thread: the choice and its callee-saved registers"
        elif a not in m1r and window_before:
            kind = "switch: the choice (k_sched_switch_hook), loading the frame, mret"
        elif a not in m1r and after_lock:
            kind = "tick trap: handler closes until mret"
        elif a not in m1r and in_wait:
            kind = "tick trap taken from idle: entry until its handler opens (save, re-arm)"
        elif a not in m1r:
            kind = "trap entry until the switch window opens (ecall), or a tick from a thread"
        elif in_wait:
            kind = tick_part
        elif close(m2f, a - near_t, a):
            kind = "idle thread: masked after its wait, until it unlocks"
        elif close(m2r, b, b + near_t):
            kind = "idle thread: masked before its wait (next timeout, timer)"
        else:
            kind = "thread: masked section (k_sleep_ms, k_event_wait before the ecall)"
        out.append(((a - t0) / pc, (b - a) / pc, kind))
        prev = (b, kind)
    return out


def tick(cap):
    e, pc = _edges(cap)
    trap = _intervals(*e[Input.MARKER0])
    m1 = e[Input.MARKER1][0]
    isr_r = e[Input.ISR_OUT][0]
    kinds = {2: ("tick, no switch", ["trap entry → tick entry (timer re-armed)",
                                     "tick entry → tick exit (kernel)",
                                     "tick exit → trap exit", "trap entry → trap exit"]),
             3: ("tick with a switch", ["trap entry → tick entry (timer re-armed)",
                                        "tick entry → tick exit (kernel)",
                                        "tick exit → scheduler switch",
                                        "switch → trap exit", "trap entry → trap exit"])}
    rows = {n: defaultdict(list) for n in kinds}
    for a, b in trap:
        r = _after(isr_r, a)
        if r is not None and r < b:
            continue                      # a stimulus trap
        lo, hi = np.searchsorted(m1, a), np.searchsorted(m1, b)
        pts = [int(a)] + [int(x) for x in m1[lo:hi]] + [int(b)]
        n = len(pts) - 2
        if n not in kinds:
            continue                      # an ecall (one pulse: the switch)
        for name, x, y in zip(kinds[n][1], pts, pts[1:]):
            rows[n][name].append((y - x) / pc)
        rows[n][kinds[n][1][-1]].append((b - a) / pc)
    for n, (title, steps) in kinds.items():
        count = len(rows[n][steps[-1]])
        print(f"\n{title}: {count} traps; SoC cycles (20 ns)\n")
        print("| step | median | min | max |\n| --- | --- | --- | --- |")
        for name in steps:
            v = np.array(rows[n][name])
            if len(v):
                print(f"| {name} | {np.median(v):.1f} | {v.min():.1f} | {v.max():.1f} |")


MODES = {"path": path, "sections": sections, "masked": masked, "long": long_stretches,
         "tick": tick}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODES:
        print("usage: trace_breakdown.py path|sections|masked|long|tick CAPTURE",
              file=sys.stderr)
        sys.exit(2)
    try:
        cap = load(sys.argv[2])
    except Exception as e:  # noqa: BLE001 - any unreadable capture: one line, no traceback
        sys.exit(f"error: {e}")
    MODES[sys.argv[1]](cap)
