# SPDX-License-Identifier: BSD-2-Clause
"""Nothing lost silently: captures through a link that drops, damages, repeats and
stalls the rig's packets (tests/host/faultproxy.py, between the host and the twin).

Loopback latencies are known exactly, and the proxy logs every packet it damaged: every
injected loss must be counted, and no sample that reaches the capture may differ from
the truth. The loss accounting itself (sequence gaps, pulse indices) is also checked
packet by packet over ``loop://``.
"""

import numpy as np
import pytest
from faultproxy import FaultProxy

from rtrig import load
from rtrig.errors import LinkError
from rtrig.framing import crc16, frame
from rtrig.host import CaptureSettings, open_rig, report, run_capture
from rtrig.host.cli import main
from rtrig.host.rig.link import RigLink
from rtrig.host.rig.loss import LINK_COUNTERS
from rtrig.host.sim import sim_board
from rtrig.protocol import PacketType, Reg

BOARD = sim_board()
#: The default twin's ticks (8.33 ns); its fast link (7.5 Mbaud) carries about 31 k
#: latency records per second, so the periods below keep each run within it.
TICK_HZ = BOARD.clk_freq * BOARD.tick_step

DELAY = 124                 # loopback delay, ticks (whole 4-tick stimulus steps)
COUNTERS = {"crc_errors", "lost_packets", "lost_records", "bad_payloads", "duplicates",
            "overflows", "lat_overflow", "evt_overflow", "truth_overflow", "rx_errors"}


@pytest.fixture
def twin():
    from rtrig.host.sim import SimRig
    with SimRig() as sim:
        yield sim


def _zero_tail_is_a_crc_error():
    """A zero byte before the closing delimiter: a CRC with no final XOR leaves the
    residue of a good packet at zero, so it passes and the payload is one byte long."""
    body = frame(PacketType.LATENCY, 0, bytes(19))[1:-1]
    return crc16(body + b"\x00") != 0


def expected_counts(proxy):
    """The counters the host must report for what the proxy did."""
    tail_crc = _zero_tail_is_a_crc_error()
    return {
        "lost_packets": len(proxy.losses()),
        "duplicates": proxy.count("dup"),
        "crc_errors": proxy.count("flip", "zero_head", "zero_between", "esc_between")
        + (proxy.count("zero_tail") if tail_crc else 0),
        "bad_payloads": 0 if tail_crc else proxy.count("zero_tail"),
        "overflows": 0,
    }


def lost_pulses(proxy, channel=0):
    return {int.from_bytes(b[2:6], "little") for b in proxy.losses()
            if b[0] == PacketType.LATENCY and b[12] & 0x0F == channel}


def check_against_truth(records, count, lost, latency, period):
    """Every pulse not lost is there once, with exactly the true latency."""
    assert sorted(records["pulse"]) == sorted(set(range(count)) - lost)
    assert (records["flags"] == 0).all() and (records["latency"] == latency).all()
    t = records["stim_t"].astype(np.int64)
    assert (t - t[0] == (records["pulse"].astype(np.int64) - records["pulse"][0]) * period).all()


def capture_through(twin, tmp_path, settings, **proxy_args):
    with FaultProxy(twin.url, **proxy_args) as proxy, open_rig(port=proxy.url) as rig:
        res = run_capture(rig, settings, tmp_path / "f.rtrig", progress=False)
        lat_records = rig.link.read1(Reg.LAT_RECORDS)
    return proxy, res, lat_records


RATES = {"drop": 0.01, "flip": 0.01, "dup": 0.01, "stall": 0.002, "zero_head": 0.005,
         "zero_tail": 0.005, "zero_between": 0.005, "esc_between": 0.01}


def test_every_injected_loss_is_counted_and_no_sample_is_wrong(twin, tmp_path):
    # 1500 pulses, one record each; runs of 300 and exactly 256 lost packets (the
    # 8-bit sequence number wraps over both), random faults of every kind elsewhere.
    count, period = 1500, 6000
    plan = {**FaultProxy.run(100, 300), **FaultProxy.run(700, 256),
            **FaultProxy.run(count - 5, 5, "pass")}
    s = CaptureSettings(freq=TICK_HZ / period, count=count, target="loopback", delay=DELAY / TICK_HZ)
    proxy, res, lat_records = capture_through(twin, tmp_path, s, plan=plan, rates=RATES,
                                              seed=7)
    exp = expected_counts(proxy)
    assert all(proxy.count(f) for f in RATES), "every kind of fault was injected"
    assert res.link == {**res.link, **exp, "lost_records": exp["lost_packets"]}
    assert COUNTERS <= res.link.keys()
    cap = load(res.path)
    assert cap.final["link"] == res.link
    lost = lost_pulses(proxy)
    assert len(lost) == exp["lost_packets"] > 556
    check_against_truth(cap.channel("isr"), count, lost, DELAY, period)
    # the rig's own record count agrees: sent = received + lost
    assert lat_records == cap.final["records"] + res.link["lost_records"] == count


