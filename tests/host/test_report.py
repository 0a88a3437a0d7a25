# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the HTML report: the plot data against known ground truth, the figures
against channel_stats, sweeps, several captures and the CLI.

Captures are synthesised with CaptureWriter (fast, exact ground truth)."""

import base64
import json
import re

import numpy as np
import pytest

from rtrig.capture import CaptureWriter, load
from rtrig.host import report
from rtrig.host.analysis import channel_stats
from rtrig.host.cli import main
from rtrig.protocol import EVENT_DTYPE, LATENCY_DTYPE, STIM_INPUT, ChanFlags

TICK_HZ = 100_000_000
PERIOD = 10_000          # 10 kHz
HIGH = 5_000


def make_records(pulses, channel, latency, completion, missed=(), incomplete=(), period=None):
    """Latency records of one channel; ``latency``/``completion`` in ticks."""
    period = PERIOD if period is None else period
    rec = np.zeros(pulses, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(pulses)
    rec["stim_t"] = 1_000 + np.arange(pulses, dtype=np.uint64) * period
    rec["channel"] = channel
    rec["latency"] = latency
    rec["completion"] = completion
    for p in missed:
        rec["flags"][p] = ChanFlags.MISSED
        rec["latency"][p] = 0
        rec["completion"][p] = 0
    for p in incomplete:
        rec["flags"][p] = ChanFlags.INCOMPLETE
    return rec


def events_from_records(records_by_input, pulses, period=None, high=None):
    """Raw events equivalent to the records: STIM0 edges and response edges."""
    period = PERIOD if period is None else period
    high = HIGH if high is None else high
    stim = 1_000 + np.arange(pulses, dtype=np.uint64) * period
    parts = [(stim, STIM_INPUT[0], 1), (stim + high, STIM_INPUT[0], 0)]
    for inp, rec in records_by_input.items():
        ok = (rec["flags"] & ChanFlags.MISSED) == 0
        parts.append((rec["stim_t"][ok] + rec["latency"][ok], inp, 1))
        done = ok & ((rec["flags"] & ChanFlags.INCOMPLETE) == 0)
        parts.append((rec["stim_t"][done] + rec["completion"][done], inp, 0))
        # an incomplete response falls late, after the latency window
        late = ok & ~done
        parts.append((rec["stim_t"][late] + np.uint64(period - 100), inp, 0))
    ev = np.zeros(sum(len(p[0]) for p in parts), dtype=EVENT_DTYPE)
    i = 0
    for t, inp, rising in parts:
        ev["t"][i:i + len(t)] = t
        ev["input"][i:i + len(t)] = inp
        ev["rising"][i:i + len(t)] = rising
        i += len(t)
    return ev[np.argsort(ev["t"], kind="stable")]


def write_capture(path, records=(), events=None, steps=(), final=None, meta=None):
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
         "rtrig_version": "test", "channels": ["isr", "app"], "load": False,
         "mode": "records", "target": {"kind": "model", "description": "synthetic"},
         "stimulus": {"freq_hz": TICK_HZ / PERIOD, "period_ticks": PERIOD,
                      "high_ticks": HIGH, "count": 0, "jitter_ticks": 0}}
    m.update(meta or {})
    with CaptureWriter(path, m) as w:
        for rec in records:
            w.array(b"LATR", rec)
        if events is not None:
            w.array(b"EVNT", events)
        for s in steps:
            w.json(b"STEP", s)
        w.close(final=final if final is not None else {"status": "complete"})
    return load(path)


@pytest.fixture
def two_channel(tmp_path):
    """ISR and APP with random latencies, a few misses and incomplete responses."""
    rng = np.random.default_rng(7)
    n = 5000
    isr_lat = 100 + rng.integers(0, 80, n)
    isr_lat[1234] = 900                          # one outlier, the global max
    isr_lat[4321] = 60                           # and the global min
    isr = make_records(n, 0, isr_lat, isr_lat + 50 + rng.integers(0, 10, n))
    app_lat = 1500 + rng.gamma(2.0, 60.0, n).astype(np.int64)
    app = make_records(n, 1, app_lat, app_lat + 200, missed=(10, 20, 3000),
                       incomplete=(50,))
    ev = events_from_records({0: isr, 1: app}, n)
    cap = write_capture(tmp_path / "two.rtrig", [isr, app], events=ev)
    return cap, isr, app


def _answered(rec):
    return rec[(rec["flags"] & ChanFlags.MISSED) == 0]


# ------------------------------------------------------------------ plot data


def test_histogram_counts_sum_to_answered_and_bins_are_exact(two_channel):
    cap, isr, app = two_channel
    for rec in (isr, app):
        d = report.channel_plot_data(rec, TICK_HZ)
        edges, counts = d["hist"]
        ok = _answered(rec)
        assert counts.sum() == len(ok) == d["stats"]["answered"]
        width = edges[1] - edges[0]
        assert width % 10 == 0                       # whole ticks per bin
        assert np.allclose(np.diff(edges), width)
        # each sample in the right bin: compare with numpy's own histogram
        ref, _ = np.histogram(ok["latency"] * 10.0, bins=edges)
        assert np.array_equal(counts, ref)
        assert len(counts) <= report.HIST_BINS
    d = report.channel_plot_data(app, TICK_HZ)
    done = _answered(app)
    done = done[(done["flags"] & ChanFlags.INCOMPLETE) == 0]
    assert d["completion_hist"][1].sum() == len(done) == len(app) - 4


def test_histogram_range_is_shared():
    edges, counts = report.latency_histogram([5, 6, 7], TICK_HZ, lo=0, hi=1000)
    assert edges[0] <= 0 and edges[-1] >= 10_000 and counts.sum() == 3


def test_markers_equal_channel_stats(two_channel):
    cap, isr, app = two_channel
    for rec in (isr, app):
        d = report.channel_plot_data(rec, TICK_HZ)
        st = channel_stats(rec, TICK_HZ)
        assert d["stats"] == st
        assert d["markers"] == {"min": st["min_ns"], "mean": st["mean_ns"],
                                "p50": st["p50_ns"], "p99": st["p99_ns"],
                                "p99.9": st["p999_ns"], "p99.99": st["p9999_ns"],
                                "max": st["max_ns"]}
    per = report.capture_plot_data(cap)
    fig = report.histogram_figure(per)
    lines = [s["x0"] for s in fig["layout"]["shapes"]]
    want = [v / 1000 for name in per for v in per[name]["markers"].values()]
    assert lines == pytest.approx(want)
    # the outliers are on the plot: global min and max markers
    assert 0.6 in lines and 9.0 in lines


def test_exceedance_exact():
    x, p = report.exceedance([1, 2, 2, 3], TICK_HZ)
    assert x.tolist() == [10.0, 20.0, 30.0]
    assert p.tolist() == [1.0, 0.75, 0.25]


def test_exceedance_thinned_keeps_ends():
    rng = np.random.default_rng(3)
    t = rng.integers(0, 1_000_000, 200_000)
    x, p = report.exceedance(t, TICK_HZ, max_points=900)
    assert len(x) <= 900
    assert x[0] == t.min() * 10 and p[0] == 1.0
    assert x[-1] == t.max() * 10 and p[-1] == pytest.approx(np.sum(t == t.max()) / len(t))
    assert np.all(np.diff(x) > 0) and np.all(np.diff(p) <= 0)
    # every kept point is exact
    for xi, pi in zip(x[::97], p[::97], strict=True):
        assert pi == pytest.approx(np.mean(t * 10 >= xi))


def test_envelope_keeps_extremes():
    rng = np.random.default_rng(5)
    v = rng.normal(1000, 10, 1_000_003)
    v[777_777] = 5000.0
    v[3] = -50.0
    pulse = np.arange(len(v))
    env = report.envelope(pulse, v, max_bins=600)
    assert len(env["min"]) <= 600
    assert env["min"].min() == v.min() and env["max"].max() == v.max()
    assert env["count"].sum() == len(v)
    assert np.sum(env["mean"] * env["count"]) / len(v) == pytest.approx(v.mean())
    # the bin holding the outlier starts at or before it
    k = np.searchsorted(env["pulse"], 777_777, side="right") - 1
    assert env["max"][k] == 5000.0
    small = report.envelope(np.arange(10), np.arange(10.0))
    assert np.array_equal(small["min"], np.arange(10.0))


def test_envelope_in_plot_data_keeps_extremes(two_channel):
    cap, isr, _ = two_channel
    d = report.channel_plot_data(isr, TICK_HZ)
    assert d["envelope"]["max"].max() == 9000.0 and d["envelope"]["min"].min() == 600.0


def test_persistence_from_records_is_exact(tmp_path):
    n = 200
    rec = make_records(n, 0, np.full(n, 123), np.full(n, 5123))
    cap = write_capture(tmp_path / "loop.rtrig", [rec])
    pers = report.persistence(cap, nbins=100, window_ticks=10_000)
    assert pers["source"] == "records" and pers["pulses"] == n
    lanes = {name: (lo, ed, hi) for name, lo, ed, hi in pers["lanes"]}
    lo, ed, hi = lanes["ISR_OUT"]
    # 100 ticks per column: rise in column 1, fall in column 51
    assert ed[1] == n and ed[51] == n and ed.sum() == 2 * n
    assert np.all(hi[1:52] == n) and np.all(hi[:1] == 0) and np.all(hi[52:] == 0)
    assert np.all(lo[2:51] == 0) and lo[0] == n and np.all(lo[51:] == n)
    slo, sed, shi = lanes["STIM0"]
    assert sed[0] == n and sed[50] == n and np.all(shi[:51] == n) and shi[60] == 0


def test_persistence_events_agree_with_records(two_channel, tmp_path):
    cap, isr, app = two_channel
    from_events = report.persistence(cap, nbins=300)
    cap2 = write_capture(tmp_path / "rec.rtrig", [isr, app])
    from_records = report.persistence(cap2, nbins=300,
                                      window_ticks=from_events["window_ns"] / 10)
    assert from_events["source"] == "events" and from_records["source"] == "records"
    a = {name: rest for name, *rest in from_events["lanes"]}
    b = {name: rest for name, *rest in from_records["lanes"]}
    assert set(a) == {"STIM0", "ISR_OUT", "APP_OUT"}
    for name in a:
        for x, y in zip(a[name], b[name], strict=True):
            assert np.array_equal(x, y), name


def test_persistence_figure_image(two_channel):
    cap, *_ = two_channel
    pers = report.persistence(cap, nbins=50)
    z, ticks, labels = report.persistence_image(pers)
    assert labels == ["APP_OUT", "ISR_OUT", "STIM0"]        # bottom to top
    assert z.shape[1] == 50 and z.max() <= 2 * pers["pulses"]
    fig = report.persistence_figure(pers)
    assert fig["data"][0]["z"].dtype == np.uint8


# ------------------------------------------------------------------ sweeps


SWEEP_STEPS = [
    {"freq_hz": 40_000, "isr_missed": 0.0, "app_missed": 0.2, "load_progress": 0.0},
    {"freq_hz": 5_000, "isr_missed": 0.0, "app_missed": 0.0, "load_progress": 0.9},
    {"freq_hz": 20_000, "isr_missed": 0.0, "app_missed": 0.01, "load_progress": 0.3},
    {"freq_hz": 150_000, "isr_missed": 0.4, "app_missed": 0.9, "load_progress": None},
]


def make_sweep(tmp_path):
    return write_capture(tmp_path / "sweep.rtrig", steps=SWEEP_STEPS,
                         meta={"kind": "sweep"},
                         final={"status": "complete", "mf_isr_hz": 127_000.0,
                                "mf_app_hz": 15_000.0, "sf_hz": None})


def test_sweep_plot_data(tmp_path):
    cap = make_sweep(tmp_path)
    sw = report.sweep_plot_data(cap)
    assert sw["freq_hz"].tolist() == [5_000, 20_000, 40_000, 150_000]
    assert sw["app_missed"].tolist() == [0.0, 0.01, 0.2, 0.9]
    assert np.isnan(sw["load_progress"][-1])
    assert sw["marks"] == {"MF-ISR": 127_000.0, "MF-APP": 15_000.0, "SF": None}
    fig = report.sweep_figure(sw)
    marks = {t["name"]: t["x"] for t in fig["data"] if t["name"] in sw["marks"]}
    assert marks == {"MF-ISR": [127_000.0, 127_000.0], "MF-APP": [15_000.0, 15_000.0]}
    assert fig["layout"]["xaxis"]["type"] == "log"
    html = report.build_report([cap])
    assert "MF-ISR" in html and "not found" in html and "127 kHz" in html


# ------------------------------------------------------------------ page


def _figures(html):
    """The figure JSON objects of a report page."""
    return [json.loads(m) for m in re.findall(r"var F=(\{.*?\});Plotly\.newPlot", html)]


def _decode(spec):
    dt = {"f4": "<f4", "f8": "<f8", "u4": "<u4", "u1": "u1", "i4": "<i4"}[spec["dtype"]]
    return np.frombuffer(base64.b64decode(spec["bdata"]), dtype=dt)


def test_report_page(two_channel):
    cap, isr, _ = two_channel
    html = report.build_report([cap])
    import plotly.offline
    js = plotly.offline.get_plotlyjs()
    assert html.count(js) == 1                                            # embedded once
    page = html.replace(js, "")
    assert "<script src=" not in page and "http" not in page             # works offline
    figs = _figures(html)
    assert len(figs) == 5        # latency hist, completion hist, tail, timeline, persistence
    # the histogram's data round-trips through the page: counts sum to answered
    bars = [t for t in figs[0]["data"] if t["type"] == "bar"]
    assert sum(int(_decode(t["y"]).sum()) for t in bars) == len(_answered(isr)) + 4997
    # table in the form of docs/method.md
    for head in ("min", "max", "jitter", "mean", "p50", "p99", "p99.9", "p99.99", "missed"):
        assert f"<th>{head}</th>" in html
    st = channel_stats(isr, TICK_HZ)
    assert f"<td>{st['max_ns'] / 1000:.4g}<br>" in html      # with its exceedance bound
    assert len(html.encode()) < 5_000_000


def test_report_several_captures(two_channel, tmp_path):
    cap, isr, app = two_channel
    slow = make_records(len(isr), 0, isr["latency"] + 200, isr["completion"] + 200)
    cap2 = write_capture(tmp_path / "slow.rtrig", [slow])
    html = report.build_report([cap, cap2])
    assert 'id="compare"' in html
    assert "two · ISR" in html and "slow · ISR" in html
    figs = _figures(html)
    overlay = figs[0]
    xs = [_decode(t["x"]) for t in overlay["data"]]
    assert len(xs) == 2 and np.array_equal(xs[0], xs[1])      # common bins
    ys = [_decode(t["y"]) for t in overlay["data"]]
    assert ys[0].sum() == pytest.approx(1.0, abs=1e-5)
    tail = figs[2]
    assert [t["name"] for t in tail["data"]] == ["two · isr", "two · app", "slow · isr"]


def test_typed_arrays_round_trip():
    a = np.array([1.5, -2.25, 3.0], dtype=np.float32)
    spec = report.figures._jsonable({"x": a, "z": np.arange(6, dtype=np.uint8).reshape(2, 3)})
    assert spec["x"]["dtype"] == "f4" and np.array_equal(_decode(spec["x"]), a)
    assert spec["z"]["shape"] == "2, 3"
    assert "</script>" not in report.figures.figure_json({"data": [], "layout": {"t": "</script>"}})


# ------------------------------------------------------------------ CLI


def test_cli_report(two_channel, tmp_path, capsys):
    cap, *_ = two_channel
    out = tmp_path / "r.html"
    main(["report", str(cap.path), "-o", str(out)])
    assert capsys.readouterr().out.strip() == str(out)
    assert out.stat().st_size > 4_000_000 and b"Plotly.newPlot" in out.read_bytes()


def test_cli_report_errors(tmp_path, capsys):
    bad = tmp_path / "bad.rtrig"
    bad.write_bytes(b"not a capture")
    with pytest.raises(SystemExit) as e:
        main(["report", str(bad), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert e.value.code == 6 and err.startswith("error:") and "Traceback" not in err
    with pytest.raises(SystemExit) as e:
        main(["report", str(tmp_path / "missing.rtrig")])
    assert e.value.code == 6


def test_lane_lost_edge_stays_in_its_pulse():
    # pulse 0 rises at 10 and its fall is lost; pulse 1 rises at 20, falls at 30
    low, edge, high = report.data._lane(2, [False, False], [0, 1, 1], [10, 20, 30],
                                   [True, True, False], window=100, nbins=10)
    assert high.tolist() == [0, 1, 2, 2, 1, 1, 1, 1, 1, 1]
    assert low.tolist() == [2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    assert edge.tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_persistence_ignores_lossy_events(two_channel, tmp_path):
    cap, isr, app = two_channel
    lossy = write_capture(tmp_path / "lossy.rtrig", [isr, app], events=cap.events[::3],
                          final={"status": "complete", "link": {"evt_overflow": 12}})
    assert report.persistence(lossy)["source"] == "records"
    cut = write_capture(tmp_path / "cut.rtrig", [isr, app], events=cap.events, final={})
    cut.final = None                       # cut off: cannot tell whether edges were lost
    assert report.persistence(cut)["source"] == "records"
    only_events = write_capture(tmp_path / "ev.rtrig", [], events=cap.events)
    assert report.persistence(only_events)["source"] == "events"


def test_lane_from_records_equals_lane_from_edges():
    """The fast path for records agrees with the general edge-list lane."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        lat = rng.integers(0, 120, n)
        comp = lat + rng.integers(0, 60, n)
        done = rng.random(n) < 0.8
        window, nbins = int(rng.integers(20, 150)), int(rng.integers(1, 30))
        fast = report.data._lane_records(n + 3, lat, comp, done, window, nbins)   # 3 missed
        t = np.empty(2 * n, dtype=np.int64)
        t[0::2], t[1::2] = lat, np.where(done, comp, -1)
        rising = np.zeros(2 * n, dtype=bool)
        rising[0::2] = True
        slow = report.data._lane(n + 3, False, np.repeat(np.arange(n), 2), t, rising, window, nbins)
        for a, b in zip(fast, slow, strict=True):
            assert np.array_equal(a, b)


