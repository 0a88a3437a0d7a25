# SPDX-License-Identifier: BSD-2-Clause
"""A capture's slowest pulses explained: each pulse's latency record matched to its
window of the recording, and :func:`~.attribute.explain_pulse` on it."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...capture import load
from ...errors import UsageError
from ..analysis import missed_mask
from .attribute import PulseExplanation, explain_pulse
from .recording import SOC_HZ, load_recording
from .symbols import Symbols

__all__ = ["ExplainedPulse", "explain_capture", "default_recording", "worst_pulses"]


@dataclass
class ExplainedPulse:
    channel: str
    pulse: int
    latency_ns: float
    explanation: PulseExplanation
    edge_line: str = ""


def default_recording(capture):
    """Where ``rtrig explain`` looks for a capture's recording: beside it, ``.rec``."""
    return Path(capture).with_suffix(".rec")


def worst_pulses(records, n):
    """The pulses of ``n`` largest answered latencies, slowest first."""
    answered = records[~missed_mask(records)]
    order = np.argsort(answered["latency"], kind="stable")[::-1][:n]
    return answered["pulse"][order]


def _records(cap, channels):
    names = cap.channels()
    for ch in channels or names:
        if ch not in names:
            raise UsageError(f"no channel {ch!r} in the capture (it has: {', '.join(names)})")
        yield ch, cap.channel(ch)


def explain_capture(capture, elf, recording=None, worst=5, pulses=None, channels=None):
    """The explanations of the ``worst`` slowest pulses of each channel (or of
    ``pulses``) of ``capture``, from its ``recording`` and the firmware's ``elf``."""
    cap = load(capture)
    if not cap.meta.get("simulation") or cap.meta.get("target", {}).get("kind") != "soc":
        raise UsageError(f"{capture} is not a SoC-twin capture (--sim --target soc): "
                         "there is no recording of its CPU to explain it with")
    recording = Path(recording or default_recording(capture))
    if not recording.exists():
        raise UsageError(f"no recording of {Path(capture).name} at {recording}",
                         hint=f"capture again with RTRIG_SOC_RECORD={recording} "
                              "(docs/explain.md), or give --recording")
    rec = load_recording(recording)
    syms = Symbols(elf)
    tick_hz = float(cap.tick_hz)
    out = []
    for ch, records in _records(cap, channels):
        chosen = worst_pulses(records, worst) if pulses is None else pulses
        for p in chosen:
            row = records[records["pulse"] == p]
            if not len(row):
                raise UsageError(f"pulse {p} has no record on channel {ch}")
            row = row[0]
            edge = int(rec.match([row["stim_t"]])[0])
            if edge < 0:
                raise UsageError(f"pulse {p} is not in the recording (recorded edges: "
                                 f"{len(rec.edges)})")
            entries, at = rec.window(edge)
            cycles = float(row["latency"]) * SOC_HZ / tick_hz
            ex = explain_pulse(entries, at, cycles, syms)
            line = syms.lines([ex.edge_pc])[ex.edge_pc] if ex.edge_pc else ""
            out.append(ExplainedPulse(ch, int(p), float(row["latency"]) * 1e9 / tick_hz,
                                      ex, line))
    return out
