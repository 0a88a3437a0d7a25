# SPDX-License-Identifier: BSD-2-Clause
"""The history store: figures recorded as the analysis computes them, the schema's
versions and migration, refusals in one line, all-or-nothing writes and two
writers at once."""

import multiprocessing
import sqlite3
import time

import numpy as np
import pytest
from history_helpers import rtrig, write_capture, write_suite, write_sweep

from rtrig.host.analysis import capture_summary
from rtrig.host.history import History, HistoryError, runs_of_file
from rtrig.host.history.schema import MIGRATIONS, SCHEMA_VERSION
from rtrig.host.history.store import Run


def test_a_capture_s_figures_are_its_summary_s(tmp_path):
    """Latencies 1000..1999 ticks once each (10 ns ticks) and 10 misses: p50 is the
    500th sample, 14 990 ns, and every bound is the summary's."""
    path = write_capture(tmp_path / "a.rtrig", np.arange(1000, 2000), missed=10)
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        (run,) = runs_of_file(path, {"kernel": "6.12"})
        rid = h.record(run)
        runs = h.runs()
        p50 = h.figures("isr.p50", runs)[rid]
        mx = h.figures("isr.max", runs)[rid]
        missed = h.figures("isr.missed", runs)[rid]
    assert runs[0]["labels"] == {"kernel": "6.12"}
    assert (runs[0]["board"], runs[0]["target"], runs[0]["kind"]) == ("sim", "model fast",
                                                                       "capture")
    from rtrig import load
    st = capture_summary(load(path))["isr"]
    assert p50 == (14_990, st["p50_lo_ns"], st["p50_hi_ns"], "ns")
    assert p50[1] < 14_990 < p50[2]
    assert mx[0] == 19_990 and mx[3] == "ns"
    assert missed[0] == pytest.approx(10 / 1010) and missed[1] < 10 / 1010 < missed[2]


def test_sweep_and_suite_figures(tmp_path):
    sw = write_sweep(tmp_path / "s.rtrig", 120e3, 115e3)
    su = write_suite(tmp_path / "u.rtrig", {"yield": {
        "count": 4, "cold_ns": 1200.0, "min_ns": 1220.0, "mean_ns": 1240.0, "p50_ns": 1240.0,
        "p99_ns": 1260.0, "p9999_ns": 1260.0, "max_ns": 1260.0}})
    with History(tmp_path / "h.sqlite") as h:
        a = h.record(runs_of_file(sw)[0])
        b = h.record(runs_of_file(su)[0])
        runs = h.runs()
        assert h.figures("mf_isr", runs) == {a: (120e3, 115e3, 120e3, "Hz")}
        assert h.figures("sf", runs)[a] == (200e3, 200e3, None, "Hz")
        assert h.figures("suite.yield.p99", runs) == {b: (1260.0, None, None, "ns")}
        assert runs[0]["settings"]["sweep"]["resolution"] == 0.005
        assert [r["kind"] for r in runs] == ["sweep", "suite"]


def test_an_older_history_is_migrated(tmp_path):
    """A file of schema 1 (no samples table) gains schema 2 when opened; its runs stay."""
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                "description TEXT NOT NULL, applied_at TEXT NOT NULL)")
    version, description, statements = MIGRATIONS[0]
    for s in statements:
        con.execute(s.format(id="INTEGER PRIMARY KEY AUTOINCREMENT", blob="TEXT"))
    con.execute("INSERT INTO rtrig_history VALUES ('rtrig-history')")
    con.execute("INSERT INTO schema_migrations VALUES (1, ?, 'then')", (description,))
    con.execute("INSERT INTO runs (recorded_at, kind, source, board, target, settings, status)"
                " VALUES ('then', 'capture', 'x.rtrig', 'ulx3s', 'soc', '{}', 'complete')")
    con.commit()
    con.close()
    with History(db) as h:
        assert h.version() == SCHEMA_VERSION == 2
        assert [r["board"] for r in h.runs()] == ["ulx3s"]
        h.record(Run("capture", "y.rtrig", samples={"isr": {"values": [1]}}))
        assert len(h.runs()) == 2


