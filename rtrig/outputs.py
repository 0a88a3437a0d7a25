# SPDX-License-Identifier: BSD-2-Clause
"""Files rtrig writes where the user said: only regular files, replaced whole or not at all.

An output path may name a file that does not exist yet, a regular file (replaced), or a
symlink to either (followed: its target is written, the link stays). A directory, a
device, a FIFO or a socket is refused before any work is done (:func:`check_output`),
so ``-o /dev/full`` or a named pipe never turns into a regular file in its place.
Errors name the path the user gave, never a temporary file.
"""

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import RtrigError, UsageError

__all__ = ["check_output", "check_output_dir", "check_input", "read_input", "atomic_output"]


def check_output(path):
    """``path`` as a :class:`~pathlib.Path` if rtrig may write a file there, else a
    :class:`~rtrig.errors.UsageError` that says why: also when its folder cannot be
    made or written (tried with a temporary file, so a read-only or virtual file
    system is found before any work, whoever runs rtrig)."""
    p = Path(path)
    try:
        st = os.stat(p)                 # follows a symlink to what it names
    except FileNotFoundError:
        _check_folder(Path(os.path.realpath(p)).parent, p)
        return p
    except OSError as e:
        raise UsageError(f"cannot write {p}: {e.strerror or e}") from e
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot write {p}: it is a directory", hint="give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"cannot write {p}: it is {_kind(st.st_mode)}, not a regular file",
                         hint="rtrig writes only regular files; give a file name")
    _check_folder(Path(os.path.realpath(p)).parent, p)
    return p


def check_output_dir(path):
    """``path`` as a :class:`~pathlib.Path` if rtrig may make it (or it is) a folder
    it can write in, else a :class:`~rtrig.errors.UsageError` that says why."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"cannot write {p}: it is not a directory")
    _check_folder(Path(os.path.realpath(p)), p)
    return p


def _check_folder(folder, shown):
    """Can a file be made in ``folder``, or (when it does not exist yet) in the
    nearest folder above it that does, where the rest would be made? ``shown``: the
    path the user gave, named in the error."""
    while not folder.exists():
        if folder.parent == folder:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {shown}: {folder} is not a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".rtrig-check-")
    except OSError as e:
        raise UsageError(f"cannot write {shown}: {e.strerror or e}") from e
    os.close(fd)
    os.unlink(tmp)


def check_input(path, error=UsageError):
    """Refuse a path that is not a regular file before opening it (a FIFO would block)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError:
        return p                        # the reader's own open() says what is wrong
    if not stat.S_ISREG(st.st_mode):
        raise error(f"cannot read {p}: it is {_kind(st.st_mode)}, not a regular file")
    return p


def read_input(path, limit, what, error=UsageError, count=None):
    """The bytes of the regular file ``path`` (``what`` it should be, for the errors):
    a FIFO, device, socket or folder is refused before it is opened (a FIFO would
    block, a device never end), a file over ``limit`` bytes before any byte is read,
    and never more than the file's size when it was opened is read (a file still
    growing is read to there): ``count`` bytes at most when given."""
    p = check_input(path, error)
    try:
        # O_NONBLOCK: a FIFO put in the file's place since the check cannot block here
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise error(f"cannot read {p}: {e.strerror or e}") from e
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {p}: it is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise error(f"{p} is {st.st_size} bytes, more than {what} can be "
                        f"(at most {limit})")
        try:
            return f.read(st.st_size if count is None else min(count, st.st_size))
        except OSError as e:
            raise error(f"cannot read {p}: {e.strerror or e}") from e


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


@contextmanager
def atomic_output(path):
    """Write ``path`` (checked by :func:`check_output`) through a binary file object:
    on success the whole new file replaces it in one rename, on any error the old file
    is untouched and the temporary file is gone."""
    p = check_output(path)
    target = Path(os.path.realpath(p))  # a symlink's target, not the link
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                   suffix=".part")
    except OSError as e:
        raise RtrigError(f"cannot write {p}: {e.strerror or e}") from e
    try:
        try:
            os.fchmod(fd, _mode_for(target))
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, target)
        except OSError as e:
            raise RtrigError(f"cannot write {p}: {e.strerror or e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _mode_for(target):
    """The mode the file would have had written in place: the old file's, or the
    default for a new file (0666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
