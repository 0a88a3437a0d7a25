# SPDX-License-Identifier: BSD-2-Clause
"""Self-test of the rig: the loopback and model targets have known latencies, so
every sample must read exactly what they were set to (±1 tick: docs/architecture.md,
"Time and resolution")."""

import tempfile
from pathlib import Path

import numpy as np

from ...capture import load
from ..analysis import missed_mask
from .measure import CaptureSettings, run_capture
from .stats import choose_mode

__all__ = ["run_selftest", "LOOPBACK_CHECKS", "loopback_checks"]

#: (delay in ticks, frequency in Hz, pulses): short, long and edge-case delays. Each
#: run is short enough for the rig's 512-record FIFO to absorb what a 3 Mbaud link
#: cannot carry at once; the longest delay (250 µs) needs a period above it, and on a
#: rig whose loopback makes less (:attr:`Rig.loopback_max_ticks`) is its longest.
LOOPBACK_CHECKS = [(0, 50_000, 100), (1, 50_000, 100), (2, 20_000, 100), (123, 50_000, 200),
                   (1000, 50_000, 200), (25_000, 3_500, 30)]


def loopback_checks(stim_step=1, max_ticks=None):
    """:data:`LOOPBACK_CHECKS` as a rig makes them: each delay a whole number of its
    stimulus steps (``stim_step`` ticks; the settings refuse the others), and at most
    ``max_ticks`` (a board's rig delays through a delay line of a fixed length; None:
    no limit)."""
    out = []
    for delay, freq, count in LOOPBACK_CHECKS:
        delay -= delay % stim_step
        if max_ticks is not None:
            delay = min(delay, max_ticks)
        out.append((delay, freq, count))
    return out


def _check(name, cap_path, expect_ticks, count, channel="isr"):
    cap = load(cap_path)
    rec = cap.channel(channel)
    missed = int(missed_mask(rec).sum())
    lat = rec["latency"].astype(np.int64)
    bad = int((np.abs(lat - expect_ticks) > 1).sum()) if len(lat) else 0
    passed = len(rec) == count and missed == 0 and bad == 0 and cap.complete
    got = f"{lat.min()}..{lat.max()}" if len(lat) else "none"
    return {"name": name, "passed": bool(passed),
            "detail": f"{len(rec)}/{count} pulses, {missed} missed, latency {got} ticks "
                      f"(expected {expect_ticks} ± 1)"}


def run_selftest(session, log=print, wire=None):
    """Run the checks; returns a list of ``{"name", "passed", "detail"}``.

    ``wire``: also check the external inputs with a wire from STIM0 to the ISR_OUT
    input (always present in the simulation twin; on a board, fit a jumper and pass
    True)."""
    results = []
    if wire is None:
        wire = session.sim is not None
    tick_ns = 1e9 / session.tick_hz
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for i, (delay, freq, count) in enumerate(
                loopback_checks(session.stim_step, session.loopback_max_ticks)):
            name = f"loopback delay {delay} ticks ({delay * tick_ns:g} ns) at {freq:g} Hz"
            log(f"selftest: {name}")
            s = CaptureSettings(freq=freq, count=count, target="loopback",
                                delay=delay / session.tick_hz, channels=("isr",))
            run_capture(session, s, tmp / f"loop{i}.rtrig", progress=False)
            results.append(_check(name, tmp / f"loop{i}.rtrig", delay, count))
        if wire:
            name = "wire STIM0 → ISR_OUT input reads 0 ticks"
            log(f"selftest: {name}")
            s = CaptureSettings(freq=20_000, count=100, target="external", channels=("isr",))
            run_capture(session, s, tmp / "wire.rtrig", progress=False)
            results.append(_check(name, tmp / "wire.rtrig", 0, 100))
        if session.has_target("model"):
            name = "model target: every sample equals the model's truth"
            log(f"selftest: {name}")
            # the model takes its times in whole stimulus steps (of 1, 2 or 4 ticks)
            step = session.stim_step
            times = {"isr_entry": 150, "isr_jitter": 60, "isr_service": 80,
                     "app_wake": 300, "app_service": 100}
            s = CaptureSettings(freq=_model_check_freq(session), count=200, target="model",
                                channels=("isr", "app"),
                                model={**{k: v - v % step for k, v in times.items()},
                                       "app": True},
                                truth=True, jitter=2e-6)
            run_capture(session, s, tmp / "model.rtrig", progress=False)
            results.append(_truth_check(name, tmp / "model.rtrig"))
    return results


#: The model check's pulse rates, fastest first: the first whose records and truth
#: records the rig's link carries (a small board's slower link takes a lower one).
MODEL_CHECK_FREQS = (20_000, 10_000, 5_000, 2_000)


def _model_check_freq(session):
    """The fastest of :data:`MODEL_CHECK_FREQS` at which the link carries every record of
    the check as a steady stream: two latency records and two truth records a pulse."""
    for freq in MODEL_CHECK_FREQS:
        if choose_mode(freq, ("isr", "app"), session.info["baud"], truth=True) == "records":
            return freq
    return MODEL_CHECK_FREQS[-1]


def _truth_check(name, path):
    cap = load(path)
    link = (cap.final or {}).get("link", {})
    lost = {k: link[k] for k in ("lat_overflow", "truth_overflow", "lost_packets",
                                 "lost_records") if link.get(k)}
    if lost:
        # a record without its truth (or the reverse) is not a wrong sample: say why
        return {"name": name, "passed": False,
                "detail": "records lost, the check needs every one: "
                          + ", ".join(f"{k} {v}" for k, v in lost.items())}
    ok, detail = compare_with_truth(cap)
    return {"name": name, "passed": ok, "detail": detail}


def compare_with_truth(cap):
    """Compare measured records with the model's truth, pulse by pulse.

    Returns (all equal within ±1 tick, description)."""
    mismatches, total = 0, 0
    for ch in (0, 1):
        rec = cap.latency[cap.latency["channel"] == ch]
        tru = cap.truth[cap.truth["channel"] == ch]
        if not len(rec):
            continue
        tru = tru[np.argsort(tru["pulse"], kind="stable")]
        idx = np.searchsorted(tru["pulse"], rec["pulse"])
        idx = np.clip(idx, 0, max(len(tru) - 1, 0))
        found = len(tru) > 0
        if not found:
            mismatches += len(rec)
            total += len(rec)
            continue
        same_pulse = tru["pulse"][idx] == rec["pulse"]
        r_missed = missed_mask(rec)
        t_missed = missed_mask(tru[idx])
        lat_ok = np.abs(rec["latency"].astype(np.int64) - tru["latency"][idx].astype(np.int64)) <= 1
        comp_ok = np.abs(rec["completion"].astype(np.int64)
                         - tru["completion"][idx].astype(np.int64)) <= 1
        good = same_pulse & (r_missed == t_missed) & (r_missed | (lat_ok & comp_ok))
        mismatches += int((~good).sum())
        total += len(rec)
    return (total > 0 and mismatches == 0,
            f"{total - mismatches}/{total} records equal the truth")
