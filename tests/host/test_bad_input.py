# SPDX-License-Identifier: BSD-2-Clause
"""Every bad input is answered: one ``error:`` line naming the problem (and, for a value
too large, the limit the rig can hold), the exit status of its type, never a traceback,
an "internal error", a hang or a value silently wrapped to another.

The limits come from the register widths of ``rtrig.protocol.REGISTERS`` (32 bits for
STIM_COUNT, STIM_JITTER, LAT_TIMEOUT, LOOP_DELAY and the model registers): in the
twin's 8.33 ns ticks (the ULX3S gateware's), 2^32 - 1 ticks are 35.79 s."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from rtrig.capture import CaptureWriter, load
from rtrig.protocol import LATENCY_DTYPE, REGISTERS

TOP = {r.name: (1 << r.width) - 1 for r in REGISTERS}
LOOP = ["capture", "--sim", "--target", "loopback", "--freq", "10k", "--count", "3", "-q"]
MODEL = ["capture", "--sim", "--target", "model", "--freq", "10k", "--count", "3", "-q"]
SWEEP = ["sweep", "--sim", "--target", "model", "--preset", "fast", "-q"]


@pytest.fixture(scope="module", autouse=True)
def _twin_built():
    from rtrig.host.sim import build
    build()          # the runs' time limits catch hangs, not a simulator build


def rtrig(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=timeout)


# (arguments, exit status, text the error line must hold)
CASES = [
    # Stimulus settings beyond their registers (they used to wrap: 2^32 pulses became
    # "run until stopped", a 100 s delay another delay than the file recorded).
    (LOOP + ["--count", str(TOP["STIM_COUNT"] + 1)], 2, f"at most {TOP['STIM_COUNT']}"),
    (LOOP + ["--delay", "100s"], 2, "at most 35.79 s"),
    (LOOP + ["--jitter", "100s"], 2, "at most 35.79 s"),
    (LOOP + ["--timeout", "100s"], 2, "at most 35.79 s"),
    (["capture", "--sim", "--target", "loopback", "--freq", "1k", "--duration", "1e7s", "-q"],
     2, f"at most {TOP['STIM_COUNT']}"),
    # Values that were accepted and meant nothing (or something else).
    (LOOP + ["--timeout=-1us"], 2, "cannot be negative"),
    (LOOP + ["--timeout", "1ns"], 2, "shorter than one tick"),
    (LOOP + ["--channels", ""], 2, "no response channel"),
    (LOOP + ["--channels", " , "], 2, "no response channel"),
    # --model: every value parsed, checked against its register, one line.
    (MODEL + ["--model", "seed=xyz"], 2, "'xyz' is not an integer"),
    (MODEL + ["--model", f"seed={TOP['MODEL_SEED'] + 1}"], 2, f"outside 0..{TOP['MODEL_SEED']}"),
    (MODEL + ["--model", "isr_entry=100s"], 2, "at most 35.79 s"),
    (MODEL + ["--model", "isr_entry=1e400s"], 2, "not a finite duration"),
    (MODEL + ["--model", "isr_entry=-1us"], 2, "0 or more"),
    (MODEL + ["--model", "app=maybe"], 2, "'maybe' is not on or off"),
    (MODEL + ["--model", "isr_entyr=2us"], 2, "unknown parameter 'isr_entyr'"),
    # a fraction of a tick was stored as 0 ticks; now refused, naming the tick
    (MODEL + ["--model", "isr_entry_ns=1.5"], 2, "not a whole number of the model's 8.33333 ns"),
    (MODEL + ["--model", "isr_service=1.234567us"], 2, "1.235 µs is not a whole number"),
    # suite test lists: an empty one ran the twin and ended in an internal error
    (["suite", "--sim", "--target", "soc", "--tests", ","], 2, "names no suite test"),
    (["suite", "--sim", "--target", "soc", "--tests", "yield,yield"], 2, "more than once"),
    # The sweep, before any step runs.
    (SWEEP + ["--from", "10k", "--to", "20k", "--pulses", str(TOP["STIM_COUNT"] + 1)], 2,
     f"at most {TOP['STIM_COUNT']}"),
    (SWEEP + ["--from", "10k", "--to", "20k", "--stim-jitter", "100s"], 2, "at most 35.79 s"),
    (SWEEP + ["--from", "10k", "--to", "20k", "--channels", ""], 2, "nothing to find"),
    (SWEEP + ["--from", "10k", "--to", "20k", "--factor", "1e400"], 2, "bracketing factor"),
]


def _check_one_line(r, code, needle):
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    assert needle in errors[0], r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)


@pytest.mark.parametrize("args,code,needle", CASES,
                         ids=[f"{c[0][0]} {' '.join(c[0][-2:])}" for c in CASES])
def test_bad_option_is_one_line_naming_the_limit(args, code, needle, tmp_path):
    r = rtrig(*args, "-o", str(tmp_path / "x.rtrig"))
    _check_one_line(r, code, needle)
    assert not (tmp_path / "x.rtrig").exists()      # refused before anything ran


def test_ns_keys_take_bare_nanoseconds(tmp_path):
    out = tmp_path / "m.rtrig"
    r = rtrig(*MODEL, "--model", "isr_entry_ns=1400,isr_service=1us,app=0", "--json",
              "-o", str(out))
    assert r.returncode == 0, r.stderr
    model = load(out).meta["target"]["model"]
    # in 8.33 ns ticks: 1.4 µs and 1 µs
    assert (model["isr_entry"], model["isr_service"], model["app"]) == (168, 120, False)


def test_export_buckets_limit(tmp_path):
    path = tmp_path / "c.rtrig"
    rec = np.zeros(4, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(4)
    rec["latency"] = 100                              # 1 µs
    with CaptureWriter(path, {"format": "rtrig-capture", "tick_hz": 100_000_000,
                              "channels": ["isr"], "mode": "records"}) as w:
        w.array(b"LATR", rec)
        w.close(final={"status": "complete"})
    r = rtrig("export", str(path), "-f", "cyclictest", "-o", "-", "--buckets", "1000000000",
              timeout=30)
    _check_one_line(r, 2, "between 1 and 1000000")
    r = rtrig("export", str(path), "-f", "cyclictest", "-o", "-", "--buckets", "5")
    assert r.returncode == 0, r.stderr


def _v1_file(path, meta_bytes):
    """A capture of format 1 (no checksums: any bytes pass) with this META payload."""
    path.write_bytes(b"RTRIGCAP" + struct.pack("<HH", 1, 0)
                     + struct.pack("<4sI", b"META", len(meta_bytes)) + meta_bytes)
    return path


@pytest.mark.parametrize("meta", [
    b"{not json",
    json.dumps({"format": "rtrig-capture", "channels": ["isr"]}).encode(),
    json.dumps({"format": "rtrig-capture", "tick_hz": 0}).encode(),
    json.dumps({"format": "rtrig-capture", "tick_hz": "fast"}).encode(),
    b"[1, 2]",
], ids=["bad-json", "no-tick_hz", "zero-tick_hz", "text-tick_hz", "not-an-object"])
@pytest.mark.parametrize("command", ["export", "report"])
def test_malformed_capture_metadata(meta, command, tmp_path):
    path = _v1_file(tmp_path / "bad.rtrig", meta)
    if command == "export":
        r = rtrig("export", str(path), "-f", "json", "-o", str(tmp_path / "o.json"))
    else:
        r = rtrig("report", str(path), "-o", str(tmp_path / "r.html"))
    _check_one_line(r, 6, str(path))
