# SPDX-License-Identifier: BSD-2-Clause
"""A history named wrongly is one line and is left as it was: reading makes and
changes nothing (no folder, no empty history, no WAL switch of a foreign file, no
migration), URLs of other schemes and files that are not regular are refused
before SQLite sees them, and a read-only folder or a full device is named as such
(a read-only history still reads). The devices are tmpfs mounts in a mount
namespace of their own (``unshare``), gone when the command ends."""

import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from history_helpers import rtrig, unshare_works, write_capture

from rtrig.host.history import History
from rtrig.host.history.schema import MIGRATIONS


def _one_line(code, out, err, says):
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("error: ") and says in err.splitlines()[0], err
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def here(tmp_path, monkeypatch):
    """An empty working folder, and no RTRIG_HISTORY from outside."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("RTRIG_HISTORY", raising=False)
    return work


@pytest.mark.parametrize("args", [
    ["history", "show", "--history", "no/such/h.sqlite"],
    ["history", "show", "--history", "no/such/h.sqlite", "--figure", "isr.p99"],
    ["history", "report", "--history", "no/such/h.sqlite", "-o", "t.html"],
    ["history", "show"],                                  # the default, captures/history.sqlite
], ids=["show", "figure", "report", "default"])
def test_reading_a_mistyped_history_makes_nothing(here, capsys, args):
    code, out, err = rtrig(capsys, *args)
    _one_line(code, out, err, "no history at ")
    assert _tree(here) == []


def _foreign(path, journal="DELETE"):
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode = {journal}")
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.execute("INSERT INTO customers VALUES (1)")
    con.commit()
    con.close()
    return path.read_bytes()


@pytest.mark.parametrize("command", [["show"], ["show", "--figure", "isr.p99"],
                                     ["report", "-o", "t.html"], ["add", "c.rtrig"]])
def test_a_foreign_database_is_left_byte_for_byte(here, capsys, command):
    write_capture(here / "c.rtrig", np.arange(100))
    before = _foreign(here / "f.db")
    listed = _tree(here)
    code, out, err = rtrig(capsys, "history", *command, "--history", "f.db")
    _one_line(code, out, err, "f.db is not an rtrig history (it holds other tables: customers)")
    assert (here / "f.db").read_bytes() == before
    assert _tree(here) == listed            # no -wal, -shm or -journal beside it


def _schema_1(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                "description TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for s in MIGRATIONS[0][2]:
        con.execute(s.format(id="INTEGER PRIMARY KEY AUTOINCREMENT", blob="TEXT"))
    con.execute("INSERT INTO rtrig_history VALUES ('rtrig-history')")
    con.execute("INSERT INTO schema_migrations VALUES (1, 'v1', 'then')")
    con.execute("INSERT INTO runs (recorded_at, kind, source, board, target, settings, status)"
                " VALUES ('then', 'capture', 'x.rtrig', 'ulx3s', 'soc', '{}', 'complete')")
    con.execute("INSERT INTO figures VALUES (1, 'isr.p99', 1000, 900, 1100, 'ns')")
    con.commit()
    con.close()
    return path.read_bytes()


def test_reading_an_older_history_does_not_migrate_it(here, capsys):
    before = _schema_1(here / "old.sqlite")
    code, out, err = rtrig(capsys, "history", "show", "--history", "old.sqlite", "--figure",
                           "isr.p99")
    assert code == 0, err
    assert "1.000 µs" in out and "ulx3s" not in err
    with History(here / "old.sqlite", write=False) as h:
        assert h.schema == 1 and h.samples("isr", [1]) == {}
    assert (here / "old.sqlite").read_bytes() == before and _tree(here) == ["old.sqlite"]


def test_reading_an_empty_file_is_no_history(here, capsys):
    (here / "empty.sqlite").write_bytes(b"")
    code, out, err = rtrig(capsys, "history", "show", "--history", "empty.sqlite")
    _one_line(code, out, err, "no history in empty.sqlite yet")
    assert (here / "empty.sqlite").read_bytes() == b"" and _tree(here) == ["empty.sqlite"]


@pytest.mark.parametrize("where, says", [
    ("mysql://ci:secret@db/rtrig", "history mysql://ci:***@db/rtrig: rtrig keeps histories in "
                                   "SQLite or PostgreSQL, not mysql"),
    ("sqlite:///{tmp}/h.sqlite", "an SQLite history is named by its path, not by a URL"),
    ("sqlite:////{tmp}/h.sqlite", "an SQLite history is named by its path, not by a URL"),
], ids=["mysql", "sqlite-3", "sqlite-4"])
@pytest.mark.parametrize("command", ["show", "add"])
def test_a_url_of_another_scheme_is_refused(here, capsys, where, says, command):
    write_capture(here / "c.rtrig", np.arange(100))
    where = where.format(tmp=str(here).lstrip("/"))
    args = ["history", "add", "c.rtrig"] if command == "add" else ["history", "show"]
    code, out, err = rtrig(capsys, *args, "--history", where)
    _one_line(code, out, err, says)
    assert "secret" not in err
    if where.startswith("sqlite"):
        assert f"hint: --history {here}/h.sqlite" in err, err
    assert _tree(here) == ["c.rtrig"]               # no folder "mysql:" or "sqlite:"


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("device, kind", [("/dev/null", "a character device"),
                                          ("/dev/zero", "a character device"),
                                          ("/dev/full", "a character device"),
                                          ("fifo", "a FIFO"), ("link", "a character device")])
@pytest.mark.parametrize("command", ["show", "add", "capture"])
def test_a_file_that_is_not_regular_is_refused_before_sqlite(tmp_path, capsys, fifo, device,
                                                             kind, command):
    if device == "fifo":
        device = str(fifo)
    elif device == "link":
        os.symlink("/dev/null", tmp_path / "link")
        device = str(tmp_path / "link")
    journals = {p: os.path.exists(p) for p in ("/dev/null-journal", "/dev/null-wal")}
    write_capture(tmp_path / "c.rtrig", np.arange(100))
    args = {"show": ["history", "show"], "add": ["history", "add", tmp_path / "c.rtrig"],
            "capture": ["capture", "--sim", "--target", "model", "--count", "10", "-o",
                        tmp_path / "x.rtrig"]}[command]
    code, out, err = rtrig(capsys, *args, "--history", device)
    _one_line(code, out, err, f"history {device} is {kind}, not a regular file")
    assert {p: os.path.exists(p) for p in journals} == journals
    assert not (tmp_path / "x.rtrig").exists()


# --- read-only and full devices ---------------------------------------------------------


@pytest.fixture(scope="module")
def namespace():
    """Runs a shell script in a mount namespace of its own (``unshare -rm``)."""
    if not unshare_works():
        pytest.skip("needs unshare -rm with tmpfs mounts (user namespaces)")

    def run(script, cwd):
        r = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=cwd, text=True,
                           capture_output=True, timeout=300)
        return r
    return run


def _rtrig_cmd(*args):
    return " ".join([sys.executable, "-m", "rtrig", *map(str, args)])


@pytest.fixture
def recorded(tmp_path, capsys):
    """A history of one run, and a capture to add."""
    write_capture(tmp_path / "c.rtrig", np.arange(1000, 1100))
    code, _, err = rtrig(capsys, "history", "add", tmp_path / "c.rtrig", "--history",
                         tmp_path / "h.sqlite", "--label", "kernel=6.12")
    assert code == 0, err
    (tmp_path / "m").mkdir()
    return tmp_path


def _results(r, n):
    """The ``n`` results a script prints, each its stdout/stderr then ``rc=N``."""
    blocks = r.stdout.split("\n---\n")
    assert len(blocks) == n + 1, (r.stdout, r.stderr)
    return blocks[:n], r.stderr


def test_a_read_only_history_reads_and_refuses_writes_by_name(namespace, recorded):
    script = " && ".join([
        "mount -t tmpfs -o size=1m tmpfs m", "cp h.sqlite m/", "mount -o remount,ro m"]) + \
        "".join(f"; {_rtrig_cmd(*a)} 2>&1; echo rc=$?; echo ---" for a in (
            ["history", "show", "--history", "m/h.sqlite", "--figure", "isr.p50"],
            ["history", "report", "--history", "m/h.sqlite", "-o", "t.html"],
            ["history", "add", "c.rtrig", "--history", "m/h.sqlite"],
            ["history", "add", "c.rtrig", "--history", "m/new.sqlite"])) + "; ls -a m"
    r = namespace(script, recorded)
    (show, report, add, new), _ = _results(r, 4)
    assert show.endswith("rc=0") and "10.490 µs" in show, show
    assert report.endswith("rc=0") and (recorded / "t.html").stat().st_size > 1000, report
    for out, says in ((add, "cannot write history m/h.sqlite: Read-only file system"),
                      (new, "cannot write history m/new.sqlite: its folder m: Read-only "
                            "file system")):
        assert out.endswith("rc=2") and out.startswith(f"error: {says}"), out
        assert "not an rtrig history" not in out and "move" not in out, out
    assert r.stdout.split("\n---\n")[-1].split() == [".", "..", "h.sqlite"]


def test_a_full_device_is_named(namespace, recorded):
    script = " && ".join([
        "mount -t tmpfs -o size=256k tmpfs m", "cp h.sqlite m/",
        "(dd if=/dev/zero of=m/fill bs=4k 2>/dev/null || true)"]) + \
        "".join(f"; {_rtrig_cmd(*a)} 2>&1; echo rc=$?; echo ---" for a in (
            ["history", "add", "c.rtrig", "--history", "m/h.sqlite"],
            ["history", "show", "--history", "m/h.sqlite"])) + \
        "; umount m && mount -t tmpfs -o size=8k tmpfs m" + \
        f"; {_rtrig_cmd('history', 'add', 'c.rtrig', '--history', 'm/n.sqlite')} 2>&1;" \
        " echo rc=$?; echo ---"
    r = namespace(script, recorded)
    (full, show, small), _ = _results(r, 3)
    assert full.endswith("rc=2") and full.startswith(
        "error: cannot write history m/h.sqlite: no space left on its device"), full
    assert show.endswith("rc=0") and "kernel=6.12" in show, show
    assert small.endswith("rc=2") and small.startswith(
        "error: cannot write history m/n.sqlite: no space left on its device"), small
    for out in (full, small):
        assert "not an rtrig history" not in out and "Traceback" not in out, out
