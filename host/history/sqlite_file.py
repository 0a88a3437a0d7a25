# SPDX-License-Identifier: BSD-2-Clause
"""An SQLite history file, through the standard library's ``sqlite3``.

The path is checked before SQLite sees it: a directory, a device, a FIFO or a
socket is refused (SQLite would open ``/dev/null`` and make ``/dev/null-journal``
beside it), and so is a file that does not start as an SQLite file does.

*For reading* nothing is made or changed: a missing file is "no history here" (no
folder, no empty history is made), the file is opened with ``mode=rw`` only when
it and its folder may be written (so that SQLite removes the side files of WAL mode
when it is done), else ``mode=ro``, and when SQLite cannot read a WAL file without
making those side files — in a folder that cannot be written — as it stands
(``immutable=1``). A read connection is ``query_only``.

*For writing* the file and its folder must be writable and the device not full,
which is said in words before a run starts; once the file is known to be a history
(:class:`~.store.History` checks) it is put in WAL mode (readers never block the
writer) with a busy timeout (a second writer waits for the first instead of
failing), and writes are ``BEGIN IMMEDIATE`` transactions, which take the write
lock at the start, so that two writers cannot both read and then both fail to
upgrade.
"""

import os
import sqlite3
import stat
import tempfile
import time
import urllib.parse
from pathlib import Path

from .connection import Connection, HistoryError, first_line

__all__ = ["SQLiteConnection", "open_sqlite", "BUSY_TIMEOUT_S"]

#: How long a writer waits for another's transaction before giving up.
BUSY_TIMEOUT_S = 60.0
#: The first 16 bytes of every SQLite database (sqlite.org/fileformat.html, 1.3).
_MAGIC = b"SQLite format 3\x00"
#: SQLite's primary result codes (sqlite.org/rescode.html) that say what went wrong.
_CODES = {3: "denied", 8: "denied", 14: "denied", 23: "denied",   # PERM READONLY CANTOPEN AUTH
          5: "locked", 6: "locked",                               # BUSY LOCKED
          11: "foreign", 26: "foreign",                           # CORRUPT NOTADB
          13: "full", 10: "io"}                                   # FULL IOERR
#: The codes of a read that needs side files SQLite cannot make (READONLY, CANTOPEN,
#: and IOERR or FULL on a full device): the next, more careful way of reading is tried.
_RETRY_READ = (8, 14, 10, 13)
_NOT_REGULAR = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
_BEGIN_HINT = ("a history begins with its first run: rtrig history add FILE --history "
               "PATH, or --history PATH on a capture, sweep or suite")


class SQLiteConnection(Connection):
    """A connection to an SQLite history file."""

    dialect = "sqlite"
    errors = (sqlite3.DatabaseError,)

    def begin(self):
        self.raw.execute("BEGIN IMMEDIATE")

    def commit(self):
        self.raw.execute("COMMIT")

    def rollback(self):
        self.raw.execute("ROLLBACK")

    def prepare_write(self):
        _wal(self.raw)

    def __init__(self, raw, where, write):
        super().__init__(raw, where)
        self.write = write

    def cause(self, e):
        return sqlite_cause(e, Path(self.where), self.write)


def open_sqlite(path, write):
    """An :class:`SQLiteConnection` to the file ``path``, for writing (the file and
    its folders made when missing) or for reading only; :class:`HistoryError` in one
    line when it cannot be."""
    path = Path(path)
    st = _stat(path, write)
    if st is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise HistoryError(f"cannot make history {path}: {e.strerror or e}") from None
    else:
        _check_header(path, st)
    if write:
        _check_writable(path)
        raw = _connect(str(path), path)
    else:
        raw = _connect_read(path)
    return SQLiteConnection(raw, str(path), write)