def test_losses_at_the_start_and_the_end_are_counted(twin, tmp_path):
    count, period = 300, 6000
    plan = {**FaultProxy.run(0, 3), 150: "dup", **FaultProxy.run(count - 4, 4)}
    s = CaptureSettings(freq=TICK_HZ / period, count=count, target="loopback", delay=DELAY / TICK_HZ)
    proxy, res, _ = capture_through(twin, tmp_path, s, plan=plan)
    assert res.link == {**res.link, "lost_packets": 7, "lost_records": 7, "duplicates": 1,
                        "crc_errors": 0}
    assert lost_pulses(proxy) == {0, 1, 2, 296, 297, 298, 299}
    check_against_truth(load(res.path).channel("isr"), count, lost_pulses(proxy), DELAY,
                        period)


@pytest.mark.parametrize("tail_lost", [0, 4])
def test_a_pulse_never_ended_is_not_a_link_loss(twin, tmp_path, tail_lost):
    # STIM0's rise to ISR_OUT's fall: the last pulse never gets its record (made at
    # the completion, ISR_OUT's next rise). Packets lost on the link in the middle and
    # at the end are link losses, exactly; that one pulse is "never ended".
    count, period = 300, 12_000
    packets = 2 * count - 1
    plan = {**FaultProxy.run(100, 5),
            **(FaultProxy.run(packets - tail_lost, tail_lost) if tail_lost else {})}
    s = CaptureSettings(freq=TICK_HZ / period, count=count, target="loopback",
                        delay=DELAY / TICK_HZ, channels=("isr", "stim0+..isr-"))
    proxy, res, lat_records = capture_through(twin, tmp_path, s, plan=plan)
    lost = len(proxy.losses())
    assert lost == 5 + tail_lost and lat_records == packets
    assert res.link == {**res.link, "lost_packets": lost, "lost_records": lost,
                        "unended": 1}
    assert res.final["status"] == "incomplete"
    assert load(res.path).final["records"] == packets - lost


def test_two_channels_lose_600_records_in_one_gap(twin, tmp_path):
    # In the twin the external inputs are wired to STIM0 (ISR, latency 0) and STIM1
    # (APP, latency = the STIM1 offset); a gap of 600 packets takes 300 of each.
    count, period = 700, 12_000
    plan = {**FaultProxy.run(400, 600), **FaultProxy.run(2 * count - 5, 5, "pass")}
    s = CaptureSettings(freq=TICK_HZ / period, count=count, target="external",
                        channels=("isr", "app"), stim1_offset=3.7e-6)
    proxy, res, lat_records = capture_through(twin, tmp_path, s, plan=plan, rates=RATES,
                                              seed=3)
    exp = expected_counts(proxy)
    assert res.link == {**res.link, **exp, "lost_records": exp["lost_packets"]}
    cap = load(res.path)
    check_against_truth(cap.channel("isr"), count, lost_pulses(proxy, 0), 0, period)
    check_against_truth(cap.channel("app"), count, lost_pulses(proxy, 1), 444, period)
    assert lat_records == cap.final["records"] + res.link["lost_records"] == 2 * count


def test_lost_raw_events_are_counted_by_sequence_number(twin, tmp_path):
    # Events carry no index: their gaps (under 256 packets) count by sequence number,
    # net of the latency records the same gaps took.
    count, period = 300, 24_000
    plan = {**FaultProxy.run(300, 200), **FaultProxy.run(5 * count - 10, 10, "pass")}
    s = CaptureSettings(freq=TICK_HZ / period, count=count, target="loopback",
                        delay=DELAY / TICK_HZ, raw_events=True)
    proxy, res, _ = capture_through(twin, tmp_path, s, plan=plan, rates=RATES, seed=11)
    exp = expected_counts(proxy)
    lost = lost_pulses(proxy)
    assert res.link == {**res.link, **exp, "lost_records": len(lost)}
    assert exp["lost_packets"] > len(lost) > 0
    cap = load(res.path)
    check_against_truth(cap.channel("isr"), count, lost, DELAY, period)
    lost_events = exp["lost_packets"] - len(lost)
    assert len(cap.events) == 4 * count - lost_events


