# SPDX-License-Identifier: BSD-2-Clause
"""Checks shared by the twin tests of every gateware build (``test_twin.py``, the
default twin; ``test_sim_board.py`` and ``test_sim_board_ecp5.py``, the boards'
twins)."""

import numpy as np

from rtrig import load
from rtrig.host import CaptureSettings, run_capture
from rtrig.host.procedures.selftest import compare_with_truth
from rtrig.protocol import Reg


def model_capture_matches_truth(session, tmp_path):
    """A 150-pulse ISR + APP capture of the model target with its truth records: every
    measured figure equals the model's truth. Returns the ISR latencies (ticks)."""
    s = CaptureSettings(freq=20_000, count=150, target="model", channels=("isr", "app"),
                        jitter=3e-6, truth=True,
                        # whole model steps of every twin (1, 2 or 4 ticks)
                        model={"isr_entry": 120, "isr_jitter": 88, "isr_service": 60,
                               "app_wake": 248, "app_service": 72, "tick_period": 3_000,
                               "tick_service": 200, "app": True})
    res = run_capture(session, s, tmp_path / "model.rtrig", progress=False)
    cap = load(res.path)
    ok, detail = compare_with_truth(cap)
    assert ok, detail
    assert len(cap.truth) == 300
    return cap.channel("isr")["latency"]


def loopback_is_exact(session, tmp_path, delay, tick_hz, completion=True):
    """120 loopback pulses at ``delay`` ticks: each answered at exactly ``delay``, the
    stimulus period exact, nothing lost; with ``completion`` also each response's fall
    half a period later."""
    freq = 20_000 if delay < 1_000 else 5_000
    s = CaptureSettings(freq=freq, count=120, target="loopback", delay=delay / tick_hz)
    res = run_capture(session, s, tmp_path / "c.rtrig", progress=False)
    isr = load(res.path).channel("isr")
    assert len(isr) == 120 and list(isr["pulse"]) == list(range(120))
    assert (isr["flags"] == 0).all() and (isr["latency"] == delay).all()
    period = round(tick_hz / freq)
    assert (np.diff(isr["stim_t"].astype(np.int64)) == period).all()
    if completion:
        assert (isr["completion"] == delay + period // 2).all()
    assert res.link == {**res.link, "crc_errors": 0, "lost_packets": 0, "overflows": 0}


def external_wire_reads_zero(session, tmp_path):
    """The twin's external pins are a wire from STIM0 through the registers the board
    has in front of the Rig (DDR buffers, sampler): as on the bench's calibration
    loopback, every pulse answers at 0 ticks, and no glitch is counted."""
    s = CaptureSettings(freq=10_000, count=50, target="external")
    res = run_capture(session, s, tmp_path / "ext.rtrig", progress=False)
    isr = load(res.path).channel("isr")
    assert len(isr) == 50 and (isr["flags"] == 0).all() and (isr["latency"] == 0).all()
    assert session.link.read1(Reg.IN_GLITCHES) == 0
