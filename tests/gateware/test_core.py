"""Exact-cycle tests of the rig's gateware blocks in Amaranth's simulator."""

import pytest
from simrun import run

from rtrig.framing import SlipDecoder, frame
from rtrig.gateware.capture import IN_DELAY, EdgeDetector
from rtrig.gateware.link import PacketRx, PacketTx
from rtrig.gateware.loopback import LoopbackTarget
from rtrig.gateware.matcher import LatencyMatcher, LatencyRecord
from rtrig.gateware.merge import RecordMerger
from rtrig.gateware.stimulus import StimulusGenerator
from rtrig.gateware.uart import UARTRx, UARTTx
from rtrig.protocol import PacketType


def edges(levels):
    """(cycle, new level) for every change of a sampled 0/1 sequence."""
    out, prev = [], 0
    for c, v in enumerate(levels):
        if v != prev:
            out.append((c, v))
        prev = v
    return out


# Stimulus ---------------------------------------------------------------------------

def stim_trace(period, high, count, offset=None, jitter=0, seed=1, cycles=200):
    dut = StimulusGenerator()
    s0, s1, running = [], [], []

    async def tb(ctx):
        ctx.set(dut.period, period)
        ctx.set(dut.high, high)
        ctx.set(dut.count, count)
        ctx.set(dut.jitter, jitter)
        ctx.set(dut.seed, seed)
        if offset is not None:
            ctx.set(dut.offset, offset)
            ctx.set(dut.stim1_en, 1)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(cycles):
            s0.append(ctx.get(dut.stim0))
            s1.append(ctx.get(dut.stim1))
            running.append(ctx.get(dut.running))
            await ctx.tick()

    run(dut, tb, "stim")
    return s0, s1, running


def test_stimulus_period_high_and_count():
    s0, _, running = stim_trace(period=10, high=3, count=4, cycles=60)
    e = edges(s0)
    rises = [c for c, v in e if v]
    falls = [c for c, v in e if not v]
    assert rises == [1, 11, 21, 31]          # first pulse two cycles after start
    assert [f - r for r, f in zip(rises, falls)] == [3, 3, 3, 3]
    assert sum(s0) == 12
    assert running[33] == 1 and running[40] == 0   # stops after the last pulse fell


def test_stimulus_stim1_offset():
    s0, s1, _ = stim_trace(period=20, high=4, count=3, offset=7, cycles=80)
    r0 = [c for c, v in edges(s0) if v]
    r1 = [c for c, v in edges(s1) if v]
    assert [b - a for a, b in zip(r0, r1)] == [7, 7, 7]
    assert sum(s1) == 12


def test_stimulus_jitter_bounds_and_spread():
    s0, _, _ = stim_trace(period=12, high=2, count=0, jitter=5, seed=0x1234, cycles=2000)
    rises = [c for c, v in edges(s0) if v]
    gaps = {b - a for a, b in zip(rises, rises[1:])}
    assert min(gaps) >= 12 and max(gaps) <= 17    # period + 0..J
    assert gaps == set(range(12, 18))             # every extra delay occurs


# Input capture ----------------------------------------------------------------------

def test_edge_detector_subtracts_synchroniser_delay():
    dut = EdgeDetector(2)
    seen = []

    async def tb(ctx):
        now = 0
        for c in range(30):
            ctx.set(dut.now, now)
            ctx.set(dut.pins, 1 if 5 <= c < 12 else 0)          # pin high cycles 5..11
            ctx.set(dut.stim, 1 if 3 <= c < 8 else 0)           # STIM0 high cycles 3..7
            # edges are flagged IN_DELAY cycles later, stamped with the pin time
            if ctx.get(dut.rise) or ctx.get(dut.fall):
                seen.append((ctx.get(dut.t), ctx.get(dut.rise), ctx.get(dut.fall)))
            await ctx.tick()
            now += 1

    run(dut, tb, "edges")
    assert IN_DELAY == 2
    assert seen == [(3, 0b100, 0), (5, 0b001, 0), (8, 0, 0b100), (12, 0, 0b001)]


