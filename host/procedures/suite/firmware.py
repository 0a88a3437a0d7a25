# SPDX-License-Identifier: BSD-2-Clause
"""The suite program as the host prepares and awaits it: its configuration block
patched into the image (iterations, the test mask, the pause), and its ``ready`` on
the SoC twin's console."""

import time

import numpy as np

from ....errors import LinkError, UsageError
from ....units import format_s
from .catalog import TESTS

#: The configuration block's magic in the program image (docs/suite.md).
MAGIC = b"RTSUITE1"


def patch_config(image, iterations, tests, pause_cycles=1000):
    """A copy of the program ``image`` (bytes) with its configuration block set."""
    at = image.find(MAGIC)
    if at < 0 or at % 4:
        raise UsageError("the firmware has no suite configuration block (magic RTSUITE1)",
                         hint="a suite firmware holds the block, 4-byte aligned, in its image "
                              "(docs/suite.md, \"Timing your own firmware\"); rtrig's own "
                              "suite: `make -C firmware all` (suite.bin)")
    if not 0 < iterations < 1 << 32:
        raise UsageError(f"iterations must be at least 1, got {iterations}")
    mask = sum(1 << TESTS.index(t) for t in tests)
    words = np.array([iterations, mask, pause_cycles, 0], dtype="<u4").tobytes()
    start = at + len(MAGIC)
    return image[:start] + words + image[start + len(words):]


def wait_ready(rig, timeout_s=120):
    """On the SoC twin: wait until the program has said ``suite: ready`` on its console
    (it listens for the go pulse from then on)."""
    t0 = time.monotonic()
    while "suite: ready" not in rig.sim.console.read_text(errors="replace"):
        if time.monotonic() - t0 > timeout_s:
            raise LinkError(f"the SoC did not say 'suite: ready' within {format_s(timeout_s)}",
                            hint="a suite firmware prints 'suite: ready' on CONSOLE_TX once "
                                 "it listens for the go pulse (docs/suite.md, \"Timing your "
                                 "own firmware\")")
        time.sleep(0.1)
