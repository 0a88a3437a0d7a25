# SPDX-License-Identifier: BSD-2-Clause
"""The default twin (``--sim``) is the ECP5 boards' gateware (the ULX3S's; the
OrangeCrab's is the same rig): the compact rig at 30 MHz with four samples of each input
per clock (ticks of a quarter clock, 8.33 ns), interval channels and bursts. Loopback
latencies and the model target's truth are known exactly, so every figure is checked
against them."""

import pytest
from twin_checks import external_wire_reads_zero, loopback_is_exact, model_capture_matches_truth

from rtrig import load
from rtrig.boards import get_board
from rtrig.errors import UsageError
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.sim import SIM_BOARD, build
from rtrig.protocol import Caps, Reg

BOARD = get_board("ulx3s")
STEP = BOARD.tick_step              # ticks per clock, also the stimulus step
TICK_HZ = STEP * BOARD.clk_freq


@pytest.fixture(scope="module")
def rig():
    with open_rig(sim=True) as session:
        yield session


def test_the_default_twin_is_the_ulx3s_build():
    # one build: --sim and --sim-board ulx3s are the same gateware
    assert SIM_BOARD == BOARD.name
    assert build(log=lambda m: None) == build(log=lambda m: None, board="ulx3s")


def test_the_ecp5_boards_share_one_rig():
    crab = get_board("orangecrab")
    assert (crab.clk_freq, crab.rig_options) == (BOARD.clk_freq, BOARD.rig_options)
    assert STEP == 4 and TICK_HZ == 120_000_000 and BOARD.tick_ns < 10


def test_identity_reports_quarter_clock_ticks_and_the_stimulus_step(rig):
    info = rig.info
    assert info["tick_hz"] == TICK_HZ and info["stim_step"] == STEP
    # 4 clock cycles: the IDDRX1F and QuadSampler (pin_latency 2) and two synchroniser
    # stages
    assert BOARD.rig_options["pin_latency"] == 2
    assert info["in_delay"] == 4 * STEP
    assert info["board"] == 1
    caps = rig.link.read1(Reg.CAPS)
    assert caps & Caps.INTERVALS and caps & Caps.BURST


@pytest.mark.parametrize("delay", [0, STEP, 120, 1000 * STEP + STEP])
def test_loopback_latency_is_exact_in_quarter_clock_ticks(rig, tmp_path, delay):
    loopback_is_exact(rig, tmp_path, delay, TICK_HZ, completion=False)


def test_a_delay_off_the_stimulus_step_is_refused_naming_it():
    s = CaptureSettings(freq=20_000, count=20, target="loopback", delay=121 / TICK_HZ)
    with pytest.raises(UsageError, match=r"stimulus steps of 33\.33 ns \(4 ticks\)"):
        s.ticks(TICK_HZ, STEP)


def test_external_wire_reads_zero_latency(rig, tmp_path):
    external_wire_reads_zero(rig, tmp_path)


def test_an_interval_channel_beside_isr(rig, tmp_path):
    # STIM0's rise to ISR_OUT's rise as an interval channel: on the loopback, the delay,
    # pulse for pulse as the isr channel times it.
    s = CaptureSettings(freq=20_000, count=60, target="loopback", delay=240 / TICK_HZ,
                        channels=("isr", "stim0+..isr_out+"))
    res = run_capture(rig, s, tmp_path / "iv.rtrig", progress=False)
    cap = load(res.path)
    isr, span = cap.channel("isr"), cap.channel("stim0+..isr_out+")
    assert len(isr) == len(span) == 60
    assert (isr["latency"] == 240).all() and (span["latency"] == 240).all()
    assert (span["stim_t"] == isr["stim_t"]).all()


def test_model_target_matches_its_truth(rig, tmp_path):
    lat = model_capture_matches_truth(rig, tmp_path)
    assert lat.min() >= 120 and lat.max() > lat.min() and (lat % STEP == 0).all()


#: isr and app, and the same two timed again by interval channels 2 and 3.
FOUR = ("isr", "app", "stim0+..isr_out+", "stim0+..app_out+")
MODEL = {"isr_entry": 120, "isr_jitter": 88, "isr_service": 60, "app_wake": 252,
         "app_service": 72, "tick_period": 3_000, "tick_service": 200, "app": True}


def test_four_latency_channels_in_one_records_capture(rig, tmp_path):
    # The model target's ISR and APP, each timed twice: by its latency channel and by
    # an interval channel from STIM0's rise. Pulse for pulse the two agree.
    assert rig.latency_channels == 4
    s = CaptureSettings(freq=20_000, count=150, target="model", channels=FOUR,
                        jitter=3e-6, model=MODEL)
    res = run_capture(rig, s, tmp_path / "four.rtrig", progress=False)
    cap = load(res.path)
    got = {n: cap.channel(n) for n in FOUR}
    assert all(len(r) == 150 for r in got.values())
    for a, b in ((FOUR[0], FOUR[2]), (FOUR[1], FOUR[3])):
        assert (got[a]["latency"] == got[b]["latency"]).all()
        assert (got[a]["stim_t"] == got[b]["stim_t"]).all()
    assert got["app"]["latency"].min() > got["isr"]["latency"].min()
    assert res.link == {**res.link, "crc_errors": 0, "lost_packets": 0, "overflows": 0}


