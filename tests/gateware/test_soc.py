# SPDX-License-Identifier: BSD-2-Clause
"""The SoC's bus, RAM and I/O (gateware/soc.py) driven by a testbench in place of the
CPU, with exact cycle counts; and the CPU instance against VexRiscv's Verilog ports."""

import re

import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.back import rtlil
from amaranth.sim import Simulator

from rtrig.gateware.features.targets import held_levels
from rtrig.gateware.soc import IO_MAP, IRQ_SYNC_STAGES, SOC_ID, SoC, SoCBus, load_image

BURST, LAST = 0b010, 0b111


async def write(ctx, bus, addr, data, sel=0xF):
    """One write; returns the cycles it took (acknowledged in its own cycle)."""
    ctx.set(bus.cyc, 1), ctx.set(bus.stb, 1), ctx.set(bus.we, 1)
    ctx.set(bus.adr, addr >> 2), ctx.set(bus.dat_w, data), ctx.set(bus.sel, sel)
    cycles = 1
    while not ctx.get(bus.ack):
        await ctx.tick()
        cycles += 1
    await ctx.tick()
    ctx.set(bus.cyc, 0), ctx.set(bus.stb, 0), ctx.set(bus.we, 0)
    return cycles


async def read(ctx, bus, addr):
    ctx.set(bus.cyc, 1), ctx.set(bus.stb, 1), ctx.set(bus.we, 0), ctx.set(bus.adr, addr >> 2)
    ctx.set(bus.cti, 0)
    cycles = 1
    await ctx.tick()
    while not ctx.get(bus.ack):
        await ctx.tick()
        cycles += 1
    value = ctx.get(bus.dat_r)
    await ctx.tick()
    ctx.set(bus.cyc, 0), ctx.set(bus.stb, 0)
    return value


def run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_image_words_are_little_endian_and_padded():
    assert load_image(b"\x01\x02\x03\x04\x05") == [0x04030201, 0x05]
    with pytest.raises(ValueError):
        load_image(b"\0" * (64 * 1024 + 4))


def test_id_unlisted_offsets_and_gpio():
    dut = SoCBus()

    async def bench(ctx):
        d = dut.dbus
        assert await read(ctx, d, IO_MAP["SYS_ID"]) == SOC_ID
        assert await read(ctx, d, 0x8000_0010) == 0
        assert await read(ctx, d, 0x8000_3010) == 0
        assert await write(ctx, d, IO_MAP["GPIO_OUT_SET"], 0b101) == 1
        assert ctx.get(dut.gpio_out) == 0b101
        await write(ctx, d, IO_MAP["GPIO_OUT_SET"], 0b010)
        await write(ctx, d, IO_MAP["GPIO_OUT_CLR"], 0b001)
        assert ctx.get(dut.gpio_out) == 0b110
        assert await read(ctx, d, IO_MAP["GPIO_OUT"]) == 0b110
        await write(ctx, d, IO_MAP["GPIO_OUT"], 0b100001)
        assert ctx.get(dut.gpio_out) == 0b100001
        ctx.set(dut.gpio_in, 1)
        await ctx.tick().repeat(2)              # two synchroniser flip-flops
        assert await read(ctx, d, IO_MAP["GPIO_IN"]) == 1
        await write(ctx, d, IO_MAP["CONSOLE_TX"], 0x141)
        assert ctx.get(dut.console_valid) and ctx.get(dut.console_data) == 0x41
        await ctx.tick()
        assert not ctx.get(dut.console_valid)
        await write(ctx, d, IO_MAP["SIM_EXIT"], 3)
        assert ctx.get(dut.exit_valid) and ctx.get(dut.exit_code) == 3
        await write(ctx, d, IO_MAP["TRACE"], 98)
        assert ctx.get(dut.trace_valid) and ctx.get(dut.trace_data) == 98

    run(dut, bench)


