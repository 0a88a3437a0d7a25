# SPDX-License-Identifier: BSD-2-Clause
"""One VM per kernel flavour (Debian's generic and PREEMPT_RT), booted once per module.

Where the bed cannot be set up (no QEMU, no headers, not Debian) the tests are skipped
with the reason, except in CI (``CI=true``), where that is a failure: `make test`
installs what they need (``make linux-deps``)."""

import os

import pytest
from linux_bed import VM, BedError, Kernel, build


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(f"Linux test bed: {reason}", pytrace=False)
    pytest.skip(f"Linux test bed: {reason}")


@pytest.fixture(scope="module", params=["generic", "rt"])
def kernel(request):
    try:
        return Kernel(request.param)
    except (BedError, FileNotFoundError) as e:
        _unavailable(e)


@pytest.fixture(scope="module")
def vm(kernel, tmp_path_factory):
    try:
        products = build(kernel)
        guest = VM(kernel, products, tmp_path_factory.mktemp(f"vm-{kernel.flavour}"))
    except BedError as e:
        _unavailable(e)
    # The virtual chip stays loaded: the agent holds its device open once it has
    # driven a line. Each test loads and unloads the target module itself.
    rc, out = guest.sh("insmod /lib/rtrig/rtrig_vgpio.ko")
    assert rc == 0, f"insmod rtrig_vgpio: {out}"
    yield guest
    guest.stop()
