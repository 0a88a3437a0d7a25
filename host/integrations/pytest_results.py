# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin's results: a test's figures as JUnit properties
(``record_property``) and as its row of the ``--rtrig-results`` JSON file
(:mod:`rtrig.host.integrations.pytest_plugin`)."""

import contextlib
import datetime
import json
import os
import subprocess
from pathlib import Path

import pytest

from .pytest_fixture import GATES_KEY, LIMITS_KEY, TEST_KEY, VIOLATIONS_KEY

#: Figures of each capture channel recorded as properties and in the results file.
FIGURES = ("pulses", "answered", "missed", "min_ns", "mean_ns", "p50_ns", "p99_ns",
           "p999_ns", "max_ns", "jitter_ns")


def record_properties(item, t):
    """The test's figures as JUnit properties (``record_property``)."""
    props = item.user_properties
    for i, c in enumerate(t.captures, 1):
        props.append((f"rtrig.capture{i}.path", str(c.path)))
        for ch, st in c.summary.items():
            for k in FIGURES:
                if st.get(k) is not None:
                    props.append((f"rtrig.capture{i}.{ch}.{k}", st[k]))
    for i, s in enumerate(t.sweeps, 1):
        props.append((f"rtrig.sweep{i}.path", str(s.path)))
        for k in s.figures:
            v = s.value(k)
            if v is not None:
                props.append((f"rtrig.sweep{i}.{k}", v))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Give the report of a test that used the rig its results row (``rtrig_row``:
    it travels with the report, also from pytest-xdist workers)."""
    report = yield
    if "rtrig" not in getattr(item, "fixturenames", ()):
        return report
    if call.when == "call" or (call.when == "setup" and not report.passed):
        report.rtrig_row = _row(item, report)
    return report


def _row(item, report):
    t = item.stash.get(TEST_KEY, None)
    limits = item.stash.get(LIMITS_KEY, [])
    row = {"test": item.nodeid, "outcome": "error" if report.when == "setup" and
           report.failed else report.outcome,
           "duration_s": round(report.duration, 3),
           "budget": [lim.to_json() for lim in limits],
           "violations": item.stash.get(VIOLATIONS_KEY, []),
           "baseline_gates": [g.to_json() for g in item.stash.get(GATES_KEY, [])],
           "captures": [], "sweeps": []}
    if report.failed:
        row["message"] = str(report.longrepr)[-2000:]
    if t is None:
        return row
    with contextlib.suppress(Exception):
        info = t.info
        row["rig"] = {k: info.get(k) for k in ("port", "simulation", "board", "tick_hz")}
        row["rig"]["gateware_hash"] = f"{info['build_hash']:08x}"
    for c in t.captures:
        row["captures"].append({
            "path": str(c.path), "mode": c.meta.get("mode"),
            "target": (c.meta.get("target") or {}).get("kind"),
            "freq_hz": (c.meta.get("stimulus") or {}).get("freq_hz"),
            "status": c.final.get("status"),
            "channels": {ch: {k: st.get(k) for k in FIGURES} for ch, st in
                         c.summary.items()}})
    for s in t.sweeps:
        row["sweeps"].append({"path": str(s.path),
                              **{k: s.value(k) for k in s.figures},
                              "status": s.final.get("status")})
    return row


class Results:
    """Collects the rows (on the controller, with pytest-xdist) and writes
    ``--rtrig-results``."""

    def __init__(self, config):
        self.config = config
        self.rows = []

    def pytest_runtest_logreport(self, report):
        row = getattr(report, "rtrig_row", None)
        if row is not None:
            self.rows.append(row)

    def pytest_sessionfinish(self, session):
        path = self.config.getoption("rtrig_results", None)
        if not path or hasattr(self.config, "workerinput"):
            return
        from ... import __version__
        out = {"format": "rtrig-pytest-results", "version": 1, "rtrig_version": __version__,
               "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
               "commit": _commit(), "tests": self.rows}
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(out, indent=2) + "\n")


def _commit():
    """The commit under test: from the CI's environment, else git, else None."""
    for var in ("RTRIG_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None
