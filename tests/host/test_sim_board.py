# SPDX-License-Identifier: BSD-2-Clause
"""The twin of the iCEBreaker's gateware (``--sim-board icebreaker``): the compact rig
with DDR input capture, four samples per clock (ticks of a quarter clock). Loopback
latencies and the model target's truth are known exactly, so every figure is checked
against ground truth."""

import json
import subprocess
import sys

import numpy as np
import pytest
from twin_checks import external_wire_reads_zero, loopback_is_exact, model_capture_matches_truth

from rtrig import load
from rtrig.boards import get_board
from rtrig.errors import UsageError
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.protocol import STIM_INPUT, Reg

# One worker for the module: its module-scoped twin runs are made once, not once
# per worker that takes one of its tests.
pytestmark = pytest.mark.xdist_group("sim-board")

BOARD = get_board("icebreaker")
STEP = BOARD.tick_step              # ticks per clock, also the stimulus step
TICK_HZ = STEP * BOARD.clk_freq


@pytest.fixture(scope="module")
def rig():
    with open_rig(sim=True, board="icebreaker") as session:
        yield session


def test_identity_reports_ddr_ticks_and_the_stimulus_step(rig):
    info = rig.info
    assert STEP == 4
    assert info["tick_hz"] == TICK_HZ and info["stim_step"] == STEP
    # 4 clock cycles: the DDR input cells and the sampler (pin_latency 2), two
    # synchroniser FFs
    assert BOARD.rig_options["pin_latency"] == 2
    assert info["in_delay"] == 4 * STEP
    assert info["board"] == 3


@pytest.mark.parametrize("delay", [0, STEP, 120, 1000 * STEP + STEP])
def test_loopback_latency_is_exact_in_quarter_clock_ticks(rig, tmp_path, delay):
    loopback_is_exact(rig, tmp_path, delay, TICK_HZ)


def test_odd_settings_are_refused_naming_the_stimulus_step():
    # 123 ticks cannot be made with a 4-tick stimulus step: refused, never rounded.
    for kw in ({"delay": 123 / TICK_HZ}, {"jitter": 2001 / TICK_HZ},
               {"stim1_offset": 7 / TICK_HZ}):
        s = CaptureSettings(freq=20_000, count=20, target="loopback", **kw)
        with pytest.raises(UsageError, match=r"stimulus steps of 41\.67 ns \(4 ticks\)"):
            s.ticks(TICK_HZ, STEP)
    s = CaptureSettings(freq=20_000, count=20, target="loopback", delay=123 / TICK_HZ)
    with pytest.raises(UsageError) as e:
        s.ticks(TICK_HZ, STEP)
    assert e.value.hint == "use 1250 ns or 1291.6667 ns"
    # the values the hint names are taken as they are written
    for ns, ticks in ((1250, 120), (1291.6667, 124)):
        s = CaptureSettings(freq=20_000, count=20, target="loopback", delay=ns * 1e-9)
        assert s.ticks(TICK_HZ, STEP)["delay"] == ticks


def test_raw_events_are_grouped_but_complete(rig, tmp_path):
    s = CaptureSettings(freq=20_000, count=40, target="loopback", delay=300 / TICK_HZ,
                        raw_events=True)
    res = run_capture(rig, s, tmp_path / "raw.rtrig", progress=False)
    cap = load(res.path)
    ev = cap.events
    stim = ev[ev["input"] == STIM_INPUT[0]]
    isr = ev[ev["input"] == 0]
    assert len(stim) == len(isr) == 80
    assert (isr["t"].astype(np.int64) - stim["t"].astype(np.int64) == 300).all()
    rises = stim["t"][stim["rising"] == 1]
    assert (rises == np.sort(cap.channel("isr")["stim_t"])).all()
    assert rig.link.read1(Reg.IN_GLITCHES) == 0


def test_model_target_matches_its_truth(rig, tmp_path):
    lat = model_capture_matches_truth(rig, tmp_path)
    assert lat.min() >= 120 and lat.max() > lat.min() and (lat % STEP == 0).all()


def test_link_and_register_widths(rig):
    link = rig.link
    link.write(Reg.SCRATCH, 0x12345678)
    assert link.read(Reg.SCRATCH, 2) == [0x12345678] * 2
    link.write(Reg.LOAD_EN, 0xFFFFFFFF)           # one bit stored
    assert link.read1(Reg.LOAD_EN) == 1
    link.write(Reg.LOAD_EN, 0)
    link.write(Reg.CLEAR, 1)
    from rtrig.framing import frame
    from rtrig.protocol import PacketType
    bad = bytearray(frame(PacketType.WRITE, 200, b"\x08\x00\x01\x00\x00\x00"))
    bad[5] ^= 0xFF
    link.port.write(bytes(bad))
    assert link.read1(Reg.RX_ERRORS) == 1
    assert link.read1(Reg.SCRATCH) == 0x12345678


