# SPDX-License-Identifier: BSD-2-Clause
"""What a closed-loop tool would have said (rtrig.host.closed_loop): the subsequence
a tool with one pulse in flight would have sampled, known exactly on hand-built
records; the timeout rule; a twin capture's ``--json`` field against a recomputation
from its file; the report's section."""

import json
import subprocess
import sys

import numpy as np
import pytest

import rtrig
from rtrig.capture import CaptureWriter, scan
from rtrig.host.analysis import missed_mask
from rtrig.host.closed_loop import (
    NOT_AVAILABLE_STATISTICS,
    _Channel,
    channel_closed_loop,
    chosen,
    closed_loop,
    closed_loop_of_file,
)
from rtrig.host.report import build_report
from rtrig.host.report.closed_loop import TITLE
from rtrig.records import LATENCY_DTYPE

TICK_HZ = 1_000_000          # 1 µs ticks: the hand-built records read in µs


def records(latency_us, period_us, missed=(), channel=0):
    """One channel's records: pulse i rises at i·period, answered after latency[i]
    (µs), or missed for the pulses in ``missed``."""
    n = len(latency_us)
    r = np.zeros(n, dtype=LATENCY_DTYPE)
    r["pulse"] = np.arange(n)
    r["stim_t"] = np.arange(n) * period_us
    r["channel"] = channel
    r["latency"] = latency_us
    r["completion"] = np.asarray(latency_us) + 1
    for i in missed:
        r["flags"][i] = 0x80
        r["latency"][i] = r["completion"][i] = 0
    return r


def slow_stretch():
    """2000 pulses at 50 kHz (20 µs apart), answered after 5 µs, but pulses 500..549
    (a slow stretch of 1 ms) after 200 µs: ten periods."""
    lat = np.full(2000, 5)
    lat[500:550] = 200
    return records(lat, 20)


def test_the_slow_stretch_is_under_sampled_exactly():
    rec = slow_stretch()
    # each slow answer lands on the rise of the pulse ten later, which is taken
    # ("at or after"): the tool samples 500, 510, ..., 540 of the stretch, then 550
    expected = [*range(500), 500, 510, 520, 530, 540, *range(550, 2000)]
    assert np.flatnonzero(chosen(rec, 1000)).tolist() == expected
    c = channel_closed_loop(rec, TICK_HZ)
    o = c["open_loop"]
    assert (c["pulses"], c["samples"], c["timeouts"]) == (1955, 1955, 0)
    assert (o["pulses"], o["answered"], o["missed"]) == (2000, 2000, 0)
    # open loop: 50 of 2000 at 200 µs, the p99 among them; closed loop: 5 of 1955
    assert (o["p99_ns"], o["max_ns"]) == (200_000, 200_000)
    assert (c["p50_ns"], c["p99_ns"], c["max_ns"], c["min_ns"]) == (5000, 5000, 200_000, 5000)
    assert c["p99_difference_ns"] == -195_000 and c["max_difference_ns"] == 0
    assert o["mean_ns"] == pytest.approx((1950 * 5 + 50 * 200) / 2000 * 1000, abs=0.1)
    assert c["mean_ns"] == pytest.approx((1950 * 5 + 5 * 200) / 1955 * 1000, abs=0.1)
    # the slow pulses: at or above the open-loop p99 (200 µs), 45 of 50 never sampled
    assert (c["slow_from_ns"], c["slow_pulses"], c["slow_sampled"]) == (200_000, 50, 5)
    assert c["slow_unsampled_fraction"] == pytest.approx(0.9)


def test_an_answer_one_tick_after_a_rise_skips_that_pulse():
    lat = np.full(100, 5)
    lat[10] = 41                     # answered 1 µs after pulse 12's rise: 13 is next
    assert np.flatnonzero(chosen(records(lat, 20), 1000)).tolist() == \
        [*range(11), *range(13, 100)]


def test_the_timeout_rule():
    # 100 µs apart; pulse 0 missed, 10 answered after 1.5 ms, 20 after exactly 1 ms
    lat = np.full(60, 50)
    lat[10], lat[20] = 1500, 1000
    rec = records(lat, 100, missed=[0])
    # missed: next at its rise + 1 ms (pulse 10); 1.5 ms > the timeout: a timeout, next
    # at 20; 1 ms is within it: a sample, the next pulse the one at its answer (30)
    assert np.flatnonzero(chosen(rec, 1000)).tolist() == [0, 10, 20, *range(30, 60)]
    c = channel_closed_loop(rec, TICK_HZ)
    assert (c["pulses"], c["samples"], c["timeouts"]) == (33, 31, 2)
    assert c["max_ns"] == 1_000_000 and c["open_loop"]["max_ns"] == 1_500_000
    assert c["open_loop"]["missed"] == 1
    # a 0.5 ms timeout: 20 is a timeout too, the next pulse at its rise + 0.5 ms (25)
    assert np.flatnonzero(chosen(rec, 500)).tolist() == [0, 5, *range(6, 10), 10, 15,
                                                           *range(16, 20), 20, *range(25, 60)]
    short = channel_closed_loop(rec, TICK_HZ, timeout_s=0.5e-3)
    assert short["timeouts"] == 3 and short["max_ns"] == 50_000


def test_blocks_give_the_figures_of_the_whole():
    rng = np.random.default_rng(7)
    lat = rng.choice([3, 4, 5, 30, 70], size=3000, p=[0.3, 0.3, 0.3, 0.07, 0.03])
    rec = records(lat, 20, missed=rng.choice(3000, 40, replace=False))
    whole = channel_closed_loop(rec, TICK_HZ)
    for size in (1, 7, 256):
        st = _Channel(1000)
        for i in range(0, len(rec), size):
            st.add(rec[i:i + size])
        assert st.figures(TICK_HZ) == whole, size


