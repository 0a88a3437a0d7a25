# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin, run as a user runs it: pytest in a subprocess (pytester) with
the plugin loaded from its entry point, against the simulation twin's loopback
target, whose latency is exactly the programmed delay."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

pytest_plugins = ["pytester"]

# A 1 µs loopback delay: every latency is 1000 ns (100 ticks), no pulse is missed.
TESTS = '''
import pytest

@pytest.mark.latency_budget(channel="isr", p99="2us", max="1.5us", missed=0)
def test_within(rtrig):
    res = rtrig.capture(freq="20k", count=40, target="loopback", delay="1us")
    assert res.summary["isr"]["answered"] == 40

@pytest.mark.latency_budget(p99="1us", missed="0%")
def test_marker_alone_gives_the_fixture(request):
    request.getfixturevalue("rtrig").capture(freq="20k", count=40, target="loopback",
                                             delay="1us")

def test_without_rig(request):
    assert "rtrig" not in request.fixturenames     # no marker, no fixture: no rig opened
'''

OVER = '''
import pytest

@pytest.mark.latency_budget(channel="isr", p99="500ns", max="2us")
def test_over(rtrig):
    rtrig.capture(freq="20k", count=40, target="loopback", delay="1us")
'''


def _props(xml_path):
    out = {}
    for tc in ET.parse(xml_path).iter("testcase"):
        out[tc.get("name")] = {p.get("name"): p.get("value") for p in tc.iter("property")}
    return out


def test_a_met_budget_passes_and_its_figures_are_recorded(pytester):
    pytester.makepyfile(test_rig=TESTS)
    res = pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-results", "results.json",
                                        "--junitxml", "junit.xml", "--rtrig-captures", "caps")
    res.assert_outcomes(passed=3)
    assert res.ret == 0
    rows = json.loads((pytester.path / "results.json").read_text())
    assert rows["format"] == "rtrig-pytest-results"
    by_test = {r["test"]: r for r in rows["tests"]}
    # one row per test that used the rig, none for the test without it
    assert set(by_test) == {"test_rig.py::test_within",
                            "test_rig.py::test_marker_alone_gives_the_fixture"}
    row = by_test["test_rig.py::test_within"]
    assert row["outcome"] == "passed" and row["violations"] == []
    isr = row["captures"][0]["channels"]["isr"]
    assert (isr["pulses"], isr["missed"], isr["p99_ns"], isr["max_ns"]) == (40, 0, 1000, 1000)
    assert {(b["figure"], b["value"]) for b in row["budget"]} == \
        {("p99", 2000.0), ("max", 1500.0), ("missed", 0)}
    assert row["rig"]["simulation"] is True
    cap = Path(row["captures"][0]["path"])
    assert cap.is_file() and (pytester.path / "caps") in cap.parents
    props = _props(pytester.path / "junit.xml")
    assert props["test_within"]["rtrig.capture1.isr.p99_ns"] == "1000"
    assert props["test_within"]["rtrig.budget"] == "met"
    assert props["test_within"]["rtrig.capture1.path"] == str(cap)
    assert not any(k.startswith("rtrig.") for k in props["test_without_rig"])


def test_a_broken_budget_fails_naming_figure_limit_value_and_capture(pytester):
    pytester.makepyfile(test_over=OVER)
    res = pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-captures", "caps",
                                        "--rtrig-results", "results.json")
    res.assert_outcomes(failed=1)
    assert res.ret == 1
    text = res.stdout.str()
    m = re.search(r"^latency budget: ISR p99 limit 500ns, measured 1 µs \(capture: (\S+)\)$",
                  text, re.M)
    assert m, text
    assert Path(m.group(1)).is_file()
    assert "ISR max" not in text                 # 1 µs is within max="2us"
    row = json.loads((pytester.path / "results.json").read_text())["tests"][0]
    assert row["outcome"] == "failed" and len(row["violations"]) == 1
    assert row["violations"][0] == m.group(0)


def test_a_missing_rig_is_an_error_not_a_failure(pytester):
    pytester.makepyfile(test_rig=TESTS)
    res = pytester.runpytest_subprocess("--rtrig-results", "results.json")
    res.assert_outcomes(passed=1, errors=2)      # the test without the rig still passes
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*ERROR at setup of test_within*",
                              "rtrig: no rig given: use --rtrig-port PORT, --rtrig-sim*"])
    rows = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert {r["outcome"] for r in rows} == {"error"}


def test_a_rig_that_does_not_answer_is_an_error(pytester):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))                     # a port nobody listens on
    port = s.getsockname()[1]
    s.close()
    pytester.makepyfile(test_over=OVER)
    res = pytester.runpytest_subprocess("--rtrig-port", f"socket://127.0.0.1:{port}")
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines([f"rtrig: cannot open socket://127.0.0.1:{port}*"])


def test_a_budget_it_cannot_read_is_an_error(pytester):
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.latency_budget(p98="5us")
def test_bad(rtrig):
    pass
''')
    res = pytester.runpytest_subprocess("--rtrig-sim")
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines(["latency_budget: unknown figure 'p98'*"])


def test_a_capture_without_an_answered_pulse_is_named_in_a_warning(pytester):
    # A 5 µs loopback delay behind a 2 µs response window: every pulse is missed. The
    # budget on missed pulses allows it; the test passes, with one warning naming the
    # capture and what it lacks.
    pytester.makepyfile(test_dead='''
import pytest

@pytest.mark.latency_budget(channel="isr", missed="100%")
def test_dead(rtrig):
    rtrig.capture(freq="20k", count=40, target="loopback", delay="5us", timeout="2us")
''')
    res = pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-captures", "caps")
    res.assert_outcomes(passed=1, warnings=1)
    res.stdout.fnmatch_lines(["*PytestWarning: rtrig: */capture-1.rtrig has no answered "
                              "pulse on ISR (40 pulses, all missed)"])
