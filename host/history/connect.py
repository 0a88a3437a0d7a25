# SPDX-License-Identifier: BSD-2-Clause
"""Opening a history's database: an SQLite file (a path, the default) or a
PostgreSQL server (a ``postgresql://`` URL), both through their DB-API drivers
(the standard library's ``sqlite3``; psycopg 3).

Each connection is made safe for several writers here: SQLite in WAL mode (readers
never block the writer) with a busy timeout (a second writer waits for the first
instead of failing), and writes in ``BEGIN IMMEDIATE`` transactions, which take the
write lock at the start so that two writers cannot both read and then both fail to
upgrade; PostgreSQL's own transactions need nothing more.
"""

import sqlite3
import time
from pathlib import Path

from ...errors import RtrigError

__all__ = ["HistoryError", "Connection", "connect", "DEFAULT_PATH", "BUSY_TIMEOUT_S"]

#: Where the history lives when none is named.
DEFAULT_PATH = Path("captures") / "history.sqlite"
#: How long a writer waits for another's transaction before giving up.
BUSY_TIMEOUT_S = 60.0


class HistoryError(RtrigError):
    """A history that cannot be opened, is foreign or newer, or a bad query."""
    exit_code = 2


class Connection:
    """One DB-API connection and its dialect: ``execute`` takes ``?`` placeholders
    in either dialect; :meth:`transaction` is a write transaction, all or nothing."""

    def __init__(self, raw, dialect, where):
        self.raw, self.dialect, self.where = raw, dialect, where

    def _sql(self, sql):
        return sql if self.dialect == "sqlite" else sql.replace("?", "%s")

    def execute(self, sql, params=()):
        cur = self.raw.cursor()
        cur.execute(self._sql(sql), tuple(params))
        return cur

    def executemany(self, sql, rows):
        cur = self.raw.cursor()
        cur.executemany(self._sql(sql), list(rows))
        return cur

    def transaction(self):
        return _Transaction(self)

    def close(self):
        self.raw.close()


class _Transaction:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        if self.conn.dialect == "sqlite":
            self.conn.raw.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.conn.raw.commit() if self.conn.dialect != "sqlite" else \
                self.conn.raw.execute("COMMIT")
        else:
            self.conn.raw.rollback() if self.conn.dialect != "sqlite" else \
                self.conn.raw.execute("ROLLBACK")
        return False


def is_url(where):
    return str(where).startswith(("postgresql://", "postgres://"))


def connect(where=None):
    """A :class:`Connection` to the history at ``where`` (a path or URL; default
    :data:`DEFAULT_PATH`), or :class:`HistoryError` in one line."""
    where = DEFAULT_PATH if where is None else where
    if is_url(where):
        return _postgresql(str(where))
    return _sqlite(Path(where))


def _sqlite(path):
    if path.is_dir():
        raise HistoryError(f"history {path} is a directory",
                           hint="name a file, e.g. --history captures/history.sqlite")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        raw = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        raw.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        _wal(raw)
        raw.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as e:
        if "locked" in str(e):
            raise HistoryError(f"history {path} stayed locked by another writer past the "
                               "busy timeout") from None
        raise HistoryError(f"history {path} is not an rtrig history ({e})",
                           hint="name another file, or move this one away") from None
    return Connection(raw, "sqlite", str(path))


def _wal(raw):
    """Put the file in WAL mode (kept in the file: once per history). Changing the
    mode needs the file to itself, and SQLite answers "locked" at once, without its
    busy handler, while another connection is in the middle of the same change: so
    this retries until the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if raw.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                raw.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _postgresql(url):
    try:
        import psycopg
    except ImportError:
        raise HistoryError("a PostgreSQL history needs psycopg 3, which is not installed",
                           hint="pip install 'psycopg[binary]'") from None
    try:
        raw = psycopg.connect(url, autocommit=False)
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise HistoryError(f"cannot open history {_safe(url)}: {first}") from None
    return Connection(raw, "postgresql", _safe(url))


def _safe(url):
    """``url`` without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, cred = head.partition("//")
    return f"{scheme}//{cred.split(':', 1)[0]}:***@{tail}"