def write_capture(path, recs, mode="records"):
    meta = {"tick_hz": TICK_HZ, "mode": mode, "channels": ["isr", "app"]}
    with CaptureWriter(path, meta) as w:
        w.array(b"LATR", recs)
    return path


def test_a_capture_file_loaded_or_scanned(tmp_path):
    isr = slow_stretch()
    app = records(np.full(2000, 30), 20, channel=1)      # each answer skips one pulse
    path = write_capture(tmp_path / "hand.rtrig", np.concatenate([isr, app]))
    res = closed_loop(rtrig.load(path))
    assert res == closed_loop(scan(path)) == closed_loop_of_file(path, {"mode": "records"})
    assert res["available"] and res["timeout_ns"] == 1_000_000
    assert res["channels"]["isr"] == channel_closed_loop(isr, TICK_HZ)
    assert res["channels"]["app"]["pulses"] == 1000


def test_statistics_and_bad_timeouts():
    assert closed_loop_of_file("nowhere.rtrig", {"mode": "statistics"}) == \
        {"available": False, "reason": NOT_AVAILABLE_STATISTICS}
    cap = rtrig.load("captures/examples/model-fast-loaded.rtrig")
    for bad in (0, -1, "soon", float("inf")):
        with pytest.raises(ValueError, match="closed-loop timeout"):
            closed_loop(cap, bad)


# --- a twin capture ---------------------------------------------------------------------

def rtrig_cli(*args):
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=900)


def reference(rec, timeout):
    """The closed-loop tool's pulses, one record at a time (the definition, spelt out)."""
    t = rec["stim_t"].astype(np.int64).tolist()
    lat = rec["latency"].astype(np.int64).tolist()
    missed = missed_mask(rec).tolist()
    out, i = [0], 0
    while True:
        release = t[i] + timeout if missed[i] or lat[i] > timeout else t[i] + lat[i]
        i = next((k for k in range(i + 1, len(t)) if t[k] >= release), None)
        if i is None:
            return out
        out.append(i)


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A loaded model-target capture at 30 kHz: APP answers take longer than a period,
    and some are missed."""
    path = tmp_path_factory.mktemp("closed") / "model.rtrig"
    r = rtrig_cli("--sim", "capture", "--target", "model", "--preset", "fast", "--channels",
                  "isr,app", "--freq", "30k", "--jitter", "5us", "--count", "1000", "--load",
                  "--mode", "records", "--json", "-q", "-o", str(path))
    assert r.returncode == 0, r.stderr
    return path, json.loads(r.stdout)


def test_the_json_field_of_a_twin_capture(twin):
    path, out = twin
    res = out["closed_loop"]
    cap = rtrig.load(path)
    ns = 1e9 / cap.tick_hz
    timeout = round(1e-3 * cap.tick_hz)
    assert res["available"] and res["timeout_ns"] == pytest.approx(timeout * ns)
    assert set(res["channels"]) == set(cap.channels()) == {"isr", "app"}
    for name, c in res["channels"].items():
        rec = cap.channel(name)
        picked = rec[reference(rec, timeout)]
        missed = missed_mask(picked)
        lat = picked["latency"].astype(np.int64)
        ok = ~missed & (lat <= timeout)
        assert c["pulses"] == len(picked) and c["samples"] == int(ok.sum())
        assert c["timeouts"] == len(picked) - int(ok.sum())
        assert c["open_loop"]["pulses"] == len(rec) == out["channels"][name]["pulses"]
        assert c["open_loop"]["p99_ns"] == out["channels"][name]["p99_ns"]
        for key, q in (("p50_ns", 50), ("p99_ns", 99)):
            v = np.percentile(lat[ok], q, method="inverted_cdf")
            assert c[key] == round(v * ns), (name, key)
        assert (c["min_ns"], c["max_ns"]) == (round(lat[ok].min() * ns), round(lat[ok].max() * ns))
        assert c["mean_ns"] == pytest.approx(lat[ok].mean() * ns, abs=0.1)
        assert c["p99_difference_ns"] == c["p99_ns"] - c["open_loop"]["p99_ns"]
        answered = ~missed_mask(rec)
        p99 = np.percentile(rec["latency"][answered], 99, method="inverted_cdf")
        slow = answered & (rec["latency"] >= p99)
        assert c["slow_pulses"] == int(slow.sum())
        assert c["slow_sampled"] == int((slow[reference(rec, timeout)]).sum())
    # APP is slower than the pulses come: the tool sends fewer of them
    assert res["channels"]["app"]["pulses"] < res["channels"]["app"]["open_loop"]["pulses"]


def test_the_report_section(twin, tmp_path):
    path, out = twin
    html = tmp_path / "r.html"
    r = rtrig_cli("report", str(path), "-o", str(html))
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert page.count(TITLE) == 1 and "closed-loop tool" in page
    app = out["closed_loop"]["channels"]["app"]
    assert f"<td>closed-loop tool</td><td>{app['pulses']}</td><td>{app['samples']}</td>" \
        f"<td>{app['timeouts']}</td>" in page


def test_a_statistics_capture_says_not_available(tmp_path):
    path = tmp_path / "stats.rtrig"
    r = rtrig_cli("--sim", "capture", "--target", "model", "--preset", "fast", "--freq", "20k",
                  "--count", "300", "--mode", "statistics", "--json", "-q", "-o", str(path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["closed_loop"] == {"available": False,
                                                   "reason": NOT_AVAILABLE_STATISTICS}
    page = build_report([scan(path)])
    assert page.count(TITLE) == 1 and NOT_AVAILABLE_STATISTICS in page