# ------------------------------------------------------------------ statistics mode


def make_stats_capture(tmp_path, bin_shift=2, overflow=0):
    """A statistics-mode capture: the rig's histograms, no records."""
    w = 1 << bin_shift
    isr_hist = np.zeros(1024, dtype=np.int64)
    isr_hist[30:40] = [5, 50, 200, 400, 200, 100, 30, 10, 4, 1]       # 1000 answered
    app_hist = np.zeros(1024, dtype=np.int64)
    app_hist[400:410] = 100
    isr_lat = {"lat_min": 30 * w, "lat_max": 39 * w + 1}
    stat = {"tick_hz": TICK_HZ, "n_bins": 1024, "bin_shift": bin_shift, "bin_width_ticks": w,
            "bin_offset_ticks": 0, "bin_count_bits": 32, "drops": 0,
            "heartbeat": {"edges": 0, "last": 0, "max": 0, "min": 0, "window_ticks": 100000,
                          "windows": 3},
            "channels": {
                "app": {"answered": 1000 + overflow, "missed": 7, "incomplete": 0,
                        "lat_min": 400 * w, "lat_max": 410 * w + 5 * overflow,
                        "lat_sum": 405 * w * 1000, "lat_sumsq": (405 * w) ** 2 * 1000,
                        "comp_min": 500 * w, "comp_max": 520 * w, "comp_sum": 510 * w * 1000,
                        "histogram": app_hist.tolist(), "underflow": 0,
                        "overflow": overflow, "flags": 0, "drops": 0},
                "isr": {"answered": 1000, "missed": 0, "incomplete": 0, **isr_lat,
                        "lat_sum": 34 * w * 1000, "lat_sumsq": (34 * w) ** 2 * 1000,
                        "comp_min": 60 * w, "comp_max": 80 * w, "comp_sum": 70 * w * 1000,
                        "histogram": isr_hist.tolist(), "underflow": 0, "overflow": 0,
                        "flags": 0, "drops": 0}}}
    m = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "mode": "statistics",
         "channels": ["isr", "app"], "load": False, "statistics": {"bin_shift": bin_shift},
         "target": {"kind": "model"},
         "stimulus": {"freq_hz": 1e5, "period_ticks": 1000, "high_ticks": 500}}
    path = tmp_path / "stats.rtrig"
    with CaptureWriter(path, m) as wr:
        wr.json(b"STAT", stat)
        wr.close(final={"status": "complete"})
    return load(path), isr_hist, app_hist


