# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig history report``: steps between consecutive groups judged by compare's
own verdict. Ten captures of the model target (its reference's latencies, the
truth the rig records: tests/host/test_model_ref.py), labelled by kernel, whose ISR
entry is 1 µs slower from one kernel on: exactly that step is marked (on the ISR's
figures, and on the APP's, which the model starts after the ISR), never the step
between two kernels of the same latency."""

import dataclasses
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from history_helpers import rtrig

from rtrig.capture import CaptureWriter
from rtrig.host.history import History
from rtrig.host.history.query import groups
from rtrig.host.history.steps import steps
from rtrig.host.model.common import TICK_HZ
from rtrig.host.model.presets import preset
from rtrig.host.model.reference import simulate_periodic
from rtrig.host.report.compare import HIGHER, NONE
from rtrig.protocol import LATENCY_DTYPE, ChanFlags

PERIOD = 3_001
#: kernel of each run, in the order recorded; the ISR entry slows at 6.12
KERNELS = ["6.1"] * 3 + ["6.6"] * 3 + ["6.12"] * 4


def _model_capture(path, params, pulses, start):
    r = simulate_periodic(params, PERIOD, pulses, start=start)
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
            "rtrig_version": "test", "channels": ["isr", "app"], "load": False,
            "mode": "records", "target": {"kind": "model", "preset": "fast"},
            "stimulus": {"freq_hz": TICK_HZ / PERIOD, "period_ticks": PERIOD,
                         "high_ticks": PERIOD // 2, "count": 0, "jitter_ticks": 0}}
    with CaptureWriter(path, meta) as w:
        for ch, (lat, missed) in enumerate(((r.isr_latency, r.isr_missed),
                                            (r.app_latency, r.app_missed))):
            rec = np.zeros(pulses, dtype=LATENCY_DTYPE)
            rec["pulse"] = np.arange(pulses)
            rec["stim_t"] = 1000 + np.arange(pulses, dtype=np.uint64) * PERIOD
            rec["channel"] = ch
            rec["latency"] = np.where(missed, 0, lat)
            rec["completion"] = np.where(missed, 0, lat + 50)
            rec["flags"] = np.where(missed, ChanFlags.MISSED, 0)
            w.array(b"LATR", rec)
        w.close(final={"status": "complete"})
    return path


@pytest.fixture(scope="module")
def model_history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trend")
    db = tmp / "h.sqlite"
    base = preset("fast")
    slower = dataclasses.replace(base, isr_entry=base.isr_entry + 120)     # +1 µs
    from rtrig.host.history import runs_of_file
    with History(db) as h:
        for i, kernel in enumerate(KERNELS):
            params = dataclasses.replace(slower if kernel == "6.12" else base, seed=11 + i)
            path = _model_capture(tmp / f"run{i}.rtrig", params, 2000, start=37 * i)
            (run,) = runs_of_file(path, {"kernel": kernel, "commit": f"c{i}"})
            h.record(run)
    return db


def test_exactly_the_changed_step_is_marked(model_history):
    with History(model_history) as h:
        runs = h.runs()
        grouped = groups(runs, "kernel")
        assert [g for g, _ in grouped] == ["6.1", "6.6", "6.12"]
        for figure in ("isr.p50", "isr.p99", "app.p50", "app.p99", "isr.missed"):
            found = steps(h, figure, grouped, h.figures(figure, runs))
            verdicts = [(s.a, s.b, s.verdict) for s in found]
            assert [(a, b) for a, b, _ in verdicts] == [("6.1", "6.6"), ("6.6", "6.12")]
            assert verdicts[0][2] == NONE, figure
            if figure in ("isr.p50", "isr.p99", "app.p50"):
                assert verdicts[1][2] == HIGHER, figure
                assert found[1].diff[0] > 0
            if figure == "isr.missed":
                assert verdicts[1][2] == NONE


def test_the_report_marks_the_step(model_history, tmp_path, capsys):
    out = tmp_path / "trend.html"
    code, stdout, err = rtrig(capsys, "history", "report", "--history", model_history,
                              "-o", out, "--by", "kernel", "--figure", "isr.p50",
                              "--figure", "isr.p99", "--figure", "app.p99")
    assert code == 0, err
    assert stdout.strip() == str(out) and "3 steps marked" in err
    text = out.read_text()
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>"
                      r"<td class='(\w*)'>([^<]*)</td>", text)
    assert rows == [(f, "6.6", "6.12", "higher", HIGHER)
                    for f in ("isr.p50", "isr.p99", "app.p99")]
    figs = [json.loads(m) for m in re.findall(r"var F=(\{.*?\});Plotly", text)]
    marked = [f for f in figs if f["layout"].get("shapes")]
    assert [f["layout"]["title"]["text"] for f in marked] == ["isr.p50", "isr.p99", "app.p99"]
    # the step line lies between the last 6.6 run (the 6th) and the first 6.12 run
    assert all(len(f["layout"]["shapes"]) == 1 for f in marked)
    assert marked[0]["layout"]["shapes"][0]["x0"] == 5.5


def test_each_run_its_own_group_without_by(model_history, tmp_path, capsys):
    code, _, err = rtrig(capsys, "history", "report", "--history", model_history,
                         "-o", tmp_path / "t.html", "--figure", "isr.p50", "--where",
                         "kernel=6.12")
    assert code == 0 and "0 steps marked" in err


CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome")) if p), None)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: chromium)")
def test_the_trend_page_draws_in_chromium(model_history, tmp_path, capsys):
    """Headless Chromium loads the page offline: every plot drawn, no console error."""
    out = tmp_path / "trend.html"
    code, _, err = rtrig(capsys, "history", "report", "--history", model_history, "-o", out,
                         "--by", "kernel")
    assert code == 0, err
    n = out.read_text().count("Plotly.newPlot(")
    profile = tmp_path / "profile"
    res = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                          "--virtual-time-budget=10000", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    errors = [line for line in res.stderr.splitlines()
              if "CONSOLE" in line and re.search(r"error|uncaught|warn", line, re.I)]
    assert errors == []
    assert n >= 8       # two band plots, and p50, p99, p99.99, max, missed of two channels
    assert len(re.findall(r'<div id="f\d+"[^>]*js-plotly-plot', res.stdout)) == n


def test_a_run_without_the_figure_neither_ends_a_group_nor_hides_the_step(
        model_history, tmp_path, capsys):
    """A cyclictest run labelled like the last captures joins no ISR group: the
    step of isr.p50 is still marked (judged on the captures alone)."""
    import sqlite3
    db = tmp_path / "copy.sqlite"
    with sqlite3.connect(model_history) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    ct = tmp_path / "ct.json"
    ct.write_text(json.dumps({"sysinfo": {"nodename": "pi"}, "thread": {"0": {
        "histogram": {"10": 100}, "cycles": 100, "min": 10, "max": 10, "avg": 10.0}}}))
    code, _, err = rtrig(capsys, "history", "add", ct, "--history", db, "--label",
                         "kernel=6.12")
    assert code == 0, err
    code, _, err = rtrig(capsys, "history", "report", "--history", db, "-o",
                         tmp_path / "t.html", "--by", "kernel", "--figure", "isr.p50")
    assert code == 0 and "1 steps marked" in err, err
