# SPDX-License-Identifier: BSD-2-Clause
"""A PostgreSQL history, through psycopg 3, given by a ``postgresql://`` URL.
PostgreSQL's own transactions serialise writers; a writer's connection is checked
to take writes (not a standby, ``INSERT`` granted) before a run.
"""

from .connection import Connection, HistoryError, first_line

__all__ = ["PostgreSQLConnection", "open_postgresql", "safe_url"]

#: SQLSTATEs (PostgreSQL, appendix A) that say what went wrong.
_STATES = {"42501": "denied", "25006": "denied",                 # privilege, read-only
           "53100": "full",                                      # disk_full
           "55P03": "locked", "40P01": "locked"}                 # lock_not_available, deadlock
#: The tables a writer inserts into.
_TABLES = ("runs", "labels", "figures", "samples")


class PostgreSQLConnection(Connection):
    """A connection to a PostgreSQL history."""

    dialect = "postgresql"

    def __init__(self, raw, where, errors):
        super().__init__(raw, where)
        self.errors = errors

    def _sql(self, sql):
        return sql.replace("?", "%s")

    def check_write(self):
        """A read-only server (a standby) or a role without ``INSERT`` is said now,
        not after a run."""
        if self.execute("SHOW transaction_read_only").fetchone()[0] == "on":
            raise HistoryError(f"cannot write history {self.where}: the server takes "
                               "read-only transactions only (a standby?)")
        rows = self.execute(" UNION ALL ".join(
            f"SELECT '{t}', has_table_privilege('{t}', 'INSERT')" for t in _TABLES)).fetchall()
        refused = [t for t, ok in rows if not ok]
        user = self.execute("SELECT current_user").fetchone()[0]
        self.end_read()
        if refused:
            raise HistoryError(f"cannot write history {self.where}: permission denied "
                               f"(user {user} may not insert into {', '.join(refused)})",
                               hint="a history that may only be read can be shown and "
                                    "reported, not recorded into")

    def end_read(self):
        self.raw.rollback()       # PostgreSQL opens a transaction at the first statement

    def cause(self, e):
        text = first_line(e)
        return _STATES.get(getattr(e, "sqlstate", None) or "", "other"), text


def open_postgresql(url, write):
    """A :class:`PostgreSQLConnection` to ``url``, or :class:`HistoryError` in one
    line."""
    try:
        import psycopg
    except ImportError:
        raise HistoryError("a PostgreSQL history needs psycopg 3, which is not installed",
                           hint="pip install 'psycopg[binary]'") from None
    where = safe_url(url)
    try:
        raw = psycopg.connect(url, autocommit=False)
    except psycopg.Error as e:
        raise HistoryError(f"cannot open history {where}: {first_line(e)}") from None
    return PostgreSQLConnection(raw, where, (psycopg.Error,))


def safe_url(url):
    """``url`` without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, cred = head.partition("//")
    return f"{scheme}//{cred.split(':', 1)[0]}:***@{tail}"
