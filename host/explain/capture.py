# SPDX-License-Identifier: BSD-2-Clause
"""A capture's slowest pulses explained: each pulse's latency record matched to its
window of the recording, and :func:`~.attribute.explain_pulse` on it.

The recording and the ELF must be the capture's: the ELF's RAM image is the one the
SoC ran (``META["soc_image_sha256"]``, :func:`check_firmware`), and the recording's
STIM0 edges are the capture's pulses (:func:`check_recording`)."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...capture import load
from ...errors import UsageError
from ..analysis import missed_mask
from .attribute import PulseExplanation, explain_pulse
from .recording import SOC_HZ, load_recording
from .symbols import Symbols, image_sha256

__all__ = ["ExplainedPulse", "explain_capture", "default_recording", "worst_pulses",
           "firmware_elf", "check_firmware", "check_recording", "AUTO_ELF"]

#: ``elf`` to give for the build's ELF of the image the capture ran (:func:`firmware_elf`).
AUTO_ELF = "auto"
#: The firmware builds :func:`firmware_elf` looks in, under the firmware tree.
BUILD_FOLDER = "build/rtrig-soc"
#: How many of the capture's first pulses must be edges of its recording.
FIRST_PULSES = 8


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


def firmware_elf(meta, elf=AUTO_ELF, firmware_dir=None):
    """The ELF to explain a capture of ``meta`` with: ``elf`` itself unless it is
    :data:`AUTO_ELF`; else the ELF of the firmware build (``firmware/build/rtrig-soc``)
    whose ``.bin`` is the image the capture ran, or for a capture that does not name
    its image, rt_test's. None when there is no such file."""
    if elf != AUTO_ELF:
        return None if elf is None else Path(elf)
    from ...firmware import FIRMWARE_DIR
    folder = Path(firmware_dir or FIRMWARE_DIR) / BUILD_FOLDER
    want = meta.get("soc_image_sha256")
    if not want:
        elf = folder / "rt_test.elf"
        return elf if elf.is_file() else None
    for elf in sorted(folder.glob("*.elf")):
        image = elf.with_suffix(".bin")
        if image.is_file() and hashlib.sha256(image.read_bytes()).hexdigest() == want:
            return elf
    return None


def check_firmware(cap, elf):
    """Refuse an ``elf`` that is not the firmware ``cap`` ran, in one line; returns a
    warning when the capture does not say which firmware it ran (None otherwise)."""
    want = cap.meta.get("soc_image_sha256")
    if not want:
        return (f"{cap.path.name} does not name the firmware image it ran (a capture "
                f"made before rtrig recorded it): that {Path(elf).name} is its "
                "firmware is not checked")
    have = image_sha256(elf)
    if have != want:
        raise UsageError(f"{elf} is not the firmware {cap.path.name} ran: its image's "
                         f"SHA-256 is {have[:12]}…, the capture's {want[:12]}…",
                         hint="give --elf the .elf of the --firmware image it was "
                              "captured with")
    return None


def _pulse_starts(cap):
    lat = cap.latency
    pulses, first = np.unique(lat["pulse"], return_index=True)
    return pulses, lat["stim_t"][first].astype(np.int64)


def check_recording(cap, rec, recording):
    """Refuse a recording of another run, in one line: the capture's first pulses
    (up to :data:`FIRST_PULSES`) must be edges of it (rig cycles against ``stim_t``),
    all of them, or those up to where a recording cut short ends."""
    pulses, starts = _pulse_starts(cap)
    found = rec.match(starts[:FIRST_PULSES]) >= 0
    k = len(found) if found.all() else int(np.argmin(found))     # the first one not in it
    # cut short, a recording holds the first pulses and not the rest; another run's
    # holds none of them (or, damaged, some after one it lacks)
    if not len(found) or (k > 0 and not found[k:].any()):
        return
    cyc = rec.edge_rig_cycles
    raise UsageError(
        f"{recording} is not the recording of {cap.path.name}: its STIM0 edges "
        f"(rig cycles {cyc[0]}…{cyc[-1]}, {len(cyc)} edges) are not the capture's "
        f"first pulses (pulse {pulses[k]} is none of them)",
        hint=f"give --recording the file the run wrote (RTRIG_SOC_RECORD), or "
             f"record {cap.path.name}'s run again")


def _records(cap, channels):
    names = cap.channels()
    for ch in channels or names:
        if ch not in names:
            raise UsageError(f"no channel {ch!r} in the capture (it has: {', '.join(names)})")
        yield ch, cap.channel(ch)


def _open(capture, elf, recording, warn):
    """The capture, its recording and its firmware's symbols, each checked."""
    cap = load(capture)
    if not cap.meta.get("simulation") or cap.meta.get("target", {}).get("kind") != "soc":
        raise UsageError(f"{capture} is not a SoC-twin capture (--sim --target soc): "
                         "there is no recording of its CPU to explain it with")
    recording = Path(recording or default_recording(capture))
    if not recording.exists():
        raise UsageError(f"no recording of {Path(capture).name} at {recording}",
                         hint=f"capture again with RTRIG_SOC_RECORD={recording} "
                              "(docs/explain.md), or give --recording")
    chosen = firmware_elf(cap.meta, elf)
    if chosen is None:
        raise UsageError(f"no firmware ELF in firmware/{BUILD_FOLDER} makes the image "
                         f"{Path(capture).name} ran", hint="give it with --elf")
    rec = load_recording(recording)
    check_recording(cap, rec, recording)
    note = check_firmware(cap, chosen)
    if note and warn is not None:
        warn(note)
    return cap, rec, recording, Symbols(chosen)


def explain_capture(capture, elf=AUTO_ELF, recording=None, worst=5, pulses=None,
                    channels=None, warn=None):
    """The explanations of the ``worst`` slowest pulses of each channel (or of
    ``pulses``) of ``capture``, from its ``recording`` and the firmware's ``elf``
    (:data:`AUTO_ELF`: the build's, :func:`firmware_elf`). ``worst`` may map channel
    names to counts. ``warn`` is told, once, when the ELF's match is not checked."""
    cap, rec, recording, syms = _open(capture, elf, recording, warn)
    tick_hz = float(cap.tick_hz)
    stims = np.unique(cap.latency["stim_t"].astype(np.int64))
    edge_of = dict(zip(stims.tolist(), rec.match(stims).tolist()))   # one rate for all
    out = []
    for ch, records in _records(cap, channels):
        n = worst.get(ch, 0) if isinstance(worst, dict) else worst
        chosen = worst_pulses(records, n) if pulses is None else pulses
        for p in chosen:
            row = records[records["pulse"] == p]
            if not len(row):
                raise UsageError(f"pulse {p} has no record on channel {ch}")
            row = row[0]
            edge = edge_of[int(row["stim_t"])]
            if edge < 0:
                raise UsageError(
                    f"pulse {p} of {Path(capture).name} is not in the recording "
                    f"{recording} (it holds {len(rec.edges)} edges, to rig cycle "
                    f"{rec.edge_rig_cycles[-1]}): cut short, or of another run",
                    hint="give --recording the whole file the run wrote")
            entries, at = rec.window(edge)
            cycles = float(row["latency"]) * SOC_HZ / tick_hz
            ex = explain_pulse(entries, at, cycles, syms)
            line = syms.lines([ex.edge_pc])[ex.edge_pc] if ex.edge_pc else ""
            out.append(ExplainedPulse(ch, int(p), float(row["latency"]) * 1e9 / tick_hz,
                                      ex, line))
    return out