def _stat(path, write):
    """``os.stat`` of a history file that is there (``None`` for a new one to write),
    or :class:`HistoryError`."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if write:
            return None
        raise HistoryError(f"no history at {path}", hint=_BEGIN_HINT) from None
    except OSError as e:
        raise HistoryError(f"cannot {'write' if write else 'read'} history {path}: "
                           f"{e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise HistoryError(f"history {path} is a directory",
                           hint="name a file, e.g. --history captures/history.sqlite")
    for test, kind in _NOT_REGULAR:
        if test(st.st_mode):
            raise HistoryError(f"history {path} is {kind}, not a regular file",
                               hint="a history is an SQLite file: name one, e.g. "
                                    "--history captures/history.sqlite")
    return st


def _check_header(path, st):
    try:
        with open(path, "rb") as f:
            head = f.read(len(_MAGIC))
    except OSError as e:
        raise HistoryError(f"cannot read history {path}: {e.strerror or e}") from None
    if st.st_size and head != _MAGIC:
        raise HistoryError(f"history {path} is not an rtrig history (file is not a "
                           "database)", hint="name another file, or move this one away")


def _check_writable(path):
    """A write needs the file and its folder (where SQLite makes its side files)
    writable, and room on the device: said before SQLite tries."""
    denied = _os_cause(path)
    if denied:
        raise HistoryError(f"cannot write history {path}: {denied}",
                           hint="a history that may only be read can be shown and "
                                "reported, not recorded into")
    if _free_bytes(path) == 0:
        raise HistoryError(f"cannot write history {path}: no space left on its device",
                           hint="make room on it, or name a history on another device")


def _os_cause(path):
    """What the OS says to writing the history file ``path`` and files beside it,
    or ``None`` when it may."""
    try:
        if path.exists():
            os.close(os.open(path, os.O_RDWR))
    except OSError as e:
        return e.strerror or str(e)
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".rtrig-check-")
    except OSError as e:
        return f"its folder {folder}: {e.strerror or e}"
    os.close(fd)
    os.unlink(tmp)
    return None


def _free_bytes(path):
    """Bytes free on the device of ``path``'s folder for this user, or ``None``."""
    try:
        fs = os.statvfs(path.parent)
    except (OSError, AttributeError):
        return None
    root = getattr(os, "geteuid", lambda: 1)() == 0
    return (fs.f_bfree if root else fs.f_bavail) * fs.f_frsize


def _connect(target, path, uri=False, read=False):
    try:
        raw = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None, uri=uri)
        raw.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        raw.execute("PRAGMA query_only = ON" if read else "PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as e:
        raise _failure(e, path, not read) from None
    return raw


def _connect_read(path):
    """A read-only connection that makes nothing: ``mode=rw`` (so that SQLite
    removes the side files it makes) only where it could write, else ``mode=ro``,
    else — a WAL file whose side files cannot be made, in a read-only folder or on a
    full device — ``immutable=1``."""
    full = os.path.abspath(path)
    uri = "file:" + urllib.parse.quote(full)
    modes = ["mode=ro", "mode=ro&immutable=1"]
    if os.access(full, os.W_OK) and os.access(os.path.dirname(full), os.W_OK):
        modes.insert(0, "mode=rw")
    for mode in modes:
        raw = _connect(f"{uri}?{mode}", path, uri=True, read=True)
        try:
            raw.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return raw
        except sqlite3.DatabaseError as e:
            raw.close()
            if _code(e) not in _RETRY_READ or mode == modes[-1]:
                raise _failure(e, path, False) from None
    raise AssertionError("unreachable")


def _failure(e, path, write):
    kind, words = sqlite_cause(e, path, write)
    if kind == "foreign":
        return HistoryError(f"history {path} is not an rtrig history ({words})",
                            hint="name another file, or move this one away")
    return HistoryError(f"cannot open history {path}: {words}")


def _code(e):
    code = getattr(e, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def sqlite_cause(e, path, write):
    """``(kind, words)`` of an ``sqlite3`` error on the history ``path``
    (:meth:`Connection.cause`): SQLite's result code, and for a refused write what
    the OS says of it (permission, a read-only file system), for a failed one
    whether the device is full."""
    text = first_line(e)
    kind = _CODES.get(_code(e), "other")
    if kind == "other" and "locked" in text:
        kind = "locked"
    if kind == "other" and ("not a database" in text or "malformed" in text):
        kind = "foreign"
    if kind == "locked":
        return kind, f"it stayed locked by another writer past the busy timeout " \
                     f"({BUSY_TIMEOUT_S:g} s)"
    if kind == "full" or (kind == "io" and _free_bytes(path) == 0):
        return "full", f"no space left on its device ({text})"
    if kind == "denied" and write:
        return kind, _os_cause(path) or text
    return ("other" if kind == "io" else kind), text


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
