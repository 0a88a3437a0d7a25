# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig history add`` and ``show`` on captures of known content; cyclictest's
``--json`` and ``-h`` results; bad input in one line; ``--history`` on a capture of
the simulated rig."""

import json
import subprocess
import sys

import numpy as np
import pytest
from history_helpers import rtrig, write_capture, write_sweep

CYCLICTEST_JSON = {
    "file_version": 1, "num_threads": 2, "resolution_in_ns": 0,
    "sysinfo": {"sysname": "Linux", "nodename": "pi4", "release": "6.12.117-rt",
                "realtime": 1},
    "thread": {"0": {"histogram": {"10": 500, "11": 400, "12": 99}, "cycles": 1000,
                     "min": 10, "max": 250, "avg": 10.9, "cpu": 0, "node": 0},
               "1": {"histogram": {"11": 1000}, "cycles": 1000, "min": 11, "max": 11,
                     "avg": 11.0, "cpu": 1, "node": 0}}}

CYCLICTEST_H = """# Histogram
000000 000000\t000000
000001 000005\t000000
000002 000003\t000002
# Total: 000000008 000000003
# Min Latencies: 00001 00002
# Avg Latencies: 00001 00002
# Max Latencies: 00002 00009
# Histogram Overflows: 00000 00001
"""


@pytest.fixture
def history(tmp_path, capsys):
    """Four captures: kernel 6.1 twice (isr 10.00..10.99 µs), 6.12 twice (12.00..12.99 µs)."""
    db = tmp_path / "h.sqlite"
    for i, (kernel, base) in enumerate((("6.1", 1000), ("6.1", 1000), ("6.12", 1200),
                                        ("6.12", 1200))):
        path = write_capture(tmp_path / f"c{i}.rtrig", np.arange(base, base + 100).repeat(10),
                             board="ulx3s" if i != 1 else "icebreaker")
        code, out, err = rtrig(capsys, "history", "add", path, "--history", db,
                               "--label", f"kernel={kernel}", "--label", f"commit=c{i}")
        assert code == 0, err
        assert out.strip() == str(i + 1) and f"run {i + 1} (capture" in err
    return db


def test_show_lists_runs_and_a_figure_by_group(history, capsys):
    code, out, _ = rtrig(capsys, "history", "show", "--history", history)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["run", "recorded", "(UTC)", "kind", "board", "target", "labels"]
    assert len(lines) == 5 and "commit=c1 kernel=6.1" in lines[2] and "icebreaker" in lines[2]
    code, out, _ = rtrig(capsys, "history", "show", "--history", history, "--figure", "isr.p99",
                         "--by", "kernel", "--where", "board=ulx3s")
    assert code == 0
    lines = out.splitlines()
    # p99 of 1000 samples, 10 of each of 100 values: the 990th, value base + 98 ticks
    assert lines[1].split()[:4] == ["6.1", "1", "10.980", "µs"]
    assert lines[2].split()[:4] == ["6.12", "2", "12.980", "µs"]
    code, out, _ = rtrig(capsys, "history", "show", "--history", history, "--figure", "isr.p99",
                         "--by", "kernel", "--json")
    rows = json.loads(out)
    assert [(r["kernel"], r["runs"], r["last"], r["unit"]) for r in rows] == [
        ("6.1", 2, 10_980, "ns"), ("6.12", 2, 12_980, "ns")]
    assert rows[0]["lo"] <= 10_980 <= rows[0]["hi"]


def test_sweep_figures_with_their_resolution(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    rtrig(capsys, "history", "add", write_sweep(tmp_path / "s.rtrig", 120e3, 115e3),
          "--history", db)
    code, out, _ = rtrig(capsys, "history", "show", "--history", db, "--figure", "mf_isr",
                         "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert (row["value"], row["lo"], row["hi"], row["unit"]) == (120e3, 115e3, 120e3, "Hz")


def test_cyclictest_json_and_histogram(tmp_path, capsys):
    ct = tmp_path / "ct.json"
    ct.write_text(json.dumps(CYCLICTEST_JSON))
    hist = tmp_path / "ct.hist"
    hist.write_text(CYCLICTEST_H)
    db = tmp_path / "h.sqlite"
    code, out, err = rtrig(capsys, "history", "add", ct, hist, "--history", db,
                           "--label", "kernel=6.12.117-rt")
    assert code == 0, err
    code, out, _ = rtrig(capsys, "history", "show", "--history", db, "--json")
    runs = json.loads(out)
    assert [(r["kind"], r["board"]) for r in runs] == [("cyclictest", "pi4"),
                                                       ("cyclictest", "unknown")]
    def figure(name):
        code, out, err = rtrig(capsys, "history", "show", "--history", db, "--figure", name,
                               "--json")
        assert code == 0, err
        return [(r["value"], r["lo"], r["hi"]) for r in json.loads(out)]
    # json: 2000 samples, 500 at 10 µs, 1400 at 11, 99 at 12, one beyond (at most 250)
    assert figure("cyclictest.p50")[0][0] == 11_000
    assert figure("cyclictest.max")[0][0] == 250_000
    assert figure("cyclictest.pulses") == [(2000, None, None), (11, None, None)]
    assert figure("cyclictest.thread1.max")[0][0] == 11_000
    lo, hi = figure("cyclictest.p99")[0][1:]
    assert lo <= 12_000 <= hi
    # -h: 8 + 3 samples, thread 1's 9 µs among the overflows
    assert figure("cyclictest.min")[1][0] == 1000 and figure("cyclictest.max")[1][0] == 9000


@pytest.mark.parametrize("args, says", [
    (["history", "add", "nosuch.rtrig"], "no such file: nosuch.rtrig"),
    (["history", "add", "{tmp}/junk.txt"], "junk.txt"),
    (["history", "add", "{tmp}/c.rtrig", "--label", "kernel"], "expected KEY=VALUE"),
    (["history", "add", "{tmp}/c.rtrig", "--label", "board=x"], "board is a set-up field"),
    (["history", "show", "--figure", "isr.p98"], "no run holds figure 'isr.p98'"),
    (["history", "show", "--by", "kernel"], "--by needs --figure"),
    (["history", "show", "--history", "{tmp}"], "is a directory"),
    (["history", "report", "--figure", "isr.p98", "-o", "{tmp}/t.html"], "isr.p98"),
], ids=["missing", "junk", "label", "setup-label", "figure", "by", "directory", "report"])
def test_bad_input_is_one_line(tmp_path, capsys, args, says):
    (tmp_path / "junk.txt").write_text("hello\nworld\n")
    write_capture(tmp_path / "c.rtrig", np.arange(100))
    db = tmp_path / "h.sqlite"
    rtrig(capsys, "history", "add", tmp_path / "c.rtrig", "--history", db)
    args = [a.format(tmp=tmp_path) for a in args]
    if "--history" not in args:
        args += ["--history", db]
    code, out, err = rtrig(capsys, *args)
    assert code != 0 and out == ""
    assert err.startswith("error: ") and says in err.splitlines()[0], err
    assert len(err.splitlines()) <= 2 and "Traceback" not in err


def test_a_simulated_capture_records_as_it_finishes(tmp_path):
    """``rtrig capture --sim … --history DB --label …``: the loopback's 1.2 µs, as
    ``rtrig capture --json`` prints it, is the history's."""
    db = tmp_path / "h.sqlite"
    r = subprocess.run([sys.executable, "-m", "rtrig", "capture", "--sim", "--target",
                        "loopback", "--delay", "1.2us", "--freq", "10k", "--count", "500",
                        "-o", str(tmp_path / "l.rtrig"), "--json", "-q", "--history", str(db),
                        "--label", "kernel=loop"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "history: run 1 (capture" in r.stderr
    printed = json.loads(r.stdout)["channels"]["isr"]
    from rtrig.host.history import History
    with History(db) as h:
        runs = h.runs({"kernel": "loop"})
        assert [x["board"] for x in runs] == ["sim"]
        assert h.figures("isr.p50", runs)[1][:3] == (printed["p50_ns"], printed["p50_lo_ns"],
                                                    printed["p50_hi_ns"])
        assert h.figures("isr.pulses", runs)[1][0] == 500


def test_a_cut_off_or_dead_capture_is_recorded_with_a_warning(tmp_path, capsys):
    # recorded (its status says "unfinished" / its missed say all), never silently
    good = write_capture(tmp_path / "good.rtrig", np.arange(1000, 1100))
    dead = write_capture(tmp_path / "dead.rtrig", [], missed=500)
    whole = good.read_bytes()
    torn = tmp_path / "torn.rtrig"
    torn.write_bytes(whole[:len(whole) // 2])
    db = tmp_path / "h.sqlite"
    code, _, err = rtrig(capsys, "history", "add", good, "--history", db)
    assert code == 0 and "warning" not in err, err
    code, _, err = rtrig(capsys, "history", "add", dead, torn, "--history", db)
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert any("dead.rtrig has no answered pulse on ISR" in w for w in warnings), err
    assert any("torn.rtrig is cut off" in w for w in warnings), err
    assert len(warnings) == 2, err


_THREAD = {"cycles": 300, "min": 1, "avg": 2, "max": 9}


@pytest.mark.parametrize("histogram,word", [
    ({"1000000000000": 1}, "bucket 1000000000000"),      # was a MemoryError (7 TiB)
    ({"5": 10**30}, "more samples than there can be"),    # was an OverflowError
    ({"-1": 300}, "bucket -1"),                           # was 300 samples at 9 µs
])
def test_cyclictest_json_is_checked_before_it_is_recorded(capsys, tmp_path, histogram, word):
    src = tmp_path / "ct.json"
    src.write_text(json.dumps({"thread": {"0": {**_THREAD, "histogram": histogram}}}))
    db = tmp_path / "h.db"
    code, _, err = rtrig(capsys, "history", "add", src, "--history", db)
    assert code not in (0, 70) and word in err, err
    assert err.count("error:") == 1 and "Traceback" not in err
    if db.exists():
        code, out, _ = rtrig(capsys, "history", "show", "--history", db)
        assert "ct.json" not in out
