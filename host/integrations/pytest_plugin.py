# SPDX-License-Identifier: BSD-2-Clause
"""pytest plugin ``rtrig``: a rig fixture and latency budgets for CI (docs/ci.md).

Installed with rtrig (entry point ``pytest11``), it only registers its options, the
``latency_budget`` marker and the ``rtrig`` fixture: a test suite that does not use
them runs as before, and no rig is opened unless a test asks for the fixture.

* ``--rtrig-port PORT`` (a serial port or pyserial URL) or ``--rtrig-sim`` (the
  simulation twin, with ``--rtrig-target`` and ``--rtrig-firmware``) say which rig;
  with labgrid's ``--lg-env`` the rig comes from the labgrid target's
  ``RtrigDriver`` (:mod:`rtrig.host.integrations.labgrid_driver`). One rig session serves the
  whole test session.
* The ``rtrig`` fixture offers ``capture(...)`` and ``sweep(...)``
  (:class:`rtrig.host.api.RigAPI`: the options of ``rtrig capture`` and ``rtrig
  sweep``, from the one option table :mod:`rtrig.host.procedures.options`, which also
  gives ``--rtrig-target`` its choices) and remembers what the test measured; its
  capture files go to ``--rtrig-captures DIR``, one folder per test.
* ``@pytest.mark.latency_budget(channel="isr", p99="5us", missed=0, mf_isr_min="100k")``
  checks every capture and sweep of the test (:mod:`rtrig.host.integrations.budget`); a figure
  out of budget fails the test with a message naming the figure, the limit, the
  measured value and the capture file.
* ``@pytest.mark.latency_budget(baseline="isr.rtrig", p99="+5%", max="+10%",
  missed="+0")`` gates every capture against a baseline capture kept next to the
  tests (a relative path is taken from the test file's folder): a figure fails only
  when it is worse than the baseline's by more than the allowance at the stated
  ``confidence``. A baseline that is missing or of the wrong kind is an error of the
  test.
* The figures go into the JUnit XML (``record_property``: ``rtrig.capture1.isr.p99_ns``
  …, and each baseline comparison: ``rtrig.capture1.isr.p99.verdict`` …) and, with
  ``--rtrig-results PATH``, into a JSON file with one row per test.
"""

import contextlib
import datetime
import inspect
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ..api import RigAPI
from ..procedures.options import options

__all__ = ["RtrigTest"]

_MARKER = "latency_budget"
#: Figures of each capture channel recorded as properties and in the results file.
_FIGURES = ("pulses", "answered", "missed", "min_ns", "mean_ns", "p50_ns", "p99_ns",
            "p999_ns", "max_ns", "jitter_ns")
_TEST_KEY = pytest.StashKey()
_LIMITS_KEY = pytest.StashKey()
_VIOLATIONS_KEY = pytest.StashKey()
_BASELINES_KEY = pytest.StashKey()
_GATES_KEY = pytest.StashKey()


def pytest_addoption(parser):
    g = parser.getgroup("rtrig", "rtrig latency rig (docs/ci.md)")
    g.addoption("--rtrig-port", metavar="PORT", default=None,
                help="Rig serial port or pyserial URL for the rtrig fixture.")
    g.addoption("--rtrig-sim", action="store_true", default=False,
                help="Give the rtrig fixture the simulation twin instead of a rig.")
    g.addoption("--rtrig-target", default=None,
                choices=list(options("capture")["target"].choices),
                help="Default target of captures and sweeps [default: external on a rig, "
                     "model on the twin].")
    g.addoption("--rtrig-firmware", metavar="FILE", default=None,
                help="--rtrig-sim --rtrig-target soc: the SoC's RAM image (.bin).")
    g.addoption("--rtrig-baud", metavar="RATE", default="3M",
                help="Baud rate of the rig's serial port [default: 3M].")
    g.addoption("--rtrig-captures", metavar="DIR", default=None,
                help="Folder for the tests' capture files, one subfolder per test "
                     "[default: rtrig/ in pytest's temporary directory].")
    g.addoption("--rtrig-results", metavar="PATH", default=None,
                help="Write the measured figures to this JSON file, one row per test.")
    g.addoption("--rtrig-history", metavar="DB", default=None,
                help="Record each test's captures and sweeps into this history (an SQLite "
                     "file or a postgresql:// URL; docs/history.md).")
    g.addoption("--rtrig-label", metavar="KEY=VALUE", action="append", default=[],
                help="A label of the runs recorded into --rtrig-history (repeatable).")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{_MARKER}(channel='isr', p99='5us', max='10us', missed=0, "
        "mf_isr_min='100k', ...; or baseline='isr.rtrig', p99='+5%', missed='+0', ...): "
        "fail the test when a capture or sweep it made is out of budget, or worse than "
        "the baseline's by more than the allowance (rtrig, docs/ci.md)")
    config.pluginmanager.register(_Results(config), "rtrig-results")
    if _lg_env(config):
        with contextlib.suppress(ImportError):
            from . import labgrid_driver  # noqa: F401  (registers RtrigDriver)


