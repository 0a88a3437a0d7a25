# SPDX-License-Identifier: BSD-2-Clause
"""From the rig's marker edges to iterations: each MARKER2 window named as a test
(by its TRACE BEGIN word, or by the order of ``--tests``), and inside it each
iteration's interval (MARKER0 rising to MARKER1 rising), or for an interrupt test
one iteration per STIM0 pulse."""

import numpy as np

from ....protocol import STIM_INPUT, Input
from .catalog import IRQ_TESTS, ITERATION_DTYPE, TESTS, index_name, rows_of


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