@pytest.mark.parametrize("content, says", [
    (b"this is no database at all" * 100, "is not an rtrig history"),
    (b"SQLite format 3\x00" + b"\xff" * 4000, "is not an rtrig history"),
], ids=["text", "damaged-sqlite"])
def test_a_corrupt_file_is_refused_in_one_line(tmp_path, capsys, content, says):
    db = tmp_path / "bad.sqlite"
    db.write_bytes(content)
    for args in (["history", "show"], ["history", "add", db]):   # add: any file will do
        code, out, err = rtrig(capsys, *args, "--history", db)
        assert code == 2, err
        assert err.startswith("error: ") and says in err, err
        assert "Traceback" not in err and len(err.splitlines()) <= 2
    assert db.read_bytes() == content


def test_a_foreign_or_newer_database_is_refused(tmp_path, capsys):
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    code, _, err = rtrig(capsys, "history", "show", "--history", foreign)
    assert code == 2 and "not an rtrig history (it holds other tables: customers)" in err
    newer = tmp_path / "newer.sqlite"
    History(newer).close()
    con = sqlite3.connect(newer)
    con.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'later')")
    con.commit()
    con.close()
    code, _, err = rtrig(capsys, "history", "show", "--history", newer)
    assert code == 2 and "has history schema 99, newer than this rtrig reads (up to 2)" in err
    assert len(err.splitlines()) == 2 and err.splitlines()[1].startswith("hint: ")


def test_a_failed_write_leaves_no_half_run(tmp_path):
    """The third figure cannot be written (its name repeats the first: a primary key
    violation): the run, its labels and its first figures are all rolled back."""
    with History(tmp_path / "h.sqlite") as h:
        h.record(Run("capture", "ok.rtrig", figures=[("isr.p50", 1.0, None, None, "ns")]))
        bad = Run("capture", "bad.rtrig", labels={"k": "v"},
                  figures=[("isr.p50", 1.0, None, None, "ns"), ("isr.p99", 2.0, None, None,
                                                                "ns"),
                           ("isr.p50", 3.0, None, None, "ns")])
        with pytest.raises(HistoryError, match="cannot record"):
            h.record(bad)
        assert [r["source"] for r in h.runs()] == ["ok.rtrig"]
        raw = h.conn
        assert raw.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0
        assert raw.execute("SELECT COUNT(*) FROM figures").fetchone()[0] == 1
        # and the history takes the next run
        h.record(Run("capture", "next.rtrig"))
        assert [r["source"] for r in h.runs()] == ["ok.rtrig", "next.rtrig"]


def _writer(db, tag, count, start):
    start.wait(60)                        # both open the new history at the same moment
    with History(db) as h:
        for i in range(count):
            h.record(Run("capture", f"{tag}-{i}", labels={"writer": tag},
                         figures=[(f"isr.p{j}", float(i), None, None, "ns") for j in range(20)]))
            time.sleep(0.002)   # runs arrive apart, as from rigs: the other writer gets in


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    """Two processes open one new history at the same moment (both may create the
    schema) and write 150 runs each, interleaved: all 300 are there, whole."""
    db = tmp_path / "h.sqlite"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(db, tag, 150, start)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with History(db) as h:
        runs = h.runs()
        assert sorted(r["source"] for r in runs) == sorted(
            f"{t}-{i}" for t in "ab" for i in range(150))
        assert h.conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0] == 300 * 20
        writers = [r["labels"]["writer"] for r in runs]
        assert writers != sorted(writers), "the writers did not overlap: the test proves nothing"
        assert h.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_history_damaged_inside_is_one_line(tmp_path, capsys):
    """The header and schema intact, the pages of runs overwritten: reading fails in
    one line (exit 2), never a traceback."""
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        for i in range(300):
            h.record(Run("capture", f"r{i}", labels={"kernel": str(i)},
                         figures=[("isr.p50", float(i), None, None, "ns")]))
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode = DELETE")
    con.close()
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 6:len(data) - page] = b"\xa5" * (len(data) - page * 7)
    db.write_bytes(bytes(data))
    code, out, err = rtrig(capsys, "history", "show", "--history", db, "--figure", "isr.p50")
    assert code == 2 and out == "", err
    assert err.startswith("error: ") and "Traceback" not in err and len(err.splitlines()) <= 2