def _lg_env(config):
    """Does this run take its rig from labgrid (``--lg-env`` or ``LG_ENV``)?"""
    if not config.pluginmanager.hasplugin("labgrid"):
        return False
    return bool(getattr(config.option, "lg_env", None) or os.environ.get("LG_ENV"))


def pytest_collection_modifyitems(config, items):
    """A test with a budget gets the ``rtrig`` fixture even if it does not name it."""
    for item in items:
        if item.get_closest_marker(_MARKER) is not None and \
                "rtrig" not in getattr(item, "fixturenames", ("rtrig",)):
            item.fixturenames.append("rtrig")


def _no_rig(message):
    pytest.fail(f"rtrig: {message}", pytrace=False)


@pytest.fixture(scope="session")
def rtrig_session(request, tmp_path_factory):
    """The session's rig: a :class:`~rtrig.host.api.RigAPI` (or labgrid's
    ``RtrigDriver``, which offers the same calls). Opened on first use, closed at the
    end of the test session. A rig that cannot be had is an error of the tests that
    need it, not a failure."""
    from ...errors import RtrigError
    from ...units import parse_frequency
    cfg = request.config
    folder = _captures_dir(cfg, tmp_path_factory)
    if _lg_env(cfg):
        target = request.getfixturevalue("target")
        problem = None
        try:
            from . import labgrid_driver  # noqa: F401
            drv = target.get_driver("RtrigDriver")
        except RtrigError as e:
            problem = _message(e)
        except Exception as e:          # labgrid's own errors: no driver, place busy …
            problem = f"labgrid target '{target.name}' gives no rig: {type(e).__name__}: {e}"
        if problem:
            _no_rig(problem)
        drv.captures = folder
        yield drv
        return
    port, sim = cfg.getoption("rtrig_port"), cfg.getoption("rtrig_sim")
    if not port and not sim:
        _no_rig("no rig given: use --rtrig-port PORT, --rtrig-sim, or labgrid's --lg-env")
    if port and sim:
        _no_rig("give either --rtrig-port or --rtrig-sim, not both")
    from ..api import open_api
    try:
        baud = int(parse_frequency(cfg.getoption("rtrig_baud")))
    except ValueError as e:
        baud, problem = None, f"--rtrig-baud: {e}"
    if baud is None:
        _no_rig(problem)
    with contextlib.ExitStack() as stack:
        problem = None
        try:
            api = stack.enter_context(open_api(
                port, sim, target=cfg.getoption("rtrig_target"),
                firmware=cfg.getoption("rtrig_firmware"), captures=folder, baudrate=baud))
        except RtrigError as e:
            problem = _message(e)
        except OSError as e:
            problem = f"cannot open the rig on {port}: {e}"
        if problem:                 # outside the handler: no chained traceback
            _no_rig(problem)
        yield api


def _message(e):
    hint = getattr(e, "hint", None)
    return f"{e}" + (f" (hint: {hint})" if hint else "")


def _captures_dir(config, tmp_path_factory):
    d = config.getoption("rtrig_captures")
    if not d:
        return tmp_path_factory.getbasetemp() / "rtrig"
    return (config.invocation_params.dir / d).resolve()


class RtrigTest:
    """What the ``rtrig`` fixture gives a test: the rig's ``capture`` and ``sweep``,
    with every result kept (``captures``, ``sweeps``) for the test's budget, its JUnit
    properties and the results file. Capture files go to ``folder``."""

    def __init__(self, rig, folder):
        self.rig = rig
        self.folder = Path(folder)
        self.captures = []
        self.sweeps = []

    @property
    def info(self):
        return self.rig.info

    def _path(self, kind, n):
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / f"{kind}-{n}.rtrig"

    def capture(self, *args, path=None, **kwargs):
        """:meth:`rtrig.host.api.RigAPI.capture`, recorded for the budget."""
        path = path or self._path("capture", len(self.captures) + 1)
        res = self.rig.capture(*args, path=path, **kwargs)
        self.captures.append(res)
        return res

    def sweep(self, *args, path=None, **kwargs):
        """:meth:`rtrig.host.api.RigAPI.sweep`, recorded for the budget."""
        path = path or self._path("sweep", len(self.sweeps) + 1)
        res = self.rig.sweep(*args, path=path, **kwargs)
        self.sweeps.append(res)
        return res

    # The same options as RigAPI's, which checks them.
    capture.__signature__ = inspect.signature(RigAPI.capture)
    sweep.__signature__ = inspect.signature(RigAPI.sweep)

    def measured(self):
        """The captures and sweeps as :func:`rtrig.host.integrations.budget_check.check` takes them."""
        caps = [{"path": str(c.path), "summary": c.summary} for c in self.captures]
        sws = [{"path": str(s.path),
                "figures": {k: {"hz": t.hz if t else None,
                                "below_hz": t.below_hz if t else None,
                                "reason": s.reasons.get(k)}
                            for k, t in s.figures.items()}} for s in self.sweeps]
        return caps, sws


def _test_folder(nodeid):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.replace("::", "-")).strip("_")
    return name[:150] or "test"


