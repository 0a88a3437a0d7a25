# SPDX-License-Identifier: BSD-2-Clause
"""Confidence bounds on the percentiles of every summary: the same numbers whichever
way a summary is made, the stated coverage on data with known quantiles, histogram
bounds that bracket the records' ones, and the bounds in the report, the JSON export
and the CLI's table."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from rtrig.capture import scan
from rtrig.host.analysis import (
    PERCENTILES,
    _dist,
    _dist_counts,
    bound_keys,
    bound_ranks,
    stats_summary,
    ticks_to_ns,
)
from rtrig.host.report.page import build_report

EXAMPLES = Path(__file__).resolve().parents[2] / "captures" / "examples"
TICK_HZ = 100_000_000


def _coverage(n, q, lo, hi):
    """P(lo + 1 ≤ B ≤ hi), B ~ Binomial(n, q): the probability that the order
    statistics of 0-based ranks lo, hi (None: unbounded) hold the q-quantile."""
    below = 0.0 if lo is None else stats.binom.cdf(lo, n, q)
    upto = 1.0 if hi is None else stats.binom.cdf(hi, n, q)
    return upto - below


@pytest.mark.parametrize("n", [1, 2, 30, 50, 500, 1000, 20_000])
def test_ranks_are_the_tightest_at_95(n):
    """Each side's tail is at most 2.5 %, and one rank further in it would exceed it."""
    for (lo, hi), p in zip(bound_ranks(n), PERCENTILES.values(), strict=True):
        q = p / 100
        if lo is not None:
            assert stats.binom.cdf(lo, n, q) <= 0.025 < stats.binom.cdf(lo + 1, n, q)
        else:
            assert stats.binom.cdf(0, n, q) > 0.025          # not even rank 0 would do
        if hi is not None:
            assert stats.binom.cdf(hi, n, q) >= 0.975 > stats.binom.cdf(hi - 1, n, q)
        else:
            assert stats.binom.cdf(n - 1, n, q) < 0.975
        assert _coverage(n, q, lo, hi) >= 0.95 or lo is None or hi is None


@pytest.mark.parametrize("tick_hz", [100e6, 48e6, 125e6])
def test_records_and_value_counts_give_the_same_bounds(tick_hz):
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 49, 50, 51, 999, 12_345):
        ticks = rng.integers(0, 40, n) + rng.integers(0, 2, n) * rng.integers(0, 10 ** 5, n)
        a = _dist(ticks_to_ns(ticks, tick_hz), prefix="completion_")
        b = _dist_counts(*np.unique(ticks, return_counts=True), tick_hz, prefix="completion_")
        assert a == b, (n, tick_hz)
        assert set(bound_keys("completion_")) <= a.keys()
        # the bounds are the sorted samples at the ranks, and hold the percentile
        srt = np.sort(ticks)
        for (lo, hi), name in zip(bound_ranks(n), PERCENTILES, strict=True):
            for r, side in ((lo, "lo"), (hi, "hi")):
                want = None if r is None else int(round(ticks_to_ns(srt[r], tick_hz)))
                assert a[f"completion_{name}_{side}_ns"] == want
            if lo is not None:
                assert a[f"completion_{name}_lo_ns"] <= a[f"completion_{name}_ns"]
            if hi is not None:
                assert a[f"completion_{name}_ns"] <= a[f"completion_{name}_hi_ns"]
        assert a["completion_max_exceedance"] == pytest.approx(1 - 0.05 ** (1 / n))


def test_no_samples_and_too_few_samples():
    empty = _dist(np.zeros(0))
    assert all(empty[k] is None for k in bound_keys())
    assert empty == _dist_counts(np.zeros(0), np.zeros(0), TICK_HZ)
    st = _dist(np.arange(50) * 10.0)
    assert st["p999_hi_ns"] is None and st["p9999_hi_ns"] is None and st["p99_hi_ns"] is None
    assert st["p999_lo_ns"] is not None and st["p50_lo_ns"] < st["p50_hi_ns"]
    assert st["max_exceedance"] == pytest.approx(-math.log(0.05) / 50, rel=0.05)   # ≈ 3 / n
    one = _dist(np.array([123.0]))
    # one sample: no bounds on the median, a lower bound on p99 (it lies below the
    # p99 with probability 0.99 ≥ 0.975), none above
    assert one["p50_lo_ns"] is one["p50_hi_ns"] is one["p99_hi_ns"] is None
    assert one["p99_lo_ns"] == one["p9999_lo_ns"] == 123
    assert one["max_exceedance"] == pytest.approx(0.95)


