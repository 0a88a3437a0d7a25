# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the UART (gateware/uart.py)."""

from simrun import run

from rtrig.gateware.uart import UARTRx, UARTTx


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
