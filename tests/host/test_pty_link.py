# SPDX-License-Identifier: BSD-2-Clause
"""The twin on a pseudo-terminal (``RTRIG_SIM_SERIAL=pty``): the host reaches it through
pyserial's serial-port class, as a board; a capture there equals one over the socket,
and a rig unplugged mid-capture (the pseudo-terminal's master closed) ends it with a
one-line error, a non-zero exit and every record received until then in the file."""

import pytest
import serial

from rtrig.capture import load
from rtrig.host.analysis import capture_warnings
from rtrig.host.cli import main
from rtrig.host.rig.connect import open_rig
from rtrig.host.sim import pty_link

CAPTURE = ["--sim", "capture", "--target", "model", "--preset", "fast", "--freq", "8k",
           "--jitter", "10us", "--load", "-q", "--count"]


def relative_records(path):
    """The latency records with ``stim_t`` counted from the run's start, as bytes."""
    cap = load(path)
    rec = cap.latency.copy()
    rec["stim_t"] -= cap.final["start"]["at_ticks"]
    return rec.tobytes(), len(rec)


def test_the_twin_on_a_pty_is_a_serial_port(monkeypatch):
    monkeypatch.setenv("RTRIG_SIM_SERIAL", "pty")
    with open_rig(sim=True) as rig:
        assert rig.link.url.startswith("/dev/pts/")
        assert type(rig.link.port) is serial.Serial        # pyserial's serial port
        assert rig.link.time() < rig.link.time()
        assert rig.sim.pty.to_rig > 0 and rig.sim.pty.to_host > 0


def test_a_capture_over_the_pty_equals_one_over_the_socket(monkeypatch, tmp_path, capsys):
    for kind in ("socket", "pty"):
        monkeypatch.setenv("RTRIG_SIM_SERIAL", kind)
        main([*CAPTURE, "600", "-o", str(tmp_path / f"{kind}.rtrig")])
    got, n = relative_records(tmp_path / "pty.rtrig")
    assert n == 1200                                   # 600 pulses, two channels
    assert got == relative_records(tmp_path / "socket.rtrig")[0]
    assert load(tmp_path / "pty.rtrig").final["status"] == "complete"


def test_an_unplugged_rig_ends_the_capture_and_keeps_its_records(monkeypatch, tmp_path,
                                                                 capsys):
    # The bridge closes the pseudo-terminal's master once 40 kB have reached the host:
    # the set-up's exchanges and a part of the records.
    class Unplugging(pty_link.PtyBridge):
        def __init__(self, url):
            super().__init__(url, unplug_after=40_000)
    monkeypatch.setattr(pty_link, "PtyBridge", Unplugging)
    monkeypatch.setenv("RTRIG_SIM_SERIAL", "pty")
    path = tmp_path / "u.rtrig"
    with pytest.raises(SystemExit) as e:
        main([*CAPTURE, "20000", "-o", str(path)])
    err = capsys.readouterr().err
    assert e.value.code == 3
    lines = [x for x in err.splitlines() if x.startswith(("error:", "hint:"))]
    assert len(lines) == 2, err
    assert lines[0].startswith("error: rig unplugged: its serial port /dev/pts/"), err
    assert lines[1].startswith("hint: plug the rig back in"), err
    assert "Traceback" not in err
    cap = load(path)
    assert cap.final["status"] == "unplugged"
    assert 0 < len(cap.latency) < 40_000
    assert cap.final["records"] == len(cap.latency)
    warnings = capture_warnings(cap)
    assert any("ended when the rig was unplugged" in w for w in warnings), warnings


def test_a_bad_sim_serial_is_one_error_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RTRIG_SIM_SERIAL", "usb")
    with pytest.raises(SystemExit) as e:
        main([*CAPTURE, "10", "-o", str(tmp_path / "x.rtrig")])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.strip() == "error: RTRIG_SIM_SERIAL must be socket or pty, not 'usb'"
    assert not (tmp_path / "x.rtrig").exists()
