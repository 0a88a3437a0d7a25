# SPDX-License-Identifier: BSD-2-Clause
"""Latency budgets against known figures (no rig)."""

import pytest

from rtrig.host.integrations.budget import BudgetError, parse_budget
from rtrig.host.integrations.budget_check import check


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


# Allowances against a baseline, on synthetic samples with known quantiles (no file).

def _uniform(n, shift=0, missed=0):
    """``n`` latencies spread evenly over [1000 + shift, 2000 + shift) ns (1 GHz
    ticks): the q-quantile is 1000 + shift + 1000 q."""
    import numpy as np

    from rtrig.host.report.compare import Samples
    v = 1000 + shift + np.floor(1000 * (np.arange(n) + 0.5) / n).astype(np.int64)
    values, counts = np.unique(v, return_counts=True)
    return Samples(values, counts, n + missed, missed, 1e9)


def _gate(kw, base, measured):
    from rtrig.host.integrations.budget import Baseline
    from rtrig.host.integrations.budget_check import evaluate
    limits = parse_budget({"baseline": "base.rtrig", **kw})
    return evaluate(limits, [{"path": "c.rtrig", "summary": {}, "samples": {"isr": measured}}],
                    [], {"base.rtrig": Baseline("base.rtrig", "capture",
                                                samples={"isr": base})})


def test_allowances_parse():
    lims = {lim.figure: lim for lim in parse_budget(
        {"baseline": "b/isr.rtrig", "confidence": 0.9, "p99": "+5%", "p999": "+500ns",
         "max": "+10%", "missed": "+0", "p50": "4us"}, folder="/tests")}
    assert lims["p99"].baseline == "/tests/b/isr.rtrig" and lims["p99"].confidence == 0.9
    assert lims["p99"].fraction and lims["p99"].value == pytest.approx(0.05)
    assert not lims["p999"].fraction and lims["p999"].value == pytest.approx(500)
    assert lims["missed"].value == 0 and lims["missed"].kind == "missed"
    assert lims["p50"].baseline is None and lims["p50"].value == pytest.approx(4000)
    assert parse_budget({"baseline": "/abs.rtrig", "p99": "+0"}, folder="/t")[0].baseline \
        == "/abs.rtrig"
    assert parse_budget({"baseline": "s.rtrig", "mf_isr_min": "-5%"})[0].kind == "sweep"


@pytest.mark.parametrize("kw,words", [
    ({"p99": "+5%"}, r"^latency_budget p99: '\+5%' is an allowance against a baseline; "
                     r"give baseline='….rtrig' too$"),
    ({"confidence": 0.9, "p99": "5us"}, "give baseline="),
    ({"baseline": "b.rtrig", "p99": "5us"}, "no allowance against it"),
    ({"baseline": "b.rtrig", "p99": "-5%"}, r"is '\+5%' or '\+500ns', not '-5%'"),
    ({"baseline": "b.rtrig", "mean": "+5%"}, "only p50, p99"),
    ({"baseline": "b.rtrig", "p98": "+5%"}, "unknown figure 'p98'"),
    ({"baseline": "b.rtrig", "p99": "+fast"}, "not an allowance"),
    ({"baseline": "b.rtrig", "missed": "+3"}, r"try '\+0' or '\+0.1%'"),
    ({"baseline": "b.rtrig", "mf_isr_min": "+5%"}, "'-5%' or '-10k'"),
    ({"baseline": "b.rtrig", "confidence": 1.5, "p99": "+5%"}, "confidence must be"),
    ({"baseline": 3, "p99": "+5%"}, "not a path")])
def test_bad_allowances_say_why(kw, words):
    with pytest.raises(BudgetError, match=words):
        parse_budget(kw)


def test_the_confidence_decides_a_shift_of_the_median():
    # The measured median is 100 ns (about 7 %) above the baseline's. With 50 samples
    # each, that lies inside the bounds' width: no worse shown, the gate is met. With
    # 20000 each the bounds are a few ns wide and the gate fails.
    bad, gates = _gate({"p50": "+0"}, _uniform(50), _uniform(50, shift=100))
    assert bad == [] and gates[0].verdict == "met"
    assert gates[0].measured_bounds[0] < gates[0].threshold
    bad, gates = _gate({"p50": "+0"}, _uniform(20000), _uniform(20000, shift=100))
    g = gates[0]
    assert (g.baseline, g.measured) == (1499, 1599)          # the ground truth ± a tick
    assert g.baseline_bounds[1] < 1510 and g.measured_bounds[0] > 1590
    assert g.verdict == "failed" and g.threshold == g.baseline_bounds[1]
    assert bad[0].message == (
        "latency baseline: ISR p50 +0 over baseline 1.499 µs [1.492 µs, 1.507 µs] "
        "(baseline: base.rtrig), measured 1.599 µs [1.592 µs, 1.607 µs] is above "
        "1.507 µs at 95% (capture: c.rtrig)")
    # the same shift within a 10 % allowance passes at any sample size
    assert _gate({"p50": "+10%"}, _uniform(20000), _uniform(20000, shift=100))[0] == []
    # and within +150ns too, not within +50ns
    assert _gate({"p50": "+150ns"}, _uniform(20000), _uniform(20000, shift=100))[0] == []
    assert len(_gate({"p50": "+50ns"}, _uniform(20000), _uniform(20000, shift=100))[0]) == 1


