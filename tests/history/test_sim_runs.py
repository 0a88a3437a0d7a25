# SPDX-License-Identifier: BSD-2-Clause
"""Runs of the simulated rig recorded as they finish — a capture of records, one of
on-chip statistics, a sweep and a kernel-suite run (``--history DB``) — and the same
files added to a PostgreSQL history: both histories show the same, and each figure
is the one the command printed."""

import json
import subprocess
import sys

import pytest
from history_helpers import rtrig

# One worker for the module: its module-scoped twin runs are made once, not once
# per worker that takes one of its tests.
pytestmark = pytest.mark.xdist_group("history-sim-runs")

#: (10 kHz of isr and app records: 65 % of the twin's fast link, so ``--mode auto``
#: keeps records)
RUNS = {
    "records": ["capture", "--target", "model", "--preset", "fast", "--freq", "10k",
                "--count", "1000"],
    "statistics": ["capture", "--target", "model", "--preset", "fast", "--freq", "10k",
                   "--count", "1000", "--mode", "statistics"],
    "sweep": ["sweep", "--target", "model", "--preset", "fast", "--from", "120k", "--to",
              "200k", "--channels", "isr"],
    "suite": ["suite", "--target", "soc", "--tests", "yield,event_wake", "--iterations", "20"],
}


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory):
    """``(sqlite path, {name: (capture file, printed JSON)})``."""
    tmp = tmp_path_factory.mktemp("sim")
    db = tmp / "h.sqlite"
    out = {}
    for name, args in RUNS.items():
        path = tmp / f"{name}.rtrig"
        r = subprocess.run([sys.executable, "-m", "rtrig", args[0], "--sim", *args[1:], "-q",
                            "--json", "-o", str(path), "--history", str(db), "--label",
                            f"run={name}"], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        assert f"({'capture' if name == 'records' else name}, {path}) recorded" in r.stderr
        out[name] = (path, json.loads(r.stdout))
    return db, out


def test_each_figure_is_the_one_printed(sim_runs, capsys):
    db, runs = sim_runs
    from rtrig.host.history import History
    with History(db) as h:
        every = h.runs()
        assert [r["kind"] for r in every] == ["capture", "statistics", "sweep", "suite"]
        for name in ("records", "statistics"):
            (run,) = h.runs({"run": name})
            printed = runs[name][1]["channels"]["isr"]
            for key in ("p50", "p99", "max"):
                value, lo, hi, _ = h.figures(f"isr.{key}", [run])[run["id"]]
                assert value == printed[f"{key}_ns"], (name, key)
                if key != "max":
                    assert (lo, hi) == (printed[f"{key}_lo_ns"], printed[f"{key}_hi_ns"])
        (sweep,) = h.runs({"run": "sweep"})
        printed = runs["sweep"][1]
        hz, below = printed["mf_isr_hz"], printed["below_hz"]["mf_isr_hz"]
        assert h.figures("mf_isr", [sweep])[sweep["id"]][:3] == (hz, below, hz)
        (suite,) = h.runs({"run": "suite"})
        row = runs["suite"][1]["tests"]["yield"]
        assert h.figures("suite.yield.p99", [suite])[suite["id"]][0] == row["p99_ns"]


def test_postgresql_shows_the_same(sim_runs, pg_url, capsys):
    db, runs = sim_runs
    for name, (path, _) in runs.items():
        code, _, err = rtrig(capsys, "history", "add", path, "--history", pg_url, "--label",
                             f"run={name}")
        assert code == 0, err
    for args in (["--figure", "isr.p99", "--by", "run"], ["--figure", "mf_isr", "--by", "run"],
                 ["--figure", "suite.yield.max", "--by", "run"],
                 ["--figure", "isr.missed", "--by", "run"]):
        shown = []
        for where in (db, pg_url):
            code, out, err = rtrig(capsys, "history", "show", "--history", where, *args)
            assert code == 0, err
            shown.append(out)
        assert shown[0] == shown[1] and len(shown[0].splitlines()) >= 2, args
