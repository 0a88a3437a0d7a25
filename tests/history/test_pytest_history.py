# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin and a history, run as a user runs it (pytester) against the
simulation twin's loopback target, whose latency is exactly the programmed delay:
``--rtrig-history`` records each test's captures; ``against="history:last=5"``
holds a capture against the last passed runs with the same labels."""

import json
import os

import pytest
from history_helpers import rtrig

pytest_plugins = ["pytester"]

GATED = '''
import os
import pytest

@pytest.mark.latency_budget(against="history:last=5", p50="+5%", missed="+0")
def test_loop(rtrig):
    rtrig.capture(freq="20k", count=100, target="loopback", delay=os.environ["DELAY"])
'''


def _run(pytester, delay, *extra):
    os.environ["DELAY"] = delay
    try:
        return pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-history", "h.sqlite",
                                             "--rtrig-label", "kernel=6.12", "-W",
                                             "default", *extra)
    finally:
        del os.environ["DELAY"]


def test_runs_are_recorded_and_gated_against_the_last_passed_ones(pytester, capsys):
    pytester.makepyfile(test_gated=GATED)
    first = _run(pytester, "1us")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*rtrig: history: last 5 passed runs with the test's labels:"
                                " none holds isr yet; the capture is recorded, not gated*"])
    _run(pytester, "1us").assert_outcomes(passed=1)
    slower = _run(pytester, "2us")
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(["latency baseline: ISR p50 +5% over baseline 1 µs*(baseline: "
                                 "history: last 5 passed runs with the test's labels), "
                                 "measured 2 µs * is above 1.05 µs at 95%*"])
    # another label is another history: ungated again
    _run(pytester, "2us", "--rtrig-label", "kernel=7.0").assert_outcomes(passed=1)
    db = pytester.path / "h.sqlite"
    capsys.readouterr()                   # pytester's own lines
    code, out, err = rtrig(capsys, "history", "show", "--history", db, "--figure", "isr.p99",
                           "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["value"], r["labels"]["kernel"]) for r in rows] == [
        (1000, "6.12"), (1000, "6.12"), (2000, "6.12"), (2000, "7.0")]
    assert {r["labels"]["test"] for r in rows} == {"test_gated.py::test_loop"}
    code, out, _ = rtrig(capsys, "history", "show", "--history", db, "--where",
                         "status=failed", "--json")
    assert [r["id"] for r in json.loads(out)] == [3]


@pytest.mark.parametrize("marker, says", [
    ('against="history:first=5", p99="+5%"', "expected 'history:last=N'"),
    ('against="history:last=5", baseline="b.rtrig", p99="+5%"', "baseline= or against="),
    ('against="history:last=5", mf_isr_min="-5%"', "against='history:…' gates capture"),
])
def test_bad_history_gates_are_errors_of_the_test(pytester, marker, says):
    pytester.makepyfile(test_bad=f'''
import pytest

@pytest.mark.latency_budget({marker})
def test_bad(rtrig):
    pass
''')
    res = pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-history", "h.sqlite")
    res.assert_outcomes(errors=1)
    assert says in res.stdout.str() and "Traceback" not in res.stdout.str()


def test_a_history_gate_needs_a_history(pytester):
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.latency_budget(against="history:last=5", p99="+5%")
def test_bad(rtrig):
    pass
''')
    res = pytester.runpytest_subprocess("--rtrig-sim")
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines(["*needs a history: run pytest with --rtrig-history DB*"])