def test_the_summary_the_file_and_the_report_show_every_counter(twin, tmp_path, capsys):
    path = tmp_path / "cli.rtrig"
    plan = {20: "drop", 40: "zero_tail", 60: "dup", 80: "flip"}
    with FaultProxy(twin.url, plan=plan) as proxy:
        try:
            main(["--port", proxy.url, "capture", "--target", "loopback", "--freq", "20k",
                  "--count", "200", "--delay", "1us", "--mode", "records", "-q",
                  "-o", str(path)])
        except SystemExit as e:
            assert not e.code
    out, err = capsys.readouterr()
    link = load(path).final["link"]
    assert COUNTERS <= link.keys()
    assert link == {**link, **expected_counts(proxy), "lost_packets": 3, "lost_records": 3}
    for k, (_, label, _) in LINK_COUNTERS.items():
        if k in link:
            assert f"{link[k]} {label}" in out, f"{k} not in the summary"
    warned = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    nonzero = [k for k in ("crc_errors", "lost_packets", "lost_records", "bad_payloads",
                           "duplicates") if link[k]]
    assert len(warned) == len(nonzero) >= 4
    for k in nonzero:
        assert any(f"{link[k]} {LINK_COUNTERS[k][1]}" in w for w in warned), k
    page = report.build_report([load(path)])
    for k, (_, label, _) in LINK_COUNTERS.items():
        if k in link:
            assert f"{link[k]} {label}" in page
    assert page.count('class="loss"') == len(nonzero)


def test_a_noisy_link_is_not_a_missing_rig(twin, capsys):
    with FaultProxy(twin.url) as proxy:
        link = RigLink(proxy.url, timeout=0.3)
        try:
            assert link.read1(Reg.ID) == 0x52544731
            proxy.corrupt_responses = True
            with pytest.raises(LinkError) as e:
                link.read1(Reg.SCRATCH)
        finally:
            link.close()
    msg = f"{e.value} {e.value.hint}"
    assert "3 register exchanges" in msg and "CRC errors" in msg and "noisy" in msg
    assert "powered" not in msg


def test_a_noisy_link_at_connection_says_so(twin, capsys):
    with FaultProxy(twin.url) as proxy:
        proxy.corrupt_responses = True
        with pytest.raises(SystemExit) as e:
            main(["--port", proxy.url, "info"])
    err = capsys.readouterr().err
    assert e.value.code == LinkError.exit_code
    assert "CRC errors" in err and "noisy" in err and "not the rig's port" not in err


# Loss accounting packet by packet, over loop:// ----------------------------------------

def latency(pulse, chan=0):
    return (pulse.to_bytes(4, "little") + bytes(6) + bytes((chan,)) + DELAY.to_bytes(4, "little")
            + bytes(4))


class Feed:
    """Rig packets written into a loop:// RigLink, with the rig's sequence numbers."""

    def __init__(self):
        self.link = RigLink("loop://")
        self.link.clear_counters(from_pulse_0=True)
        self.seq = 0

    def send(self, ptype, payload, skip=False):
        if not skip:
            self.link.port.write(frame(ptype, self.seq, payload))
            self.link.poll()             # loop:// holds only a few kilobytes
        self.seq = (self.seq + 1) & 0xFF

    def records(self, pulses, chans=(0,), skip=()):
        for p in pulses:
            for c in chans:
                self.send(PacketType.LATENCY, latency(p, c), skip=(p, c) in skip)

    def done(self):
        while self.link.poll(wait=0.01):
            pass
        return self.link


@pytest.mark.parametrize("gap", [256, 257, 300, 511, 512, 1000, 70_000])
def test_a_gap_of_any_length_is_counted_exactly(gap):
    f = Feed()
    f.records(range(gap + 20), skip={(p, 0) for p in range(10, 10 + gap)})
    link = f.done()
    assert link.lost_packets == gap
    assert link.missing_records == gap
    assert len(link.take(PacketType.LATENCY)) == 19 * 20


