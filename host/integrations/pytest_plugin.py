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

This module is the entry point: the options, the marker, and the hooks and fixtures of
its parts — the session's rig (:mod:`.pytest_rig`), the ``rtrig`` fixture
(:mod:`.pytest_fixture`), budgets (:mod:`.pytest_budget`) and results
(:mod:`.pytest_results`). pytest reads the hooks and fixtures imported here as its own.
"""

import contextlib

from ..procedures.options import options
from .pytest_budget import MARKER, pytest_runtest_call, pytest_runtest_setup
from .pytest_fixture import RtrigTest, rtrig
from .pytest_results import Results, pytest_runtest_makereport
from .pytest_rig import lg_env, rtrig_session

__all__ = ["RtrigTest"]
#: The hooks and fixtures of the parts, which pytest finds in this module.
_PARTS = (pytest_runtest_setup, pytest_runtest_call, pytest_runtest_makereport, rtrig,
          rtrig_session)


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
        "markers", f"{MARKER}(channel='isr', p99='5us', max='10us', missed=0, "
        "mf_isr_min='100k', ...; or baseline='isr.rtrig', p99='+5%', missed='+0', ...): "
        "fail the test when a capture or sweep it made is out of budget, or worse than "
        "the baseline's by more than the allowance (rtrig, docs/ci.md)")
    config.pluginmanager.register(Results(config), "rtrig-results")
    if lg_env(config):
        with contextlib.suppress(ImportError):
            from . import labgrid_driver  # noqa: F401  (registers RtrigDriver)


def pytest_collection_modifyitems(config, items):
    """A test with a budget gets the ``rtrig`` fixture even if it does not name it."""
    for item in items:
        if item.get_closest_marker(MARKER) is not None and \
                "rtrig" not in getattr(item, "fixturenames", ("rtrig",)):
            item.fixturenames.append("rtrig")
