# SPDX-License-Identifier: BSD-2-Clause
"""Checks shared by the twin tests of every gateware build (``test_twin.py``, the
default twin; ``test_sim_board.py``, a board's twin)."""

from rtrig import load
from rtrig.host import CaptureSettings, run_capture
from rtrig.host.procedures.selftest import compare_with_truth


def model_capture_matches_truth(session, tmp_path):
    """A 150-pulse ISR + APP capture of the model target with its truth records: every
    measured figure equals the model's truth. Returns the ISR latencies (ticks)."""
    s = CaptureSettings(freq=20_000, count=150, target="model", channels=("isr", "app"),
                        jitter=3e-6, truth=True,
                        model={"isr_entry": 120, "isr_jitter": 90, "isr_service": 60,
                               "app_wake": 250, "app_service": 70, "tick_period": 3_000,
                               "tick_service": 200, "app": True})
    res = run_capture(session, s, tmp_path / "model.rtrig", progress=False)
    cap = load(res.path)
    ok, detail = compare_with_truth(cap)
    assert ok, detail
    assert len(cap.truth) == 300
    return cap.channel("isr")["latency"]
