# SPDX-License-Identifier: BSD-2-Clause
"""One open history database, whichever its dialect: :class:`Connection` (DB-API
with ``?`` placeholders, write transactions all or nothing) and the error every
history problem is, :class:`HistoryError`. The dialects' own connections —
SQLite's (:mod:`.sqlite_file`) and PostgreSQL's (:mod:`.postgresql`) — add how a
write is prepared and checked, and what a driver's error means in words."""

from ...errors import RtrigError

__all__ = ["HistoryError", "Connection", "first_line"]


class HistoryError(RtrigError):
    """A history that cannot be opened, read or written, is foreign or newer, or a bad
    query."""
    exit_code = 2


def first_line(e):
    """The first line of an exception's text (its type's name when it has none)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class Connection:
    """One DB-API connection and its dialect: ``execute`` takes ``?`` placeholders
    in either dialect; :meth:`transaction` is a write transaction, all or nothing.
    ``where``: the history as messages name it (a URL without its password)."""

    dialect = None
    #: The driver's exception classes (what :meth:`cause` explains).
    errors = ()

    def __init__(self, raw, where):
        self.raw, self.where = raw, where

    def _sql(self, sql):
        return sql

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

    def begin(self):
        """Start a write transaction (the dialect's way)."""

    def commit(self):
        self.raw.commit()

    def rollback(self):
        self.raw.rollback()

    def prepare_write(self):
        """Make the database ready for writers, once it is known to be a history."""

    def check_write(self):
        """:class:`HistoryError` when this connection may read but not write."""

    def end_read(self):
        """End the transaction a read opened, if the dialect opens one."""

    def cause(self, e):
        """``(kind, words)`` of a driver's error ``e``: ``kind`` is ``foreign`` (not
        a database, or a damaged one), ``locked``, ``full``, ``denied`` (permission, a
        read-only file system or server), ``timeout`` or ``other``; ``words`` say it
        for a message."""
        return "other", first_line(e)

    def failure(self, e, doing, opening=False):
        """The driver's error ``e`` while ``doing`` (``read``, ``write``, ``record
        into``) as a one-line :class:`HistoryError` that names its cause; while
        ``opening``, a database that is none is "not an rtrig history"."""
        kind, words = self.cause(e)
        if kind == "foreign" and opening:
            return HistoryError(f"history {self.where} is not an rtrig history ({words})",
                                hint="name another history, or move this one away")
        return HistoryError(f"cannot {doing} history {self.where}: {words}",
                            hint=_HINTS.get(kind))

    def close(self):
        self.raw.close()


#: What to try, by the kind of failure (:meth:`Connection.cause`).
_HINTS = {
    "foreign": "the history may be damaged; a copy made before the damage reads again",
    "full": "make room on its device, or name a history on another one",
    "timeout": "docs/history.md, \"Reliability\", says how to give the server longer",
}


class _Transaction:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.begin()
        return self.conn

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.conn.commit()
        else:
            self.conn.rollback()
        return False