def test_irq_edge_latch_stamp_enable_w1c_trigger():
    dut = SoCBus()

    async def bench(ctx):
        d = dut.dbus
        assert await read(ctx, d, IO_MAP["IRQ_PENDING"]) == 0
        await write(ctx, d, IO_MAP["IRQ_ENABLE"], 1)
        # The pin rises: PENDING is set IRQ_SYNC_STAGES + 1 edges later, and STAMP is
        # mtime of the cycle the edge was detected (one less than mtime then).
        ctx.set(dut.irq, 1)
        cycles = 0
        while not ctx.get(dut.ext_irq):
            await ctx.tick()
            cycles += 1
        assert cycles == IRQ_SYNC_STAGES + 1
        # A read requested in the first cycle PENDING is visible samples mtime then.
        lo = await read(ctx, d, IO_MAP["MTIME_LO"])
        stamp = await read(ctx, d, IO_MAP["IRQ_STAMP"])
        assert lo - stamp == 1
        assert await read(ctx, d, IO_MAP["IRQ_PIN"]) == 1
        # A level is not an edge: clearing stays cleared while the pin is high.
        await write(ctx, d, IO_MAP["IRQ_PENDING"], 1)
        await ctx.tick().repeat(5)
        assert not ctx.get(dut.ext_irq)
        assert await read(ctx, d, IO_MAP["IRQ_PENDING"]) == 0
        # Software pend; ENABLE masks it from the CPU but not from PENDING.
        await write(ctx, d, IO_MAP["IRQ_ENABLE"], 0)
        await write(ctx, d, IO_MAP["IRQ_TRIGGER"], 1)
        assert await read(ctx, d, IO_MAP["IRQ_PENDING"]) == 1
        assert not ctx.get(dut.ext_irq)
        await write(ctx, d, IO_MAP["IRQ_ENABLE"], 1)
        assert ctx.get(dut.ext_irq)
        await write(ctx, d, IO_MAP["IRQ_PENDING"], 1)
        assert not ctx.get(dut.ext_irq)
        # An edge in the cycle of a clear wins: no lost interrupt.
        ctx.set(dut.irq, 0)
        await ctx.tick().repeat(4)
        ctx.set(dut.irq, 1)
        await ctx.tick().repeat(IRQ_SYNC_STAGES)          # the edge is detected next cycle
        await write(ctx, d, IO_MAP["IRQ_PENDING"], 1)
        assert ctx.get(dut.ext_irq)

    run(dut, bench)


def test_two_lines_priority_threshold_and_claim():
    dut = SoCBus()
    d = dut.dbus
    none = 0xFFFF_FFFF

    async def bench(ctx):
        # Reset: both lines priority 1, threshold 0: any pending, enabled line interrupts.
        assert await read(ctx, d, IO_MAP["IRQ_PRIORITY"]) == 0x11
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == none
        await write(ctx, d, IO_MAP["IRQ_ENABLE"], 0b11)
        ctx.set(dut.irq, 0b10)                            # STIM1 rises: line 1
        await ctx.tick().repeat(IRQ_SYNC_STAGES + 2)
        assert ctx.get(dut.ext_irq)
        assert await read(ctx, d, IO_MAP["IRQ_PENDING"]) == 0b10
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == 1
        assert await read(ctx, d, IO_MAP["IRQ_PIN"]) == 0b10
        stamp1 = await read(ctx, d, IO_MAP["IRQ_STAMP1"])
        assert stamp1 > 0 and await read(ctx, d, IO_MAP["IRQ_STAMP"]) == 0
        # Line 1 being serviced at priority 1: the threshold at 1 masks it ...
        await write(ctx, d, IO_MAP["IRQ_THRESHOLD"], 1)
        assert not ctx.get(dut.ext_irq)
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == none
        # ... and line 0 at priority 2 preempts it; it is claimed first.
        await write(ctx, d, IO_MAP["IRQ_PRIORITY"], 0x12)
        assert await read(ctx, d, IO_MAP["IRQ_PRIORITY"]) == 0x12
        await write(ctx, d, IO_MAP["IRQ_TRIGGER"], 0b01)
        assert ctx.get(dut.ext_irq)
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == 0
        # Equal priorities claim the lower line; clearing one leaves the other.
        await write(ctx, d, IO_MAP["IRQ_THRESHOLD"], 0)
        await write(ctx, d, IO_MAP["IRQ_PRIORITY"], 0x22)
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == 0
        await write(ctx, d, IO_MAP["IRQ_PENDING"], 0b01)
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == 1
        await write(ctx, d, IO_MAP["IRQ_PRIORITY"], 0x32)        # line 1 higher
        await write(ctx, d, IO_MAP["IRQ_TRIGGER"], 0b01)
        assert await read(ctx, d, IO_MAP["IRQ_CLAIM"]) == 1
        # Priority 0 never interrupts; disabling a line removes it.
        await write(ctx, d, IO_MAP["IRQ_PRIORITY"], 0x00)
        assert not ctx.get(dut.ext_irq)
        await write(ctx, d, IO_MAP["IRQ_PRIORITY"], 0x11)
        await write(ctx, d, IO_MAP["IRQ_ENABLE"], 0b00)
        assert not ctx.get(dut.ext_irq)
        assert await read(ctx, d, IO_MAP["IRQ_PENDING"]) == 0b11

    run(dut, bench)


def test_timer_compare_and_reset_values():
    dut = SoCBus()

    async def bench(ctx):
        d = dut.dbus
        assert await read(ctx, d, IO_MAP["MTIMECMP_LO"]) == 0xFFFF_FFFF
        assert await read(ctx, d, IO_MAP["MTIMECMP_HI"]) == 0xFFFF_FFFF
        assert not ctx.get(dut.timer_irq)
        a = await read(ctx, d, IO_MAP["MTIME_LO"])
        b = await read(ctx, d, IO_MAP["MTIME_LO"])
        assert b - a == 2                                  # one count per cycle
        assert await read(ctx, d, IO_MAP["MTIME_HI"]) == 0
        await write(ctx, d, IO_MAP["MTIMECMP_HI"], 0)
        await write(ctx, d, IO_MAP["MTIMECMP_LO"], b + 20)
        n = 0
        while not ctx.get(dut.timer_irq):
            await ctx.tick()
            n += 1
        now = await read(ctx, d, IO_MAP["MTIME_LO"])
        assert now == b + 20 + 1                            # registered compare: 1 cycle
        assert 10 < n < 20

    run(dut, bench)


