# SPDX-License-Identifier: BSD-2-Clause
"""Synthetic captures of known content for the history's tests, written with the
project's capture writer, a runner of the ``rtrig`` command, and whether the tests
may mount file systems of their own (``unshare``)."""

import shutil
import subprocess

import numpy as np

from rtrig.capture import CaptureWriter
from rtrig.host.cli import main
from rtrig.protocol import LATENCY_DTYPE, ChanFlags

TICK_HZ = 100_000_000


def meta(**extra):
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
         "rtrig_version": "test", "channels": ["isr"], "load": False, "mode": "records",
         "target": {"kind": "model", "preset": "fast"},
         "stimulus": {"freq_hz": 10_000.0, "period_ticks": 10_000, "high_ticks": 5_000,
                      "count": 0, "jitter_ticks": 0}}
    m.update(extra)
    return m


def write_capture(path, latencies, missed=0, status="complete", **extra):
    """A capture of channel ``isr``: the answered ``latencies`` (ticks), then
    ``missed`` missed pulses; closed with end ``status``."""
    m = meta(**extra)
    n = len(latencies) + missed
    rec = np.zeros(n, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(n)
    rec["stim_t"] = 1_000 + np.arange(n, dtype=np.uint64) * 10_000
    rec["latency"][:len(latencies)] = latencies
    rec["completion"][:len(latencies)] = np.asarray(latencies) + 100
    rec["flags"][len(latencies):] = ChanFlags.MISSED
    with CaptureWriter(path, m) as w:
        w.array(b"LATR", rec)
        w.close(final={"status": status})
    return path


def write_sweep(path, mf_isr, below, resolution=0.005):
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "kind": "sweep", "load": False,
         "mode": "records", "rtrig_version": "test", "simulation": True,
         "sweep": {"pulses": 200, "resolution": resolution}}
    with CaptureWriter(path, m) as w:
        w.close(final={"status": "complete", "figures": {
            "mf_isr_hz": {"hz": mf_isr, "below_hz": below, "confirmed": True},
            "sf_hz": {"hz": None, "below_hz": 200e3, "reason": "above the range"}}})
    return path


def write_suite(path, rows):
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "mode": "suite", "channels": [],
         "simulation": True, "target": {"kind": "soc"}, "stimulus": {"freq_hz": 10_000},
         "suite": {"tests": list(rows), "iterations": 4, "loaded": False}}
    with CaptureWriter(path, m) as w:
        w.close(final={"status": "complete", "suite": {"tests": rows}})
    return path


def rtrig(capsys, *args):
    """``rtrig ARGS``: (exit status, stdout, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def unshare_works():
    """Can a shell mount a tmpfs in a mount namespace of its own (``unshare -rm``:
    a user namespace, so also without root)? The mount is gone when it ends."""
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                       capture_output=True, timeout=30)
    return r.returncode == 0