def test_two_channels_and_a_lost_response_in_one_gap():
    f = Feed()
    f.records(range(10), chans=(0, 1))
    f.records(range(10, 310), chans=(0, 1), skip={(p, c) for p in range(10, 310)
                                                   for c in (0, 1)})
    f.send(PacketType.READ_DATA, bytes(7), skip=True)
    f.records(range(310, 320), chans=(0, 1))
    link = f.done()
    assert link.lost_packets == 601 and link.missing_records == 600


@pytest.mark.parametrize("lost", [20, 100])
def test_events_lost_with_records_count_once(lost):
    # 3 packets a pulse (two events, one record): 60 or 300 lost in one gap
    f = Feed()
    for p in range(200):
        lose = 40 <= p < 40 + lost
        f.send(PacketType.EVENT, bytes(7), skip=lose)
        f.send(PacketType.EVENT, bytes(7), skip=lose)
        f.records([p], skip={(p, 0)} if lose else ())
    link = f.done()
    assert link.lost_packets == 3 * lost and link.missing_records == lost


def test_duplicates_and_late_records_are_not_losses():
    f = Feed()
    f.records(range(5))
    f.records([5, 7, 6, 7, 8])          # 6 late (after 7), then 7 again
    f.send(PacketType.EVENT, bytes(7))
    f.link.port.write(frame(PacketType.EVENT, (f.seq - 1) & 0xFF, bytes(7)))   # a copy
    link = f.done()
    assert link.lost_packets == 0 and link.duplicates == 2
    assert sorted(np.frombuffer(link.take(PacketType.LATENCY), "u1").reshape(-1, 19)[:, 0]) \
        == list(range(9))


def test_a_bad_payload_is_a_lost_record():
    f = Feed()
    f.records(range(3))
    f.send(PacketType.LATENCY, latency(3) + b"\x00")
    f.records(range(4, 6))
    link = f.done()
    assert (link.bad_payloads, link.lost_packets) == (1, 1) and link.missing_records == 1


def test_clear_zeroes_the_host_counters_with_the_rig(twin):
    with FaultProxy(twin.url, plan={0: "flip"}) as proxy, open_rig(port=proxy.url) as rig:
        link = rig.link
        link.write(Reg.STREAM_EN, 0)
        link.write(Reg.TARGET_SEL, 1)
        link.write(Reg.LAT_CH_EN, 1)
        link.write(Reg.STIM_COUNT, 3)
        link.write(Reg.STREAM_EN, 2)
        link.write(Reg.STIM_CTRL, 1)
        while link.read1(Reg.LAT_RECORDS) < 3:
            pass
        link.poll(wait=0.1)
        assert link.crc_errors == 1
        link.write(Reg.CLEAR, 1)
        assert link.crc_errors == link.lost_packets == 0
        assert link.counters() == dict.fromkeys(link.counters(), 0)


def test_the_proxy_reaches_loopback_addresses_only():
    with pytest.raises(ValueError):
        FaultProxy("socket://192.0.2.1:1234")


def test_requests_damaged_on_the_way_to_the_rig_are_named(twin):
    # The host sees nothing of a request the rig dropped for its CRC: the rig counts it
    # (RX_ERRORS), and "no answer" says so instead of asking whether a rig is there.
    with FaultProxy(twin.url) as proxy:
        link = RigLink(proxy.url, timeout=0.3)
        try:
            assert link.read1(Reg.ID) == 0x52544731
            rx0 = link.read1(Reg.RX_ERRORS)
            proxy.corrupt_requests = 3          # every try of the next request
            with pytest.raises(LinkError) as e:
                link.read1(Reg.SCRATCH)
        finally:
            link.close()
    msg = f"{e.value} {e.value.hint}"
    assert f"it counts {rx0 + 3} damaged requests (RX_ERRORS)" in msg, msg
    assert "noisy" in msg and "powered" not in msg


def test_a_lost_link_ends_the_file_with_everything_the_host_knows(twin, tmp_path):
    # The link goes in the middle of a capture (the proxy stops after the first block
    # of records): the END object still has the records written and the host's loss
    # counters, not only the status.
    s = CaptureSettings(freq=20e3, count=20_000, target="loopback", delay=DELAY / TICK_HZ)
    path = tmp_path / "lost.rtrig"
    with FaultProxy(twin.url, plan=FaultProxy.run(5, 3)) as proxy, \
            open_rig(port=proxy.url) as rig:
        rig.link.timeout, rig.link.retries = 0.3, 1
        with pytest.raises(LinkError):
            run_capture(rig, s, path, progress=False, on_block=lambda *a: proxy.stop())
    cap = load(path)
    final = cap.final
    assert final["status"] == "link lost"
    assert final["records"] == len(cap.latency) > 0
    assert final["expected_records"] == 20_000
    assert {"crc_errors", "lost_packets", "lost_records", "bad_payloads",
            "duplicates"} <= final["link"].keys()
    assert final["link"]["lost_records"] >= 3           # the three the proxy dropped


