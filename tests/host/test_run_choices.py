# SPDX-License-Identifier: BSD-2-Clause
"""What a run chooses for itself is something it can do: ``--mode auto`` on a rig
without on-chip statistics (the iCEBreaker's gateware) records, and ``sweep --twins``
starts no more twins than there are cores to run them."""

import types

import pytest

from rtrig.host.procedures.settings import CaptureSettings
from rtrig.host.procedures.stats import choose_mode


class _Rig:
    """What :func:`measure` asks of a rig before it runs: the iCEBreaker's 96 MHz
    ticks, a 3 Mbaud link, and whether it keeps statistics."""
    tick_hz = 96_000_000
    stim_step = 1
    info = {"baud": 3_000_000}

    def __init__(self, statistics):
        self.statistics = statistics

    def has_statistics(self):
        return self.statistics


@pytest.mark.parametrize("statistics, mode", [(True, "statistics"), (False, "records")])
def test_auto_records_on_a_rig_without_statistics(monkeypatch, tmp_path, statistics, mode):
    from rtrig.host.procedures import measure as measure_module
    from rtrig.host.procedures import stats
    ran = []

    def run(kind):
        def runner(*a, **k):
            ran.append(kind)
            return types.SimpleNamespace(summary={})
        return runner
    monkeypatch.setattr(measure_module, "run_capture", run("records"))
    monkeypatch.setattr(stats, "run_stats_capture", run("statistics"))
    monkeypatch.setattr(measure_module, "check_soc_run", lambda *a: None)
    # 200 kHz on two channels: more than the link carries, so records need statistics
    s = CaptureSettings(freq=200e3, count=200_000, target="model", channels=("isr", "app"))
    said = []
    measure_module.measure(_Rig(statistics), s, tmp_path / "c.rtrig", mode="auto",
                           log=said.append)
    assert ran == [mode] and said[0].startswith(f"mode: {mode} (auto")


def test_choose_mode_on_a_rig_without_statistics():
    assert choose_mode(200e3, ("isr", "app"), 3_000_000, count=200_000) == "statistics"
    assert choose_mode(200e3, ("isr", "app"), 3_000_000, count=200_000,
                       on_chip=False) == "records"


class _Obj:
    sim = True


def test_twins_are_capped_at_the_usable_cores(monkeypatch, capsys):
    from rtrig.host.cli import sweep
    monkeypatch.setattr(sweep, "usable_cores", lambda: 2)
    monkeypatch.delenv("RTRIG_SOC_RECORD", raising=False)
    assert sweep.twin_count(_Obj(), 1000) == 2
    assert capsys.readouterr().err == "note: --twins 1000 capped at 2, the usable cores\n"
    assert sweep.twin_count(_Obj(), 2) == 2 and sweep.twin_count(_Obj(), None) == 2
    assert capsys.readouterr().err == ""
