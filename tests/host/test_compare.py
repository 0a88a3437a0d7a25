# SPDX-License-Identifier: BSD-2-Clause
"""A/B comparison (``rtrig compare``) against ground truth.

The model target's true per-pulse latencies come from its reference
(:mod:`rtrig.host.model.reference`, checked cycle for cycle against the gateware in
test_model_ref.py), so the truth of "same configuration" and "2 % slower ISR entry"
is known exactly. Synthetic data with known quantiles check the bounds' coverage."""

import dataclasses
import json

import numpy as np
import pytest

from rtrig.capture import CaptureWriter
from rtrig.host.bounds import difference, joint_level, quantile_bounds
from rtrig.host.cli import main
from rtrig.host.model.presets import preset
from rtrig.host.model.reference import simulate_periodic
from rtrig.host.report.compare import (
    HIGHER,
    LOWER,
    NONE,
    Samples,
    compare_samples,
)
from rtrig.host.report.compare_text import compare
from rtrig.protocol import LATENCY_DTYPE, ChanFlags

TICK_HZ = 100_000_000
PERIOD = 3_001           # ticks: about 33 kHz, below the fast preset's MF-ISR and MF-APP


def model_samples(params, pulses, start=0):
    """{isr, app: Samples} of one model run: the truth the rig would record."""
    r = simulate_periodic(params, PERIOD, pulses, start=start)
    return {"isr": Samples.from_ticks(r.isr_latency[~r.isr_missed], r.isr_missed.sum()),
            "app": Samples.from_ticks(r.app_latency[~r.app_missed], r.app_missed.sum())}


def test_same_configuration_shows_no_difference_in_95_percent_of_trials():
    """40 pairs of captures of the fast preset (kernel tick, ISR jitter), each capture
    with its own jitter seed and tick phase: the whole comparison (12 statements)
    may say "differ" in at most 2 of them."""
    base = preset("fast")
    flagged = []
    for trial in range(40):
        a = model_samples(dataclasses.replace(base, seed=1 + 2 * trial), 2000,
                          start=trial * 37)
        b = model_samples(dataclasses.replace(base, seed=2 + 2 * trial), 2000,
                          start=trial * 53 + 11)
        c = compare_samples(a, b)
        if any(ch.verdict != NONE for ch in c.channels.values()):
            flagged.append(trial)
    assert len(flagged) <= 2, flagged


def test_a_two_percent_slower_isr_entry_is_detected_at_1e5_pulses():
    base = preset("fast")
    slower = dataclasses.replace(base, isr_entry=round(base.isr_entry * 1.02), seed=77)
    a = model_samples(base, 100_000)
    b = model_samples(slower, 100_000, start=1234)
    c = compare_samples(a, b)
    assert slower.isr_entry - base.isr_entry == 4           # ticks: 33 ns, 2.2 %
    assert c.channels["isr"].verdict == HIGHER
    p50 = next(f for f in c.channels["isr"].figures if f.figure == "p50")
    assert p50.verdict == HIGHER and p50.diff[0] > 0
    # and the other way round
    assert compare_samples(b, a).channels["isr"].verdict == LOWER


def test_the_same_shift_is_not_claimed_from_too_few_pulses():
    """At 50 pulses a 33 ns shift under 1 µs of jitter is within the noise: the
    comparison must not claim it (point estimates alone would)."""
    base = preset("fast")
    slower = dataclasses.replace(base, isr_entry=round(base.isr_entry * 1.02), seed=77)
    c = compare_samples(model_samples(base, 50), model_samples(slower, 50, start=999))
    assert c.channels["isr"].verdict == NONE
    f = next(f for f in c.channels["isr"].figures if f.figure == "p50")
    assert f.diff[0] < 0 < f.diff[1]


@pytest.mark.parametrize("q", [0.5, 0.99])
def test_difference_bounds_cover_the_true_difference(q):
    """Synthetic latencies with known quantiles (exponential, in whole ticks): the
    bounds of B − A cover the true difference in at least 95 % of 400 trials."""
    rng = np.random.default_rng(5)
    n, trials, cover = 1000, 400, 0
    true = (np.ceil(-np.log(1 - q) * 1000 * 1.3) - np.ceil(-np.log(1 - q) * 1000))
    level = joint_level(0.95, 1)
    for _ in range(trials):
        a = np.ceil(rng.exponential(1000, n)).astype(np.int64)
        b = np.ceil(rng.exponential(1300, n)).astype(np.int64)
        ab = quantile_bounds(*np.unique(a, return_counts=True), q, level)
        bb = quantile_bounds(*np.unique(b, return_counts=True), q, level)
        lo, hi = difference(ab, bb)
        cover += lo <= true <= hi
    assert cover / trials >= 0.95, cover