def test_a_higher_confidence_needs_more_evidence():
    # 400 samples each, median 120 ns higher: shown at 80 %, not at 99.9 %
    assert _gate({"p50": "+0", "confidence": 0.8}, _uniform(400), _uniform(400, shift=120))[0]
    assert not _gate({"p50": "+0", "confidence": 0.999}, _uniform(400),
                     _uniform(400, shift=120))[0]


def test_an_unbounded_percentile_is_too_few_samples_not_a_failure():
    # 50 samples cannot bound p99 from above: whatever the measurement, no failure
    bad, gates = _gate({"p99": "+0"}, _uniform(50), _uniform(50, shift=5000))
    assert bad == [] and gates[0].verdict == "too few samples"
    assert gates[0].baseline_bounds[1] is None
    assert ("rtrig.capture1.isr.p99.verdict", "too few samples") in gates[0].properties()


def test_max_is_compared_as_measured():
    bad, gates = _gate({"max": "+10%"}, _uniform(50), _uniform(50, shift=100))
    assert bad == [] and gates[0].threshold == pytest.approx(1990 * 1.1)
    bad, _ = _gate({"max": "+10%"}, _uniform(50), _uniform(50, shift=300))
    assert bad[0].message == (
        "latency baseline: ISR max +10% over baseline 1.99 µs (baseline: base.rtrig), "
        "measured 2.29 µs (as measured: the maximum has no interval) is above 2.189 µs "
        "(capture: c.rtrig)")


def test_missed_fraction_against_the_baseline():
    # baseline 0 of 2000 missed; 1 of 41 is within the noise, 5 of 45 is not
    assert _gate({"missed": "+0"}, _uniform(2000), _uniform(40, missed=1))[0] == []
    bad, gates = _gate({"missed": "+0"}, _uniform(2000), _uniform(40, missed=5))
    assert gates[0].measured_bounds[0] > gates[0].baseline_bounds[1]
    # 0 of n: the upper Clopper-Pearson bound is 1 - (tail)^(1/n), the tail being half
    # of 1 - sqrt(0.95)
    tail = (1 - 0.95 ** 0.5) / 2
    assert gates[0].baseline_bounds[1] == pytest.approx(1 - tail ** (1 / 2000))
    assert bad[0].message.startswith(
        "latency baseline: ISR missed +0 over baseline 0 of 2000 [0 %, 0.218 %] "
        "(baseline: base.rtrig), measured 5 of 45 [")
    # an allowance of 20 % of the pulses covers it
    assert _gate({"missed": "+20%"}, _uniform(2000), _uniform(40, missed=5))[0] == []


def test_sweep_figure_against_a_baseline_sweep():
    from rtrig.host.integrations.budget import Baseline
    from rtrig.host.integrations.budget_check import evaluate
    lims = parse_budget({"baseline": "s0.rtrig", "mf_isr_min": "-5%"})
    base = {"s0.rtrig": Baseline("s0.rtrig", "sweep", figures={
        "mf_isr_hz": {"hz": 101_000, "below_hz": 100_000}})}

    def run(**fig):
        return evaluate(lims, [], [_sweep(**fig)], base)
    assert run(hz=96_000, below=95_000)[0] == []              # 96k ≥ 100k − 5 %
    assert run(hz=None, below=200_000, reason="no miss")[0] == []
    bad, gates = run(hz=90_000, below=89_000)
    assert gates[0].verdict == "failed" and gates[0].threshold == pytest.approx(95_000)
    assert bad[0].message == (
        "latency baseline: MF-ISR -5% under baseline 101 kHz (100 kHz – 101 kHz] "
        "(baseline: s0.rtrig), measured 90 kHz (89 kHz – 90 kHz] is below 95 kHz "
        "(sweep: s.rtrig)")
