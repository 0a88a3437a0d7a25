# SPDX-License-Identifier: BSD-2-Clause
"""The example captures shipped in captures/examples load with this rtrig."""

from pathlib import Path

import numpy as np
import pytest

import rtrig
from rtrig.host.analysis import capture_summary

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "captures" / "examples").glob("*.rtrig"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_loads_complete(path):
    cap = rtrig.load(path)
    assert cap.complete, cap.final
    if cap.meta.get("kind") != "sweep":
        summary = capture_summary(cap)
        assert summary and all(s["pulses"] > 0 for s in summary.values())


def test_loopback_example_is_exact():
    cap = rtrig.load(next(p for p in EXAMPLES if p.name.startswith("loopback")))
    isr = cap.channel("isr")
    # 1.2 µs in the ULX3S twin's 8.33 ns ticks
    assert cap.tick_hz == 120_000_000
    assert len(isr) == 200 and (isr["latency"] == 144).all()
    stim = cap.events[cap.events["input"] == 14]
    resp = cap.events[cap.events["input"] == 0]
    assert (resp["t"].astype(np.int64) - stim["t"].astype(np.int64) == 144).all()
