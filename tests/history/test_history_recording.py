# SPDX-License-Identifier: BSD-2-Clause
"""No run is lost without a word: a command with ``--history`` that ends with an
error or a stop signal after its file was begun (a lost link, Ctrl-C, SIGTERM)
records the run with the end status its file holds, or says why it does not; and
the pytest plugin fails, not warns, when a test's runs cannot be recorded — before
the test runs when the history cannot be written at all."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import click
import numpy as np
import pytest
from history_helpers import rtrig, unshare_works, write_capture

from rtrig.errors import Interrupted, LinkError, SimulationError
from rtrig.host.cli.history import recording
from rtrig.host.history import History, HistoryError


def _command(action):
    """A measuring command as ``capture`` is one (``recording``, ``-o``): it runs
    ``action(output)`` and returns the run's file."""
    @click.command()
    @recording
    @click.option("-o", "--output", type=click.Path(path_type=Path), default=None)
    def fake(output):
        action(output)
        return SimpleNamespace(path=output)
    return fake


def _run(action, path, db, *extra):
    return _command(action).main(["-o", str(path), "--history", str(db), *extra],
                                 standalone_mode=False)


def _runs(db):
    with History(db, write=False) as h:
        return h.runs()


def _then(error, **capture):
    def action(output):
        write_capture(output, np.arange(1000, 1100), **capture)
        raise error
    return action


@pytest.mark.parametrize("error, status", [
    (LinkError("the rig stopped answering"), "interrupted"),
    (Interrupted(signal.SIGTERM), "interrupted"),
])
def test_a_run_cut_off_is_recorded_with_its_end_status(tmp_path, capsys, error, status):
    db, path = tmp_path / "h.sqlite", tmp_path / "c.rtrig"
    # (click hands a KeyboardInterrupt on as Abort, which the CLI's funnel reads back)
    with pytest.raises((type(error), click.exceptions.Abort)):
        _run(_then(error, status=status), path, db, "--label", "kernel=6.12")
    (run,) = _runs(db)
    assert (run["status"], run["source"], run["labels"]) == (status, str(path),
                                                             {"kernel": "6.12"})
    err = capsys.readouterr().err
    assert f"history: run 1 (capture, {path}) recorded into {db}, status {status}" in err


def test_a_complete_file_of_a_failed_command_is_recorded_failed(tmp_path, capsys):
    db, path = tmp_path / "h.sqlite", tmp_path / "c.rtrig"
    with pytest.raises(SimulationError):
        _run(_then(SimulationError("the SoC's firmware stopped")), path, db)
    assert [r["status"] for r in _runs(db)] == ["failed"]


def test_a_run_that_wrote_nothing_records_nothing(tmp_path, capsys):
    db, path = tmp_path / "h.sqlite", tmp_path / "c.rtrig"
    write_capture(path, np.arange(100))               # an earlier run's file at -o

    def fails(output):
        raise LinkError("no rig on the port")
    with pytest.raises(LinkError):
        _run(fails, path, db)
    assert _runs(db) == [] and "history:" not in capsys.readouterr().err


def test_a_run_that_cannot_be_recorded_says_why(tmp_path, capsys):
    db, path = tmp_path / "h.sqlite", tmp_path / "c.rtrig"

    def torn(output):
        output.write_bytes(b"\x00garbage" * 10)
        raise LinkError("the rig stopped answering")
    with pytest.raises(LinkError):
        _run(torn, path, db)
    err = capsys.readouterr().err
    assert f"history: the run in {path} is not recorded: " in err, err
    assert _runs(db) == []


def test_a_finished_run_the_history_refuses_names_its_file(tmp_path, capsys):
    db, path = tmp_path / "h.sqlite", tmp_path / "c.rtrig"

    def history_replaced(output):
        write_capture(output, np.arange(100))
        db.unlink()
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE customers (id INTEGER)")
        con.close()
    with pytest.raises(HistoryError) as e:
        _run(history_replaced, path, db)
    assert "is not an rtrig history" in str(e.value)
    assert e.value.hint == f"the run is kept in {path}: rtrig history add {path} records it " \
                           "later"


def test_a_simulated_capture_stopped_by_sigterm_is_recorded(tmp_path):
    db, path = tmp_path / "h.sqlite", tmp_path / "l.rtrig"
    proc = subprocess.Popen([sys.executable, "-m", "rtrig", "capture", "--sim", "--target",
                             "loopback", "--delay", "1us", "--freq", "2k", "--count",
                             "2000000", "-o", str(path), "-q", "--history", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not (path.exists() and path.stat().st_size > 20_000):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert f"history: run 1 (capture, {path}) recorded into {db}, status interrupted" in err
    (run,) = _runs(db)
    assert run["status"] == "interrupted"
    with History(db, write=False) as h:
        assert h.figures("isr.p50", [run])[run["id"]][0] == 1000


# --- the pytest plugin --------------------------------------------------------------------

TEST_FILE = '''
import os
import sqlite3

def test_loop(rtrig):
    rtrig.capture(freq="20k", count=100, target="loopback", delay="1us")
    if os.environ.get("REPLACE_HISTORY"):       # the history turns foreign meanwhile
        if os.path.exists("h.sqlite"):
            os.unlink("h.sqlite")
        sqlite3.connect("h.sqlite").execute("CREATE TABLE customers (id INTEGER)")
    assert not os.environ.get("FAIL_TOO"), "the test's own failure"
'''


def _pytest(folder, *args, env=None, wrap=()):
    return subprocess.run([*wrap, sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "--rtrig-sim", *args, "test_loop.py"],
                          cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("fails_too", [False, True], ids=["passed", "failed"])
def test_a_test_whose_runs_are_not_recorded_fails(tmp_path, fails_too):
    """A passed test fails for it; a failed one keeps its own failure, with the loss
    beside it in its report."""
    (tmp_path / "test_loop.py").write_text(TEST_FILE)
    env = {"REPLACE_HISTORY": "1", **({"FAIL_TOO": "1"} if fails_too else {})}
    r = _pytest(tmp_path, "--rtrig-history", "h.sqlite", env=env)
    assert r.returncode == 1 and "1 failed" in r.stdout, r.stdout + r.stderr
    assert "rtrig: the test's runs are not recorded into h.sqlite: history h.sqlite is not " \
           "an rtrig history" in r.stdout, r.stdout
    assert ("the test's own failure" in r.stdout) == fails_too, r.stdout


def test_a_history_the_session_cannot_write_is_an_error_before_the_test(tmp_path, capsys):
    if not unshare_works():
        pytest.skip("needs unshare -rm with tmpfs mounts (user namespaces)")
    (tmp_path / "test_loop.py").write_text(TEST_FILE)
    write_capture(tmp_path / "c.rtrig", np.arange(100))
    code, _, err = rtrig(capsys, "history", "add", tmp_path / "c.rtrig", "--history",
                         tmp_path / "h.sqlite")
    assert code == 0, err
    (tmp_path / "m").mkdir()
    script = ("mount -t tmpfs tmpfs m && cp h.sqlite m/ && mount -o remount,ro m && "
              'exec "$@"')
    r = _pytest(tmp_path, "--rtrig-history", "m/h.sqlite",
                wrap=("unshare", "-rm", "sh", "-c", script, "sh"))
    assert r.returncode == 1 and "1 error" in r.stdout, r.stdout + r.stderr
    assert "--rtrig-history: cannot write history m/h.sqlite: Read-only file system" \
        in r.stdout, r.stdout
    assert "ERROR at setup of test_loop" in r.stdout, r.stdout
