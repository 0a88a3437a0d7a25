# SPDX-License-Identifier: BSD-2-Clause
"""The reference target: a VexRiscv SoC that runs the project's firmware.

The memory map is ``firmware/boards/rtrig-soc/soc_map.h`` (docs/soc-memory-map.md);
the SoC's timing and its fixed I/O delays are in docs/soc.md.

The CPU is the "Full" VexRiscv of ``pythondata-cpu-vexriscv`` (rv32im + Zicsr, 4 KiB
instruction and data caches, Wishbone instruction and data buses, external interrupt
array with mask CSR ``0xBC0``). Its Verilog is not converted by Amaranth: the
:class:`SoC` instantiates module ``VexRiscv`` and the build reads
:func:`vexriscv_verilog` next to the converted design.

Everything here runs in one clock domain, ``sync`` inside the component; the rig
renames it to ``soc`` (50 MHz beside the rig's 30 MHz ``sync``).
"""

from pathlib import Path

from amaranth import C, Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import cdc, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["SOC_CLK_HZ", "SoC", "SoCBus", "WishboneSignature", "vexriscv_verilog", "load_image", "IO_MAP", "SOC_ID",
           "RAM_BYTES", "N_GPIO_OUT", "IRQ_SYNC_STAGES", "N_IRQ"]

RAM_BYTES = 64 * 1024
#: The SoC's clock (domain ``soc``); firmware/boards/rtrig-soc/soc_map.h, SOC_CPU_HZ.
SOC_CLK_HZ = 50_000_000
N_GPIO_OUT = 6
SOC_ID = 0x52545247                  #: "RTRG"
#: Flip-flops between the IRQ pin and the edge detector (``cdc.FFSynchronizer``).
IRQ_SYNC_STAGES = 2
#: Interrupt lines (``IRQ_PENDING`` bits): 0 from STIM0, 1 from STIM1.
N_IRQ = 2

#: Byte addresses of the I/O registers (``soc_map.h``).
IO_MAP = {
    "GPIO_OUT_SET": 0x8000_0000, "GPIO_OUT_CLR": 0x8000_0004,
    "GPIO_OUT": 0x8000_0008, "GPIO_IN": 0x8000_000C,
    "IRQ_PENDING": 0x8000_1000, "IRQ_ENABLE": 0x8000_1004,
    "IRQ_TRIGGER": 0x8000_1008, "IRQ_PIN": 0x8000_100C, "IRQ_STAMP": 0x8000_1010,
    "IRQ_STAMP1": 0x8000_1014, "IRQ_PRIORITY": 0x8000_1018, "IRQ_THRESHOLD": 0x8000_101C,
    "IRQ_CLAIM": 0x8000_1020,
    "MTIME_LO": 0x8000_2000, "MTIME_HI": 0x8000_2004,
    "MTIMECMP_LO": 0x8000_2008, "MTIMECMP_HI": 0x8000_200C,
    "CONSOLE_TX": 0x8000_3000, "SIM_EXIT": 0x8000_3004, "SYS_ID": 0x8000_3008,
    "TRACE": 0x8000_300C,
}


def vexriscv_verilog(variant="Full"):
    """Path of the VexRiscv Verilog file of ``variant`` (module name ``VexRiscv``)."""
    import pythondata_cpu_vexriscv
    path = Path(pythondata_cpu_vexriscv.data_location) / f"VexRiscv_{variant}.v"
    if not path.exists():
        raise FileNotFoundError(path)
    return path


def load_image(image):
    """RAM words (little-endian) from a raw image: ``bytes`` or a path to a ``.bin``."""
    if isinstance(image, (str, Path)):
        image = Path(image).read_bytes()
    image = bytes(image or b"")
    if len(image) > RAM_BYTES:
        raise ValueError(f"firmware image of {len(image)} bytes does not fit "
                         f"{RAM_BYTES} bytes of RAM")
    image += b"\0" * (-len(image) % 4)
    return [int.from_bytes(image[i:i + 4], "little") for i in range(0, len(image), 4)]


#: Wishbone (classic, with burst hints) as VexRiscv's buses use it, from the master.
WishboneSignature = wiring.Signature({
    "cyc": Out(1), "stb": Out(1), "we": Out(1), "adr": Out(30), "dat_w": Out(32),
    "sel": Out(4), "cti": Out(3), "bte": Out(2),
    "ack": In(1), "dat_r": In(32), "err": In(1),
})


