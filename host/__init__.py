# SPDX-License-Identifier: BSD-2-Clause
"""The host side of rtrig: the library the ``rtrig`` command is a thin layer over.

The front door for scripts and notebooks::

    from rtrig.host import CaptureSettings, open_rig, run_capture

    with open_rig(sim=True) as rig:
        res = run_capture(rig, CaptureSettings(freq=10e3, count=500, target="model"),
                          "model.rtrig")
    print(res.summary["isr"]["p99_ns"])

The names below are loaded on first use, so ``import rtrig.host`` costs nothing.
"""

from .exports import NAMES as __all__  # noqa: F401
from .exports import load as __getattr__  # noqa: F401