@pytest.fixture
def rtrig(request, rtrig_session):
    """The rig of this test session, with ``capture(...)`` and ``sweep(...)``
    (docs/ci.md). What the test measures is checked against its
    ``latency_budget`` marker(s) and recorded."""
    folder = Path(getattr(rtrig_session, "captures", "captures"))
    t = RtrigTest(rtrig_session, folder / _test_folder(request.node.nodeid))
    request.node.stash[_TEST_KEY] = t
    return t


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Read the budget and its baselines before the test runs: a budget that cannot be
    understood, or a baseline file that is missing or of the wrong kind, is an error
    of the test, not a failure."""
    from .budget import BudgetError
    from .history_gate import labels_of_test, load_all, parse_marker
    limits, problem = [], None
    db = item.config.getoption("rtrig_history", None)
    folder = Path(str(getattr(item, "path", None) or item.fspath)).parent
    for m in item.iter_markers(_MARKER):
        if m.args:
            raise pytest.UsageError(f"{item.nodeid}: {_MARKER} takes keywords only "
                                    "(e.g. p99='5us')")
        try:
            limits += parse_marker(m.kwargs, folder, db)
        except BudgetError as e:
            problem = str(e)
            break
    if problem is None:
        try:
            limits, item.stash[_BASELINES_KEY], notes = load_all(
                limits, db, labels_of_test(item.config, item.nodeid))
            for note in notes:
                item.warn(pytest.PytestWarning(f"rtrig: {note}"))
        except BudgetError as e:
            problem = str(e)
    if problem:                 # outside the handler: no chained traceback
        pytest.fail(problem, pytrace=False)
    item.stash[_LIMITS_KEY] = limits


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After the test: record its figures, then check its budget (only when the test
    itself passed: a test that failed has said what is wrong)."""
    t = item.stash.get(_TEST_KEY, None)
    try:
        result = yield
    except BaseException:
        if t is not None:
            _record(item, t)
            _record_history(item, t, "failed")
        raise
    if t is None:
        return result
    _record(item, t)
    for w in _warnings(t):
        item.warn(pytest.PytestWarning(f"rtrig: {w}"))
    limits = item.stash.get(_LIMITS_KEY, [])
    if limits:
        from .budget_check import evaluate
        bad, gates = evaluate(limits, *t.measured(), item.stash.get(_BASELINES_KEY, {}))
        item.stash[_VIOLATIONS_KEY] = [v.message for v in bad]
        item.stash[_GATES_KEY] = gates
        for g in gates:
            item.user_properties += g.properties()
        item.user_properties.append(("rtrig.budget", "failed" if bad else "met"))
        _record_history(item, t, "failed" if bad else "complete")
        if bad:
            pytest.fail("\n".join(v.message for v in bad), pytrace=False)
    else:
        _record_history(item, t, "complete")
    return result


def _record_history(item, t, status):
    """With ``--rtrig-history``: the test's runs into the history
    (:func:`rtrig.host.integrations.history_gate.record_test`)."""
    db = item.config.getoption("rtrig_history", None)
    if db is not None and (t.captures or t.sweeps):
        from ...errors import RtrigError
        from .budget import BudgetError
        from .history_gate import labels_of_test, record_test
        try:
            record_test(db, labels_of_test(item.config, item.nodeid), t, status)
        except (RtrigError, BudgetError) as e:
            item.warn(pytest.PytestWarning(f"rtrig: not recorded into {db}: {e}"))


def _warnings(t):
    """What is missing from the test's captures and sweeps, one line each
    (:func:`rtrig.host.analysis.capture_warnings`)."""
    from ...capture import scan
    from ...errors import RtrigError
    from ..analysis import capture_warnings
    out = []
    for c in t.captures:
        with contextlib.suppress(RtrigError, OSError):
            out += capture_warnings(scan(c.path), {ch: (st.get("answered"), st.get("pulses"))
                                                   for ch, st in c.summary.items()})
    for s in t.sweeps:
        with contextlib.suppress(RtrigError, OSError):
            out += capture_warnings(scan(s.path))
    return out


def _record(item, t):
    """The test's figures as JUnit properties (``record_property``)."""
    props = item.user_properties
    for i, c in enumerate(t.captures, 1):
        props.append((f"rtrig.capture{i}.path", str(c.path)))
        for ch, st in c.summary.items():
            for k in _FIGURES:
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
    t = item.stash.get(_TEST_KEY, None)
    limits = item.stash.get(_LIMITS_KEY, [])
    row = {"test": item.nodeid, "outcome": "error" if report.when == "setup" and
           report.failed else report.outcome,
           "duration_s": round(report.duration, 3),
           "budget": [lim.to_json() for lim in limits],
           "violations": item.stash.get(_VIOLATIONS_KEY, []),
           "baseline_gates": [g.to_json() for g in item.stash.get(_GATES_KEY, [])],
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
            "channels": {ch: {k: st.get(k) for k in _FIGURES} for ch, st in
                         c.summary.items()}})
    for s in t.sweeps:
        row["sweeps"].append({"path": str(s.path),
                              **{k: s.value(k) for k in s.figures},
                              "status": s.final.get("status")})
    return row


class _Results:
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
