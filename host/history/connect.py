# SPDX-License-Identifier: BSD-2-Clause
"""Where a history is: an SQLite file given by its path (the default,
:mod:`.sqlite_file`) or a PostgreSQL server given by a ``postgresql://`` URL
(:mod:`.postgresql`), opened for writing or for reading only.

Any other ``scheme://`` is refused in one line, ``sqlite://`` URLs too (a history
file is named by its path), rather than taken for a path: ``mysql://u@h/db`` would
otherwise become the folders ``mysql:/u@h/``.
"""

import re
from pathlib import Path

from .connection import Connection, HistoryError
from .postgresql import open_postgresql, safe_url
from .sqlite_file import BUSY_TIMEOUT_S, open_sqlite

__all__ = ["HistoryError", "Connection", "connect", "is_url", "DEFAULT_PATH",
           "BUSY_TIMEOUT_S"]

#: Where the history lives when none is named.
DEFAULT_PATH = Path("captures") / "history.sqlite"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(where):
    return str(where).startswith(("postgresql://", "postgres://"))


def connect(where=None, write=True):
    """A :class:`Connection` to the history at ``where`` (a path or URL; default
    :data:`DEFAULT_PATH`) for writing, or for reading only (nothing is made or
    changed), or :class:`HistoryError` in one line."""
    where = DEFAULT_PATH if where is None else where
    if is_url(where):
        return open_postgresql(str(where), write)
    m = _SCHEME.match(str(where))
    if m and m.group(1).lower() == "sqlite":
        path = str(where)[len(m.group(0)):]
        path = path[1:] if path.startswith("/") and path[1:2] == "/" else path
        raise HistoryError(f"history {safe_url(str(where))}: an SQLite history is named "
                           "by its path, not by a URL",
                           hint=f"--history {path or 'captures/history.sqlite'}")
    if m:
        raise HistoryError(f"history {safe_url(str(where))}: rtrig keeps histories in "
                           f"SQLite or PostgreSQL, not {m.group(1)}",
                           hint="name an SQLite file by its path, or a postgresql:// URL")
    return open_sqlite(Path(where), write)
