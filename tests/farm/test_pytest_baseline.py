# SPDX-License-Identifier: BSD-2-Clause
"""The plugin's gate against a baseline capture, run as a user runs it (pytester),
against the simulation twin's loopback target, whose latency is exactly the
programmed delay. The baseline is synthetic: written with CaptureWriter, every
latency known."""

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from rtrig.capture import CaptureWriter
from rtrig.host.integrations.budget import BudgetError, load_baselines, parse_budget
from rtrig.protocol import LATENCY_DTYPE

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[2] / "captures" / "examples"
TICK_HZ = 100_000_000
PERIOD = 5_000                                   # 20 kHz


def write_baseline(path, pulses=2000, latency=100, channels=("isr",), per_chunk=None):
    """A loopback capture of ``pulses`` ISR latencies of ``latency`` ticks each (100:
    1 µs), none missed; its records in chunks of ``per_chunk`` (as a run writes them)."""
    rec = np.zeros(pulses, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(pulses)
    rec["stim_t"] = 1_000 + np.arange(pulses, dtype=np.uint64) * PERIOD
    rec["channel"] = 0
    rec["latency"] = latency
    rec["completion"] = latency + 50
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
            "rtrig_version": "test", "channels": list(channels), "load": False,
            "mode": "records", "target": {"kind": "loopback", "delay_ticks": latency},
            "stimulus": {"freq_hz": TICK_HZ / PERIOD, "period_ticks": PERIOD,
                         "high_ticks": PERIOD // 2, "count": pulses, "jitter_ticks": 0}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with CaptureWriter(path, meta) as w:
        step = per_chunk or max(pulses, 1)
        for i in range(0, pulses, step):
            w.array(b"LATR", rec[i:i + step])
        w.close(final={"status": "complete", "records": pulses})
    return path


# The baseline: 2000 pulses at 1 µs. The test file lives in rig/, its baseline in
# rig/baselines/ (a path relative to the test file, not to pytest's folder).
GATES = '''
import pytest

@pytest.mark.latency_budget(baseline="baselines/isr.rtrig", p99="+5%", max="+10%",
                            missed="+0")
def test_same(rtrig):
    rtrig.capture(freq="20k", count=40, target="loopback", delay="1us")

@pytest.mark.latency_budget(baseline="baselines/isr.rtrig", p99="+5%")
def test_slower(rtrig):
    rtrig.capture(freq="20k", count=40, target="loopback", delay="2us")
'''


def _props(xml_path):
    out = {}
    for tc in ET.parse(xml_path).iter("testcase"):
        out[tc.get("name")] = {p.get("name"): p.get("value") for p in tc.iter("property")}
    return out


def test_a_met_baseline_passes_and_a_slower_capture_fails_naming_both(pytester):
    rig = pytester.mkdir("rig")
    write_baseline(rig / "baselines" / "isr.rtrig")
    (rig / "test_gates.py").write_text(GATES)
    res = pytester.runpytest_subprocess("--rtrig-sim", "--rtrig-captures", "caps",
                                        "--rtrig-results", "results.json",
                                        "--junitxml", "junit.xml")
    res.assert_outcomes(passed=1, failed=1)
    text = res.stdout.str()
    base = rig / "baselines" / "isr.rtrig"
    # measured 2 µs on all 40 pulses against a baseline of 1 µs on all 2000: the
    # bounds are the values themselves, the limit the baseline's upper bound + 5 %
    m = re.search(r"^latency baseline: ISR p99 \+5% over baseline 1 µs \[1 µs, 1 µs\] "
                  rf"\(baseline: {re.escape(str(base))}\), measured 2 µs \[2 µs, …\] is "
                  r"above 1.05 µs at 95% \(capture: (\S+)\)$", text, re.M)
    assert m, text
    assert Path(m.group(1)).is_file()
    rows = {r["test"]: r for r in
            json.loads((pytester.path / "results.json").read_text())["tests"]}
    slow = rows["rig/test_gates.py::test_slower"]
    assert slow["outcome"] == "failed" and slow["violations"] == [m.group(0)]
    (gate,) = slow["baseline_gates"]
    assert (gate["verdict"], gate["baseline_value"], gate["measured"], gate["limit"]) == \
        ("failed", 1000, 2000, pytest.approx(1050))
    same = rows["rig/test_gates.py::test_same"]
    assert same["outcome"] == "passed" and same["violations"] == []
    assert {g["figure"]: g["verdict"] for g in same["baseline_gates"]} == \
        {"p99": "met", "max": "met", "missed": "met"}
    assert {b["figure"]: b["bound"] for b in same["budget"]} == \
        {"p99": "baseline", "max": "baseline", "missed": "baseline"}
    props = _props(pytester.path / "junit.xml")["test_same"]
    p = "rtrig.capture1.isr."
    assert props[p + "p99.baseline"] == str(base)
    assert (props[p + "p99.allowance"], props[p + "p99.confidence"]) == ("+5%", "0.95")
    assert (props[p + "p99.baseline_ns"], props[p + "p99.measured_ns"]) == ("1000.0", "1000.0")
    assert json.loads(props[p + "p99.baseline_bounds"]) == [1000, 1000]
    assert json.loads(props[p + "p99.measured_bounds"])[0] == 1000
    assert float(props[p + "p99.limit_ns"]) == pytest.approx(1050)
    assert props[p + "p99.verdict"] == "met" and props[p + "max.verdict"] == "met"
    assert float(props[p + "max.limit_ns"]) == pytest.approx(1100)
    assert props[p + "missed.verdict"] == "met" and props["rtrig.budget"] == "met"
    assert _props(pytester.path / "junit.xml")["test_slower"][p + "p99.verdict"] == "failed"


def _error_of(pytester, marker):
    pytester.makepyfile(test_bad=f'''
import pytest

@pytest.mark.latency_budget({marker})
def test_bad(rtrig):
    pass
''')
    res = pytester.runpytest_subprocess("--rtrig-sim")
    res.assert_outcomes(errors=1)
    assert "Traceback" not in res.stdout.str()
    return res


def test_a_missing_baseline_is_an_error_naming_the_path(pytester):
    res = _error_of(pytester, 'baseline="baselines/none.rtrig", p99="+5%"')
    res.stdout.fnmatch_lines([f"latency_budget baseline: no such file: "
                              f"{pytester.path / 'baselines' / 'none.rtrig'}"])


def test_a_sweep_as_baseline_of_a_percentile_is_an_error(pytester):
    shutil.copy(EXAMPLES / "soc-sweep-loaded.rtrig", pytester.path / "sweep.rtrig")
    res = _error_of(pytester, 'baseline="sweep.rtrig", p99="+5%"')
    res.stdout.fnmatch_lines([f"latency_budget p99='+5%': baseline "
                              f"{pytester.path / 'sweep.rtrig'} is a sweep, not a capture "
                              "of latencies"])


def test_an_allowance_without_baseline_is_an_error(pytester):
    res = _error_of(pytester, 'p99="+5%"')
    res.stdout.fnmatch_lines(["latency_budget p99: '+5%' is an allowance against a "
                              "baseline; give baseline='….rtrig' too"])


def _load(kw, folder):
    return load_baselines(parse_budget(kw, folder=folder))


def test_baselines_of_the_wrong_kind_say_why(tmp_path):
    base = write_baseline(tmp_path / "isr.rtrig")
    assert set(_load({"baseline": "isr.rtrig", "p99": "+5%"}, tmp_path)) == {str(base)}
    (tmp_path / "notes.txt").write_text("not a capture\n")
    cases = [
        ({"baseline": "notes.txt", "p99": "+5%"},
         f"latency_budget baseline: {tmp_path / 'notes.txt'} is not an rtrig capture file"),
        ({"baseline": ".", "p99": "+5%"}, "it is a directory"),
        ({"baseline": "isr.rtrig", "channel": "app", "p99": "+5%"},
         f"baseline {base} has no APP channel (it has isr)"),
        ({"baseline": "isr.rtrig", "mf_isr_min": "-5%"},
         f"latency_budget mf_isr_min='-5%': baseline {base} is a capture, not a sweep"),
        ({"baseline": str(EXAMPLES / "soc-sweep-loaded.rtrig"), "missed": "+0"},
         "is a sweep, not a capture of latencies")]
    for kw, words in cases:
        with pytest.raises(BudgetError) as e:
            _load(kw, tmp_path)
        assert words in str(e.value) and "\n" not in str(e.value), kw
    sweep = _load({"baseline": str(EXAMPLES / "soc-sweep-loaded.rtrig"),
                   "mf_app_min": "-5%"}, tmp_path)
    (b,) = sweep.values()
    # the example's own END record: its MF-APP's highest frequency without an event
    import rtrig
    below = rtrig.load(EXAMPLES / "soc-sweep-loaded.rtrig").final["figures"]["mf_app_hz"]
    assert b.kind == "sweep" and b.figures["mf_app_hz"]["below_hz"] == \
        pytest.approx(below["below_hz"], 1e-4) and below["below_hz"] > 0


def test_a_cut_off_or_empty_baseline_is_refused_naming_it(tmp_path, pytester):
    """A torn baseline (the first 3000 bytes of a 500-record capture: some records, no
    final chunk) would gate against a part of the run: it is a set-up error naming the
    file, as is a baseline whose run ended with a lost link or that holds no pulse."""
    whole = write_baseline(tmp_path / "whole.rtrig", pulses=500, per_chunk=25)
    torn = tmp_path / "torn.rtrig"
    torn.write_bytes(whole.read_bytes()[:3000])
    from rtrig.capture import scan
    assert scan(torn).count() > 0 and scan(torn).final is None
    with pytest.raises(BudgetError) as e:
        _load({"baseline": "torn.rtrig", "p99": "+5%"}, tmp_path)
    assert f"latency_budget baseline: {torn} is cut off at byte " in str(e.value)
    lost = tmp_path / "lost.rtrig"
    with CaptureWriter(lost, {"format": "rtrig-capture", "tick_hz": TICK_HZ,
                              "channels": ["isr"], "mode": "records"}) as w:
        w.close(final={"status": "link lost"})
    with pytest.raises(BudgetError, match=f"{lost} ended with a lost link"):
        _load({"baseline": "lost.rtrig", "missed": "+0"}, tmp_path)
    empty = write_baseline(tmp_path / "empty.rtrig", pulses=0)
    with pytest.raises(BudgetError, match=f"baseline {empty} has no ISR channel"):
        _load({"baseline": "empty.rtrig", "missed": "+0"}, tmp_path)
    # as pytest runs it: the test errors in its set-up, it does not pass
    shutil.copy(torn, pytester.path / "torn.rtrig")
    res = _error_of(pytester, 'baseline="torn.rtrig", p99="+5%"')
    res.stdout.fnmatch_lines([f"*latency_budget baseline: {pytester.path / 'torn.rtrig'} "
                              "is cut off at byte *"])