# Matcher ----------------------------------------------------------------------------

def match(events, timeout=0, channel=1, out_reg=True, when=None):
    """events: list of (t, stim, rise, fall, pulse); returns emitted records (and the
    cycles they appear in, into ``when``)."""
    dut = LatencyMatcher(channel, out_reg=out_reg)
    out = []

    async def tb(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.timeout, timeout)
        last_t = max(e[0] for e in events) + 5
        ev = {e[0]: e for e in events}
        for t in range(last_t + (timeout or 0) + 3):
            e = ev.get(t, (t, 0, 0, 0, 0))
            ctx.set(dut.t, t)
            ctx.set(dut.stim_rise, e[1])
            ctx.set(dut.in_rise, e[2])
            ctx.set(dut.in_fall, e[3])
            ctx.set(dut.pulse, e[4])
            for v, r in ((dut.rec_a_valid, dut.rec_a), (dut.rec_b_valid, dut.rec_b)):
                if ctx.get(v):
                    rec = ctx.get(r)
                    out.append((rec.pulse, rec.stim_t, rec.channel, rec.missed, rec.latency,
                                rec.completion))
                    if when is not None:
                        when.append(t)
            await ctx.tick()

    run(dut, tb, "match")
    return sorted(out)


def test_matcher_latency_and_completion():
    recs = match([(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 7, 15)]


def test_matcher_same_cycle_response_is_zero_latency():
    recs = match([(10, 1, 1, 0, 0), (12, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 0, 2)]


def test_matcher_missed_when_next_pulse_comes_first():
    recs = match([(10, 1, 0, 0, 0), (20, 1, 0, 0, 1), (23, 0, 1, 0, 0), (24, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 1, 0, 0), (1, 20, 1, 0, 3, 4)]


def test_matcher_timeout_marks_missed():
    recs = match([(10, 1, 0, 0, 0), (40, 0, 1, 0, 0), (41, 0, 0, 1, 0)], timeout=20)
    assert recs == [(0, 10, 1, 1, 0, 0)]       # the late response is ignored


def test_matcher_long_response_keeps_its_pulse():
    # Response to pulse 0 stays high across pulse 1; pulse 1 is answered afterwards.
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 0, 1), (25, 0, 0, 1, 0),
                  (27, 0, 1, 0, 0), (28, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 15), (1, 20, 1, 0, 7, 8)]


def test_matcher_fall_and_stimulus_in_one_cycle():
    recs = match([(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 1, 1), (21, 0, 1, 0, 0),
                  (22, 0, 0, 1, 0)])
    assert recs == [(0, 10, 1, 0, 2, 10), (1, 20, 1, 0, 1, 2)]


MATCH_CASES = [
    [(10, 1, 0, 0, 0), (17, 0, 1, 0, 0), (25, 0, 0, 1, 0)],
    [(10, 1, 0, 0, 0), (20, 1, 0, 0, 1), (23, 0, 1, 0, 0), (24, 0, 0, 1, 0)],
    [(10, 1, 0, 0, 0), (12, 0, 1, 0, 0), (20, 1, 0, 1, 1), (21, 0, 1, 0, 0), (22, 0, 0, 1, 0)],
]


@pytest.mark.parametrize("events", MATCH_CASES)
def test_matcher_without_output_register_is_one_cycle_earlier(events):
    when_reg, when_comb = [], []
    assert match(events, out_reg=False, when=when_comb) == match(events, when=when_reg)
    assert when_comb == [c - 1 for c in when_reg]


# Merger -----------------------------------------------------------------------------

def test_merger_counts_what_it_cannot_hold():
    dut = RecordMerger(LatencyRecord, 2)
    got = []

    async def tb(ctx):
        ctx.set(dut.out.ready, 0)                 # back-pressure: nothing drains
        for i in range(3):                        # source 0 offers three records
            ctx.set(dut.valid, 0b01)
            ctx.set(dut.payload[0].pulse, i)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        await ctx.tick()                          # the count is registered twice:
        assert ctx.get(dut.overflow) == 1         # the last drop shows two cycles late
        await ctx.tick()
        assert ctx.get(dut.overflow) == 2         # one held, two dropped and counted
        ctx.set(dut.out.ready, 1)
        for _ in range(4):
            if ctx.get(dut.out.valid):
                got.append(ctx.get(dut.out.payload.pulse))
            await ctx.tick()

    run(dut, tb, "merge")
    assert got == [0]


# Loopback ---------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [16, 2])
@pytest.mark.parametrize("delay", [0, 1, 2, 5, 37])
def test_loopback_delay_is_exact(delay, depth):
    # Period 40: a delay of 37 has three edges in flight, as many as depth 2 holds.
    dut = LoopbackTarget(depth)
    stim, out = [], []

    async def tb(ctx):
        ctx.set(dut.delay, delay)
        for c in range(150):
            s = 1 if (c % 40) in range(10, 20) else 0
            ctx.set(dut.stim, s)
            stim.append(s)
            out.append(ctx.get(dut.out))
            await ctx.tick()

    run(dut, tb, "loop")
    assert [(c + delay, v) for c, v in edges(stim) if c + delay < 150] == edges(out)


def test_loopback_counts_edges_beyond_its_depth():
    # Depth 2 holds three edges in flight; with a delay of 57 (period 40, 10 high) the
    # fourth edge (cycle 60) finds the queue full.
    dut = LoopbackTarget(2)
    lost = []

    async def tb(ctx):
        ctx.set(dut.delay, 57)
        for c in range(70):
            ctx.set(dut.stim, 1 if (c % 40) in range(10, 20) else 0)
            lost.append(ctx.get(dut.lost))
            await ctx.tick()

    run(dut, tb, "loop_lost")
    assert lost[60] == 0 and lost[61] == 1 and lost[-1] == 1


# UART and packets -------------------------------------------------------------------

def uart_bits(byte, divisor):
    bits = [0] + [(byte >> i) & 1 for i in range(8)] + [1]
    return [b for b in bits for _ in range(divisor)]


def test_uart_tx_waveform():
    dut = UARTTx(4)
    line = []

    async def tb(ctx):
        ctx.set(dut.data.payload, 0xA5)
        ctx.set(dut.data.valid, 1)
        await ctx.tick()
        ctx.set(dut.data.valid, 0)
        for _ in range(44):
            line.append(ctx.get(dut.tx))
            await ctx.tick()

    run(dut, tb, "uart_tx")
    assert line[:40] == uart_bits(0xA5, 4)


def test_uart_tx_back_to_back_bytes_leave_no_gap():
    # The sender offers three bytes at once; each is taken when the holding register
    # is free, and the line carries them back to back (the stop bit lasts one clock
    # longer than a bit: the cycle in which the next byte is loaded).
    dut = UARTTx(3)
    line = []

    async def tb(ctx):
        pending = [0x5A, 0xC3, 0x01]
        ctx.set(dut.data.valid, 1)
        for _ in range(3 * 30 + 6):
            if pending:
                ctx.set(dut.data.payload, pending[0])
            ctx.set(dut.data.valid, bool(pending))
            line.append(ctx.get(dut.tx))
            taken = pending and ctx.get(dut.data.ready)
            await ctx.tick()
            if taken:
                pending.pop(0)

    run(dut, tb, "uart_tx_b2b")
    start = line.index(0)
    expect = uart_bits(0x5A, 3) + [1] + uart_bits(0xC3, 3) + [1] + uart_bits(0x01, 3)
    assert line[start:start + len(expect)] == expect
    assert all(line[start + len(expect):])


def test_uart_rx_receives_and_counts_framing_errors():
    dut = UARTRx(8)
    got = []

    async def tb(ctx):
        ctx.set(dut.data.ready, 1)
        wave = [1] * 5 + uart_bits(0x3C, 8) + [1] * 8 + uart_bits(0xC0, 8)[:-8] + [0] * 8 \
            + [1] * 20
        for b in wave:
            ctx.set(dut.rx, b)
            if ctx.get(dut.data.valid):
                got.append(ctx.get(dut.data.payload))
            await ctx.tick()
        assert ctx.get(dut.errors) == 1          # the second byte had no stop bit

    run(dut, tb, "uart_rx")
    assert got == [0x3C]


@pytest.mark.parametrize("hold", [False, True])
def test_packet_tx_frames_decode_on_the_host(hold):
    dut = PacketTx(hold=hold)
    wire, taken = [], []
    payload = bytes([0x11, 0xC0, 0xDB, 0x44, 0x55, 0x66, 0x77])

    async def tb(ctx):
        ctx.set(dut.bytes_out.ready, 1)
        for _ in range(2):
            ctx.set(dut.pkt.payload.type, PacketType.READ_DATA)
            ctx.set(dut.pkt.payload.length, 7)
            ctx.set(dut.pkt.payload.payload, int.from_bytes(payload, "little"))
            ctx.set(dut.pkt.valid, 1)
            for _ in range(80):
                if ctx.get(dut.bytes_out.valid):
                    wire.append(ctx.get(dut.bytes_out.payload))
                took = ctx.get(dut.pkt.valid) and ctx.get(dut.pkt.ready)
                await ctx.tick()
                if took:
                    taken.append(len(wire))
                    ctx.set(dut.pkt.valid, 0)
                    # A packet is taken only once it need not stay: scramble it.
                    ctx.set(dut.pkt.payload.payload, 0)

    run(dut, tb, "ptx")
    d = SlipDecoder()
    assert d.feed(bytes(wire)) == [(PacketType.READ_DATA, 0, payload),
                                   (PacketType.READ_DATA, 1, payload)]
    first = frame(PacketType.READ_DATA, 0, payload)
    assert bytes(wire[:len(first)]) == first
    # Copied: taken before its first byte; held: taken with its last byte.
    assert taken == ([0, len(first)] if not hold else [len(first), 2 * len(first)])


def rx_packets(wire):
    dut = PacketRx()
    cmds = []

    async def tb(ctx):
        ctx.set(dut.cmd.ready, 1)
        for b in wire:
            ctx.set(dut.bytes_in.payload, b)
            ctx.set(dut.bytes_in.valid, 1)
            while True:                       # every cycle: a command is a one-cycle beat
                if ctx.get(dut.cmd.valid):
                    c = ctx.get(dut.cmd.payload)
                    cmds.append((c.type, c.seq, c.addr, c.value))
                taken = ctx.get(dut.bytes_in.ready)
                await ctx.tick()
                if taken:
                    break
        ctx.set(dut.bytes_in.valid, 0)
        for _ in range(3):
            await ctx.tick()
            if ctx.get(dut.cmd.valid):
                c = ctx.get(dut.cmd.payload)
                cmds.append((c.type, c.seq, c.addr, c.value))
        cmds.append(("errors", ctx.get(dut.errors)))

    run(dut, tb, "prx")
    return cmds


def test_packet_rx_accepts_good_and_drops_bad():
    write = frame(PacketType.WRITE, 9, (0x21).to_bytes(2, "little") + (0xC0DB).to_bytes(4, "little"))
    read = frame(PacketType.READ, 10, (0x10).to_bytes(2, "little") + (3).to_bytes(2, "little"))
    bad = bytearray(write)
    bad[4] ^= 1
    short = frame(PacketType.WRITE, 11, b"\x01\x02")
    cmds = rx_packets(write + bytes(bad) + short + read)
    assert cmds[:-1] == [(PacketType.WRITE, 9, 0x21, 0xC0DB), (PacketType.READ, 10, 0x10, 3)]
    assert cmds[-1] == ("errors", 2)