def _pin_members():
    """The SoC's pins, as members of :class:`SoC` and :class:`SoCBus`."""
    return {
        "irq": In(N_IRQ),
        "gpio_in": In(1),
        "gpio_out": Out(N_GPIO_OUT),
        "console_valid": Out(1),
        "console_data": Out(8),
        "exit_valid": Out(1),
        "exit_code": Out(32),
        "trace_valid": Out(1),
        "trace_data": Out(32),
    }


class SoCBus(wiring.Component):
    """RAM and I/O of the SoC behind VexRiscv's two Wishbone buses.

    Everything the CPU sees except the CPU itself, so a testbench can drive the buses.

    All ports are in the SoC's ``sync`` domain (``soc`` in the rig).

    Parameters
    ----------
    words : list of int
        Initial RAM words.

    Members
    -------
    ibus, dbus : In(WishboneSignature)
        Instruction and data buses (word addresses). A read is acknowledged the cycle
        after its request; in an incrementing burst (CTI = 0b010) the next word is
        read ahead, so a 32-byte cache line takes 9 cycles. A write is acknowledged in
        its cycle and takes effect at the end of it.
    timer_irq, ext_irq : Out(1)
        ``mtime >= mtimecmp`` (registered) and "a line is pending and enabled with a
        priority above ``THRESHOLD``" (with the reset priorities and threshold:
        ``PENDING & ENABLE``).
    irq, gpio_in, gpio_out, console_*, exit_*, trace_* :
        As in :class:`SoC`.
    """

    def __init__(self, words=()):
        self.words = list(words)
        super().__init__({
            "ibus": In(WishboneSignature),
            "dbus": In(WishboneSignature),
            "timer_irq": Out(1),
            "ext_irq": Out(1),
            **_pin_members(),
        })

    def elaborate(self, platform):
        m = Module()
        d_write, d_req, io_rdata = self._ram(m)

        # I/O registers: decoded on the full byte address; writes act in their (single)
        # cycle, reads are registered into io_rdata for the acknowledge cycle.
        addr = Cat(C(0, 2), self.dbus.adr)
        wdata = self.dbus.dat_w

        def wr(name):
            return d_write & (addr == IO_MAP[name])

        reads = {}
        self._gpio(m, wr, wdata, reads)
        mtime = self._timer(m, wr, wdata, reads)
        self._interrupts(m, wr, wdata, mtime, reads)
        self._system(m, wr, wdata, reads)

        with m.If(d_req):
            with m.Switch(addr):
                for name, value in reads.items():
                    with m.Case(IO_MAP[name]):
                        m.d.sync += io_rdata.eq(value)
                with m.Default():
                    m.d.sync += io_rdata.eq(0)
        return m

    def _ram(self, m):
        """The RAM: one read port per bus, the write port on the data bus. A read is
        acknowledged the cycle after its request; in an incrementing burst (cache line
        refill, CTI = 0b010) the next word is read ahead, so a line takes 9 cycles. A
        write is acknowledged at once and done at the end of that cycle. The data bus
        reads I/O (address bit 31) from ``io_rdata``.

        Returns the data bus's write strobe, its read request (a read's first cycle)
        and ``io_rdata``.
        """
        depth = RAM_BYTES // 4
        aw = (depth - 1).bit_length()
        ibus, dbus = self.ibus, self.dbus
        m.submodules.ram = ram = Memory(shape=32, depth=depth, init=self.words)
        i_rd = ram.read_port()
        d_rd = ram.read_port()
        d_wr = ram.write_port(granularity=8)
        BURST = 0b010

        i_stb = ibus.cyc & ibus.stb
        m.d.sync += ibus.ack.eq(i_stb & Mux(ibus.ack, ibus.cti == BURST, 1))
        m.d.comb += [
            i_rd.addr.eq(Mux(ibus.ack, ibus.adr + 1, ibus.adr)[:aw]),
            ibus.dat_r.eq(i_rd.data),
        ]

        d_stb = dbus.cyc & dbus.stb
        d_io = dbus.adr[29]                 # address bit 31: I/O
        d_write = d_stb & dbus.we
        d_rack = Signal()
        d_req = d_stb & ~dbus.we & ~d_rack  # a read's first cycle
        m.d.sync += d_rack.eq(d_stb & ~dbus.we & Mux(d_rack, dbus.cti == BURST, 1))
        io_rdata = Signal(32)
        io_sel = Signal()
        with m.If(d_req):
            m.d.sync += io_sel.eq(d_io)
        m.d.comb += [
            dbus.ack.eq(d_rack | d_write),
            d_rd.addr.eq(Mux(d_rack, dbus.adr + 1, dbus.adr)[:aw]),
            d_wr.addr.eq(dbus.adr[:aw]),
            d_wr.data.eq(dbus.dat_w),
            d_wr.en.eq(Mux(d_write & ~d_io, dbus.sel, 0)),
            dbus.dat_r.eq(Mux(io_sel, io_rdata, d_rd.data)),
        ]
        return d_write, d_req, io_rdata

    def _gpio(self, m, wr, wdata, reads):
        """GPIO: the outputs (written, set and cleared by mask) and the input."""
        gpio_out = Signal(N_GPIO_OUT)
        gpio_in = Signal(1)
        m.submodules.gpio_sync = cdc.FFSynchronizer(self.gpio_in, gpio_in, stages=2)
        with m.If(wr("GPIO_OUT")):
            m.d.sync += gpio_out.eq(wdata)
        with m.Elif(wr("GPIO_OUT_SET")):
            m.d.sync += gpio_out.eq(gpio_out | wdata)
        with m.Elif(wr("GPIO_OUT_CLR")):
            m.d.sync += gpio_out.eq(gpio_out & ~wdata)
        m.d.comb += self.gpio_out.eq(gpio_out)
        reads["GPIO_OUT"] = gpio_out
        reads["GPIO_IN"] = gpio_in

    def _timer(self, m, wr, wdata, reads):
        """The machine timer: ``mtime`` (returned) counts every cycle from the FPGA's
        configuration, as VexRiscv's ``mcycle`` does, which no reset clears: the
        self-timed figures subtract one from the other, and the rig restarts the SoC
        for its runs (docs/protocol.md, "Armed runs"). So ``mtime`` is reset-less."""
        mtime = Signal(64, reset_less=True)
        mtimecmp = Signal(64, init=(1 << 64) - 1)
        m.d.sync += mtime.eq(mtime + 1)
        with m.If(wr("MTIMECMP_LO")):
            m.d.sync += mtimecmp[:32].eq(wdata)
        with m.If(wr("MTIMECMP_HI")):
            m.d.sync += mtimecmp[32:].eq(wdata)
        m.d.sync += self.timer_irq.eq(mtime >= mtimecmp)
        reads.update(MTIME_LO=mtime[:32], MTIME_HI=mtime[32:],
                     MTIMECMP_LO=mtimecmp[:32], MTIMECMP_HI=mtimecmp[32:])
        return mtime

    def _interrupts(self, m, wr, wdata, mtime, reads):
        """Edge-latched interrupt lines.

        STAMP (line 0) and STAMP1 hold mtime of the cycle the synchronised edge was
        detected, so firmware can time its own entry (docs/soc.md). Each line has a
        priority (0..3); the CPU's interrupt is raised while a pending, enabled line's
        priority is above THRESHOLD, and CLAIM names the highest such line (the lower
        line on a tie; all ones: none), so a kernel can raise THRESHOLD to a line's
        priority and let only higher ones preempt it.
        """
        pins = Signal(N_IRQ)
        pins_prev = Signal(N_IRQ)
        m.submodules.irq_sync = cdc.FFSynchronizer(self.irq, pins, stages=IRQ_SYNC_STAGES)
        m.d.sync += pins_prev.eq(pins)
        rise = pins & ~pins_prev
        pending = Signal(N_IRQ)
        enable = Signal(N_IRQ)
        priority = Signal(2 * N_IRQ, init=0b0101)
        threshold = Signal(2)
        stamps = [Signal(32, name=f"stamp{n}") for n in range(N_IRQ)]
        for n in range(N_IRQ):
            with m.If(wr("IRQ_PENDING") & wdata[n]):
                m.d.sync += pending[n].eq(0)
            with m.If(wr("IRQ_TRIGGER") & wdata[n]):
                m.d.sync += pending[n].eq(1)
            with m.If(rise[n]):                 # an edge wins over a clear in the same cycle
                m.d.sync += [pending[n].eq(1), stamps[n].eq(mtime[:32])]
        with m.If(wr("IRQ_ENABLE")):
            m.d.sync += enable.eq(wdata[:N_IRQ])
        with m.If(wr("IRQ_PRIORITY")):
            m.d.sync += priority.eq(Cat(wdata[4 * n:4 * n + 2] for n in range(N_IRQ)))
        with m.If(wr("IRQ_THRESHOLD")):
            m.d.sync += threshold.eq(wdata[:2])
        # Lines that may interrupt, and the one to claim: the highest priority above
        # the threshold (a few LUTs; read in the cycle after a write like any register).
        live = [pending[n] & enable[n] & (priority[2 * n:2 * n + 2] > threshold)
                for n in range(N_IRQ)]
        claim = Signal(32)
        p0, p1 = priority[0:2], priority[2:4]
        m.d.comb += claim.eq(Mux(live[0] & (~live[1] | (p0 >= p1)), 0,
                                 Mux(live[1], 1, 0xFFFF_FFFF)))
        m.d.comb += self.ext_irq.eq(live[0] | live[1])     # as fast as before: no register
        reads.update(IRQ_PENDING=pending, IRQ_ENABLE=enable, IRQ_PIN=pins,
                     IRQ_STAMP=stamps[0], IRQ_STAMP1=stamps[1],
                     IRQ_PRIORITY=Cat(priority[0:2], C(0, 2), priority[2:4]),
                     IRQ_THRESHOLD=threshold, IRQ_CLAIM=claim)

    def _system(self, m, wr, wdata, reads):
        """System registers: console, simulation exit, ID, trace."""
        m.d.sync += [
            self.console_valid.eq(wr("CONSOLE_TX")),
            self.exit_valid.eq(wr("SIM_EXIT")),
            self.trace_valid.eq(wr("TRACE")),
        ]
        with m.If(wr("CONSOLE_TX")):
            m.d.sync += self.console_data.eq(wdata[:8])
        with m.If(wr("SIM_EXIT")):
            m.d.sync += self.exit_code.eq(wdata)
        with m.If(wr("TRACE")):
            m.d.sync += self.trace_data.eq(wdata)
        reads["SYS_ID"] = C(SOC_ID, 32)


