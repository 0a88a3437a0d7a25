# SPDX-License-Identifier: BSD-2-Clause
"""Outputs never clobber what is not theirs, and every malformed or non-regular input
is answered with one ``error:`` line (rtrig.outputs, rtrig.capture)."""

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from rtrig.capture import CaptureWriter, load
from rtrig.errors import CaptureFormatError, RtrigError, UsageError
from rtrig.outputs import atomic_output, check_output
from rtrig.protocol import LATENCY_DTYPE

META = {"format": "rtrig-capture", "tick_hz": 100_000_000, "channels": ["isr"],
        "mode": "records"}


def rtrig(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=timeout)


def _one_error(r, code, needle):
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    assert needle in errors[0], r.stderr
    assert ".part" not in r.stderr, r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)


def _capture(path, meta=META, final=None, finl_raw=None):
    rec = np.zeros(4, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(4)
    rec["latency"] = 100
    with CaptureWriter(path, meta) as w:
        w.array(b"LATR", rec)
        if finl_raw is not None:
            w.chunk(b"FINL", finl_raw)
        else:
            w.close(final=final or {"status": "complete"})
    return path


@pytest.fixture
def cap(tmp_path):
    return _capture(tmp_path / "c.rtrig")


# ------------------------------------------------------------------------ outputs

def test_a_fifo_output_is_refused_and_stays_a_fifo(cap, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for args in (["export", str(cap), "-f", "csv", "-o", str(fifo)],
                 ["report", str(cap), "-o", str(fifo)]):
        r = rtrig(*args, timeout=30)
        _one_error(r, 2, "a FIFO, not a regular file")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_device_output_is_refused_and_stays_a_device(cap, tmp_path):
    # a device node of the test's own (/dev/full's numbers), never the system's: the
    # old code replaced the node it was given with a regular file
    dev = tmp_path / "full"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("making a device node needs root")
    r = rtrig("export", str(cap), "-f", "csv", "-o", str(dev), timeout=30)
    _one_error(r, 2, "a character device")
    assert stat.S_ISCHR(os.stat(dev).st_mode)


def test_a_directory_output_names_the_directory_not_a_temporary(cap, tmp_path):
    r = rtrig("export", str(cap), "-f", "csv", "-o", str(tmp_path), timeout=30)
    _one_error(r, 2, f"cannot write {tmp_path}: it is a directory")


def test_a_symlink_output_writes_its_target_and_stays_a_link(cap, tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    r = rtrig("export", str(cap), "-f", "csv", "-o", str(link), timeout=30)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() != "old\n" and "latency" in target.read_text()


def test_atomic_output_keeps_the_old_file_on_error(tmp_path):
    out = tmp_path / "o.bin"
    out.write_bytes(b"old")
    os.chmod(out, 0o640)
    with pytest.raises(ZeroDivisionError):
        with atomic_output(out) as f:
            f.write(b"new")
            raise ZeroDivisionError
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.bin"]
    with atomic_output(out) as f:
        f.write(b"new")
    assert out.read_bytes() == b"new" and stat.S_IMODE(os.stat(out).st_mode) == 0o640


def test_a_capture_is_never_written_over_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="a FIFO"):
        CaptureWriter(fifo, META)
    assert check_output(tmp_path / "new.rtrig") == tmp_path / "new.rtrig"


# ------------------------------------------------------------------------- inputs

def test_a_fifo_input_is_refused_at_once(tmp_path):
    fifo = tmp_path / "in.rtrig"
    os.mkfifo(fifo)
    with pytest.raises(CaptureFormatError, match="a FIFO"):
        load(fifo)
    for args in (["export", str(fifo), "-f", "csv", "-o", str(tmp_path / "o.csv")],
                 ["report", str(fifo), "-o", str(tmp_path / "r.html")]):
        _one_error(rtrig(*args, timeout=30), 6, "a FIFO, not a regular file")


@pytest.mark.parametrize("payload,needle", [
    (json.dumps([1, 2]).encode(), "FINL chunk (at byte"),
    (json.dumps("done").encode(), "holds a JSON string"),
])
def test_a_finl_chunk_of_another_type_is_a_format_error(tmp_path, payload, needle):
    path = _capture(tmp_path / "c.rtrig", finl_raw=payload)
    with pytest.raises(CaptureFormatError, match="not an object"):
        load(path)
    for args in (["export", str(path), "-f", "json", "-o", str(tmp_path / "o.json")],
                 ["report", str(path), "-o", str(tmp_path / "r.html")]):
        _one_error(rtrig(*args, timeout=30), 6, needle)


def test_channel_names_of_another_type_are_a_format_error(tmp_path):
    path = _capture(tmp_path / "c.rtrig", meta={**META, "channel_names": ["isr", "app"]})
    for args in (["export", str(path), "-f", "csv", "-o", str(tmp_path / "o.csv")],
                 ["report", str(path), "-o", str(tmp_path / "r.html")]):
        _one_error(rtrig(*args, timeout=30), 6, "channel_names is a JSON array")


def test_errors_are_rtrig_errors():
    assert issubclass(UsageError, RtrigError)


# ------------------------------------------------------------ suite names, signals

@pytest.mark.parametrize("text,needle", [
    (",", "names no suite test"),
    (" , ", "names no suite test"),
    ("sem_wake,,mutex_uncontended", "an empty name"),
    ("sem_wake,sem_wake", "'sem_wake' more than once"),
])
def test_suite_test_lists_are_checked_before_any_work(text, needle):
    # no --sim: an accepted list would fail later, on the rig; these fail at once
    r = rtrig("suite", "--port", "loop://", "--tests", text, timeout=30)
    _one_error(r, 2, needle)


def test_a_suite_on_a_real_target_needs_the_tests_in_the_firmwares_order():
    # no TRACE words from a real target: only --tests can name its MARKER2 windows
    r = rtrig("suite", "--port", "loop://", "--target", "external", timeout=30)
    _one_error(r, 2, "the suite needs --tests")


def test_an_interrupted_info_does_not_speak_of_a_capture():
    import signal
    import socket
    with socket.socket() as srv:         # a "rig" that takes the connection, never answers
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        p = subprocess.Popen([sys.executable, "-m", "rtrig", "--port",
                              f"socket://127.0.0.1:{port}", "info"],
                             stderr=subprocess.PIPE, text=True)
        # Signalled once it has connected: its handlers are in place by then (main()
        # installs them before any port is opened), however slow its start-up was.
        srv.settimeout(120)
        conn, _ = srv.accept()
        p.send_signal(signal.SIGTERM)
        conn.close()
        _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert err.rstrip().splitlines()[-1] == "interrupted", err


@pytest.mark.parametrize("command", [
    ["capture", "--sim", "--target", "loopback", "--freq", "10k", "--count", "3"],
    ["sweep", "--sim", "--target", "model", "--preset", "fast", "--from", "10k", "--to", "20k"],
    ["suite", "--sim", "--target", "soc"],
])
def test_a_bad_capture_path_is_refused_before_the_twin_starts(command, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = rtrig(*command, "-o", str(fifo), timeout=30)
    _one_error(r, 2, "a FIFO, not a regular file")
    assert "RTRIG-SIM" not in r.stderr and "building" not in r.stderr.lower()


def test_a_long_sweep_says_so_before_it_starts(tmp_path):
    from rtrig.host.cli.sweep import long_sweep_note
    from rtrig.host.procedures.sweep import SweepSettings
    note = long_sweep_note(SweepSettings(f_from=1, f_to=2, pulses=200), simulated=True)
    assert "200 s of rig time" in note and "simulation" in note and "hint:" in note
    assert long_sweep_note(SweepSettings(f_from=20e3, f_to=250e3, pulses=200)) is None
    # the CLI prints it before the first step, then runs on: stop it once it has
    import signal
    p = subprocess.Popen([sys.executable, "-m", "rtrig", "--sim", "sweep", "--target", "model",
                          "--preset", "fast", "--from", "1", "--to", "2", "--pulses", "200",
                          "-o", str(tmp_path / "s.rtrig")], stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if line.startswith("warning: the sweep's first step alone takes 200 s"):
                break
        else:
            pytest.fail("no warning before the sweep ended")
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)


def test_a_fifo_firmware_image_is_refused_before_the_twin(tmp_path):
    fifo = tmp_path / "fw.bin"
    os.mkfifo(fifo)
    r = rtrig("capture", "--sim", "--target", "soc", "--firmware", str(fifo), "--freq", "5k",
              "--count", "3", "-o", str(tmp_path / "c.rtrig"), timeout=30)
    _one_error(r, 2, "a FIFO, not a regular file")


#: A folder no one can make, root included: /proc takes no new entries.
NO_FOLDER = "/proc/rtrig-x"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", [
    ["capture", "--sim", "--target", "loopback", "--freq", "10k", "--count", "3",
     "-o", f"{NO_FOLDER}/c.rtrig"],
    ["sweep", "--sim", "--target", "model", "--preset", "fast", "--from", "10k", "--to",
     "20k", "-o", f"{NO_FOLDER}/s.rtrig"],
    ["export", "CAP", "-f", "csv", "-o", f"{NO_FOLDER}/c.csv"],
    ["report", "CAP", "-o", f"{NO_FOLDER}/r.html"],
    ["build", "ulx3s", "--build-root", NO_FOLDER],
], ids=["capture", "sweep", "export", "report", "build"])
def test_an_output_folder_that_cannot_be_made_is_refused_before_any_work(command, cap):
    """Exit 2 with one "cannot write PATH: reason" line, before the twin starts, a
    capture is read or the gateware is elaborated."""
    r = rtrig(*[str(cap) if a == "CAP" else a for a in command], timeout=30)
    _one_error(r, 2, f"cannot write {NO_FOLDER}")
    assert "RTRIG-SIM" not in r.stderr and "building" not in r.stderr.lower()
    assert "mode:" not in r.stderr             # the rig was not opened


def test_check_output_tries_the_folder_it_would_write_in(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    assert check_output(folder / "new" / "c.rtrig") == folder / "new" / "c.rtrig"
    assert not (folder / "new").exists() and list(folder.iterdir()) == []
    if os.path.isdir("/proc"):
        with pytest.raises(UsageError, match=f"cannot write {NO_FOLDER}/c.rtrig: "):
            check_output(f"{NO_FOLDER}/c.rtrig")
