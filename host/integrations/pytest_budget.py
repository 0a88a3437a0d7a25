# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin's budgets: the ``latency_budget`` marker read before a test runs,
its figures checked (and recorded into ``--rtrig-history``) after it
(:mod:`rtrig.host.integrations.pytest_plugin`, :mod:`rtrig.host.integrations.budget`)."""

import contextlib
from pathlib import Path

import pytest

from .pytest_fixture import BASELINES_KEY, GATES_KEY, LIMITS_KEY, TEST_KEY, VIOLATIONS_KEY
from .pytest_results import record_properties

#: The marker's name.
MARKER = "latency_budget"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Read the budget and its baselines before the test runs: a budget that cannot be
    understood, or a baseline file that is missing or of the wrong kind, is an error
    of the test, not a failure."""
    from .budget import BudgetError
    from .history_gate import labels_of_test, load_all, parse_marker
    limits, problem = [], None
    db = item.config.getoption("rtrig_history", None)
    if db is not None and "rtrig" in getattr(item, "fixturenames", ()):
        problem = _history_problem(item.config, db)
    folder = Path(str(getattr(item, "path", None) or item.fspath)).parent
    for m in item.iter_markers(MARKER) if problem is None else ():
        if m.args:
            raise pytest.UsageError(f"{item.nodeid}: {MARKER} takes keywords only "
                                    "(e.g. p99='5us')")
        try:
            limits += parse_marker(m.kwargs, folder, db)
        except BudgetError as e:
            problem = str(e)
            break
    if problem is None:
        try:
            limits, item.stash[BASELINES_KEY], notes = load_all(
                limits, db, labels_of_test(item.config, item.nodeid))
            for note in notes:
                item.warn(pytest.PytestWarning(f"rtrig: {note}"))
        except BudgetError as e:
            problem = str(e)
    if problem:                 # outside the handler: no chained traceback
        pytest.fail(problem, pytrace=False)
    item.stash[LIMITS_KEY] = limits


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After the test: record its figures, then check its budget (only when the test
    itself passed: a test that failed has said what is wrong)."""
    t = item.stash.get(TEST_KEY, None)
    try:
        result = yield
    except BaseException:
        if t is not None:
            record_properties(item, t)
            problem = _record_history(item, t, "failed")
            if problem:         # the test's own failure stands; the loss is said beside it
                item.add_report_section("call", "rtrig", problem)
        raise
    if t is None:
        return result
    record_properties(item, t)
    for w in _warnings(t):
        item.warn(pytest.PytestWarning(f"rtrig: {w}"))
    limits = item.stash.get(LIMITS_KEY, [])
    if limits:
        from .budget_check import evaluate
        bad, gates = evaluate(limits, *t.measured(), item.stash.get(BASELINES_KEY, {}))
        item.stash[VIOLATIONS_KEY] = [v.message for v in bad]
        item.stash[GATES_KEY] = gates
        for g in gates:
            item.user_properties += g.properties()
        item.user_properties.append(("rtrig.budget", "failed" if bad else "met"))
        problem = _record_history(item, t, "failed" if bad else "complete")
        messages = [v.message for v in bad] + ([problem] if problem else [])
        if messages:
            pytest.fail("\n".join(messages), pytrace=False)
    else:
        problem = _record_history(item, t, "complete")
        if problem:
            pytest.fail(problem, pytrace=False)
    return result


#: The session's verdict on its ``--rtrig-history``: the problem, or "" (writable).
_HISTORY_CHECKED = pytest.StashKey()


def _history_problem(config, db):
    """Why the tests' runs could not be recorded into ``db`` (checked once a session,
    :func:`rtrig.host.integrations.history_gate.check_writable`), or None."""
    if _HISTORY_CHECKED not in config.stash:
        from .budget import BudgetError
        from .history_gate import check_writable
        try:
            check_writable(db)
            config.stash[_HISTORY_CHECKED] = ""
        except BudgetError as e:
            config.stash[_HISTORY_CHECKED] = str(e)
    return config.stash[_HISTORY_CHECKED] or None


def _record_history(item, t, status):
    """With ``--rtrig-history``: the test's runs into the history
    (:func:`rtrig.host.integrations.history_gate.record_test`); returns why they are
    not, or None."""
    db = item.config.getoption("rtrig_history", None)
    if db is not None and (t.captures or t.sweeps):
        from ...errors import RtrigError
        from .budget import BudgetError
        from .history_gate import labels_of_test, record_test
        try:
            record_test(db, labels_of_test(item.config, item.nodeid), t, status)
        except (RtrigError, BudgetError, OSError) as e:
            return f"rtrig: the test's runs are not recorded into {db}: {e}"
    return None


def _warnings(t):
    """What is missing from the test's captures and sweeps, one line each
    (:func:`rtrig.host.analysis.capture_warnings`)."""
    from ...capture import scan
    from ...errors import RtrigError
    from ..analysis import capture_warnings
    out = []
    for c in t.captures:
        with contextlib.suppress(RtrigError, OSError):
            out += capture_warnings(scan(c.path), {ch: (st.get("answered"), st.get("pulses"))
                                                   for ch, st in c.summary.items()})
    for s in t.sweeps:
        with contextlib.suppress(RtrigError, OSError):
            out += capture_warnings(scan(s.path))
    return out
