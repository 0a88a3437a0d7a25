# SPDX-License-Identifier: BSD-2-Clause
"""The history store: runs, their set-up, labels, figures and samples, in an SQLite
file or a PostgreSQL database (:mod:`.connect`), with the schema of :mod:`.schema`.

:class:`History` opens (and, when older, migrates) a history; :meth:`History.record`
writes one :class:`Run` in one transaction — all of it, or on any error nothing;
:meth:`History.runs`, :meth:`History.figures` and :meth:`History.samples` read it
back.
"""

import datetime
import json
import sqlite3
from dataclasses import dataclass, field

from .connect import HistoryError, connect
from .schema import FORMAT, MIGRATIONS, SCHEMA_VERSION, ddl

__all__ = ["History", "Run", "SETUP_FIELDS"]

#: Fields of a run's set-up that ``--where`` and ``--by`` take like labels.
SETUP_FIELDS = ("kind", "board", "target", "source", "status")
#: A key that serialises schema changes on PostgreSQL (an advisory lock).
_PG_LOCK = 0x7274_7269


@dataclass
class Run:
    """One run to record: what it was (``kind``, ``source``), where (``board``,
    ``target``, ``settings``), how it ended (``status``), the user's ``labels``,
    its ``figures`` — ``(name, value, lo, hi, unit)`` — and per channel the
    ``samples`` that a step verdict compares (JSON-able dicts, or none); ``warnings``:
    what the source file lacks (:func:`rtrig.host.analysis.capture_warnings`), said
    when it is recorded, not stored (its ``status`` is)."""
    kind: str
    source: str
    board: str = "unknown"
    target: str = "unknown"
    settings: dict = field(default_factory=dict)
    status: str = "complete"
    labels: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    samples: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)


def _errors():
    errs = [sqlite3.DatabaseError]
    try:
        import psycopg
        errs.append(psycopg.Error)
    except ImportError:
        pass
    return tuple(errs)