class SoC(wiring.Component):
    """VexRiscv, 64 KiB RAM, GPIO, an edge-latched interrupt, a machine timer.

    All ports are in the ``sync`` domain of the component (the rig renames it to
    ``soc``) except ``irq`` and ``gpio_in``, which are asynchronous and synchronised
    here.

    Parameters
    ----------
    image : bytes or path
        Initial RAM contents (the firmware's raw ``.bin``, linked at 0).
    variant : str
        VexRiscv variant; the firmware needs mscratch/mcycle, hence "Full".

    Members
    -------
    irq : In(2)
        Interrupt pins (bit 0: rig STIM0, bit 1: STIM1), asynchronous; a rising edge on
        line n sets ``PENDING`` bit n.
    gpio_in : In(1)
        Input pins (bit 0 LOAD_EN), asynchronous.
    gpio_out : Out(6)
        Output register: ISR_OUT, APP_OUT, HEARTBEAT, MARKER0..2.
    console_valid, console_data : Out(1), Out(8)
        One strobe per byte written to ``CONSOLE_TX``.
    exit_valid, exit_code : Out(1), Out(32)
        A write to ``SIM_EXIT``.
    trace_valid, trace_data : Out(1), Out(32)
        A write to ``TRACE`` (self-timed figures for the simulation log).
    """

    def __init__(self, image=b"", variant="Full"):
        self.words = load_image(image)
        self.variant = variant
        super().__init__(_pin_members())

    def elaborate(self, platform):
        m = Module()
        m.submodules.bus = bus = SoCBus(self.words)
        cpu_ports = dict(
            i_clk=ClockSignal("sync"), i_reset=ResetSignal("sync"),
            i_externalResetVector=C(0, 32),
            i_timerInterrupt=bus.timer_irq,
            i_softwareInterrupt=C(0, 1),
            i_externalInterruptArray=Cat(bus.ext_irq, C(0, 31)),
        )
        for wb, name in ((bus.ibus, "iBusWishbone"), (bus.dbus, "dBusWishbone")):
            cpu_ports.update({
                f"o_{name}_CYC": wb.cyc, f"o_{name}_STB": wb.stb,
                f"i_{name}_ACK": wb.ack, f"o_{name}_WE": wb.we,
                f"o_{name}_ADR": wb.adr, f"i_{name}_DAT_MISO": wb.dat_r,
                f"o_{name}_DAT_MOSI": wb.dat_w, f"o_{name}_SEL": wb.sel,
                f"i_{name}_ERR": wb.err, f"o_{name}_CTI": wb.cti,
                f"o_{name}_BTE": wb.bte,
            })
        m.submodules.cpu = Instance("VexRiscv", **cpu_ports)
        for name in ("irq", "gpio_in"):
            m.d.comb += getattr(bus, name).eq(getattr(self, name))
        for name in ("gpio_out", "console_valid", "console_data", "exit_valid", "exit_code",
                     "trace_valid", "trace_data"):
            m.d.comb += getattr(self, name).eq(getattr(bus, name))
        return m