def test_statistics_mode_plot_data(tmp_path):
    from rtrig.host.analysis import stats_summary
    cap, isr_hist, app_hist = make_stats_capture(tmp_path)
    per = report.capture_plot_data(cap)
    assert list(per) == ["isr", "app"]
    summary = stats_summary(cap.stats, TICK_HZ)
    d = per["isr"]
    assert d["stats"] == summary["isr"]
    assert d["markers"]["p99"] == summary["isr"]["p99_ns"]
    edges, counts = d["hist"]
    assert counts.sum() == 1000 and counts.tolist() == isr_hist[30:40].tolist()
    assert edges[0] == 30 * 4 * 10 and edges[1] - edges[0] == 40       # 4-tick bins, ns
    x, p = d["tail"]
    assert p[0] == 1.0 and p[-1] == pytest.approx(0.001)
    assert p[3] == pytest.approx((400 + 200 + 100 + 30 + 10 + 4 + 1) / 1000)
    assert d["envelope"] is None and d["resolution_ns"] == 40


def test_statistics_mode_report(tmp_path):
    cap, *_ = make_stats_capture(tmp_path, overflow=3)
    html = report.build_report([cap])
    assert "Statistics mode" in html and "APP 0 below / 3 above" in html
    figs = _figures(html)
    assert len(figs) == 2                 # histogram and tail; no per-pulse views
    _, counts = report.capture_plot_data(cap)["app"]["tail"]
    assert counts[0] == pytest.approx(1.0)     # overflow counted in the tail


