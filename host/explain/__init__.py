# SPDX-License-Identifier: BSD-2-Clause
"""Why a pulse was slow: the SoC twin's recording of what its CPU executed around each
pulse (:mod:`.recording`), the firmware's symbols and lines (:mod:`.symbols`), and each
pulse's latency split into functions and categories (:mod:`.attribute`). See
docs/explain.md."""

from .attribute import CATEGORIES, explain_pulse
from .recording import RECORD_DTYPE, Recording, load_recording
from .symbols import Symbols

__all__ = ["CATEGORIES", "explain_pulse", "RECORD_DTYPE", "Recording", "load_recording",
           "Symbols"]