class History:
    """An open history (a context manager). ``where``: a path or a
    ``postgresql://`` URL (default ``captures/history.sqlite``)."""

    def __init__(self, where=None):
        self.conn = connect(where)
        self.where = self.conn.where
        try:
            self._migrate()
        except HistoryError:
            self.conn.close()
            raise
        except _errors() as e:
            self.conn.close()
            if "locked" in str(e):
                raise HistoryError(f"history {self.where} stayed locked by another writer "
                                   "past the busy timeout") from None
            raise HistoryError(f"{self.where} is not an rtrig history ({_first_line(e)})",
                               hint="name another history, or move this one away") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.conn.close()

    # --- schema ------------------------------------------------------------------------

    def _tables(self):
        if self.conn.dialect == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:
            sql = ("SELECT table_name FROM information_schema.tables "
                   "WHERE table_schema = current_schema()")
        return {r[0] for r in self.conn.execute(sql).fetchall()}

    def version(self):
        """The schema version of the database: 0 when it is empty."""
        tables = self._tables() - {"sqlite_sequence"}
        if not tables:
            return 0
        if "rtrig_history" not in tables or "schema_migrations" not in tables:
            raise HistoryError(f"{self.where} is not an rtrig history (it holds other "
                               f"tables: {', '.join(sorted(tables)[:5])})",
                               hint="name another history, or move this one away")
        mark = self.conn.execute("SELECT format FROM rtrig_history").fetchall()
        if [r[0] for r in mark] != [FORMAT]:
            raise HistoryError(f"{self.where} is not an rtrig history (its mark is {mark!r})")
        row = self.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def _migrate(self):
        if self._check(self.version()) == SCHEMA_VERSION:
            self._end_read()
            return
        with self.conn.transaction():
            if self.conn.dialect == "postgresql":
                self.conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_LOCK,))
            current = self._check(self.version())     # another writer may have moved on
            if current == 0:
                self.conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY "
                                  "KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)")
            for version, description, statements in MIGRATIONS:
                if version <= current:
                    continue
                for s in statements:
                    self.conn.execute(ddl(s, self.conn.dialect))
                if version == 1:
                    self.conn.execute("INSERT INTO rtrig_history (format) VALUES (?)", (FORMAT,))
                self.conn.execute("INSERT INTO schema_migrations (version, description, "
                                  "applied_at) VALUES (?, ?, ?)", (version, description, _now()))

    def _check(self, version):
        if version > SCHEMA_VERSION:
            raise HistoryError(f"{self.where} has history schema {version}, newer than this "
                               f"rtrig reads (up to {SCHEMA_VERSION})",
                               hint="use the rtrig that wrote it, or a newer one")
        return version

    def _end_read(self):
        """End the transaction a read opened (PostgreSQL opens one at the first
        statement; SQLite reads outside of one)."""
        if self.conn.dialect != "sqlite":
            self.conn.raw.rollback()

    # --- writing -----------------------------------------------------------------------

    def record(self, run):
        """Write ``run`` in one transaction; returns its id."""
        try:
            with self.conn.transaction():
                return self._insert(run)
        except _errors() as e:
            raise HistoryError(f"cannot record into {self.where}: {_first_line(e)}") from None

    def _insert(self, run):
        cur = self.conn.execute(
            "INSERT INTO runs (recorded_at, kind, source, board, target, settings, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (_now(), run.kind, str(run.source), run.board, run.target,
             json.dumps(run.settings, sort_keys=True, default=str), run.status))
        run_id = cur.fetchone()[0]
        self.conn.executemany("INSERT INTO labels (run_id, key, value) VALUES (?, ?, ?)",
                              [(run_id, k, str(v)) for k, v in run.labels.items()])
        self.conn.executemany(
            "INSERT INTO figures (run_id, name, value, lo, hi, unit) VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, name, *map(_number, (value, lo, hi)), unit)
             for name, value, lo, hi, unit in run.figures])
        self.conn.executemany("INSERT INTO samples (run_id, channel, data) VALUES (?, ?, ?)",
                              [(run_id, ch, json.dumps(d)) for ch, d in run.samples.items()])
        return run_id

    # --- reading -----------------------------------------------------------------------

    def _fetch(self, sql, params=()):
        """The rows of one query; a database that breaks under it is one line."""
        try:
            return self.conn.execute(sql, params).fetchall()
        except _errors() as e:
            raise HistoryError(f"cannot read {self.where}: {_first_line(e)}",
                               hint="the history may be damaged; a copy made before "
                                    "the damage reads again") from None

    def runs(self, where=None):
        """The runs matching ``where`` (``{key: value}`` of set-up fields and labels),
        oldest first: dicts with ``id``, ``recorded_at``, the set-up fields,
        ``settings`` and ``labels``."""
        sql = ("SELECT id, recorded_at, kind, source, board, target, settings, status "
               "FROM runs")
        clauses, params = [], []
        for key, value in (where or {}).items():
            if key in SETUP_FIELDS:
                clauses.append(f"{key} = ?")
                params.append(value)
            else:
                clauses.append("EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id "
                               "AND l.key = ? AND l.value = ?)")
                params += [key, value]
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        rows = self._fetch(sql + " ORDER BY id", params)
        out = {r[0]: {"id": r[0], "recorded_at": r[1], "kind": r[2], "source": r[3],
                      "board": r[4], "target": r[5], "settings": json.loads(r[6]),
                      "status": r[7], "labels": {}} for r in rows}
        if out:
            lo, hi = min(out), max(out)
            for run_id, key, value in self._fetch(
                    "SELECT run_id, key, value FROM labels WHERE run_id BETWEEN ? AND ?",
                    (lo, hi)):
                if run_id in out:
                    out[run_id]["labels"][key] = value
        self._end_read()
        return list(out.values())

    def figure_names(self):
        names = [r[0] for r in self._fetch("SELECT DISTINCT name FROM figures ORDER BY name")]
        self._end_read()
        return names

    def figures(self, name, runs):
        """``{run id: (value, lo, hi, unit)}`` of figure ``name`` in ``runs``."""
        if not runs:
            return {}
        ids = {r["id"] for r in runs}
        rows = self._fetch("SELECT run_id, value, lo, hi, unit FROM figures WHERE name = ? "
                           "AND run_id BETWEEN ? AND ?", (name, min(ids), max(ids)))
        self._end_read()
        return {r[0]: tuple(r[1:]) for r in rows if r[0] in ids}

    def samples(self, channel, run_ids):
        """``{run id: samples dict}`` of ``channel`` in ``run_ids``."""
        if not run_ids:
            return {}
        ids = set(run_ids)
        rows = self._fetch(
            "SELECT run_id, data FROM samples WHERE channel = ? AND run_id BETWEEN ? AND ?",
            (channel, min(ids), max(ids)))
        self._end_read()
        return {r[0]: json.loads(r[1]) for r in rows if r[0] in ids}


def _number(v):
    """A figure's value as the drivers take it (numpy scalars are not adapted)."""
    return None if v is None else float(v)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