def _log_length_at_the_count(rig, proxy):
    """``{"log": n}`` once the host has read its loss counters: n = the proxy's log
    entries until then (what the counts can hold)."""
    counted = {}
    reported = rig.link.reported

    def reported_here():
        reported()
        counted["log"] = len(proxy.log)
    rig.link.reported = reported_here
    return counted


def test_heavy_corruption_both_ways_is_counted_exactly(twin, tmp_path):
    # Stream packets dropped and damaged, and 3 % of the responses and requests damaged
    # from the capture's CLEAR on (the counters start there: a packet lost in the
    # set-up exchanges before it belongs to no capture, docs/protocol.md): every lost
    # rig packet is counted, records by pulse index and responses by sequence number.
    # What the proxy did up to the host's last read of the counters: on a loaded
    # machine a reply can come after a retry's, and the proxy may damage it after the
    # counts were taken.
    s = CaptureSettings(freq=20e3, count=1500, target="loopback", delay=DELAY / TICK_HZ)
    with FaultProxy(twin.url, rates={"drop": 0.01, "flip": 0.03}, seed=4) as proxy, \
            open_rig(port=proxy.url) as rig:
        rig.link.retries = 6
        counted = _log_length_at_the_count(rig, proxy)

        def from_the_first_block(*_):
            proxy.flip_rates = (0.03, 0.03)
        res = run_capture(rig, s, tmp_path / "h.rtrig", progress=False,
                          on_block=from_the_first_block)
    log = proxy.log[:counted["log"]]
    responses = sum(1 for k, f, _ in log if k is None and f == "flip")
    assert responses > 0 and any(f == "flip_request" for _, f, _ in log)
    assert res.link["lost_records"] == len(proxy.losses())
    assert res.link["lost_packets"] == len(proxy.losses()) + responses


def test_losses_in_the_set_up_before_the_clear_are_counted_too(twin, tmp_path):
    # Damage from before the capture's set-up on (stop, target, stimulus, CLEAR): the
    # responses lost there are counted apart (setup_lost), so with lost_packets every
    # packet the link lost up to the capture's counters is counted, exactly.
    s = CaptureSettings(freq=20e3, count=1500, target="loopback", delay=DELAY / TICK_HZ)
    with FaultProxy(twin.url, rates={"drop": 0.01, "flip": 0.03}, seed=1) as proxy, \
            open_rig(port=proxy.url) as rig:
        rig.link.retries = 6
        counted = _log_length_at_the_count(rig, proxy)
        proxy.flip_rates = (0.05, 0.03)
        res = run_capture(rig, s, tmp_path / "h.rtrig", progress=False)
    log = proxy.log[:counted["log"]]          # what happened up to the counters' read
    responses = sum(1 for k, f, _ in log if k is None and f == "flip")
    streams = sum(1 for k, f, _ in log if k is not None and f in ("drop", "flip",
                                                                  "zero_head", "zero_tail"))
    assert res.link["setup_lost"] > 0, "no response was lost in the set-up: pick a seed"
    assert res.link["lost_packets"] + res.link["setup_lost"] == streams + responses


@pytest.mark.parametrize("signal_name, words", [
    ("SIGKILL", "the simulation twin was killed by signal SIGKILL"),
    ("SIGTERM", "the simulation twin was killed by signal SIGTERM")])
def test_a_twin_that_ends_during_a_capture_is_named_not_a_cable(tmp_path, signal_name,
                                                                  words):
    import os
    import signal
    s = CaptureSettings(freq=20e3, count=20_000, target="loopback", delay=DELAY / TICK_HZ)
    path = tmp_path / "k.rtrig"
    with open_rig(sim=True) as rig:
        pid = rig.sim.proc.pid
        with pytest.raises(LinkError) as e:
            run_capture(rig, s, path, progress=False,
                        on_block=lambda *a: os.kill(pid, signal.Signals[signal_name]))
    assert str(e.value).startswith(words), e.value
    assert "cable" not in f"{e.value} {e.value.hint}" and "power" not in e.value.hint
    assert load(path).final["status"] == "link lost"
