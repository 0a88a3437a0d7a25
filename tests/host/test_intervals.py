# SPDX-License-Identifier: BSD-2-Clause
"""Interval channels (any edge to any edge) and burst stimulus, end to end through the
twin on the loopback target, whose edges are known exactly: ISR_OUT is STIM0 delayed
by the loopback delay. The twin's ticks are 8.33 ns (120 per µs)."""

import numpy as np
import pytest

from rtrig import load
from rtrig.channels import ChannelPlan, parse_interval
from rtrig.errors import UsageError
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.rig.rig import Rig
from rtrig.protocol import CAPS_LAT_CHANNELS_SHIFT, LAT_EDGES_RESET, Caps, Input, Reg


@pytest.fixture(scope="module")
def rig():
    with open_rig(sim=True) as session:
        yield session


def test_the_twin_has_intervals_and_bursts(rig):
    assert rig.has_caps(Caps.INTERVALS | Caps.BURST)


def test_interval_channel_beside_a_latency_channel(rig, tmp_path):
    # 20 kHz, duty 0.5: STIM0 high 3000 ticks; ISR_OUT is STIM0 delayed 84 ticks.
    s = CaptureSettings(freq=20_000, count=40, target="loopback", delay=7e-7,
                        channels=("isr", "isr+..isr-"))
    res = run_capture(rig, s, tmp_path / "i.rtrig", progress=False)
    cap = load(res.path)
    assert cap.channels() == ["isr", "isr+..isr-"]
    isr, high = cap.channel("isr"), cap.channel("isr+..isr-")
    assert len(isr) == 40 and (isr["latency"] == 84).all()
    # Each ISR_OUT rise to its fall; complete at the next rise, so the last is pending.
    assert len(high) == 39 and list(high["pulse"]) == list(range(39))
    assert (high["latency"] == 3000).all() and (high["completion"] == 6000).all()
    assert (high["stim_t"] - isr["stim_t"][:39] == 84).all()
    assert res.final["status"] == "complete"
    assert res.final["expected_records"] == 79
    assert res.link["lost_packets"] == 0 and res.link["overflows"] == 0


@pytest.mark.parametrize("mode", ["records", "statistics"])
def test_a_pulse_whose_interval_never_ends_is_counted_not_lost(rig, tmp_path, mode):
    # STIM0's rise to ISR_OUT's fall: a record is made at its completion, ISR_OUT's
    # next rise, which the last pulse never gets. That pulse is counted as never ended,
    # not as a link loss, and the capture is not called complete.
    from rtrig.host import measure
    s = CaptureSettings(freq=20_000, count=40, target="loopback", delay=7e-7,
                        channels=("isr", "stim0+..isr-"))
    res = measure(rig, s, tmp_path / "u.rtrig", mode=mode, progress=False)
    assert res.link["unended"] == 1
    assert res.link["lost_packets"] == 0 and res.link.get("lost_records", 0) == 0
    assert res.final["status"] == "incomplete"
    assert res.summary["isr"]["pulses"] == 40 and res.summary["stim0+..isr-"]["pulses"] == 39
    if mode == "records":
        span = load(res.path).channel("stim0+..isr-")
        assert (span["latency"] == 3084).all() and list(span["pulse"]) == list(range(39))
    # ended on its rise instead: every pulse has its record
    s.channels = ("isr", "stim0+..isr+")
    res = measure(rig, s, tmp_path / "e.rtrig", mode=mode, progress=False)
    assert res.link["unended"] == 0 and res.final["status"] == "complete"
    assert res.summary["stim0+..isr+"]["pulses"] == 40


def test_bursts_of_pulses_then_a_gap(rig, tmp_path):
    # Bursts of 3 pulses 50 µs apart, 130 µs from a burst's last rise to the next one.
    s = CaptureSettings(freq=20_000, count=9, target="loopback", delay=3e-7, burst=3,
                        gap=130e-6, channels=("isr", "stim0-..stim0+"))
    res = run_capture(rig, s, tmp_path / "b.rtrig", progress=False)
    cap = load(res.path)
    isr, low = cap.channel("isr"), cap.channel("stim0-..stim0+")
    assert list(np.diff(isr["stim_t"].astype(np.int64))) == [6000, 6000, 15600] * 2 + [6000] * 2
    assert (isr["latency"] == 36).all()
    # STIM0 low times: period or gap minus the 3000-tick high time. The last fall has
    # no rise after it within the window (the longest period, the gap): missed.
    assert list(low["latency"]) == [3000, 3000, 12600] * 2 + [3000, 3000, 0]
    assert list(low["flags"] != 0) == [False] * 8 + [True]
    assert cap.meta["stimulus"]["burst"] == 3 and cap.meta["stimulus"]["gap_ticks"] == 15600


