# SPDX-License-Identifier: BSD-2-Clause
"""End to end through the Verilator twin of the default board's gateware (the ULX3S's:
30 MHz, four samples per clock, 8.33 ns ticks, 33.33 ns stimulus steps): the real link,
the host code that also drives a board. Loopback latencies are known exactly."""

import numpy as np
import pytest
from twin_checks import model_capture_matches_truth

from rtrig import load
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.sim import sim_board
from rtrig.protocol import STIM_INPUT, ChanFlags, Reg

BOARD = sim_board()
STEP = BOARD.tick_step              # ticks per clock, also the stimulus step
TICK_HZ = STEP * BOARD.clk_freq


@pytest.fixture(scope="module")
def rig():
    with open_rig(sim=True) as session:
        yield session


def test_the_default_twin_is_the_ecp5_boards_gateware(rig):
    assert BOARD.name == "ulx3s" and (STEP, TICK_HZ) == (4, 120_000_000)
    assert rig.info["tick_hz"] == TICK_HZ and rig.info["board"] == BOARD.code
    assert rig.latency_channels == 4


@pytest.mark.parametrize("delay,freq,count", [(0, 20_000, 150), (8, 50_000, 150),
                                              (124, 10_000, 200), (4_320, 10_000, 100)])
def test_loopback_every_sample_equals_the_delay(rig, tmp_path, delay, freq, count):
    s = CaptureSettings(freq=freq, count=count, target="loopback", delay=delay / TICK_HZ)
    res = run_capture(rig, s, tmp_path / "c.rtrig", progress=False)
    cap = load(res.path)
    isr = cap.channel("isr")
    assert len(isr) == count
    assert list(isr["pulse"]) == list(range(count))
    assert (isr["flags"] == 0).all()
    assert (isr["latency"] == delay).all()
    # completion = delay + high time (duty 0.5)
    assert (isr["completion"] == delay + round(TICK_HZ / freq * 0.5)).all()
    # stimulus times are exactly one period apart
    assert (np.diff(isr["stim_t"].astype(np.int64)) == round(TICK_HZ / freq)).all()
    assert res.link == {**res.link, "crc_errors": 0, "lost_packets": 0, "overflows": 0}
    ns = res.summary["isr"]
    assert ns["min_ns"] == ns["max_ns"] == round(delay * 1e9 / TICK_HZ)      # whole ns


def test_raw_events_match_the_stimulus(rig, tmp_path):
    s = CaptureSettings(freq=20_000, count=50, target="loopback", delay=3e-7, raw_events=True)
    res = run_capture(rig, s, tmp_path / "raw.rtrig", progress=False)
    cap = load(res.path)
    ev = cap.events
    stim = ev[ev["input"] == STIM_INPUT[0]]
    isr = ev[ev["input"] == 0]
    assert len(stim) == len(isr) == 100                      # 50 rising + 50 falling
    assert (stim["rising"][::2] == 1).all() and (stim["rising"][1::2] == 0).all()
    assert (isr["t"].astype(np.int64) - stim["t"].astype(np.int64) == 36).all()   # 300 ns
    rises = stim["t"][stim["rising"] == 1]
    assert (rises == np.sort(cap.channel("isr")["stim_t"])).all()


def test_jittered_stimulus_stays_exact(rig, tmp_path):
    s = CaptureSettings(freq=10_000, count=200, target="loopback", delay=2.5e-6, jitter=20e-6)
    res = run_capture(rig, s, tmp_path / "j.rtrig", progress=False)
    isr = load(res.path).channel("isr")
    # a period of 100 µs (12000 ticks) and up to 20 µs (2400 ticks) more, in whole steps
    gaps = np.diff(isr["stim_t"].astype(np.int64))
    assert gaps.min() >= 12_000 and gaps.max() <= 14_400 and len(set(gaps)) > 50
    assert (gaps % STEP == 0).all()
    assert (isr["latency"] == 300).all() and len(isr) == 200


def test_missed_pulses_are_counted(rig, tmp_path):
    # Loopback delay longer than the response window: every pulse is missed.
    s = CaptureSettings(freq=10_000, count=40, target="loopback", delay=50e-6, timeout=20e-6)
    res = run_capture(rig, s, tmp_path / "m.rtrig", progress=False)
    assert res.summary["isr"]["missed"] == 40 and res.summary["isr"]["answered"] == 0


