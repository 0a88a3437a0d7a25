# SPDX-License-Identifier: BSD-2-Clause
"""A PostgreSQL history, through psycopg 3, given by a ``postgresql://`` URL.

No wait is unbounded: the connection must be made within a connect timeout and
each statement end within a statement timeout (the server cancels it), so that a
server that takes the connection and never answers, or a lock held elsewhere, is
one line instead of a hang. Each is the URL's own parameter when it has one
(``connect_timeout=S``, ``options=-c statement_timeout=MS``, as libpq reads them),
else the environment's (:data:`CONNECT_ENV`, :data:`STATEMENT_ENV`, a duration:
``5``, ``5s``, ``500ms``), else :data:`CONNECT_TIMEOUT_S` and
:data:`STATEMENT_TIMEOUT_S`. PostgreSQL's own transactions serialise writers.
"""

import math
import os

from ...units import parse_duration
from .connection import Connection, HistoryError, first_line

__all__ = ["PostgreSQLConnection", "open_postgresql", "safe_url", "CONNECT_TIMEOUT_S",
           "STATEMENT_TIMEOUT_S", "CONNECT_ENV", "STATEMENT_ENV"]

#: How long the connection may take, when neither the URL nor the environment says.
CONNECT_TIMEOUT_S = 10
#: How long one statement may run, when neither the URL nor the environment says.
STATEMENT_TIMEOUT_S = 30.0
#: The environment variables that set the two.
CONNECT_ENV = "RTRIG_HISTORY_CONNECT_TIMEOUT"
STATEMENT_ENV = "RTRIG_HISTORY_STATEMENT_TIMEOUT"
#: SQLSTATEs (PostgreSQL, appendix A) that say what went wrong.
_STATES = {"57014": "timeout",                                   # query_canceled
           "42501": "denied", "25006": "denied",                 # privilege, read-only
           "53100": "full",                                      # disk_full
           "55P03": "locked", "40P01": "locked"}                 # lock_not_available, deadlock
#: The tables a writer inserts into.
_TABLES = ("runs", "labels", "figures", "samples")


class PostgreSQLConnection(Connection):
    """A connection to a PostgreSQL history."""

    dialect = "postgresql"

    def __init__(self, raw, where, errors, timeouts):
        super().__init__(raw, where)
        self.errors = errors
        self.timeouts = timeouts

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
        kind = _STATES.get(getattr(e, "sqlstate", None) or "", "other")
        if kind == "timeout":
            return kind, f"a statement ran past the statement timeout " \
                         f"({self.timeouts[1]:g} s; {STATEMENT_ENV})"
        return kind, text


def open_postgresql(url, write):
    """A :class:`PostgreSQLConnection` to ``url`` within the timeouts, or
    :class:`HistoryError` in one line."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise HistoryError("a PostgreSQL history needs psycopg 3, which is not installed",
                           hint="pip install 'psycopg[binary]'") from None
    where = safe_url(url)
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as e:
        raise HistoryError(f"history {where} is not a PostgreSQL URL psycopg reads: "
                           f"{first_line(e)}") from None
    extra, timeouts = _timeouts(params)
    try:
        raw = psycopg.connect(url, autocommit=False, **extra)
    except psycopg.errors.ConnectionTimeout:
        raise HistoryError(f"cannot open history {where}: no answer within the connect "
                           f"timeout ({timeouts[0]:g} s)",
                           hint=f"is the server up? A slow one: connect_timeout=S in the "
                                f"URL, or {CONNECT_ENV}") from None
    except psycopg.Error as e:
        raise HistoryError(f"cannot open history {where}: {first_line(e)}") from None
    return PostgreSQLConnection(raw, where, (psycopg.Error,), timeouts)


def _timeouts(params):
    """``(connect arguments, (connect s, statement s))``: the URL's timeouts where it
    has them, else the environment's or the defaults."""
    extra = {}
    connect = params.get("connect_timeout")
    if connect is None:
        connect = math.ceil(_env_seconds(CONNECT_ENV, CONNECT_TIMEOUT_S))
        extra["connect_timeout"] = connect
    options = params.get("options") or os.environ.get("PGOPTIONS", "")
    statement = _statement_of(options)
    if statement is None:
        statement = _env_seconds(STATEMENT_ENV, STATEMENT_TIMEOUT_S)
        extra["options"] = f"{options} -c statement_timeout={round(statement * 1000)}".strip()
    try:      # libpq and psycopg wait at least 2 s for a connection (fe-connect.c)
        connect = max(2.0, float(connect))
    except ValueError:
        connect = 0.0                # psycopg says what is wrong with it
    return extra, (connect, statement)


def _statement_of(options):
    """The statement timeout in ``options`` (``-c statement_timeout=MS``; a value
    with a unit as PostgreSQL reads it, ``30s``), in seconds, or None."""
    for w in options.replace("-c ", "-c").split():
        key, _, value = w.removeprefix("-c").partition("=")
        if key.strip() == "statement_timeout":
            try:
                return float(value) / 1000
            except ValueError:
                try:
                    return parse_duration(value)
                except ValueError:
                    return 0.0       # the server says what is wrong with it
    return None


def _env_seconds(name, default):
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError as e:
            raise HistoryError(f"{name}={text!r}: {e}") from None
    if not seconds > 0:
        raise HistoryError(f"{name}={text!r}: a timeout must be more than 0",
                           hint=f"e.g. {name}=10s")
    return seconds


def safe_url(url):
    """``url`` without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, cred = head.partition("//")
    return f"{scheme}//{cred.split(':', 1)[0]}:***@{tail}"