def test_coverage_on_exponential_samples():
    """2000 trials of 500 exponential samples (mean 1 ms): p50's and p99's bounds hold
    the true quantile about as often as the binomial says (≥ 95 %, and not absurdly
    wide); bounds made at 80 % would fall short of 95 %."""
    rng = np.random.default_rng(2024)
    trials, n, scale = 2000, 500, 1e6
    data = rng.exponential(scale, size=(trials, n))
    hits = {"p50": 0, "p99": 0}
    for row in data:
        st = _dist(row)
        for name in hits:
            truth = -scale * math.log(1 - PERCENTILES[name] / 100)
            hits[name] += st[f"{name}_lo_ns"] <= truth <= st[f"{name}_hi_ns"]
    se = math.sqrt(0.95 * 0.05 / trials)
    for (lo, hi), name in zip(bound_ranks(n), PERCENTILES, strict=True):
        if name not in hits:
            continue
        cover = hits[name] / trials
        exact = _coverage(n, PERCENTILES[name] / 100, lo, hi)
        assert 0.95 <= cover <= 0.995, (name, cover)
        assert abs(cover - exact) < 4 * se, (name, cover, exact)
    # Too narrow bounds are caught: at 80 % the same trials cover p99 far less often.
    lo, hi = bound_ranks(n, 0.8)[1]
    srt = np.sort(data, axis=1)
    truth = -scale * math.log(0.01)
    narrow = np.mean((srt[:, lo] <= truth) & (truth <= srt[:, hi]))
    assert narrow < 0.95 - 4 * se


