# SPDX-License-Identifier: BSD-2-Clause
"""rtrig: an open FPGA test rig that measures how deterministic an OS is.

``rtrig.load(path)`` reads a capture file; the ``rtrig`` command drives the rig.
"""

__version__ = "0.1.0"

from .capture import Capture, load  # noqa: E402

__all__ = ["__version__", "load", "Capture"]
