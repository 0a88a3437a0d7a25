# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the packet transmitter and receiver (gateware/link.py)."""

from simrun import run

from rtrig.framing import SlipDecoder, frame
from rtrig.gateware.link import PacketRx, PacketTx
from rtrig.protocol import PacketType


def test_packet_tx_frames_decode_on_the_host():
    dut = PacketTx()
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
    # The packet is held while it is sent: taken with its last byte.
    assert taken == [len(first), 2 * len(first)]


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
