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

import importlib

#: Public name → the module that defines it.
_EXPORTS = {
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

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