def test_ram_init_byte_writes_and_burst_timing():
    dut = SoCBus(words=[0x11111111 * k for k in range(16)])

    async def bench(ctx):
        d, i = dut.dbus, dut.ibus
        assert await read(ctx, d, 0x14) == 0x55555555
        await write(ctx, d, 0x14, 0xAABBCCDD, sel=0b0010)
        assert await read(ctx, d, 0x14) == 0x5555CC55
        # A cache line refill on the instruction bus: 8 words in 9 cycles.
        # The master moves to the next address at the edge that ends an ack cycle.
        ctx.set(i.cyc, 1), ctx.set(i.stb, 1)
        got, cycles, adr = [], 0, 8
        while len(got) < 8:
            ctx.set(i.adr, adr), ctx.set(i.cti, LAST if adr == 15 else BURST)
            _, _, ack, data = await ctx.tick().sample(i.ack, i.dat_r)
            cycles += 1
            if ack:
                got.append(data)
                adr += 1
        ctx.set(i.cyc, 0), ctx.set(i.stb, 0)
        assert got == [0x11111111 * k for k in range(8, 16)]
        assert cycles == 9
        await ctx.tick()
        assert not ctx.get(i.ack)

    run(dut, bench)


def test_cpu_instance_matches_the_vexriscv_verilog():
    pytest.importorskip("pythondata_cpu_vexriscv", reason="pythondata-cpu-vexriscv missing")
    from rtrig.gateware.soc import vexriscv_verilog
    text = vexriscv_verilog().read_text()
    header = re.search(r"module VexRiscv \((.*?)\);", text, re.S).group(1)
    ports = set(re.findall(r"(\w+),?\s*$", header, re.M))
    il = rtlil.convert(SoC(b"\0" * 16), name="soc")
    cell = re.search(r"cell \\VexRiscv \\cpu\n(.*?)\n\s*end", il, re.S).group(1)
    connected = set(re.findall(r"connect \\(\w+)", cell))
    assert connected == ports


class _Held(Elaboratable):
    """The SoC's GPIO outputs on their way to the rig's capture (``held_levels``)."""

    def __init__(self, hold):
        self.out = Signal(2)
        self.hold = hold

    def elaborate(self, platform):
        m = Module()
        m.domains.soc = ClockDomain()
        self.shown = held_levels(m, self.out, self.hold)
        return m


@pytest.mark.parametrize("hold", [1, 2, 3])
def test_each_gpio_level_lasts_the_hold_and_delays_no_other_bit(hold):
    # (cycle, value of the two bits the SoC drives): bit 0 a one-cycle pulse, then a
    # long one; bit 1 rises the cycle after bit 0's one-cycle pulse, and a one-cycle
    # low of bit 1 later.
    drive = {2: 0b01, 3: 0b10, 10: 0b11, 14: 0b10, 20: 0b00, 21: 0b10, 22: 0b10}
    dut = _Held(hold)
    got = []

    async def tb(ctx):
        for c in range(30):
            if c in drive:
                ctx.set(dut.out, drive[c])
            got.append(ctx.get(dut.shown))
            await ctx.tick("soc")

    sim = Simulator(dut)
    sim.add_clock(20e-9, domain="soc")
    sim.add_testbench(tb)
    sim.run()
    for bit in (0, 1):
        levels = [(v >> bit) & 1 for v in got]
        want = [(drive[max(k for k in drive if k <= c)] >> bit) & 1 if c >= 2 else 0
                for c in range(30)]
        runs = []                                 # (first cycle, level, length)
        for c, v in enumerate(levels):
            if runs and runs[-1][1] == v:
                runs[-1][2] += 1
            else:
                runs.append([c, v, 1])
        # every level but the first and last lasts at least ``hold`` cycles
        assert all(n >= hold for _, _, n in runs[1:-1]), (bit, runs)
        # every change comes through at once unless the level before it was younger
        # than the hold; the SoC's changes all show, none is lost
        changes = [c for c in range(1, 30) if want[c] != want[c - 1]]
        shown_changes = [c for c in range(1, 30) if levels[c] != levels[c - 1]]
        assert len(shown_changes) == len(changes), (bit, changes, shown_changes)
        assert all(s >= c for s, c in zip(shown_changes, changes))
    if hold == 1:
        assert [got[c] for c in range(30)] == [0, 0] + [drive[max(k for k in drive if k <= c)]
                                                       for c in range(2, 30)]
    else:
        # bit 1's rise in cycle 3 is not held back by bit 0's change in cycle 2
        assert (got[3] >> 1) & 1 == 1
        # bit 0's one-cycle pulse (cycle 2) is shown for ``hold`` cycles
        assert [(got[c] & 1) for c in range(2, 2 + hold)] == [1] * hold