# --- files and the command ---------------------------------------------------------

def write_capture(path, latencies, missed=0, meta=None, channels=("isr",)):
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
         "rtrig_version": "test", "channels": list(channels), "load": False,
         "mode": "records", "target": {"kind": "model", "preset": "fast"},
         "stimulus": {"freq_hz": 10_000.0, "period_ticks": 10_000, "high_ticks": 5_000,
                      "count": 0, "jitter_ticks": 0}}
    m.update(meta or {})
    with CaptureWriter(path, m) as w:
        for ch, _ in enumerate(channels):
            n = len(latencies) + missed
            rec = np.zeros(n, dtype=LATENCY_DTYPE)
            rec["pulse"] = np.arange(n)
            rec["stim_t"] = 1_000 + np.arange(n, dtype=np.uint64) * 10_000
            rec["channel"] = ch
            rec["latency"][:len(latencies)] = latencies
            rec["completion"][:len(latencies)] = np.asarray(latencies) + 100
            rec["flags"][len(latencies):] = ChanFlags.MISSED
            w.array(b"LATR", rec)
        w.close(final={"status": "complete"})
    return path


def write_sweep(path, mf_isr, below, confirmed=True, load=False):
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "kind": "sweep", "load": load,
            "mode": "records", "rtrig_version": "test", "simulation": True,
            "sweep": {"pulses": 200, "resolution": 0.005}}
    fig = {"hz": mf_isr, "below_hz": below, "confirmed": confirmed, "reason": None}
    with CaptureWriter(path, meta) as w:
        w.close(final={"status": "complete", "figures": {
            "mf_isr_hz": fig, "mf_app_hz": {"hz": None, "below_hz": None,
                                            "reason": "not sought"},
            "sf_hz": {"hz": None, "below_hz": 200e3, "reason": "above the range"}}})
    return path


def run(capsys, *args):
    """``rtrig compare ARGS``: (exit status, stdout, stderr)."""
    try:
        main(["compare", *map(str, args)])
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_prints_verdicts_and_json(tmp_path, capsys):
    rng = np.random.default_rng(3)
    a = write_capture(tmp_path / "a.rtrig", rng.integers(1000, 1100, 3000))
    b = write_capture(tmp_path / "b.rtrig", rng.integers(1050, 1150, 3000), missed=40,
                      meta={"load": True})
    code, out, err = run(capsys, a, b)
    assert code == 0, err
    assert "ISR: B higher" in out
    assert "warning: A and B were measured with different load: off against on" in out
    code, out, _ = run(capsys, a, b, "--json")
    j = json.loads(out)
    isr = j["channels"]["isr"]
    p50 = next(f for f in isr["figures"] if f["figure"] == "p50")
    assert p50["verdict"] == HIGHER and p50["difference_bounds_ns"][0] > 0
    assert isr["missed"]["verdict"] == HIGHER          # 40 of 3040 against none
    assert isr["distribution"]["p_value"] < isr["distribution"]["alpha"]
    assert j["statements"] == 6 and j["confidence"] == 0.95


def test_sweeps_compare_by_their_resolution(tmp_path, capsys):
    a = write_sweep(tmp_path / "a.rtrig", 50_000, 49_800)
    b = write_sweep(tmp_path / "b.rtrig", 60_000, 59_700)
    c = write_sweep(tmp_path / "c.rtrig", 50_100, 49_900, confirmed=False)
    res = compare(a, b)
    assert res.figures["mf_isr_hz"]["verdict"] == HIGHER
    assert res.figures["mf_app_hz"]["verdict"].startswith("not compared")
    assert compare(a, c).figures["mf_isr_hz"]["verdict"] == \
        "no difference shown at the sweeps' resolution"
    code, out, _ = run(capsys, b, a)
    assert code == 0
    assert "MF-ISR" in out and LOWER in out


