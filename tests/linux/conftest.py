# SPDX-License-Identifier: BSD-2-Clause
"""One VM per row of the kernel matrix (linux_bed.MATRIX: 6.1 and 6.12, generic and
PREEMPT_RT, x86_64 and arm64), booted once per module. Each row is an xdist group of
its own, so the rows boot on all workers at once. ``make test`` boots one row per
kernel line and architecture (``RTRIG_LINUX_MATRIX=family``), ``make test-linux`` all.

A row whose kernel line Debian no longer ships is skipped with that reason. Where the
bed cannot be set up (no QEMU, no cross compiler, not Debian) the tests are skipped
with the reason, except in CI (``CI=true``), where that is a failure: `make test`
installs what they need (``make linux-deps``)."""

import os

import pytest
from linux_bed import MATRIX, VM, BedError, Kernel, NotShipped, build, matrix_skip


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(f"Linux test bed: {reason}", pytrace=False)
    pytest.skip(f"Linux test bed: {reason}")


def _row_id(row):
    return "-".join(row)


@pytest.fixture(scope="module", params=[
    pytest.param(row, id=_row_id(row), marks=pytest.mark.xdist_group(f"linux-{_row_id(row)}"))
    for row in MATRIX])
def kernel(request):
    if matrix_skip(request.param):
        pytest.skip(matrix_skip(request.param))
    try:
        return Kernel(*request.param)
    except NotShipped as e:
        pytest.skip(str(e))
    except (BedError, FileNotFoundError) as e:
        _unavailable(e)


@pytest.fixture(scope="module")
def vm(kernel, tmp_path_factory):
    try:
        products = build(kernel)
        guest = VM(kernel, products, tmp_path_factory.mktemp(f"vm-{kernel.release}"))
    except (BedError, FileNotFoundError) as e:
        _unavailable(e)
    # The virtual chip stays loaded: the agent holds its device open once it has
    # driven a line. Each test loads and unloads the target module itself.
    rc, out = guest.sh("insmod /lib/rtrig/rtrig_vgpio.ko")
    assert rc == 0, f"insmod rtrig_vgpio: {out}"
    yield guest
    guest.stop()