def test_four_latency_channels_in_statistics_mode(rig, tmp_path):
    # The on-chip statistics keep all four channels; each interval channel's figures
    # are its latency channel's.
    from rtrig.host.procedures.measure import measure
    s = CaptureSettings(freq=20_000, count=150, target="model", channels=FOUR,
                        jitter=3e-6, model=MODEL)
    res = measure(rig, s, tmp_path / "four-stats.rtrig", mode="statistics", progress=False)
    figs = res.summary
    for a, b in ((FOUR[0], FOUR[2]), (FOUR[1], FOUR[3])):
        for k in ("pulses", "answered", "min_ns", "max_ns", "mean_ns"):
            assert figs[a][k] == figs[b][k], (a, b, k)
    assert figs["isr"]["pulses"] == 150


def test_info_counts_the_latency_channels():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "rtrig", "--sim", "info"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "4 latency channels (isr, app and 2 interval channels)" in r.stdout
    assert "(loopback delay at most 273.067 µs)" in r.stdout


def test_selftest_passes_with_its_longest_delay_in_the_delay_line(rig):
    # The compact rig's loopback is a delay line of 8192 clock cycles (32768 ticks,
    # 273.07 µs): the self-test's longest check (25000 ticks) fits it, and every check
    # passes.
    from rtrig.host.procedures.selftest import run_selftest
    assert rig.loopback_max_ticks == 8192 * STEP
    results = run_selftest(rig, log=lambda m: None)
    assert all(r["passed"] for r in results), [r for r in results if not r["passed"]]
    assert any(r["name"].startswith("loopback delay 25000 ticks") for r in results)


def test_the_selftest_delays_are_whole_steps_within_the_delay_line():
    # Each loopback check as a rig makes it: whole stimulus steps, and the longest at
    # the end of a delay line shorter than it (the ECP5 rig of 60 MHz had 16384 ticks).
    from rtrig.host.procedures.selftest import LOOPBACK_CHECKS, loopback_checks
    assert loopback_checks() == LOOPBACK_CHECKS
    assert [d for d, _, _ in loopback_checks(STEP, 8192 * STEP)] == [0, 0, 0, 120, 1000, 25_000]
    assert [d for d, _, _ in loopback_checks(2, 16_384)] == [0, 0, 2, 122, 1000, 16_384]


def test_a_loopback_delay_beyond_the_delay_line_is_refused(rig, tmp_path):
    # A longer delay would answer nothing: every pulse "missed". Refused instead.
    s = CaptureSettings(freq=3_500, count=10, target="loopback",
                        delay=(8192 * STEP + STEP) / TICK_HZ)
    with pytest.raises(UsageError, match=r"at most 273\.067 µs \(32768 ticks\)"):
        run_capture(rig, s, tmp_path / "long.rtrig", progress=False)


def test_only_the_boards_compact_rigs_have_a_loopback_limit():
    from rtrig.boards import loopback_limit_cycles
    assert loopback_limit_cycles(0) is None
    assert {loopback_limit_cycles(b.code) for b in (BOARD, get_board("icebreaker"))} == {8192}


def _cli(args, capsys):
    from rtrig.host.cli import main
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


def test_model_durations_are_the_same_time_on_this_twin(capsys, tmp_path):
    # The model runs in this rig's 8.33 ns ticks: 1 µs is 120 of them, not 100.
    code, out = _cli(["--sim", "capture", "--target", "model", "--model",
                      "isr_entry=1us,isr_service=1us,app=0", "--freq", "10k", "--count",
                      "20", "--json", "-q", "-o", str(tmp_path / "m.rtrig")], capsys)
    assert code == 0, out.err
    isr = load(tmp_path / "m.rtrig").channel("isr")
    assert len(isr) == 20 and (isr["latency"] == 120).all()


@pytest.mark.parametrize("model, words", [
    ("isr_entry=1.01us", "not a whole number of the model's 8.33333 ns ticks"),
    ("isr_entry=1008.3333ns", "model steps of 33.33 ns (4 ticks)"),
])
def test_model_durations_off_its_ticks_or_steps_are_refused(capsys, tmp_path, model, words):
    code, out = _cli(["--sim", "capture", "--target", "model", "--model",
                      model, "--count", "5", "-o", str(tmp_path / "x.rtrig")], capsys)
    assert code == 2 and words in out.err and "Traceback" not in out.err
    assert not (tmp_path / "x.rtrig").exists()


def test_a_sweep_makes_whole_stimulus_steps(rig, tmp_path):
    # Periods and the automatic jitter (from the model's tick) in whole 4-tick steps:
    # the rig refuses anything else, so a sweep that computed them in ticks stopped.
    from dataclasses import asdict

    from rtrig.host.model.reference import ModelParams
    from rtrig.host.procedures.sweep import SweepSettings, run_sweep
    p = ModelParams(isr_entry=100, isr_service=200, app=False, tick_period=5_000,
                    tick_service=60)
    st = SweepSettings(250e3, 450e3, target="model", model=asdict(p), pulses=100,
                       channels=("isr",), confirm=False, max_pulses=400)
    res = run_sweep(rig, st, tmp_path / "s.rtrig", log=lambda m: None)
    assert res.value("mf_isr_hz") is not None, res.reasons
    assert all(s["period_ticks"] % STEP == 0 and s["jitter_ticks"] % STEP == 0
               for s in res.steps)
    assert any(s["jitter_ticks"] for s in res.steps)


def test_the_soc_twin_needs_a_board_that_builds_the_soc(capsys, tmp_path):
    # The ULX3S 85F builds the SoC target (its twin: tests/host/test_soc_twin.py); the
    # OrangeCrab does not, and says so before anything is built.
    code, out = _cli(["--sim-board", "orangecrab", "capture", "--target", "soc", "--count",
                      "5", "-o", str(tmp_path / "x.rtrig")], capsys)
    assert code == 2 and "board orangecrab has no SoC target" in out.err
    assert "Traceback" not in out.err and not (tmp_path / "x.rtrig").exists()
