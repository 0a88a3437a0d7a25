# SPDX-License-Identifier: BSD-2-Clause
"""The reference SoC (``rtrig.gateware.soc``) on a board: the ``soc`` and ``soc-alone``
build targets.

``soc``
    :class:`RigSoCTop`: the board's rig with the SoC built in
    (``GatewareTop(with_soc=True)``), wired inside the FPGA as in the simulation twin: STIM0 →
    SoC IRQ, LOAD_EN → SoC GPIO input 0, and ``TARGET_SEL = SOC`` routes the SoC's GPIO
    outputs to the capture. The SoC's pins are also copied to spare header pins (the
    board's ``soc_debug`` resource) for a scope.
``soc-alone``
    :class:`SoCTargetTop`: the SoC alone, a target for a second board's rig. Its pins
    (``soc_target``) sit where the rig's are, so a straight cable joins the two boards:
    IRQ on the rig's STIM0 pin, GPIO input 0 on LOAD_EN, the GPIO outputs on the rig's
    input pins. Its console (``CONSOLE_TX``) goes out on the board's USB-serial UART at
    :data:`CONSOLE_BAUD`.

The SoC runs in the clock domain ``soc`` at :data:`SOC_CLK_HZ` (the firmware's
``SOC_CPU_HZ``), made by the board's PLL beside the rig's ``sync``. Its RAM is
initialised from the firmware's raw ``.bin`` (:func:`firmware_image`: by default the
twin's, ``firmware/build/rtrig-soc/rt_test.bin``).
"""

from pathlib import Path

from amaranth import Cat, ClockDomain, Elaboratable, Module
from amaranth.build import Pins, Resource, Subsignal
from amaranth.hdl import DomainRenamer
from amaranth.lib import fifo, io, wiring
from amaranth.lib.wiring import In, Out

from rtrig.errors import UsageError
from rtrig.firmware import default_firmware
from rtrig.gateware.soc import N_GPIO_OUT, SOC_CLK_HZ, SoC, load_image, vexriscv_verilog
from rtrig.gateware.uart import UARTTx

from .board import RIG_INPUTS, BoardTop

__all__ = ["SOC_CLK_HZ", "CONSOLE_BAUD", "CONSOLE_FIFO_DEPTH", "SOC_DEBUG_OUTPUTS",
           "SOC_TARGET_INPUTS", "SOC_TARGET_OUTPUTS", "soc_debug_resource",
           "soc_target_resource", "firmware_path", "firmware_image", "Console", "soc_rig",
           "RigSoCTop",
           "SoCTargetTop"]

#: Console UART (8N1) of the ``soc-alone`` target: divisor 434, +0.006 %.
CONSOLE_BAUD = 115_200
#: Console bytes buffered ahead of the UART; a byte written to a full buffer is lost.
CONSOLE_FIFO_DEPTH = 512

#: ``soc_debug`` subsignals (all outputs): the SoC's IRQ input (a copy of STIM0), its
#: GPIO input 0 (a copy of LOAD_EN) and its GPIO outputs, in the bit order of
#: ``rtrig.protocol.Input``.
SOC_DEBUG_OUTPUTS = ("irq", "load_en", *RIG_INPUTS)
#: ``soc_target`` inputs, named by the rig pin that drives them: STIM0 is interrupt
#: line 0, STIM1 line 1, LOAD_EN GPIO input 0.
SOC_TARGET_INPUTS = ("stim0", "stim1", "load_en")
#: ``soc_target`` outputs: the GPIO outputs, named by the rig input they drive.
SOC_TARGET_OUTPUTS = RIG_INPUTS

assert len(RIG_INPUTS) == N_GPIO_OUT


def soc_debug_resource(pins, *, conn=None, out_attrs):
    """The ``soc_debug`` resource: ``pins`` maps every name of :data:`SOC_DEBUG_OUTPUTS`
    to a pin (a connector pin when ``conn`` is given)."""
    return Resource("soc_debug", 0, *(
        Subsignal(n, Pins(pins[n], dir="o", conn=conn), out_attrs)
        for n in SOC_DEBUG_OUTPUTS))


def soc_target_resource(pins, *, conn=None, out_attrs, in_attrs):
    """The ``soc_target`` resource: ``pins`` maps every name of
    :data:`SOC_TARGET_INPUTS` and :data:`SOC_TARGET_OUTPUTS` to a pin."""
    subs = [Subsignal(n, Pins(pins[n], dir="i", conn=conn), in_attrs)
            for n in SOC_TARGET_INPUTS]
    subs += [Subsignal(n, Pins(pins[n], dir="o", conn=conn), out_attrs)
             for n in SOC_TARGET_OUTPUTS]
    return Resource("soc_target", 0, *subs)


def firmware_path(path=None):
    """The SoC image to build in: ``path``, or the twin's default
    (:func:`rtrig.firmware.default_firmware`, built by the firmware Makefile when the
    RISC-V compiler is installed). Raises :class:`UsageError` for a missing file,
    :class:`ToolchainError` when the default cannot be built."""
    if path is None:
        path = default_firmware()
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"firmware image not found: {path}",
                         hint="give a raw .bin (linked at 0), e.g. "
                              "firmware/build/rtrig-soc/rt_test.bin")
    return path


def firmware_image(path=None):
    """The SoC's RAM image as bytes, from :func:`firmware_path` ``(path)``; a
    :class:`UsageError` when it does not fit the RAM."""
    path = firmware_path(path)
    image = path.read_bytes()
    try:
        load_image(image)
    except ValueError as e:
        raise UsageError(f"{path}: {e}") from None
    return image


