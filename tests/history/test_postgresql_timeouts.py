# SPDX-License-Identifier: BSD-2-Clause
"""No PostgreSQL wait is unbounded: a server that takes the connection and never
answers (a listener of the test's own) is one line within the connect timeout, for
``history show`` and for ``capture --history`` before any run; each statement has
the statement timeout (the real server of conftest.py), from the URL, the
environment or the default, and one that waits past it is one line."""

import socket
import threading
import time

import numpy as np
import pytest
from history_helpers import rtrig, write_capture

from rtrig.host.history import History
from rtrig.host.history.postgresql import CONNECT_ENV, STATEMENT_ENV

pytest.importorskip("psycopg", reason="psycopg 3 not installed")


@pytest.fixture
def silent_server():
    """``port`` of a TCP listener that accepts every connection and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.1)
    held, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1]
    stop.set()
    thread.join(5)
    for c in held:
        c.close()
    srv.close()


@pytest.mark.parametrize("how", ["url", "env"])
@pytest.mark.parametrize("command", ["show", "capture"])
def test_a_server_that_never_answers_is_one_line_within_the_timeout(
        silent_server, capsys, tmp_path, monkeypatch, how, command):
    url = f"postgresql://ci@127.0.0.1:{silent_server}/rtrig"
    if how == "url":
        url += "?connect_timeout=2"
    else:
        monkeypatch.setenv(CONNECT_ENV, "2s")
    args = ["history", "show"] if command == "show" else [
        "capture", "--sim", "--target", "model", "--count", "10", "-o", tmp_path / "x.rtrig"]
    start = time.monotonic()
    code, out, err = rtrig(capsys, *args, "--history", url)
    took = time.monotonic() - start
    assert code == 2 and out == "", err
    assert err.startswith(f"error: cannot open history {url}: no answer within the connect "
                          "timeout (2 s)"), err
    assert len(err.splitlines()) == 2 and "Traceback" not in err
    assert took < 10, took
    assert not (tmp_path / "x.rtrig").exists()      # no rig time spent


def test_a_bad_timeout_in_the_environment_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv(STATEMENT_ENV, "soon")
    code, _, err = rtrig(capsys, "history", "show", "--history",
                         "postgresql://ci@127.0.0.1:1/rtrig")
    assert code == 2 and err.startswith(f"error: {STATEMENT_ENV}='soon': 'soon' is not a "
                                        "duration"), err


def _statement_timeout(where):
    with History(where) as h:
        return h.conn.execute("SHOW statement_timeout").fetchone()[0]


def test_each_statement_has_the_statement_timeout(pg_url, monkeypatch):
    monkeypatch.delenv(STATEMENT_ENV, raising=False)
    monkeypatch.delenv("PGOPTIONS", raising=False)
    assert _statement_timeout(pg_url) == "30s"
    monkeypatch.setenv(STATEMENT_ENV, "1.5s")
    assert _statement_timeout(pg_url) == "1500ms"
    # the URL's own, kept with its other options
    url = pg_url + "&options=-c%20statement_timeout%3D7000%20-c%20work_mem%3D8MB"
    assert _statement_timeout(url) == "7s"
    with History(url) as h:
        assert h.conn.execute("SHOW work_mem").fetchone()[0] == "8MB"


def test_a_statement_waiting_past_its_timeout_is_one_line(pg_url, tmp_path, capsys,
                                                          monkeypatch):
    import psycopg
    History(pg_url).close()
    path = write_capture(tmp_path / "c.rtrig", np.arange(100))
    monkeypatch.setenv(STATEMENT_ENV, "1s")
    with psycopg.connect(pg_url) as other:          # holds the table until it is done
        other.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        start = time.monotonic()
        code, out, err = rtrig(capsys, "history", "add", path, "--history", pg_url)
        took = time.monotonic() - start
    assert code == 2 and out == "", err
    assert err.startswith("error: cannot record into history postgresql://") and \
        "a statement ran past the statement timeout (1 s; " in err, err
    assert len(err.splitlines()) == 2 and took < 10, (err, took)
    with History(pg_url, write=False) as h:
        assert h.runs() == []