@pytest.mark.parametrize("case, message", [
    ("channels", "A has channels isr, app and B has isr: name the ones to compare"),
    ("empty", "holds no latency record to compare"),
    ("sweep", "is a sweep and the other a capture"),
    ("missing", "no such capture file"),
    ("confidence", "confidence must be at least 0.5 and below 1"),
    ("unknown", "has no channel 'marker0'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case, message):
    rng = np.random.default_rng(1)
    a = write_capture(tmp_path / "a.rtrig", rng.integers(1000, 1100, 100),
                      channels=("isr", "app"))
    b = write_capture(tmp_path / "b.rtrig", rng.integers(1000, 1100, 100))
    args = {"channels": (a, b),
            "empty": (a, write_capture(tmp_path / "e.rtrig", [], channels=())),
            "sweep": (b, write_sweep(tmp_path / "s.rtrig", 50_000, 49_000)),
            "missing": (a, tmp_path / "nope.rtrig"),
            "confidence": (a, b, "--confidence", "1.5"),
            "unknown": (a, b, "--channels", "isr,marker0")}[case]
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3


# --- end to end: the twin's gateware, its captures, the verdict -------------------

def test_twin_captures_of_the_model_get_the_right_verdicts(tmp_path, capsys):
    """Three captures on the simulation twin: the fast preset twice (other jitter
    seeds) and once with isr_entry 3 µs instead of 1.5 µs. The first pair shows no
    difference; the third is B higher on ISR (every percentile 1.5 µs up)."""
    from rtrig.host import CaptureSettings, open_rig, run_capture
    from rtrig.host.model.common import ModelParams
    from rtrig.host.model.presets import PRESETS_NS
    paths = []
    with open_rig(sim=True) as rig:
        # the preset in the twin's ticks (8.33 ns: isr_entry 3 µs is 360 of them)
        base = dataclasses.asdict(ModelParams.from_ns(ns_per_tick=1e9 / rig.tick_hz,
                                                      **PRESETS_NS["fast"]))
        for i, change in enumerate(({"seed": 11}, {"seed": 12},
                                    {"seed": 13, "isr_entry": 360})):
            s = CaptureSettings(freq=33_000, count=400, target="model",
                                model={**base, **change}, channels=("isr", "app"))
            paths.append(run_capture(rig, s, tmp_path / f"{i}.rtrig", progress=False).path)
    same = compare(paths[0], paths[1])
    assert [ch.verdict for ch in same.channels.values()] == [NONE, NONE]
    code, out, _ = run(capsys, paths[0], paths[2], "--channels", "isr")
    assert code == 0
    assert "ISR: B higher" in out


def test_statistics_mode_captures_compare_by_their_bins(tmp_path):
    """Two histogram captures (bins of 4 ticks) of a 300 ns shift: B higher, each
    bound widened to its bin so that it holds the bound the records would give, the
    KS test on the bins; against a records capture, a warning names the histogram's
    resolution."""
    from test_summary_bounds import _stat_from_samples

    rng = np.random.default_rng(9)
    paths, samples = [], []
    for i, shift in enumerate((0, 30)):
        ticks = 150 + shift + rng.gamma(2.0, 60.0, 4000).astype(np.int64)
        meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "mode": "statistics",
                "channels": ["isr"], "load": False, "target": {"kind": "model"},
                "stimulus": {"freq_hz": 1e5, "period_ticks": 1000, "high_ticks": 500}}
        path = tmp_path / f"s{i}.rtrig"
        with CaptureWriter(path, meta) as w:
            w.json(b"STAT", _stat_from_samples(ticks, 4, 100, 512))
            w.close(final={"status": "complete"})
        paths.append(path)
        samples.append(Samples.from_ticks(ticks))
        assert compare(path, path).channels["isr"].verdict == NONE
    c = compare(*paths)
    isr = c.channels["isr"]
    assert isr.verdict == HIGHER and isr.distribution["p_value"] < isr.distribution["alpha"]
    level = joint_level(c.confidence, c.statements)
    for f in isr.figures[:2]:                               # p50, p99
        q = {"p50": 0.5, "p99": 0.99}[f.figure]
        for binned, exact in ((f.a_bounds, samples[0].bounds(q, level)),
                              (f.b_bounds, samples[1].bounds(q, level))):
            assert binned[0] <= exact[0] * 10 and binned[1] >= exact[1] * 10
    assert isr.figures[0].diff[0] > 0
    records = write_capture(tmp_path / "r.rtrig", rng.integers(300, 400, 500))
    assert any("resolution of its histogram's bins" in w
               for w in compare(paths[0], records).warnings)


# --- verdicts that account for every statement, and captures missing a part -------

def test_a_target_that_stopped_answering_is_the_headline(tmp_path, capsys):
    """B: 500 pulses, none answered. Its percentiles cannot be compared, but the
    missed pulses differ: the headline says so, and a warning names B's file."""
    rng = np.random.default_rng(2)
    a = write_capture(tmp_path / "good.rtrig", rng.integers(900, 1100, 500))
    b = write_capture(tmp_path / "zero_answered.rtrig", [], missed=500)
    code, out, err = run(capsys, a, b)
    assert code == 0, err
    head = next(ln for ln in out.splitlines() if ln.startswith("ISR:"))
    assert head.startswith("ISR: B has no answered pulse, B misses more pulses"), head
    assert NONE not in head
    assert f"warning: {b} has no answered pulse on ISR (500 pulses, all missed)" in out
    c = compare(b, a)
    assert c.channels["isr"].verdict == "A has no answered pulse, B misses fewer pulses"


@pytest.mark.parametrize("missed_b", [0, 60])
def test_the_headline_reads_no_difference_only_when_no_line_shows_one(missed_b):
    """Pairs whose percentiles agree: the headline is "no difference shown" exactly
    when the missed pulses and the distributions show none either."""
    rng = np.random.default_rng(7 + missed_b)
    a = {"isr": Samples.from_ticks(rng.integers(1000, 1100, 3000))}
    b = {"isr": Samples.from_ticks(rng.integers(1000, 1100, 3000), missed=missed_b)}
    ch = compare_samples(a, b).channels["isr"]
    shown = [f.verdict for f in ch.figures] + [ch.missed["verdict"]]
    shown.append(NONE if ch.distribution["verdict"] == NONE else "differ")
    assert all(f.verdict == NONE for f in ch.figures)
    assert (ch.verdict == NONE) == all(v == NONE for v in shown), (ch.verdict, shown)
    if missed_b:
        assert ch.verdict == "B misses more pulses"


def write_chunked(path, latencies, final=True, per_chunk=25):
    """A capture of ISR ``latencies`` written in chunks of ``per_chunk`` records, as
    a run writes them; with its final chunk or (``final=False``) cut off before it."""
    rec = np.zeros(len(latencies), dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(len(latencies))
    rec["stim_t"] = 1_000 + np.arange(len(latencies), dtype=np.uint64) * 10_000
    rec["latency"] = latencies
    rec["completion"] = np.asarray(latencies) + 100
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "channels": ["isr"],
            "mode": "records", "load": False, "target": {"kind": "model"},
            "stimulus": {"freq_hz": 10_000.0, "period_ticks": 10_000}}
    w = CaptureWriter(path, meta)
    for i in range(0, len(rec), per_chunk):
        w.array(b"LATR", rec[i:i + per_chunk])
    w.close(final={"status": "complete"} if final else None)
    return path


def test_a_cut_off_capture_is_named_by_compare(tmp_path, capsys):
    """B: 219 of 500 records and no final chunk (its writing stopped), or the first
    3000 bytes of the whole file (torn inside a chunk): compare says so, naming the
    file, whatever the verdict."""
    rng = np.random.default_rng(4)
    lat = rng.integers(900, 1100, 500)
    a = write_chunked(tmp_path / "good.rtrig", lat)
    cut = write_chunked(tmp_path / "truncated.rtrig", lat[:219], final=False)
    code, out, err = run(capsys, a, cut)
    assert code == 0, err
    assert f"warning: {cut} is cut off (no final chunk)" in out
    torn = tmp_path / "torn.rtrig"
    torn.write_bytes(a.read_bytes()[:3000])
    j = compare(a, torn).to_json()
    assert any(w.startswith(f"{torn} is cut off at byte ") for w in j["warnings"]), j
    assert not any("cut off" in w for w in compare(a, a).warnings)


def test_the_report_shows_each_figure_with_its_own_verdict(tmp_path):
    """A channel that is B higher at p50 but shows no difference at p9999 (too few
    samples): the report's row of each figure carries that figure's verdict, the
    channel's own row the headline, both as rtrig compare decides them."""
    from rtrig.capture import scan
    from rtrig.host.report.reduction import CaptureReduction
    from rtrig.host.report.verdicts import verdict_rows
    rng = np.random.default_rng(5)
    paths = [write_capture(tmp_path / "a.rtrig", rng.integers(1000, 1100, 3000)),
             write_capture(tmp_path / "b.rtrig", rng.integers(1050, 1150, 3000))]
    caps = [scan(p) for p in paths]
    rows, _ = verdict_rows(caps, ["A", "B"], [CaptureReduction(c) for c in caps])
    ch = compare(*paths).channels["isr"]
    want = {"channel": ch.verdict, "missed": ch.missed["verdict"],
            "distribution": ch.distribution["verdict"],
            **{f.figure: f.verdict for f in ch.figures}}
    assert ch.verdict == HIGHER and want["p9999"] == NONE
    got = {r[3]: r[2].replace("<b>", "").replace("</b>", "") for r in rows}
    assert got == want


def _model_capture(path, tick_hz, latencies_ns, board):
    """A capture of the fast preset's ISR latencies ``latencies_ns`` on a rig of
    ``tick_hz`` ticks/s, in whole ticks as the rig counts them (truncated)."""
    m = {"format": "rtrig-capture", "tick_hz": tick_hz, "simulation": True, "board": board,
         "rtrig_version": "test", "channels": ["isr"], "load": False, "mode": "records",
         "target": {"kind": "model", "preset": "fast"},
         "stimulus": {"freq_hz": 10_000.0, "period_ticks": tick_hz // 10_000,
                      "high_ticks": tick_hz // 20_000, "count": 0, "jitter_ticks": 0}}
    ticks = np.floor(np.asarray(latencies_ns) * tick_hz / 1e9).astype(np.int64)
    with CaptureWriter(path, m) as w:
        rec = np.zeros(len(ticks), dtype=LATENCY_DTYPE)
        rec["pulse"] = np.arange(len(ticks))
        rec["stim_t"] = 1_000 + np.arange(len(ticks), dtype=np.uint64) * (tick_hz // 10_000)
        rec["latency"], rec["completion"] = ticks, ticks + 100
        w.array(b"LATR", rec)
        w.close(final={"status": "complete"})
    return path


def test_captures_of_two_tick_rates_compare_in_ns(tmp_path, capsys):
    """One latency distribution on the 120 MHz and the 96 MHz gateware: no difference
    (in ticks the 96 MHz latencies are 20 % fewer, and KS called them different)."""
    rng = np.random.default_rng(11)
    lat = lambda: 1500 + rng.gamma(2.0, 250.0, 2000)          # noqa: E731  ns
    a = _model_capture(tmp_path / "a.rtrig", 120_000_000, lat(), board=1)
    b = _model_capture(tmp_path / "b.rtrig", 96_000_000, lat(), board=2)
    res = compare(a, b)
    isr = res.channels["isr"]
    assert isr.distribution["verdict"] == NONE, isr.distribution
    assert isr.distribution["statistic"] < 0.05
    assert isr.verdict == NONE, isr.verdict
    # the set-ups differ in their rigs, not in their stimulus: warned as such
    assert any("different rig" in w for w in res.warnings), res.warnings
    assert not any("frequency" in w or "jitter" in w for w in res.warnings), res.warnings
    code, out, _ = run(capsys, a, b)
    assert code == 0 and "differs in shape" not in out and NONE in out, out


def _model_sweep(path, tick_hz, board, params=None):
    from rtrig.host.model.common import ModelParams
    from rtrig.host.model.presets import PRESETS_NS
    model = dataclasses.asdict(ModelParams.from_ns(**(params or PRESETS_NS["fast"]),
                                                   ns_per_tick=1e9 / tick_hz))
    meta = {"format": "rtrig-capture", "tick_hz": tick_hz, "kind": "sweep", "load": False,
            "mode": "records", "rtrig_version": "test", "simulation": True, "board": board,
            "target": {"kind": "model", "preset": "fast", "delay_ticks": 0,
                       "model": model, "description": ""},
            "sweep": {"pulses": 200, "resolution": 0.005}}
    fig = {"hz": 50_000, "below_hz": 49_800, "confirmed": True, "reason": None}
    with CaptureWriter(path, meta) as w:
        w.close(final={"status": "complete", "figures": {"mf_isr_hz": fig}})
    return path


def test_sweeps_of_one_preset_on_two_boards_are_one_target(tmp_path):
    from rtrig.host.model.presets import PRESETS_NS
    a = _model_sweep(tmp_path / "a.rtrig", 120_000_000, board=1)
    b = _model_sweep(tmp_path / "b.rtrig", 96_000_000, board=2)
    warnings = compare(a, b).warnings
    assert "A and B were swept on different targets" not in warnings, warnings
    assert "A and B were swept on different boards" in warnings
    # a target that does differ, in seconds, still does
    slower = dict(PRESETS_NS["fast"], isr_entry_ns=2_000)
    c = _model_sweep(tmp_path / "c.rtrig", 96_000_000, board=2, params=slower)
    assert "A and B were swept on different targets" in compare(a, c).warnings
