# SPDX-License-Identifier: BSD-2-Clause
"""On-chip statistics through the Verilator twin: the figures the rig accumulates agree
exactly with the records it streams, and stay exact where records mode cannot follow."""

import dataclasses
import math

import numpy as np
import pytest

from rtrig import load
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.analysis import bound_keys, channel_stats, stats_summary
from rtrig.host.model.common import ModelParams
from rtrig.host.model.presets import PRESETS_NS
from rtrig.host.procedures.stats import choose_mode, run_stats_capture
from rtrig.host.sim import sim_board
from rtrig.protocol import ChanFlags, Reg

BOARD = sim_board()
TICK_HZ = BOARD.clk_freq * BOARD.tick_step        # the default twin's: 8.33 ns ticks
TICK_NS = 1e9 / TICK_HZ


@pytest.fixture(scope="module")
def rig():
    with open_rig(sim=True) as session:
        yield session


def _expected_hist(lat, shift, offset, n_bins):
    lat = lat.astype(np.int64)
    inside = lat[(lat >= offset) & (((lat - offset) >> shift) < n_bins)]
    hist = np.bincount((inside - offset) >> shift, minlength=n_bins)
    return list(hist), int((lat < offset).sum()), int(((lat - offset) >> shift >= n_bins).sum())


def test_same_run_statistics_equal_records(rig, tmp_path):
    """Records streamed and statistics accumulated from one run of the model target
    (ISR jitter, APP wake-ups, load and kernel tick): every figure agrees exactly."""
    shift, offset = 2, 100
    link = rig.link
    link.configure(STAT_BIN_SHIFT=shift, STAT_BIN_OFFSET=offset, HB_WINDOW=60_000)
    link.write(Reg.STAT_CTRL, 1)           # run_capture's CLEAR zeroes the figures
    model = dataclasses.asdict(ModelParams.from_ns(ns_per_tick=TICK_NS, **PRESETS_NS["fast"]))
    s = CaptureSettings(freq=5_000, count=150, target="model", model=model,
                        channels=("isr", "app"), load=True)
    try:
        res = run_capture(rig, s, tmp_path / "both.rtrig", progress=False)
        link.write(Reg.STAT_CTRL, 0)
        got = rig.read_statistics(s.plan, shift, offset)
        hb = {r: link.read1(Reg[r]) for r in ("HB_COUNT", "HB_MIN", "HB_MAX", "HB_WINDOWS")}
    finally:
        link.write(Reg.STAT_CTRL, 0)
    assert res.final["status"] == "complete" and res.link["overflows"] == 0
    # 30 ms of stimulus in 0.5 ms windows; the load task keeps running at 5 kHz.
    assert 55 <= hb["HB_WINDOWS"] <= 60
    assert 0 < hb["HB_MIN"] <= hb["HB_MAX"]
    assert hb["HB_MIN"] * hb["HB_WINDOWS"] <= hb["HB_COUNT"]
    cap = load(res.path)
    stat = {"tick_hz": TICK_HZ, "bin_width_ticks": 1 << shift, "bin_offset_ticks": offset,
            "n_bins": 1024, "channels": got}
    summary = stats_summary(stat, TICK_HZ)
    for name in s.channels:
        recs = cap.channel(name)
        assert len(recs) == 150
        missed = (recs["flags"] & ChanFlags.MISSED) != 0
        ok = recs[~missed]
        lat = ok["latency"].astype(np.int64)
        comp = ok["completion"].astype(np.int64)
        g = got[name]
        assert g["answered"] == len(ok) > 100 and g["missed"] == missed.sum()
        assert (g["lat_min"], g["lat_max"]) == (lat.min(), lat.max())
        assert g["lat_sum"] == int(lat.sum())
        assert g["lat_sumsq"] == sum(int(v) * int(v) for v in lat)
        assert (g["comp_min"], g["comp_max"], g["comp_sum"]) == \
            (comp.min(), comp.max(), int(comp.sum()))
        hist, under, over = _expected_hist(lat, shift, offset, 1024)
        assert g["histogram"] == hist and (g["underflow"], g["overflow"]) == (under, over)
        assert g["drops"] == 0 and g["consistent"]
        assert lat.max() - lat.min() > 20            # the comparison is not trivial
        # The summary has channel_stats' keys; exact except bin-resolution figures.
        ref = channel_stats(recs, TICK_HZ)
        mine = summary[name]
        assert mine.keys() == ref.keys()
        for k in ("pulses", "answered", "missed", "missed_fraction", "min_ns", "max_ns",
                  "jitter_ns", "mean_ns", "completion_min_ns", "completion_max_ns",
                  "completion_mean_ns", "completion_jitter_ns"):
            assert mine[k] == ref[k], k
        assert math.isclose(mine["std_ns"], ref["std_ns"], abs_tol=0.11)
        width_ns = (1 << shift) * TICK_NS
        for p in ("p50", "p99", "p999", "p9999"):
            assert mine[f"{p}_ns"] <= ref[f"{p}_ns"] < mine[f"{p}_ns"] + width_ns, p
            # the histogram's bounds bracket the records', widened by under a bin
            for side, sign in (("lo", 1), ("hi", -1)):
                binned, exact = mine[f"{p}_{side}_ns"], ref[f"{p}_{side}_ns"]
                assert (binned is None) == (exact is None), (p, side)
                if binned is not None:
                    assert 0 <= sign * (exact - binned) < width_ns, (p, side, binned, exact)
        assert mine["max_exceedance"] == ref["max_exceedance"]


