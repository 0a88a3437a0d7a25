# SPDX-License-Identifier: BSD-2-Clause
"""The history on a real PostgreSQL server (conftest.py starts one): the same runs
give the same ``history show`` output as in SQLite; two processes writing at once
lose nothing; a failed write leaves no half run; a foreign database is refused; a
role that may only read reads and is refused writes before a run; reading an empty
database makes nothing."""

import json
import multiprocessing
import time

import numpy as np
import pytest
from history_helpers import rtrig, write_capture, write_suite, write_sweep

from rtrig.host.history import History, HistoryError
from rtrig.host.history.store import Run


def _files(tmp_path):
    rng = np.random.default_rng(5)
    out = [write_capture(tmp_path / f"c{i}.rtrig", rng.integers(1000, 1100 + 100 * i, 2000),
                         missed=i) for i in range(3)]
    out.append(write_sweep(tmp_path / "s.rtrig", 120e3, 115e3))
    out.append(write_suite(tmp_path / "u.rtrig", {"yield": {
        "count": 4, "cold_ns": 1200.0, "min_ns": 1220.0, "mean_ns": 1240.0,
        "p50_ns": 1240.0, "p99_ns": 1260.0, "p9999_ns": 1260.0, "max_ns": 1260.0}}))
    return out


def _show(capsys, db, *args):
    code, out, err = rtrig(capsys, "history", "show", "--history", db, *args)
    assert code == 0, err
    return out


def test_postgresql_and_sqlite_show_the_same(tmp_path, capsys, pg_url):
    files = _files(tmp_path)
    outputs = []
    for db in (tmp_path / "h.sqlite", pg_url):
        for i, f in enumerate(files):
            code, _, err = rtrig(capsys, "history", "add", f, "--history", db,
                                 "--label", f"kernel=6.{i // 2}")
            assert code == 0, err
        shown = [_show(capsys, db, "--figure", name, "--by", "kernel")
                 for name in ("isr.p99", "isr.missed", "mf_isr", "suite.yield.p99")]
        shown.append(_show(capsys, db, "--figure", "isr.p50", "--json"))
        listed = json.loads(_show(capsys, db, "--json"))
        for r in listed:
            r.pop("recorded_at")
        outputs.append((shown[:-1], [{k: v for k, v in r.items() if k != "recorded_at"}
                                     for r in json.loads(shown[-1])], listed))
    assert outputs[0] == outputs[1]
    assert "6.1" in outputs[0][0][0] and "10.990 µs" in outputs[0][0][0]


def _writer(url, tag, count, start):
    start.wait(60)                        # both open the history at the same moment
    with History(url) as h:
        for i in range(count):
            h.record(Run("capture", f"{tag}-{i}", labels={"writer": tag},
                         figures=[(f"isr.p{j}", float(i), None, None, "ns") for j in range(20)]))
            time.sleep(0.002)   # runs arrive apart, as from rigs: the other writer gets in


def test_two_processes_writing_at_once_lose_nothing(pg_url):
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(pg_url, tag, 100, start)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with History(pg_url) as h:
        runs = h.runs()
        assert sorted(r["source"] for r in runs) == sorted(
            f"{t}-{i}" for t in "ab" for i in range(100))
        assert h.conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0] == 200 * 20
        writers = [r["labels"]["writer"] for r in runs]
        assert writers != sorted(writers), "the writers did not overlap: the test proves nothing"


def test_a_failed_write_leaves_no_half_run(pg_url):
    with History(pg_url) as h:
        bad = Run("capture", "bad.rtrig", labels={"k": "v"},
                  figures=[("isr.p50", 1.0, None, None, "ns"), ("isr.p50", 3.0, None, None,
                                                                "ns")])
        with pytest.raises(HistoryError, match="cannot record"):
            h.record(bad)
        h.record(Run("capture", "next.rtrig"))
        assert [r["source"] for r in h.runs()] == ["next.rtrig"]
        assert h.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0


def test_a_foreign_database_and_a_server_not_there_are_one_line(pg_url, capsys):
    import psycopg
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE TABLE customers (id INTEGER)")
    code, _, err = rtrig(capsys, "history", "show", "--history", pg_url)
    assert code == 2 and "not an rtrig history (it holds other tables: customers)" in err
    gone = pg_url.replace("/h_", "/nosuchdb_")
    code, _, err = rtrig(capsys, "history", "show", "--history", gone)
    assert code == 2 and err.startswith("error: cannot open history postgresql://") and \
        "nosuchdb_" in err and len(err.splitlines()) == 1


def test_a_role_that_may_only_read_reads_and_is_refused_writes(pg_url, tmp_path, capsys):
    """A role with SELECT only: show answers; add, and a capture before its run, are
    refused naming the permission, and nothing is recorded."""
    import psycopg
    path = write_capture(tmp_path / "c.rtrig", np.arange(1000, 1100))
    code, _, err = rtrig(capsys, "history", "add", path, "--history", pg_url)
    assert code == 0, err
    role = "reader_" + pg_url.split("/h_")[1].split("?")[0]     # roles are the server's
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute(f"CREATE ROLE {role} LOGIN")
        con.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = pg_url.replace("postgresql://postgres@", f"postgresql://{role}@")
    assert json.loads(_show(capsys, reader, "--json"))[0]["source"] == str(path)
    for args in (["history", "add", path], ["capture", "--sim", "--target", "model",
                                            "--count", "10", "-o", tmp_path / "x.rtrig"]):
        code, out, err = rtrig(capsys, *args, "--history", reader)
        assert code == 2 and out == "", err
        assert err.startswith(f"error: cannot write history postgresql://{role}@") and \
            f"permission denied (user {role} may not insert into runs, labels, figures, " \
            "samples)" in err.splitlines()[0], err
    assert not (tmp_path / "x.rtrig").exists()
    assert len(json.loads(_show(capsys, pg_url, "--json"))) == 1


def test_reading_an_empty_database_makes_nothing(pg_url, capsys):
    import psycopg
    code, out, err = rtrig(capsys, "history", "show", "--history", pg_url)
    assert code == 2 and err.startswith("error: no history in postgresql://") and \
        "yet (it holds no tables)" in err, err
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE "
                           "table_schema = 'public'").fetchone()[0] == 0
