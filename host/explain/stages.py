# SPDX-License-Identifier: BSD-2-Clause
"""Stages: the firmware's own marker edges as points on each pulse's way
(``--stages marker1+,marker2+``): per pulse, the time from the stimulus edge to the
first such edge after it (and before the next pulse's), from the capture's raw events.
Works on any capture with raw events (``--raw``), a board's or the twin's."""

import numpy as np

from ...channels import CHANNEL_HELP, SOURCE_NAMES
from ...errors import UsageError
from ...protocol import STIM_INPUT

__all__ = ["parse_stages", "stage_times"]


def parse_stages(spec):
    """``"marker1+,marker2+"`` → ``[(name, input, rising)]``."""
    out = []
    for text in (spec or "").split(","):
        text = text.strip().lower()
        if not text:
            continue
        src = SOURCE_NAMES.get(text[:-1])
        if text[-1:] not in ("+", "-") or src is None or text[:-1] in ("stim0", "stim1"):
            raise UsageError(f"bad stage '{text}': not an edge of a rig input",
                             hint=CHANNEL_HELP)
        out.append((text, src, text[-1] == "+"))
    if not out:
        raise UsageError("--stages names no edge", hint="e.g. --stages marker1+,marker2+")
    return out


#: Each raw event input's name in a stage (``SOURCE_NAMES``' first name for it).
_INPUT_NAMES = {0: "isr", 1: "app", 2: "heartbeat", 3: "marker0", 4: "marker1",
                5: "marker2", STIM_INPUT[0]: "stim0", STIM_INPUT[1]: "stim1"}


def _edges_held(ev):
    """The edges among the raw events ``ev``, as stages name them: ``"isr+, isr-"``."""
    codes = np.unique(ev["input"].astype(np.int64) * 2 + (1 - ev["rising"].astype(np.int64)))
    held = [(int(c) // 2, int(c) % 2 == 0) for c in codes]          # rising first
    return ", ".join(_INPUT_NAMES.get(i, f"input{i}") + ("+" if r else "-") for i, r in held)


def _pulse_starts(cap):
    """The stimulus rising edges (rig ticks) of the capture's pulses, by pulse."""
    lat = cap.latency
    pulses, first = np.unique(lat["pulse"], return_index=True)
    return pulses, lat["stim_t"][first].astype(np.int64)


def stage_times(cap, stages):
    """``(pulses, {stage: ns from the pulse's stimulus edge, NaN when none came before
    the next pulse})``."""
    if not cap.meta.get("raw_events"):
        raise UsageError(f"{cap.path} has no raw events: stages need a capture made "
                         "with --raw")
    pulses, starts = _pulse_starts(cap)
    ends = np.append(starts[1:], np.iinfo(np.int64).max)
    ev = cap.events
    ns = 1e9 / cap.tick_hz
    out = {}
    for name, src, rising in stages:
        sel = ev[(ev["input"] == src) & (ev["rising"] == int(rising))]
        if not len(sel):
            raise UsageError(f"{cap.path} has no {name} edge in its raw events (it has: "
                             f"{_edges_held(ev) or 'none'})",
                             hint="name the edges the firmware marks, e.g. --stages "
                                  "marker1+")
        t = np.sort(sel["t"].astype(np.int64))
        i = np.searchsorted(t, starts, side="left")
        got = np.where(i < len(t), t[np.minimum(i, len(t) - 1)], np.iinfo(np.int64).max)
        ok = got < ends
        out[name] = np.where(ok, (got - starts) * ns, np.nan)
    return pulses, out

