# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin's ``rtrig`` fixture: what a test gets (:class:`RtrigTest`, the
rig's ``capture`` and ``sweep`` with every result kept), and the keys under which the
plugin keeps a test's results, budget and verdicts in the test's stash
(:mod:`rtrig.host.integrations.pytest_plugin`)."""

import inspect
import re
from pathlib import Path

import pytest

from ..api import RigAPI

#: The test's :class:`RtrigTest`.
TEST_KEY = pytest.StashKey()
#: The test's budget: its limits, read from its markers.
LIMITS_KEY = pytest.StashKey()
#: The messages of the limits the test's figures broke.
VIOLATIONS_KEY = pytest.StashKey()
#: The baselines the test's limits refer to, loaded before it runs.
BASELINES_KEY = pytest.StashKey()
#: The verdicts of the test's captures against their baselines.
GATES_KEY = pytest.StashKey()


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
        """The captures and sweeps as :func:`rtrig.host.integrations.budget_check.check`
        takes them."""
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
    request.node.stash[TEST_KEY] = t
    return t