def test_a_later_capture_gets_the_default_channels_and_no_bursts(rig, tmp_path):
    s = CaptureSettings(freq=20_000, count=5, target="loopback", channels=("isr",))
    res = run_capture(rig, s, tmp_path / "d.rtrig", progress=False)
    isr = load(res.path).channel("isr")
    assert list(np.diff(isr["stim_t"].astype(np.int64))) == [6000] * 4
    assert rig.link.read1(Reg.LAT_EDGES) == LAT_EDGES_RESET
    assert rig.link.read1(Reg.STIM_BURST) == 0


def test_channel_numbers_and_edges():
    plan = ChannelPlan.of(("isr", "app"))
    assert [(c.name, c.number) for c in plan] == [("isr", 0), ("app", 1)]
    assert plan.mask == 0b11 and not plan.has_intervals and plan.pulse_numbers == [0, 1]
    plan = ChannelPlan.of(("app", "marker0+..marker0-"))
    assert plan.channel_names == {"1": "app", "0": "marker0+..marker0-"}
    assert plan.number("marker0+..marker0-") == 0 and plan.pulse_numbers == [1]
    # an interval from a STIM0 edge has a record per pulse, as isr and app
    assert ChannelPlan.of(("isr", "stim0+..marker0-", "stim0-..app+")).pulse_numbers == [0, 1, 2]
    assert plan.has_intervals and plan.mask == 0b11
    assert parse_interval("marker1-..MARKER2+") == (Input.MARKER1, 1, Input.MARKER2, 0)
    assert ChannelPlan.of(("isr", "marker0+..marker0-")).lat_edges == (
        LAT_EDGES_RESET & 0xFF) | ((3 | 3 << 4 | 1 << 7) << 8)
    assert ChannelPlan.of(("isr", "app")).lat_edges == LAT_EDGES_RESET
    assert ChannelPlan().lat_edges == LAT_EDGES_RESET and ChannelPlan().mask == 0
    assert ChannelPlan.of(("app",)).mask == 0b10


@pytest.mark.parametrize("channels,words", [
    (("marker0",), "unknown channel"),
    (("marker0+..",), "is not an edge"),
    (("marker9+..isr+",), "is not an edge"),
    (("isr+..isr+",), "same edge"),
    (("isr", "app", "marker0+..marker0-", "marker1+..marker1-", "stim1+..isr+"),
     "a rig has at most 4"),
])
def test_bad_channels_are_one_line_errors(channels, words):
    with pytest.raises(UsageError, match=words):
        CaptureSettings(freq=1000, channels=channels).ticks(100e6)


def test_bad_bursts_are_one_line_errors():
    with pytest.raises(UsageError, match="needs --burst"):
        CaptureSettings(freq=1000, gap=1e-3).ticks(100e6)
    with pytest.raises(UsageError, match="needs its gap"):
        CaptureSettings(freq=1000, burst=4).ticks(100e6)
    with pytest.raises(UsageError, match="shorter than the period"):
        CaptureSettings(freq=1000, burst=4, gap=0.5e-3).ticks(100e6)


class _NoLink:
    def configure(self, **regs):
        raise AssertionError("nothing may be written")


def test_a_rig_without_the_caps_refuses_intervals_and_bursts_in_one_line():
    rig = Rig(_NoLink(), {"caps": 0b111})
    regs = CaptureSettings(freq=1000, channels=("isr", "marker0+..marker0-")).ticks(100e6)
    with pytest.raises(UsageError, match="no interval channels"):
        rig.configure_stimulus(regs, ChannelPlan.of(("isr", "marker0+..marker0-")))
    regs = CaptureSettings(freq=1000, burst=2, gap=2e-3).ticks(100e6)
    with pytest.raises(UsageError, match="no burst stimulus"):
        rig.configure_stimulus(regs, ChannelPlan.of(("isr",)))


def test_a_two_channel_rig_refuses_a_third_channel_in_one_line():
    three = ("isr", "app", "marker0+..marker0-")
    regs = CaptureSettings(freq=1000, channels=three).ticks(100e6)
    rig = Rig(_NoLink(), {"caps": 0b111 | Caps.INTERVALS | Caps.BURST})
    assert rig.latency_channels == 2
    with pytest.raises(UsageError, match="3 channels asked for .*, this rig's gateware "
                                         "has 2 latency channels"):
        rig.configure_stimulus(regs, ChannelPlan.of(three))
    four = Rig(_NoLink(), {"caps": 0b111 | Caps.INTERVALS | 4 << CAPS_LAT_CHANNELS_SHIFT})
    assert four.latency_channels == 4 and ChannelPlan.of(three).mask == 0b111
