# SPDX-License-Identifier: BSD-2-Clause
"""The runs of a file given to ``rtrig history add``: an rtrig capture (its magic
number says so), else cyclictest's ``--json`` output or ``-h`` histogram."""

from pathlib import Path

from ...capture import MAGIC
from .connect import HistoryError

__all__ = ["runs_of_file"]


def runs_of_file(path, labels=None):
    """``[Run]`` of the file ``path``, or :class:`HistoryError` in one line."""
    path = Path(path)
    if not path.exists():
        raise HistoryError(f"no such file: {path}")
    if not path.is_file():
        raise HistoryError(f"{path} is not a regular file")
    with open(path, "rb") as f:
        head = f.read(len(MAGIC))
    if head == MAGIC or path.suffix == ".rtrig":
        from .figures import run_of_capture
        return [run_of_capture(path, labels)]
    from .cyclictest import run_of_cyclictest
    return [run_of_cyclictest(path, labels)]
