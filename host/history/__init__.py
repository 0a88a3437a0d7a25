# SPDX-License-Identifier: BSD-2-Clause
"""A results history: every run's figures with their bounds, set-up and labels, in
an SQLite file (``captures/history.sqlite``) or a PostgreSQL database, queried for
trends and the steps between versions (docs/history.md).

:class:`History` is the store (:mod:`.store`, schema and migrations in
:mod:`.schema`); :func:`runs_of_file` turns a capture, sweep, suite run or
cyclictest result into the :class:`Run` to record.
"""

from .connect import DEFAULT_PATH, HistoryError
from .sources import runs_of_file
from .store import History, Run

__all__ = ["History", "Run", "HistoryError", "runs_of_file", "DEFAULT_PATH"]
