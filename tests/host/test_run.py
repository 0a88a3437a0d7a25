# SPDX-License-Identifier: BSD-2-Clause
"""CaptureRun: whatever ends a procedure, its capture file ends with a status."""

import numpy as np
import pytest

import rtrig
from rtrig.errors import LinkError, RigUnplugged
from rtrig.host.rig.run import CaptureRun, end_status
from rtrig.protocol import LATENCY_DTYPE


class FakeRig:
    def __init__(self, halt_fails=False):
        self.halted = 0
        self.halt_fails = halt_fails

    def halt(self):
        self.halted += 1
        if self.halt_fails:
            raise LinkError("no answer")


def _records(n):
    rec = np.zeros(n, dtype=LATENCY_DTYPE)
    rec["pulse"] = np.arange(n)
    rec["latency"] = 7
    return rec


def _meta():
    return {"format": "rtrig-capture", "tick_hz": 100_000_000, "channels": ["isr"],
            "mode": "records"}


def test_finish_writes_the_end_status(tmp_path):
    rig = FakeRig()
    with CaptureRun(rig, tmp_path / "c.rtrig", _meta()) as run:
        run.writer.array(b"LATR", _records(5))
        run.finish({"status": "complete", "records": 5})
    cap = rtrig.load(tmp_path / "c.rtrig")
    assert cap.final["status"] == "complete" and cap.final["end_time"]
    assert len(cap.latency) == 5 and rig.halted == 0


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt(), "interrupted"),
                                         (LinkError("gone"), "link lost"),
                                         (RigUnplugged("rig unplugged"), "unplugged"),
                                         (ValueError("bug"), "failed")])
def test_an_exception_stops_the_stimulus_and_keeps_the_records(tmp_path, exc, status):
    rig = FakeRig()
    salvaged = []

    def salvage(st):
        salvaged.append(st)
        run.writer.array(b"LATR", _records(3))       # what was still buffered
        return {"records": 8}

    run = CaptureRun(rig, tmp_path / "c.rtrig", _meta(), salvage=salvage)
    with pytest.raises(type(exc)), run:
        run.writer.array(b"LATR", _records(5))
        raise exc
    cap = rtrig.load(tmp_path / "c.rtrig")
    assert cap.final["status"] == status == end_status(exc)
    assert cap.final["records"] == 8 and len(cap.latency) == 8
    assert salvaged == [status] and rig.halted == 1


def test_a_failing_salvage_does_not_hide_the_interrupt(tmp_path):
    rig = FakeRig(halt_fails=True)

    def salvage(status):
        raise LinkError("the rig no longer answers")

    run = CaptureRun(rig, tmp_path / "c.rtrig", _meta(), salvage=salvage)
    with pytest.raises(KeyboardInterrupt), run:
        run.writer.array(b"LATR", _records(4))
        raise KeyboardInterrupt
    cap = rtrig.load(tmp_path / "c.rtrig")
    assert cap.final["status"] == "interrupted" and len(cap.latency) == 4


def test_the_procedures_write_through_capture_run():
    # capture, statistics and sweep end their files in one place
    import inspect

    from rtrig.host.procedures import measure, stats, sweep
    for mod in (measure, stats, sweep):
        src = inspect.getsource(mod)
        assert "CaptureRun(" in src and "CaptureWriter(" not in src, mod.__name__