# ------------------------------------------------------------------ block by block


def _same(a, b, where="data"):
    """Equal plot data: dicts, lists and tuples item by item, arrays value by value."""
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            if k != "split":                 # the in-memory path's field arrays
                _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(a, b), where
    else:
        assert a == b, where


def _page(html):
    """A report page without its generation time."""
    return re.sub(r"Generated [^<]* UTC", "", html)


def rig_like_capture(path, pulses=20_011, seed=11, app_reversed=False, events=False):
    """ISR and APP records interleaved pulse by pulse, as the rig writes them, in
    LATR chunks of random sizes (from 1 record); with misses, incomplete responses and a far
    outlier (a latency range too wide to count one counter per value)."""
    rng = np.random.default_rng(seed)
    isr_lat = 100 + rng.integers(0, 80, pulses)
    isr_lat[pulses // 3] = 3_000_000
    isr_lat[12] = 40
    isr = make_records(pulses, 0, isr_lat, isr_lat + 50 + rng.integers(0, 10, pulses),
                       incomplete=np.flatnonzero(rng.random(pulses) < 0.001))
    app_lat = 1500 + rng.gamma(2.0, 60.0, pulses).astype(np.int64)
    app = make_records(pulses, 1, app_lat, app_lat + 200,
                       missed=np.flatnonzero(rng.random(pulses) < 0.003),
                       incomplete=np.flatnonzero(rng.random(pulses) < 0.002))
    ev = events_from_records({0: isr, 1: app}, pulses) if events else None
    if app_reversed:
        app = app[::-1]
    rec = np.stack([isr, app], axis=1).reshape(-1)
    cuts = np.cumsum(rng.integers(1, len(rec) // 12, len(rec)))
    chunks = np.split(rec, cuts[cuts < len(rec)])
    assert len(chunks) > 10
    return write_capture(path, chunks, events=ev)


def test_chunked_report_equals_in_memory(tmp_path):
    """The report built block by block from the file's chunks has the numbers of
    the in-memory functions on the loaded capture, and the same page."""
    from rtrig.capture import scan
    from rtrig.host.report.reduction import CaptureReduction
    cap = rig_like_capture(tmp_path / "rig.rtrig")
    chunks = scan(cap.path)
    red = CaptureReduction(chunks)
    assert red.cap is chunks                          # not loaded: read block by block
    per, pers = red.plot_data()
    want = report.capture_plot_data(cap)
    assert list(per) == list(want) == ["isr", "app"]
    _same(per, want)
    _same(pers, report.persistence(cap))
    assert per["isr"]["stats"]["max_ns"] == 30_000_000            # the far outlier
    assert per["app"]["stats"]["missed"] > 0 and len(per["app"]["missed_at"][0])
    assert len(per["isr"]["envelope"]["pulse"]) == report.ENVELOPE_BINS
    assert _page(report.build_report([chunks])) == _page(report.build_report([cap]))


def test_chunked_out_of_pulse_order_is_loaded(tmp_path):
    """A file whose channel is not in pulse order is sorted in memory, as load does."""
    from rtrig.capture import Capture, scan
    from rtrig.host.report.reduction import CaptureReduction
    cap = rig_like_capture(tmp_path / "rev.rtrig", pulses=3000, app_reversed=True)
    red = CaptureReduction(scan(cap.path))
    assert isinstance(red.cap, Capture)
    per, pers = red.plot_data()
    _same(per, report.capture_plot_data(cap))
    _same(pers, report.persistence(cap))


def test_chunked_events_statistics_and_several_captures(tmp_path, two_channel):
    from rtrig.capture import scan
    from rtrig.host.report.reduction import CaptureReduction
    cap, isr, app = two_channel
    ev = rig_like_capture(tmp_path / "ev.rtrig", pulses=2000, events=True)
    for c in (cap, ev):
        per, pers = CaptureReduction(scan(c.path)).plot_data()
        assert pers["source"] == "events"
        _same(per, report.capture_plot_data(c))
        _same(pers, report.persistence(c))
    stats, *_ = make_stats_capture(tmp_path)
    only_events = write_capture(tmp_path / "only.rtrig", [], events=cap.events)
    sweep = make_sweep(tmp_path)
    for c in (stats, only_events, sweep):
        assert _page(report.build_report([scan(c.path)])) == _page(report.build_report([c]))
    several = [cap, ev]
    assert (_page(report.build_report([scan(c.path) for c in several]))
            == _page(report.build_report(several)))


def test_write_report_reads_blocks(two_channel, tmp_path, monkeypatch):
    """``rtrig report`` never loads a capture whose records are in pulse order."""
    from rtrig.host.report import reduction as report_reduction

    def refuse(path):
        raise AssertionError("loaded whole")
    monkeypatch.setattr(report_reduction, "load", refuse)
    cap, *_ = two_channel
    out, size = report.write_report([cap.path], tmp_path / "r.html")
    assert size == out.stat().st_size > 4_000_000


def test_scan_reads_what_load_reads(two_channel, tmp_path):
    from rtrig.capture import scan
    cap, *_ = two_channel
    # a torn last chunk and a trailing partial record are skipped alike
    torn = tmp_path / "torn.rtrig"
    data = cap.path.read_bytes()
    torn.write_bytes(data[:-5])
    for c in (cap, load(torn)):
        s = scan(c.path)
        assert (s.meta, s.final, s.steps, s.stats, s.truncated) == \
            (c.meta, c.final, c.steps, c.stats, c.truncated)
        blocks = list(s.blocks(b"LATR", size=777))
        assert max(len(b) for b in blocks) == 777 and s.count(b"LATR") == len(c.latency)
        lat = np.concatenate(blocks)
        assert np.array_equal(lat[np.lexsort((lat["pulse"], lat["channel"]))], c.latency)
        assert np.array_equal(s.array(b"EVNT"), c.events)
    assert load(torn).truncated


def test_value_counts_dense_and_sparse():
    from rtrig.host.report.reduction import ValueCounts
    rng = np.random.default_rng(2)
    for span in (16, 1 << 24):
        vc = ValueCounts(dense_span=span)
        seen = []
        for k in range(30):
            block = rng.integers(0, 10 if k < 5 else 10 ** (k % 7 + 1), rng.integers(0, 500))
            vc.add(block.astype(np.uint32))
            seen.append(block)
        values, counts = vc.result()
        want = np.unique(np.concatenate(seen), return_counts=True)
        assert np.array_equal(values, want[0]) and np.array_equal(counts, want[1])
    assert vc.sparse is None                    # 10^7 range: one counter per value


def test_stats_from_counts_equal_channel_stats():
    from rtrig.host.analysis import PERCENTILES, channel_stats_from_counts, percentile_ranks
    for n in [*range(1, 400), 9_999, 10_000, 10_001, 123_457]:
        want = np.percentile(np.arange(n), list(PERCENTILES.values()), method="inverted_cdf")
        assert np.array_equal(percentile_ranks(n), want), n
    rng = np.random.default_rng(4)
    for pulses in (1, 2, 7, 1000, 30_000):
        lat = rng.integers(0, 3000, pulses) + rng.integers(0, 2, pulses) * 10 ** 6
        rec = make_records(pulses, 0, lat, lat + 40,
                           missed=np.flatnonzero(rng.random(pulses) < 0.1),
                           incomplete=np.flatnonzero(rng.random(pulses) < 0.1))
        missed = (rec["flags"] & ChanFlags.MISSED) != 0
        done = ~missed & ((rec["flags"] & ChanFlags.INCOMPLETE) == 0)
        got = channel_stats_from_counts(
            pulses, np.unique(rec["latency"][~missed], return_counts=True),
            np.unique(rec["completion"][done], return_counts=True), TICK_HZ)
        assert got == channel_stats(rec, TICK_HZ)
