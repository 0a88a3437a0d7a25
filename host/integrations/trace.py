# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig export -f trace``: a capture as Chrome trace event JSON, the format
ui.perfetto.dev and chrome://tracing open (docs/exports.md, docs/explain.md).

One process "rig": a track for the stimulus (one span per pulse, its high time,
answered or missed) and one per channel (a span from the stimulus edge to the response,
for every answered pulse). Where the SoC twin recorded the run (``CAPTURE.rec``), a process "CPU" with a track per
channel: the explained pulses' spans (the worst of each channel), one per function,
their category in ``cat``. Times are in µs from the rig's reset, as the format wants."""

import json

import numpy as np

from ...channels import channel_order
from ...errors import UsageError
from ..analysis import missed_mask
from .export_csv import no_records

__all__ = ["trace_events", "write_trace", "EXPLAINED_PER_CHANNEL"]

#: How many of each channel's slowest pulses get the CPU's spans.
EXPLAINED_PER_CHANNEL = 20
_RIG, _CPU = 1, 2


def _meta(pid, tid, kind, name):
    return {"ph": "M", "pid": pid, "tid": tid, "name": kind, "args": {"name": name}}


def _rig_events(cap, names):
    us = 1e6 / cap.tick_hz
    high = (cap.meta.get("stimulus") or {}).get("high_ticks") or 0
    yield _meta(_RIG, 0, "process_name", "rig")
    yield _meta(_RIG, 0, "thread_name", "STIM0")
    pulses, first = np.unique(cap.latency["pulse"], return_index=True)
    for p, t in zip(pulses.tolist(), cap.latency["stim_t"][first].tolist()):
        # every pulse, answered or not: the stimulus went out all the same
        yield {"ph": "X", "pid": _RIG, "tid": 0, "name": f"pulse {p}", "ts": t * us,
               "dur": high * us, "args": {"pulse": p}}
    for tid, name in enumerate(names, start=1):
        yield _meta(_RIG, tid, "thread_name", name)
        recs = cap.channel(name)
        for r in recs[~missed_mask(recs)]:
            yield {"ph": "X", "pid": _RIG, "tid": tid, "name": name,
                   "ts": float(r["stim_t"]) * us, "dur": float(r["latency"]) * us,
                   "args": {"pulse": int(r["pulse"]),
                            "latency_ns": float(r["latency"]) * us * 1000}}


def _cpu_events(cap, names, explained):
    us = 1e6 / cap.tick_hz
    yield _meta(_CPU, 0, "process_name", "CPU (SoC twin recording)")
    for tid, name in enumerate(names, start=1):
        yield _meta(_CPU, tid, "thread_name", f"CPU for {name}")
        recs = cap.channel(name)
        stim = {int(p): int(t) for p, t in zip(recs["pulse"], recs["stim_t"])}
        for item in (i for i in explained if i.channel == name):
            ex, t0 = item.explanation, stim[item.pulse] * us
            for start, end, fn, cat in ex.segments:
                yield {"ph": "X", "pid": _CPU, "tid": tid, "name": fn, "cat": cat,
                       "ts": t0 + ex.ns(start) / 1000, "dur": ex.ns(end - start) / 1000,
                       "args": {"pulse": item.pulse, "category": cat}}


def _stage_events(cap, times, first_tid):
    """A track per stage: a span from each pulse's stimulus edge to the stage."""
    pulses, by_stage = times
    us = 1e6 / cap.tick_hz
    stim = dict(zip(cap.latency["pulse"].tolist(), cap.latency["stim_t"].tolist()))
    for k, (name, ns) in enumerate(by_stage.items()):
        tid = first_tid + k
        yield _meta(_RIG, tid, "thread_name", f"stage {name}")
        for p, v in zip(pulses.tolist(), ns.tolist()):
            if v == v:                               # not NaN: the stage came
                yield {"ph": "X", "pid": _RIG, "tid": tid, "name": name,
                       "ts": stim[p] * us, "dur": v / 1000, "args": {"pulse": p}}


def trace_events(cap, explained=(), stages=None):
    """The trace's events: the rig's tracks, the stages' (``stages``: the result of
    :func:`~rtrig.host.explain.stages.stage_times`), and the CPU's for ``explained``
    pulses (:class:`~rtrig.host.explain.capture.ExplainedPulse`)."""
    names = sorted(cap.channels(), key=channel_order)
    yield from _rig_events(cap, names)
    if stages is not None:
        yield from _stage_events(cap, stages, len(names) + 1)
    if explained:
        yield from _cpu_events(cap, names, explained)


def _explained(cap, elf, warn):
    from ..explain.capture import default_recording, explain_capture, firmware_elf
    if cap.meta.get("target", {}).get("kind") != "soc" or cap.path is None:
        return []
    if not default_recording(cap.path).exists():
        return []
    elf = firmware_elf(cap.meta, elf)
    if elf is None:             # "auto", and no build of the image the capture ran
        if warn is not None:
            warn(f"no firmware ELF of the build makes the image {cap.path.name} ran: "
                 "the trace has no CPU spans (give --elf)")
        return []
    return explain_capture(cap.path, elf, worst=EXPLAINED_PER_CHANNEL, warn=warn)


def _check_pulses(cap):
    """Refuse, in one line, a capture with no pulse to trace."""
    if len(cap.latency):
        return
    if cap.meta.get("kind") == "sweep":
        raise UsageError(f"{cap.path} is a sweep: it has no pulses to trace",
                         hint="export its steps' figures with --format json")
    no_records(cap)


def write_trace(cap, f, elf=None, stages=None, warn=None):
    """Write the trace of ``cap`` to the binary file ``f``; the CPU's spans when the
    capture has a recording beside it and ``elf`` (the firmware's, or ``"auto"``: the
    build's ELF of the image it ran) is given; a track per stage with ``stages``
    (``"marker1+,marker2+"``, a capture with raw events). ``warn`` is told what the
    trace leaves out or does not check."""
    from ..explain.stages import parse_stages, stage_times
    _check_pulses(cap)
    times = stage_times(cap, parse_stages(stages)) if stages else None
    explained = _explained(cap, elf, warn) if elf is not None else []
    f.write(b'{"displayTimeUnit": "ns", "traceEvents": [\n')
    for i, ev in enumerate(trace_events(cap, explained, times)):
        f.write((",\n" if i else "").encode() + json.dumps(ev).encode())
    f.write(b"\n]}\n")
