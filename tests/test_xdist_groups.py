# SPDX-License-Identifier: BSD-2-Clause
"""`make test` runs pytest-xdist with ``--dist loadgroup``: the tests of one
``xdist_group`` (one Linux VM per kernel, the board builds of one die) must share a
worker. pytest-xdist 3.8 groups a test by appending ``@group`` to its node id, which
pytest 9.2 no longer reads back (its ids became structured), so there every group was
silently spread over the workers and two of them built and booted one kernel in one
folder at once. This fails when the pinned pair stops grouping."""

import pytest


@pytest.mark.xdist_group("xdist-check")
def test_a_grouped_test_carries_its_group_to_the_scheduler(request):
    # pytest-xdist sets the option on its workers only
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest-xdist --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@xdist-check"), request.node.nodeid