def _stat_from_samples(ticks, width, offset, n_bins):
    """A ``STAT`` chunk's dict (as the rig writes it) of one channel's latencies."""
    t = np.asarray(ticks, dtype=np.int64)
    inside = t[(t >= offset) & ((t - offset) // width < n_bins)]
    hist = np.bincount((inside - offset) // width, minlength=n_bins)
    fig = {"answered": len(t), "missed": 3, "incomplete": 0,
           "lat_min": int(t.min()), "lat_max": int(t.max()), "lat_sum": int(t.sum()),
           "lat_sumsq": int((t * t).sum()), "comp_min": int(t.min()) + 50,
           "comp_max": int(t.max()) + 50, "comp_sum": int(t.sum()) + 50 * len(t),
           "histogram": hist.tolist(), "underflow": int((t < offset).sum()),
           "overflow": int(((t - offset) // width >= n_bins).sum()), "flags": 0, "drops": 0}
    return {"tick_hz": TICK_HZ, "bin_width_ticks": width, "bin_offset_ticks": offset,
            "n_bins": n_bins, "channels": {"isr": fig}}


@pytest.mark.parametrize("width,offset,n_bins", [(1, 0, 4096), (4, 100, 256), (16, 200, 64),
                                                 (8, 0, 1024)])
def test_histogram_bounds_bracket_the_records_bounds(width, offset, n_bins):
    rng = np.random.default_rng(width + offset)
    for n in (40, 700, 5000):
        ticks = 150 + rng.gamma(2.0, 60.0, n).astype(np.int64)
        ticks[: n // 50] += rng.integers(0, 3000, n // 50)      # a far tail (overflow)
        exact = _dist_counts(*np.unique(ticks, return_counts=True), TICK_HZ)
        binned = stats_summary(_stat_from_samples(ticks, width, offset, n_bins), TICK_HZ)["isr"]
        comp = _dist_counts(np.zeros(0), np.zeros(0), TICK_HZ, prefix="completion_")
        assert binned.keys() == {"pulses", "answered", "missed", "missed_fraction",
                                 *exact, *comp}
        top = offset + n_bins * width                             # first tick past the bins
        for name in PERCENTILES:
            lo, hi = binned[f"{name}_lo_ns"], binned[f"{name}_hi_ns"]
            xlo, xhi = exact[f"{name}_lo_ns"], exact[f"{name}_hi_ns"]
            assert (lo is None) == (xlo is None) and (hi is None) == (xhi is None), name
            if lo is not None:
                assert lo <= xlo and lo <= binned[f"{name}_ns"], (name, lo, xlo)
                if offset * 10 <= xlo < top * 10:
                    assert xlo - lo < width * 10
            if hi is not None:
                assert hi >= xhi and hi >= binned[f"{name}_ns"], (name, hi, xhi)
                if offset * 10 <= xhi < top * 10:
                    assert hi - xhi < width * 10
            if width == 1 and offset == 0:
                assert (lo, hi) == (xlo, xhi)
        assert binned["max_exceedance"] == exact["max_exceedance"]
        assert all(binned[k] is None for k in bound_keys("completion_") if k.endswith("_ns"))
        assert binned["completion_max_exceedance"] == exact["max_exceedance"]


def test_json_export_carries_the_bounds():
    from rtrig import load
    from rtrig.host.analysis import missed_mask
    path = EXAMPLES / "model-fast-loaded.rtrig"
    r = subprocess.run([sys.executable, "-m", "rtrig", "export", str(path), "--format", "json",
                        "--output", "-"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    cap = load(path)
    tick_ns = 1e9 / cap.tick_hz                     # the figures are whole ns

    def ns(ticks):
        return round(ticks * tick_ns)

    assert set(d["channels"]) == {"isr", "app"}
    for name, st in d["channels"].items():
        rec = cap.channel(name)
        lat = np.sort(rec["latency"][~missed_mask(rec)].astype(np.int64))
        n = st["answered"]
        assert n == len(lat) == 500
        assert st["max_exceedance"] == pytest.approx(1 - 0.05 ** (1 / n))
        for (lo, hi), p in zip(bound_ranks(n), PERCENTILES, strict=True):
            assert st[f"{p}_lo_ns"] == ns(lat[lo]) <= st[f"{p}_ns"], p
            if hi is None:
                assert st[f"{p}_hi_ns"] is None
            else:
                assert st[f"{p}_ns"] <= st[f"{p}_hi_ns"] == ns(lat[hi]), p
        assert st["p999_hi_ns"] is None                           # 500 samples: too few


def test_report_shows_the_bounds():
    path = EXAMPLES / "model-fast-loaded.rtrig"
    cap = scan(path)
    d = json.loads(_export_json(path))
    page = build_report([cap])
    table = page[page.index("<h3>Latency"):page.index("<h3>Completion")]
    for name, st in d["channels"].items():
        for p in PERCENTILES:
            lo, hi = (st[f"{p}_{s}_ns"] for s in ("lo", "hi"))
            text = "[" + ", ".join("—" if v is None else f"{v / 1000:.4g}"
                                   for v in (lo, hi)) + "]"
            assert f'<span class="ci">{text}</span>' in table, (name, p, text)
        share = f"{100 * st['max_exceedance']:.2g} %"
        assert f"n {st['answered']}, ≤{share} above" in table
    assert "assume independent samples" in page and "kernel tick" in page


def _export_json(path):
    from rtrig import load
    from rtrig.host.integrations.export import summary_json
    return json.dumps(summary_json(load(path)))


def test_cli_table_prints_the_bounds(capsys):
    from rtrig import load
    from rtrig.host.analysis import capture_summary
    from rtrig.host.cli.capture import print_summary
    summary = capture_summary(load(EXAMPLES / "model-fast-loaded.rtrig"))
    print_summary(SimpleNamespace(summary=summary, link={}, path="x.rtrig",
                                  final={"status": "complete"}))
    lines = capsys.readouterr().out.splitlines()
    rows = [ln for ln in lines if ln.startswith("  95 % bounds")]
    assert len(rows) == len(summary)
    isr = summary["isr"]
    want = f"[{isr['p50_lo_ns']}, {isr['p50_hi_ns']}] ns"
    assert want in rows[0]
    assert f"[{isr['p999_lo_ns']}, —] ns" in rows[0]
    assert re.search(r"≤0\.6 %", rows[0])                       # 500 samples: 3 / 500
    header = lines[0]
    assert rows[0].index(want) + len(want) == header.index("p50") + len("p50")
    assert any("independent samples" in ln for ln in lines)


def test_statistics_mode_report_shows_histogram_bounds(tmp_path):
    from rtrig.capture import CaptureWriter
    rng = np.random.default_rng(5)
    ticks = 150 + rng.gamma(2.0, 60.0, 3000).astype(np.int64)
    stat = _stat_from_samples(ticks, 4, 100, 512)
    stat.update(bin_shift=2, bin_count_bits=32, drops=0,
                heartbeat={"edges": 0, "last": 0, "max": 0, "min": 0, "window_ticks": 100000,
                           "windows": 3})
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "mode": "statistics",
            "channels": ["isr"], "load": False, "statistics": {"bin_shift": 2},
            "target": {"kind": "model"},
            "stimulus": {"freq_hz": 1e5, "period_ticks": 1000, "high_ticks": 500}}
    path = tmp_path / "stats.rtrig"
    with CaptureWriter(path, meta) as wr:
        wr.json(b"STAT", stat)
        wr.close(final={"status": "complete"})
    st = stats_summary(stat, TICK_HZ)["isr"]
    page = build_report([scan(path)])
    latency = page[page.index("<h3>Latency"):page.index("<h3>Completion")]
    completion = page[page.index("<h3>Completion"):page.index("Statistics mode:")]
    for p in ("p50", "p99"):
        assert st[f"{p}_lo_ns"] <= st[f"{p}_ns"] <= st[f"{p}_hi_ns"]
        text = f"[{st[f'{p}_lo_ns'] / 1000:.4g}, {st[f'{p}_hi_ns'] / 1000:.4g}]"
        assert f'<span class="ci">{text}</span>' in latency, (p, text)
    assert f"n 3000, ≤{100 * st['max_exceedance']:.2g} % above" in latency
    assert 'class="ci"' not in completion                    # no histogram, no bounds
    assert "widen to whole bins" in page