def test_model_target_matches_its_truth(rig, tmp_path):
    lat = model_capture_matches_truth(rig, tmp_path)
    assert lat.min() >= 120 and lat.max() > lat.min()        # jitter and tick visible


def test_link_counters_and_clear(rig):
    link = rig.link
    link.write(Reg.SCRATCH, 0x12345678)
    assert link.read(Reg.SCRATCH, 3) == [0x12345678] * 3
    link.write(Reg.CLEAR, 1)
    assert link.read1(Reg.RX_ERRORS) == 0
    # a corrupted request is dropped by the rig and counted
    from rtrig.framing import frame
    from rtrig.protocol import PacketType
    bad = bytearray(frame(PacketType.WRITE, 200, b"\x08\x00\x01\x00\x00\x00"))
    bad[5] ^= 0xFF
    link.port.write(bytes(bad))
    assert link.read1(Reg.RX_ERRORS) == 1
    assert link.read1(Reg.SCRATCH) == 0x12345678
    assert link.crc_errors == 0 and link.lost_packets == 0


def test_link_bytes_count_both_ways(rig):
    received, sent = rig.link_bytes
    rig.pulses_issued()                         # one request, one response
    after = rig.link_bytes
    assert after[0] > received and after[1] > sent


def test_connect_to_a_twin_already_running():
    from rtrig.host.rig.connect import connect
    from rtrig.host.sim import SimRig
    with SimRig(log=lambda m: None) as sim:
        with connect(sim.url, simrig=sim) as rig:
            assert rig.sim is sim and rig.info["tick_hz"] > 0
            assert rig.link.twin_exit() is None     # the twin runs
        assert sim.proc is not None                 # and is stopped by its owner


def test_interrupted_capture_keeps_what_was_recorded(rig, tmp_path):
    path = tmp_path / "cut.rtrig"
    s = CaptureSettings(freq=10_000, count=100_000, target="loopback", delay=1e-6)

    def stop_after_some(received):
        if received >= 200:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_capture(rig, s, path, progress=False, on_block=stop_after_some)
    cap = load(path)
    assert cap.final["status"] == "interrupted"
    # the loss counters are written with the end status too
    assert cap.final["link"]["lat_overflow"] == 0 and cap.final["link"]["crc_errors"] == 0
    assert {"lost_packets", "bad_payloads", "rx_errors"} <= set(cap.final["link"])
    isr = cap.channel("isr")
    assert len(isr) >= 200 and (isr["latency"] == 120).all()             # 1 µs
    assert list(isr["pulse"][:200]) == list(range(200))
    # the rig is usable again afterwards
    assert rig.link.read1(Reg.STIM_STATUS) == 0 or rig.link.write(Reg.STIM_CTRL, 0) is None


def test_torn_capture_file_loads_complete_chunks(tmp_path, rig):
    s = CaptureSettings(freq=20_000, count=60, target="loopback", delay=1e-6)
    res = run_capture(rig, s, tmp_path / "t.rtrig", progress=False)
    data = res.path.read_bytes()
    torn = tmp_path / "torn.rtrig"
    torn.write_bytes(data[:-30])                # cut inside the final chunk
    cap = load(torn)
    assert cap.truncated and cap.final is None
    assert len(cap.channel("isr")) == 60
    assert ChanFlags.MISSED not in set(cap.latency["flags"])


def test_stim1_follows_stim0_at_its_offset(rig, tmp_path):
    # In the twin, the external APP_OUT input is wired to STIM1: its latency is the offset.
    s = CaptureSettings(freq=20_000, count=50, target="external", channels=("isr", "app"),
                        stim1_offset=3.7e-6)
    res = run_capture(rig, s, tmp_path / "s1.rtrig", progress=False)
    cap = load(res.path)
    assert (cap.channel("isr")["latency"] == 0).all()
    app = cap.channel("app")
    assert len(app) == 50 and (app["latency"] == 444).all()             # 3.7 µs
    assert (app["completion"] == 444 + 3000).all()                      # + 25 µs