def _add_vexriscv(platform):
    # The CPU is an Instance of module VexRiscv; its Verilog goes into the build as is.
    path = vexriscv_verilog()
    platform.add_file(path.name, path.read_text())


class Console(wiring.Component):
    """The SoC's console bytes out on a UART (8N1), through a FIFO.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit.
    depth : int
        Bytes buffered; a byte written while the buffer is full is dropped (the SoC's
        ``CONSOLE_TX`` has no flow control).

    Members
    -------
    valid, data : In(1), In(8)
        One strobe per byte (the SoC's ``console_valid``, ``console_data``).
    tx : Out(1)
        Line output, idle high.
    """

    def __init__(self, divisor, depth=CONSOLE_FIFO_DEPTH):
        self.divisor = divisor
        self.depth = depth
        super().__init__({"valid": In(1), "data": In(8), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = q = fifo.SyncFIFOBuffered(width=8, depth=self.depth)
        m.submodules.uart = uart = UARTTx(self.divisor)
        m.d.comb += [
            q.w_data.eq(self.data),
            q.w_en.eq(self.valid),
            uart.data.payload.eq(q.r_data),
            uart.data.valid.eq(q.r_rdy),
            q.r_en.eq(uart.data.ready),
            self.tx.eq(uart.tx),
        ]
        return m


def soc_rig(board, firmware=b"", **kwargs):
    """The GatewareTop of ``board``'s ``soc`` target, the SoC built in running ``firmware``;
    ``kwargs`` are further GatewareTop parameters (the simulation twin's link and model)."""
    # Two latency channels beside the SoC (isr and app, or intervals): with four the
    # SoC's clock kept +17 % margin only with a placer weighing timing more, and the
    # twin of this target simulated 1.7× the default SoC twin's rig time per second,
    # where with two it does more than twice it (docs/performance.md).
    return board.rig(with_soc=True, soc_firmware=firmware, lat_channels=2, **kwargs)


class RigSoCTop(BoardTop):
    """The board's rig with the reference SoC built in (target ``soc``).

    :class:`BoardTop` with a ``GatewareTop(with_soc=True)`` running ``firmware``, the board's
    ``soc_clocking`` driving ``sync`` and ``soc``, and the SoC's pins copied to the
    ``soc_debug`` resource. The copies come from the same flip-flops as the internal
    signals (STIM0 and LOAD_EN from the rig's, the GPIO outputs from the SoC's
    register) through plain output buffers.
    """

    def __init__(self, board, firmware=b""):
        super().__init__(board)
        self.firmware = bytes(firmware)

    def rig(self):
        return soc_rig(self.board, self.firmware)

    def clocking(self, platform):
        return self.board.soc_clocking(platform, with_rig=True)

    def add_more(self, m, platform):
        m.domains.soc = ClockDomain("soc")
        _add_vexriscv(platform)
        rig = m.submodules.rig
        pins = platform.request("soc_debug", 0, dir="-")
        sources = {"irq": rig.stim0, "load_en": rig.load_en}
        sources.update({n: rig.soc_gpio_out[bit] for bit, n in enumerate(RIG_INPUTS)})
        for name in SOC_DEBUG_OUTPUTS:
            m.submodules[f"soc_pin_{name}"] = buf = io.Buffer("o", getattr(pins, name))
            m.d.comb += buf.o.eq(sources[name])


class SoCTargetTop(Elaboratable):
    """The reference SoC alone on a board (target ``soc-alone``), a target for a rig.

    Pins (the board's ``soc_target`` resource, plain buffers): interrupt lines 0 and 1
    from the rig's STIM0 and STIM1,
    GPIO input 0 from LOAD_EN (both synchronised in the SoC, ``IRQ_SYNC_STAGES``), GPIO
    outputs to the rig's ISR_OUT..MARKER2 pins straight from the SoC's register. The
    console goes out on the board's USB-serial UART (``Board.uart``, TX only) at
    :data:`CONSOLE_BAUD`.
    """

    def __init__(self, board, firmware=b""):
        self.board = board
        self.firmware = bytes(firmware)

    def elaborate(self, platform):
        b = self.board
        m = Module()
        m.domains.soc = ClockDomain("soc")
        m.submodules.clocking = b.soc_clocking(platform, with_rig=False)
        _add_vexriscv(platform)
        m.submodules.soc = soc = DomainRenamer("soc")(SoC(self.firmware))

        pins = platform.request("soc_target", 0, dir="-")
        inputs = {}
        for name in SOC_TARGET_INPUTS:
            m.submodules[f"pin_{name}"] = buf = io.Buffer("i", getattr(pins, name))
            inputs[name] = buf.i
        m.d.comb += [soc.irq.eq(Cat(inputs["stim0"], inputs["stim1"])),
                     soc.gpio_in.eq(inputs["load_en"])]
        for bit, name in enumerate(SOC_TARGET_OUTPUTS):
            m.submodules[f"pin_{name}"] = buf = io.Buffer("o", getattr(pins, name))
            m.d.comb += buf.o.eq(soc.gpio_out[bit])

        m.submodules.console = console = DomainRenamer("soc")(
            Console(SOC_CLK_HZ // CONSOLE_BAUD))
        m.d.comb += [console.valid.eq(soc.console_valid), console.data.eq(soc.console_data)]
        uart = platform.request(*b.uart, dir="-")
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.d.comb += uart_tx.o.eq(console.tx)

        if b.extra is not None:
            b.extra(m, platform)
        return m
