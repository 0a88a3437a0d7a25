# SPDX-License-Identifier: BSD-2-Clause
"""The Python API's sweep passes the tick rules through to the sweep (docs/sweep.md)."""

from types import SimpleNamespace

import rtrig.host.procedures.sweep as sweep_mod
from rtrig.host.api import RigAPI


def test_api_sweep_passes_tick_and_max_pulses(tmp_path, monkeypatch):
    seen = {}

    def fake_run_sweep(session, settings, path, log=None):
        seen["settings"] = settings
        return settings

    monkeypatch.setattr(sweep_mod, "run_sweep", fake_run_sweep)
    api = RigAPI(SimpleNamespace(tick_hz=100e6, stim_step=1), captures=tmp_path)
    api.sweep("10k", "100k", target="external", tick=0.002, max_pulses=30_000)
    assert seen["settings"].tick == 0.002 and seen["settings"].step_cap == 30_000
    api.sweep("10k", "100k", target="external")
    assert seen["settings"].tick is None and seen["settings"].step_cap == 20_000
