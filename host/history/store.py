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


class History:
    """An open history (a context manager). ``where``: a path or a
    ``postgresql://`` URL (default ``captures/history.sqlite``). ``write``: open it
    to record into — made when missing, brought up to this rtrig's schema, checked
    writable; else to read only — nothing is made, migrated or changed, and a
    history that is not there is :class:`HistoryError`."""

    def __init__(self, where=None, write=True):
        self.conn = connect(where, write)
        self.where = self.conn.where
        self.write = write
        try:
            self.schema = self._open()
        except HistoryError:
            self.conn.close()
            raise
        except self.conn.errors as e:
            self.conn.close()
            raise self.conn.failure(e, "write" if write else "read", opening=True) from None

    def _open(self):
        """Check the database is a history (before anything is changed in it), then
        for writing prepare it, migrate it and check it takes writes; returns its
        schema version."""
        version = self._check(self.version())
        if not self.write:
            self.conn.end_read()
            if version == 0:
                raise HistoryError(f"no history in {self.where} yet (it holds no tables)",
                                   hint="a history begins with its first run: rtrig "
                                        "history add FILE --history DB")
            return version
        self.conn.prepare_write()
        if version != SCHEMA_VERSION:
            self._migrate()
        else:
            self.conn.end_read()
        self.conn.check_write()
        return SCHEMA_VERSION

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
            raise HistoryError(f"history {self.where} is not an rtrig history (it holds other "
                               f"tables: {', '.join(sorted(tables)[:5])})",
                               hint="name another history, or move this one away")
        mark = self.conn.execute("SELECT format FROM rtrig_history").fetchall()
        if [r[0] for r in mark] != [FORMAT]:
            raise HistoryError(f"history {self.where} is not an rtrig history (its mark is "
                               f"{mark!r})", hint="name another history, or move this one away")
        row = self.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def _migrate(self):
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
        self.conn.end_read()

    # --- writing -----------------------------------------------------------------------

    def record(self, run):
        """Write ``run`` in one transaction; returns its id."""
        try:
            with self.conn.transaction():
                return self._insert(run)
        except self.conn.errors as e:
            raise self.conn.failure(e, "record into") from None

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
        except self.conn.errors as e:
            raise self.conn.failure(e, "read") from None

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

    def label_keys(self):
        """The keys of the labels the runs carry."""
        keys = [r[0] for r in self._fetch("SELECT DISTINCT key FROM labels ORDER BY key")]
        self._end_read()
        return keys

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
        if not run_ids or self.schema < 2:     # read as it stands: no samples before 2
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
