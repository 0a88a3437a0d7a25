# SPDX-License-Identifier: BSD-2-Clause
"""Latency budgets against known figures (no rig)."""

import pytest

from rtrig.host.integrations.budget import BudgetError, check, parse_budget


def _cap(path="c.rtrig", **isr):
    st = {"pulses": 1000, "answered": 1000, "missed": 0, "p99_ns": 4000, "max_ns": 9000,
          "min_ns": 1000, "jitter_ns": 8000}
    st.update(isr)
    return {"path": path, "summary": {"isr": st}}


def _sweep(path="s.rtrig", hz=None, below=None, reason=None):
    return {"path": path, "figures": {"mf_isr_hz": {"hz": hz, "below_hz": below,
                                                    "reason": reason}}}


def test_limits_parse_with_units():
    lims = {lim.figure: lim for lim in parse_budget(
        {"channel": "app", "p99": "5us", "max": 2e-5, "missed": "0.1%",
         "mf_isr_min": "100k"})}
    assert lims["p99"].value == pytest.approx(5000) and lims["p99"].channel == "app"
    assert lims["max"].value == pytest.approx(20_000)
    assert lims["missed"].fraction and lims["missed"].value == pytest.approx(0.001)
    assert lims["mf_isr_min"].value == 100_000 and lims["mf_isr_min"].kind == "sweep"


@pytest.mark.parametrize("kw,words", [
    ({"p98": "5us"}, "unknown figure 'p98'"), ({"p99": "5"}, "not a duration"),
    ({"channel": "irq", "p99": "5us"}, "unknown channel"), ({}, "no limit"),
    ({"missed": "a%"}, "not a percentage"), ({"missed": 0.5}, "count"),
    ({"mf_isr_min": "fast"}, "not a frequency")])
def test_bad_budgets_say_why(kw, words):
    with pytest.raises(BudgetError, match=words):
        parse_budget(kw)


def test_a_capture_within_budget_has_no_violation():
    assert check(parse_budget({"p99": "4us", "max": "9us", "missed": 0}), [_cap()], []) == []


def test_each_figure_over_budget_is_named_with_limit_value_and_file():
    bad = check(parse_budget({"p99": "3us", "max": "10us", "missed": 2}),
                [_cap("a.rtrig"), _cap("b.rtrig", p99_ns=2500, missed=3)], [])
    assert [v.message for v in bad] == [
        "latency budget: ISR p99 limit 3us, measured 4 µs (capture: a.rtrig)",
        "latency budget: ISR missed limit 2, measured 3 of 1000 pulses (capture: b.rtrig)"]
    assert bad[0].measured == 4000


def test_missed_fraction_and_empty_channels():
    bad = check(parse_budget({"missed": "0.1%", "p99": "1ms"}),
                [_cap(missed=2), _cap(answered=0, missed=1000, p99_ns=None)], [])
    assert [v.message for v in bad] == [
        "latency budget: ISR missed limit 0.1%, measured 0.2 % (2 of 1000 pulses) "
        "(capture: c.rtrig)",
        "latency budget: ISR missed limit 0.1%, measured 100 % (1000 of 1000 pulses) "
        "(capture: c.rtrig)",
        "latency budget: ISR p99 limit 1ms, measured nothing (no answered pulse) "
        "(capture: c.rtrig)"]


def test_a_channel_not_captured_or_nothing_measured_fails():
    bad = check(parse_budget({"channel": "app", "p99": "5us"}), [_cap()], [])
    assert "no APP channel in the capture" in bad[0].message
    bad = check(parse_budget({"p99": "5us", "mf_isr_min": "100k"}), [], [])
    assert [v.message for v in bad] == [
        "latency budget: ISR p99 limit 5us, measured nothing (the test ran no capture)",
        "latency budget: MF-ISR limit 100k, measured nothing (the test ran no sweep)"]


def test_sweep_minimum():
    lims = parse_budget({"mf_isr_min": "100k"})
    assert check(lims, [], [_sweep(hz=120_000)]) == []
    assert check(lims, [], [_sweep(hz=None, below=150_000, reason="no miss")]) == []
    msgs = [v.message for v in check(lims, [], [
        _sweep(hz=80_000), _sweep(below=90_000),
        _sweep(reason="ISR miss already at 10 kHz")])]
    assert msgs == [
        "latency budget: MF-ISR limit 100k, measured 80 kHz (sweep: s.rtrig)",
        "latency budget: MF-ISR limit 100k, measured above 90 kHz only (the sweep range "
        "ends below the limit) (sweep: s.rtrig)",
        "latency budget: MF-ISR limit 100k, measured ISR miss already at 10 kHz "
        "(sweep: s.rtrig)"]
