# SPDX-License-Identifier: BSD-2-Clause
"""A twin run is a function of its settings: the same capture gives the same records
however fast the host is (docs/capture-format.md, "Start"). The rig arms each run at a
rig time the host chooses ahead and restarts the model or the SoC for it, so the
records relative to that start are the same byte for byte; the host here is slowed
by a busy process beside it and a sleep in every poll of the link."""

import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtrig import load
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.rig.link import RigLink

ROOT = Path(__file__).resolve().parents[2]
RT_TEST = ROOT / "firmware" / "build" / "rtrig-soc" / "rt_test.bin"


@contextlib.contextmanager
def slow_host(monkeypatch):
    """A busy process on a core beside the host, and 3 ms of sleep before every poll
    of the link (the twin runs ~100 µs of rig time meanwhile)."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    poll = RigLink.poll

    def slow_poll(self, wait=0.0):
        time.sleep(0.003)
        return poll(self, wait)

    monkeypatch.setattr(RigLink, "poll", slow_poll)
    try:
        yield
    finally:
        monkeypatch.setattr(RigLink, "poll", poll)
        hog.kill()
        hog.wait()


def relative_records(path):
    """The capture's latency records with ``stim_t`` counted from the run's start
    (``END.start.at_ticks``), as bytes; and the start."""
    cap = load(path)
    start = cap.final["start"]
    rec = cap.latency.copy()
    rec["stim_t"] -= start["at_ticks"]
    return rec.tobytes(), start, len(rec)


def capture(path, settings, **rig):
    with open_rig(sim=True, **rig) as r:
        run_capture(r, settings, path, progress=False)
    return relative_records(path)


MODEL = CaptureSettings(freq=8000, count=400, target="model", preset="fast", load=True,
                        jitter=20e-6, channels=("isr", "app"))


def test_a_model_capture_is_the_same_on_a_slowed_host(tmp_path, monkeypatch):
    fast, start, n = capture(tmp_path / "a.rtrig", MODEL)
    with slow_host(monkeypatch):
        slow, start2, _ = capture(tmp_path / "b.rtrig", MODEL)
    assert n == 800 and start["restart"] and start2["restart"]
    assert slow == fast


def test_an_earlier_run_on_the_same_twin_leaves_no_trace(tmp_path):
    # The model restarts with each run: what ran before on the twin (another rate,
    # LOAD off, the model's tick somewhere else) does not reach the records.
    other = CaptureSettings(freq=3100, count=77, target="model", preset="fast", jitter=7e-6)
    with open_rig(sim=True) as r:
        run_capture(r, MODEL, tmp_path / "first.rtrig", progress=False)
        run_capture(r, other, tmp_path / "other.rtrig", progress=False)
        time.sleep(0.2)
        run_capture(r, MODEL, tmp_path / "again.rtrig", progress=False)
    first, s1, _ = relative_records(tmp_path / "first.rtrig")
    again, s2, _ = relative_records(tmp_path / "again.rtrig")
    assert s2["at_ticks"] > s1["at_ticks"]
    assert again == first


@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None and not RT_TEST.exists(),
                    reason="no RISC-V firmware toolchain (make -C firmware toolchains)")
def test_a_soc_capture_is_the_same_on_a_slowed_host(tmp_path, monkeypatch):
    # The reference SoC, loaded, at a rate near its MF-APP: the tick, LOAD and the
    # pulses meet at the same phases on every run, so every latency is the same.
    s = CaptureSettings(freq=12_000, count=600, target="soc", channels=("isr", "app"),
                        load=True, jitter=9e-6)
    fast, start, n = capture(tmp_path / "a.rtrig", s, soc=True, firmware=str(RT_TEST))
    with slow_host(monkeypatch):
        slow, _, _ = capture(tmp_path / "b.rtrig", s, soc=True, firmware=str(RT_TEST))
    assert n == 1200 and start["lead_ticks"] > 0
    assert slow == fast


def rtrig(*args):
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=600)


def test_replay_runs_a_file_again_and_gets_its_records(tmp_path):
    # Raw events of two inputs only, a STIM1 offset and jitter: all of it recorded in
    # META, and all of it taken again by --replay (the options given beside it are not).
    a, b = tmp_path / "a.rtrig", tmp_path / "b.rtrig"
    first = rtrig("--sim", "capture", "--target", "model", "--preset", "fast", "--freq",
                  "6k", "--count", "250", "--jitter", "12us", "--load", "--raw",
                  "--raw-inputs", "isr,stim", "--stim1-offset", "2us", "-q", "-o", str(a))
    assert first.returncode == 0, first.stderr
    again = rtrig("--sim", "capture", "--replay", str(a), "--freq", "1k", "-q",
                  "-o", str(b))
    assert again.returncode == 0, again.stderr
    assert relative_records(b)[0] == relative_records(a)[0]
    ca, cb = load(a), load(b)
    assert cb.meta["stimulus"] == ca.meta["stimulus"]
    assert cb.meta["raw_inputs"] == ["isr", "stim"]
    ev = cb.events
    assert len(ev) and set(ev["input"].tolist()) <= {0, 14, 15}


def test_replay_refuses_what_is_not_a_capture(tmp_path):
    bad = tmp_path / "x.rtrig"
    bad.write_bytes(b"not a capture")
    out = rtrig("--sim", "capture", "--replay", str(bad))
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
    assert "cannot replay" in out.stderr and "Traceback" not in out.stderr
