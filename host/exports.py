# SPDX-License-Identifier: BSD-2-Clause
"""The names ``from rtrig.host import …`` offers, each loaded from its module on first
use, so ``import rtrig.host`` costs nothing (the package's ``__getattr__``)."""

import importlib

#: Public name → the module of ``rtrig.host`` that defines it.
EXPORTS = {
    "open_rig": "rig.connect", "Rig": "rig.rig",
    "CaptureSettings": "procedures.settings",
    "run_capture": "procedures.measure", "measure": "procedures.measure",
    "CaptureResult": "rig.run",
    "run_stats_capture": "procedures.stats", "choose_mode": "procedures.stats",
    "StatsCaptureResult": "procedures.stats",
    "run_sweep": "procedures.sweep", "SweepSettings": "procedures.sweep",
    "SweepResult": "procedures.sweep",
    "run_selftest": "procedures.selftest",
    "capture_summary": "analysis", "channel_stats": "analysis",
    "write_report": "report",
    "export": "integrations.export",
    "RigAPI": "api",
    "compare": "report.compare_text", "format_comparison": "report.compare_text",
}

#: The package's ``__all__``.
NAMES = sorted(EXPORTS)


def load(name):
    """The public ``name``, imported from its module (AttributeError for any other)."""
    if name not in EXPORTS:
        raise AttributeError(f"module {__package__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{EXPORTS[name]}", __package__), name)
