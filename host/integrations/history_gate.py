# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin and a results history (docs/history.md, docs/ci.md).

``--rtrig-history DB`` records every capture and sweep a test makes as a run of the
history, labelled ``test=<node id>`` and with each ``--rtrig-label KEY=VALUE``; its
status is ``complete`` when the test passed, ``failed`` otherwise.

``@pytest.mark.latency_budget(against="history:last=5", p99="+5%", missed="+0")``
holds each capture against the last five *passed* runs of the history with the same
labels, as a ``baseline=`` file gate holds it against one capture
(:mod:`rtrig.host.integrations.budget`: the same allowances, confidence and
messages): the reference is the pooled samples of those runs
(:func:`rtrig.host.history.steps.pool`). With no such run yet, the gate has nothing
to hold the capture to: the test runs ungated, with a warning, and its runs start
the history.

A history the session cannot record into (a read-only file or folder, a full
device, a role without ``INSERT``) is an error of each test that uses the rig,
before it runs; a test whose runs cannot be recorded after all fails, naming why:
with ``--rtrig-history`` a run is recorded or the session says it is not, never
only in a warning.
"""

import re

from .budget import Baseline, BudgetError, load_baselines, parse_budget

__all__ = ["parse_marker", "load_all", "labels_of_test", "record_test", "check_writable",
           "HISTORY_KEY"]

#: How a history gate names its reference (``Limit.baseline``).
HISTORY_KEY = "history: last {n} passed runs with the test's labels"


def _is_history(key):
    return key is not None and key.startswith("history: ")


def parse_marker(kwargs, folder, db):
    """:func:`parse_budget` of one marker, with ``against="history:last=N"``."""
    kw = dict(kwargs)
    against = kw.pop("against", None)
    if against is None:
        return parse_budget(kw, folder=folder)
    m = re.fullmatch(r"\s*history:\s*last\s*=\s*(\d+)\s*", str(against))
    if not m or int(m.group(1)) < 1:
        raise BudgetError(f"latency_budget against={against!r}: expected 'history:last=N' "
                          "(N at least 1)")
    if "baseline" in kw:
        raise BudgetError("latency_budget: give baseline= or against=, not both")
    if db is None:
        raise BudgetError(f"latency_budget against={against!r} needs a history: run pytest "
                          "with --rtrig-history DB")
    kw["baseline"] = HISTORY_KEY.format(n=int(m.group(1)))
    limits = parse_budget(kw, folder=None)
    for lim in limits:
        if lim.baseline and lim.kind == "sweep":
            raise BudgetError(f"latency_budget {lim.figure}: against='history:…' gates "
                              "capture figures (percentiles, max, missed); hold a sweep "
                              "against a baseline= file")
    return limits


def labels_of_test(config, nodeid):
    """The labels of a test's runs: ``test`` and each ``--rtrig-label``; of a key
    given twice the last (pytest's way: the command line overrides ``addopts``)."""
    from ..history.store import SETUP_FIELDS
    labels = {"test": nodeid}
    for item in config.getoption("rtrig_label", None) or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BudgetError(f"--rtrig-label {item!r}: expected KEY=VALUE")
        if key.strip() in SETUP_FIELDS or key.strip() == "test":
            raise BudgetError(f"--rtrig-label {item!r}: {key.strip()} is a field the run "
                              "records itself; name the label otherwise")
        labels[key.strip()] = value.strip()
    return labels


def check_writable(db):
    """:class:`BudgetError` when the history ``db`` cannot be recorded into (missing
    is fine: the first run makes it): said before a test runs, not after."""
    from ..history import History, HistoryError
    try:
        History(db).close()
    except HistoryError as e:
        raise BudgetError(f"--rtrig-history: {e}" + (f" ({e.hint})" if e.hint else "")) \
            from None


def load_all(limits, db, labels):
    """``(limits, baselines, warnings)``: the baselines of ``limits`` — files by
    :func:`load_baselines`, history gates from ``db`` — with the history gates that
    have no earlier run dropped (each named in a warning)."""
    files = [lim for lim in limits if not _is_history(lim.baseline)]
    baselines = load_baselines(files)
    keys = {lim.baseline for lim in limits if _is_history(lim.baseline)}
    if not keys:
        return limits, baselines, []
    from ..history import History, HistoryError
    from ..history.steps import pool
    warnings, empty = [], set()
    try:
        with History(db) as h:
            runs = h.runs({**labels, "kind": "capture", "status": "complete"})
            for key in keys:
                n = int(re.search(r"last (\d+)", key).group(1))
                last = [r["id"] for r in runs[-n:]]
                channels = {lim.channel for lim in limits if lim.baseline == key}
                samples = {}
                for ch in channels:
                    docs = h.samples(ch, last)
                    pooled = pool([docs[i] for i in last if i in docs]) if docs else None
                    if pooled is not None:
                        samples[ch] = pooled
                if samples.keys() != channels:
                    empty.add(key)
                    warnings.append(f"{key}: none holds {', '.join(sorted(channels))} yet; "
                                    "the capture is recorded, not gated")
                    continue
                baselines[key] = Baseline(f"{h.where} ({len(last)} runs)", "capture",
                                          samples=samples)
    except HistoryError as e:
        raise BudgetError(f"--rtrig-history: {e}") from None
    return [lim for lim in limits if lim.baseline not in empty], baselines, warnings


def record_test(db, labels, t, status):
    """Record the captures and sweeps of the test ``t`` (the ``rtrig`` fixture's
    :class:`~rtrig.host.integrations.pytest_plugin.RtrigTest`) into ``db``."""
    from ..history import History, runs_of_file
    with History(db) as h:
        for res in [*t.captures, *t.sweeps]:
            for run in runs_of_file(res.path, labels):
                run.status = status
                h.record(run)