@pytest.mark.parametrize("jitter", [0.0, 30e-6])
def test_statistics_capture_equals_records_capture(rig, tmp_path, jitter):
    """Two captures of the loopback target, one per mode: identical summaries (bin
    width 1 tick, so percentiles are exact too)."""
    s = CaptureSettings(freq=20_000, count=120, target="loopback", delay=1.2e-6,
                        jitter=jitter)
    rec = run_capture(rig, s, tmp_path / "r.rtrig", progress=False)
    st = run_stats_capture(rig, s, tmp_path / "s.rtrig", bin_shift=0, progress=False)
    # Completion time has min/max/mean only in statistics mode (no sum of squares,
    # no histogram): its std and percentiles are None; everything else is identical.
    no_comp_dist = {f"completion_{k}_ns" for k in ("std", "p50", "p99", "p999", "p9999")}
    no_comp_dist |= {k for k in bound_keys("completion_") if k.endswith("_ns")}
    mine, ref = st.summary["isr"], rec.summary["isr"]
    assert mine.keys() == ref.keys()
    assert all(mine[k] is None for k in no_comp_dist)
    assert {k: v for k, v in mine.items() if k not in no_comp_dist} == \
        {k: v for k, v in ref.items() if k not in no_comp_dist}
    assert st.final["status"] == "complete" and st.final["pulses_issued"] == 120
    cap = load(st.path)
    assert cap.meta["mode"] == "statistics" and cap.stats["bin_width_ticks"] == 1
    assert cap.stats["channels"]["isr"]["histogram"][144] == 120          # 1.2 µs
    assert len(cap.latency) == 0


def test_statistics_exact_at_1mhz(rig, tmp_path):
    """1 MHz for 20 ms: far beyond the link (records mode would overflow), every pulse
    counted, min = max = the loopback delay, completion = delay + high time."""
    n = 20_000
    s = CaptureSettings(freq=1e6, count=n, target="loopback", delay=0.4e-6)   # 48 ticks
    assert choose_mode(s.freq, s.channels, rig.info["baud"], count=n) == "statistics"
    res = run_stats_capture(rig, s, tmp_path / "fast.rtrig", progress=False)
    st = res.stats["channels"]["isr"]
    assert res.final["status"] == "complete" and res.final["pulses_issued"] == n
    assert (st["answered"], st["missed"], st["drops"]) == (n, 0, 0)
    assert st["lat_min"] == st["lat_max"] == 48
    assert st["lat_sum"] == 48 * n and st["lat_sumsq"] == 48 * 48 * n
    assert st["comp_min"] == st["comp_max"] == 48 + 60          # + half the 120-tick period
    assert res.stats["bin_width_ticks"] == 1 and st["histogram"][48] == n
    assert res.summary["isr"]["min_ns"] == res.summary["isr"]["max_ns"] == 400
    assert res.summary["isr"]["p9999_ns"] == 400


def test_choose_mode():
    baud = 3_000_000
    assert choose_mode(1_000, ["isr"], baud) == "records"
    assert choose_mode(10_000, ["isr"], baud) == "records"
    assert choose_mode(10_000, ["isr", "app"], baud) == "statistics"
    assert choose_mode(10_000, ["isr"], baud, raw_events=True) == "statistics"
    assert choose_mode(1e6, ["isr"], baud) == "statistics"
    # a short burst fits in the rig's FIFO
    assert choose_mode(1e6, ["isr"], baud, count=300) == "records"
    assert choose_mode(1e6, ["isr"], baud, count=3000) == "statistics"
    # the model's truth records share the link: 5 kHz of isr + app records take about
    # 2.4 Mbit/s of the 2.55 that 3 Mbaud carries, with their truth about 4.2
    assert choose_mode(5_000, ["isr", "app"], baud) == "records"
    assert choose_mode(5_000, ["isr", "app"], baud, truth=True) == "statistics"
