# SPDX-License-Identifier: BSD-2-Clause
"""The rtrig command: error paths give one line and a non-zero exit, never a
traceback; the loopback JSON of the quick start is exact."""

import json
import subprocess
import sys

import pytest

from rtrig.host.cli import main
from rtrig.units import parse_duration, parse_frequency


def rtrig(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=600, env=env)


@pytest.mark.parametrize("text,hz", [("5k", 5e3), ("127kHz", 127e3), ("50 Hz", 50.0),
                                     ("1.5MHz", 1.5e6), ("2000", 2000.0)])
def test_frequency_units(text, hz):
    assert parse_frequency(text) == pytest.approx(hz)


@pytest.mark.parametrize("text,s", [("1.5us", 1.5e-6), ("200ms", 0.2), ("2s", 2.0),
                                    ("10ns", 1e-8), ("1.23µs", 1.23e-6), ("0", 0.0)])
def test_duration_units(text, s):
    assert parse_duration(text) == pytest.approx(s)


@pytest.mark.parametrize("bad", ["fast", "5kk", "", "1e"])
def test_bad_frequency_rejected(bad):
    with pytest.raises(ValueError):
        parse_frequency(bad)


def run_main(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


@pytest.mark.parametrize("args,needle", [
    (["capture", "--sim", "--target", "loopback", "--freq", "0"], "frequency must be positive"),
    (["capture", "--sim", "--target", "loopback", "--freq", "-5k"], "frequency must be positive"),
    (["capture", "--sim", "--target", "loopback", "--duty", "1.2"], "duty cycle"),
    (["capture", "--sim", "--target", "loopback", "--duty", "0"], "duty cycle"),
    (["capture", "--sim", "--target", "loopback", "--count", "0"], "at least 1"),
    (["capture", "--sim", "--target", "nowhere"], "nowhere"),
    (["capture", "--sim", "--target", "loopback", "--channels", "foo"], "unknown channel"),
    (["capture", "--sim", "--target", "loopback", "--freq", "banana"], "not a frequency"),
    (["capture", "--target", "loopback"], "no rig found: looked for"),
    (["capture", "--target", "model", "--preset", "nosuch", "--sim"], "unknown preset"),
])
def test_bad_input_is_one_line_error(args, needle, capsys, monkeypatch):
    monkeypatch.delenv("RTRIG_PORT", raising=False)
    code, out, err = run_main(args, capsys)
    assert code != 0
    assert needle in err
    assert "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error")]) == 1 or \
        "Error:" in err


def test_unreadable_port(capsys):
    code, _, err = run_main(["--port", "/dev/does-not-exist", "info"], capsys)
    assert code == 3 and err.startswith("error: cannot open /dev/does-not-exist")
    assert "Traceback" not in err


def test_port_that_is_not_a_rig(capsys):
    # loop:// echoes our own requests back: something answers, but not a rig.
    code, _, err = run_main(["--port", "loop://", "info"], capsys)
    assert code == 4 and "not" in err and "rig" in err


def test_debug_shows_the_traceback():
    r = rtrig("--debug", "--port", "/dev/does-not-exist", "info")
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_help_lists_commands():
    r = rtrig("--help")
    assert r.returncode == 0
    for cmd in ("capture", "info", "selftest"):
        assert cmd in r.stdout


def test_quickstart_loopback_json_is_exact(tmp_path):
    out = tmp_path / "q.rtrig"
    r = rtrig("capture", "--sim", "--target", "loopback", "--delay", "1.2us", "--freq", "10k",
              "--count", "1000", "--json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    isr = d["channels"]["isr"]
    assert (isr["pulses"], isr["answered"], isr["missed"]) == (1000, 1000, 0)
    for k in ("min_ns", "max_ns", "p50_ns", "p99_ns", "p999_ns"):
        assert isr[k] == 1200
    assert isr["mean_ns"] == 1200 and isr["jitter_ns"] == 0
    assert d["link"] == {**d["link"], "crc_errors": 0, "lost_packets": 0, "overflows": 0}
    assert d["capture"] == str(out) and out.exists()
    import rtrig as rt
    lat = rt.load(out).channel("isr")["latency"]
    assert len(lat) == 1000 and (lat == 144).all()          # 8.33 ns ticks


def test_info_on_the_twin():
    r = rtrig("info", "--sim", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # the default twin is the ULX3S gateware: four samples per 30 MHz clock
    assert d["tick_hz"] == 120_000_000 and d["tick_ns"] == pytest.approx(25 / 3)
    assert d["board_name"] == "ulx3s" and d["latency_channels"] == 4
    assert "loopback" in d["targets"] and d["simulation"] is True
    assert d["features"] == ["intervals", "burst", "armed"]