def test_info_cli_names_the_ddr_capture():
    r = subprocess.run([sys.executable, "-m", "rtrig", "--sim-board", "icebreaker", "info",
                        "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["tick_hz"] == TICK_HZ and d["stim_step"] == STEP and d["simulation"] is True
    r = subprocess.run([sys.executable, "-m", "rtrig", "--sim-board", "icebreaker", "info"],
                       capture_output=True, text=True, timeout=600)
    assert "DDR inputs" in r.stdout and "4 samples per 41.6667 ns clock" in r.stdout
    assert "steps of 4 ticks (41.6667 ns)" in r.stdout
    assert "not in this build: interval channels (any edge to any edge), bursts" in r.stdout


@pytest.mark.parametrize("args,words", [
    (["--channels", "isr,marker0+..marker0-"], "no interval channels"),
    (["--burst", "3", "--gap", "1ms"], "no burst stimulus"),
])
def test_the_compact_rig_refuses_intervals_and_bursts_in_one_line(args, words):
    r = subprocess.run([sys.executable, "-m", "rtrig", "--sim-board", "icebreaker", "capture",
                        "--target", "loopback", "--freq", "10k", "--count", "5", *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and words in errors[0]


def test_capture_cli_refuses_a_delay_off_the_stimulus_step(tmp_path):
    def capture(delay):
        return subprocess.run(
            [sys.executable, "-m", "rtrig", "--sim-board", "icebreaker", "capture",
             "--target", "loopback", "--delay", delay, "--freq", "10k", "--count", "20",
             "-o", str(tmp_path / f"{delay}.rtrig")],
            capture_output=True, text=True, timeout=600)
    # 2.01 µs is 193 ticks, not a multiple of 4: refused before anything runs.
    r = capture("2.01us")
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: loopback delay 2.01 µs is not a whole number of this rig's "
                      "stimulus steps of 41.67 ns (4 ticks)"]
    assert "hint: use 2000 ns or 2041.6667 ns" in r.stderr
    assert not (tmp_path / "2.01us.rtrig").exists()
    r = capture("2us")                             # 192 ticks: taken as it is
    assert r.returncode == 0 and "note:" not in r.stderr
    assert (load(tmp_path / "2us.rtrig").channel("isr")["latency"] == 192).all()


def test_external_wire_reads_zero_latency(rig, tmp_path):
    external_wire_reads_zero(rig, tmp_path)


def test_the_fast_twin_is_the_boards_faster_link(rig, tmp_path):
    # The iCEBreaker offers 6 Mbaud (its FT2232H, 4 cycles of 24 MHz per bit); the fast
    # twin of its gateware is built at exactly that divisor, so it also proves the
    # board's gateware at that rate: the rig reports it and measures exactly.
    assert BOARD.link_bauds == (6_000_000,)
    assert rig.info["baud"] == 6_000_000 == BOARD.clk_freq // 4
    s = CaptureSettings(freq=50_000, count=300, target="loopback", delay=2e-6)
    res = run_capture(rig, s, tmp_path / "6m.rtrig", progress=False)
    isr = load(res.path).channel("isr")
    assert len(isr) == 300 and (isr["latency"] == round(2e-6 * TICK_HZ)).all()


def test_selftest_passes_with_delays_in_whole_stimulus_steps(rig):
    """The selftest's loopback delays (in ticks) are made whole 4-tick steps on this
    rig; every check then passes (before, delays such as 123 ticks were moved to 120
    and failed their own expected value). The model check runs at a rate this rig's
    6 Mbaud twin link carries with its truth records (at 20 kHz its FIFOs overflowed
    and the check compared records with their neighbours' truth)."""
    from rtrig.host.procedures.selftest import _model_check_freq, run_selftest
    results = run_selftest(rig, log=lambda m: None)
    assert len(results) == 8 and all(r["passed"] for r in results), results
    assert _model_check_freq(rig) < 20_000
    names = " ".join(r["name"] for r in results)
    assert "loopback delay 120 ticks" in names and "loopback delay 123" not in names


def test_presets_are_the_same_time_here_or_refused(capsys, tmp_path):
    # The model runs in this rig's 10.42 ns ticks and takes 41.67 ns steps: the fast
    # preset's times are whole steps, and 1 µs is 96 ticks (not 100); a CE preset's
    # times are not whole steps, so it is refused in one line rather than rounded. The
    # preset's 100 µs tick is off: the run restarts the model with its first pulse,
    # and 8 kHz meets the tick on every fourth pulse.
    from rtrig.host.cli import main
    main(["--sim-board", "icebreaker", "capture", "--target", "model", "--preset", "fast",
          "--model", "isr_entry=1us,isr_jitter=0,app=0,tick_period=0", "--freq", "8k",
          "--count", "40",
          "-q", "-o", str(tmp_path / "f.rtrig")])
    isr = load(tmp_path / "f.rtrig").channel("isr")
    assert len(isr) == 40 and (isr["latency"] == 96).all()     # 1 µs of 10.42 ns ticks
    with pytest.raises(SystemExit) as e:
        main(["--sim-board", "icebreaker", "capture", "--target", "model", "--preset",
              "ce30", "--count", "5", "-o", str(tmp_path / "c.rtrig")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "preset ce30: isr_entry 1.4 µs is not a whole number" in err
