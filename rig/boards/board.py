# SPDX-License-Identifier: BSD-2-Clause
"""What every rig board has in common: its description and the top level around the GatewareTop.

A board file (``ulx3s.py``, ``orangecrab.py``, ``icebreaker.py``) subclasses an
amaranth-boards platform, adds the rig's pins as one resource named ``rig`` with
named subsignals, and describes itself with a :class:`Board`.

A board builds one or more of :data:`BUILD_TARGETS`: the rig alone (``rig``, every board),
the rig with the reference SoC built in (``soc``) and the SoC alone, as a target for
a second board (``soc-alone``); the SoC tops are in ``soc.py``.
"""

from dataclasses import dataclass, field

from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth.lib import io

from rtrig.gateware.features.capture import SAMPLES, QuadSampler
from rtrig.gateware.top import GatewareTop

__all__ = ["ECP5_CLK_FREQ", "ECP5_RIG_OPTIONS", "Board", "BoardTop", "rig_resource", "RIG_OUTPUTS", "RIG_INPUTS", "BUILD_TARGETS"]

#: GatewareTop → target pins, in the order of the GatewareTop's ports.
RIG_OUTPUTS = ("stim0", "stim1", "load_en")
#: Target → rig pins, in the bit order of ``GatewareTop.ext_inputs`` (rtrig.protocol.Input).
RIG_INPUTS = ("isr_out", "app_out", "heartbeat", "marker0", "marker1", "marker2")

#: What a board can be built as (``rtrig build BOARD --target T``).
BUILD_TARGETS = {
    "rig": "the rig",
    "soc": "the rig with the reference SoC built in (TARGET_SEL=SOC)",
    "soc-alone": "the reference SoC alone: a target for a second board's rig",
}


#: The ECP5 boards' ``sync`` clock, and what their rig is built with at it
#: (``Board.rig_options``; the :class:`GatewareTop`'s defaults): four samples of each input per
#: clock (an IDDRX1F per pin clocked by ``fast``, twice ``sync``, behind a
#: :class:`~rtrig.gateware.features.capture.QuadSampler`: ``pin_latency`` 2), interval channels,
#: bursts, the two-level register read and four latency channels (isr, app and two
#: interval channels). A tick is 8.33 ns (``TICK_HZ`` 120 MHz), a stimulus step a cycle
#: (33.33 ns); 30 MHz divides 3 Mbaud exactly, and every ECP5 build closes it on
#: nextpnr's first seed with margin (docs/performance.md, "FPGA boards"). Half the
#: cycles of a 60 MHz rig per µs also make its simulation twin twice as fast.
ECP5_CLK_FREQ = 30_000_000
ECP5_RIG_OPTIONS = {"pin_latency": 2, "intervals": True, "bursts": True,
                    "read_pipeline": True, "lat_channels": 4}


def rig_resource(pins, *, conn=None, out_attrs, in_attrs):
    """The ``rig`` resource: one subsignal per rig pin.

    ``pins`` maps every name of :data:`RIG_OUTPUTS` and :data:`RIG_INPUTS` to a pin
    (or a connector pin when ``conn`` is given).
    """
    subs = [Subsignal(n, Pins(pins[n], dir="o", conn=conn), out_attrs) for n in RIG_OUTPUTS]
    subs += [Subsignal(n, Pins(pins[n], dir="i", conn=conn), in_attrs) for n in RIG_INPUTS]
    return Resource("rig", 0, *subs)


@dataclass(frozen=True)
class Board:
    """A board the rig runs on.

    Attributes
    ----------
    name : str
        Name used on the command line (``rtrig build NAME``).
    code : int
        Value of register ``BOARD``.
    title : str
        Human-readable name.
    platform : type
        The platform class (an amaranth-boards platform with the ``rig`` resource).
    clk_freq : int
        ``sync`` clock in Hz (one tick).
    clocking : callable
        ``clocking(platform) -> Elaboratable`` that drives the ``sync`` domain
        (clock and reset) defined by :class:`BoardTop`.
    uart : tuple
        ``(resource name, number)`` of the host link UART.
    baud : int
        Host link baud rate of the default build (3 Mbaud: what every board's
        USB-serial chip does).
    link_bauds : tuple of int
        Faster host-link rates to offer (``rtrig build BOARD --baud``): rates the
        board's USB-serial chip makes exactly and its ``sync`` clock divides into at
        least 4 cycles per bit (the rig's UART receiver samples each bit at its middle).
    fifo_depth : int
        GatewareTop event/latency FIFO depth.
    with_model : bool
        Build the model target in (the board's self-test target).
    with_stats : bool
        Build the on-chip statistics in.
    programmer : callable
        ``programmer(bitstream_path) -> list[str]``: the command that loads the bitstream.
    bitstream_ext : str
        Extension of the file the programmer loads (``bit`` or ``bin``).
    extra : callable or None
        ``extra(m, platform)`` for board-specific housekeeping pins.
    nextpnr_opts : str
        Further nextpnr options.
    target_nextpnr_opts : dict
        Those of a target other than ``rig``, where they differ
        (:meth:`nextpnr_opts_for`).
    seeds : tuple of int
        nextpnr seeds, in order: the build places and routes with the first and,
        while timing is missed, again with the next (synthesis is not repeated).
    target_seeds : dict
        Seeds of a target other than ``rig`` (``soc``, ``soc-alone``), where they
        differ from ``seeds`` (:meth:`seeds_for`).
    pnr_timeout : int
        Seconds one build step (synthesis with the first place and route, or a
        retry) may take; nextpnr's timing-driven rip-up can keep routing for a long
        time when timing is out of reach. A step that runs out counts as a miss.
    yosys_after_read : str
        Yosys commands run on the design before synthesis.
    targets : tuple of str
        The :data:`BUILD_TARGETS` this board builds (``rig`` always).
    soc_clocking : callable or None
        ``soc_clocking(platform, with_rig) -> Elaboratable`` driving the ``soc`` domain
        at ``rtrig.boards.soc.SOC_CLK_HZ`` and, when ``with_rig``, ``sync`` at
        ``clk_freq`` (the SoC targets; the board's platform then has the resources
        ``soc_debug`` and ``soc_target`` of ``soc.py``).
    rig_options : dict
        Further :class:`GatewareTop` parameters (``pin_latency``, and ``intervals``,
        ``bursts``, ``read_pipeline``, ``lat_channels`` where a board leaves them out).
    same_die_as : str
        Name of a variant on the same die, differing only in the device name, whose
        place-and-route result stands for this one (ECP5): the build takes that
        variant's result (built, or from the build cache) and only packs the bitstream
        again for this device, and its timing check is that result's
        (``rtrig.boards.build``). Empty: placed and routed itself.
    """
    name: str
    code: int
    title: str
    platform: type
    clk_freq: int
    clocking: object
    uart: tuple = ("uart", 0)
    fifo_depth: int = 512
    with_model: bool = True
    with_stats: bool = True
    baud: int = 3_000_000
    link_bauds: tuple = ()
    programmer: object = None
    bitstream_ext: str = "bit"
    extra: object = None
    nextpnr_opts: str = ""
    target_nextpnr_opts: dict = field(default_factory=dict, hash=False)
    seeds: tuple = (1,)
    target_seeds: dict = field(default_factory=dict, hash=False)
    pnr_timeout: int = 1200
    yosys_after_read: str = ""
    notes: tuple = field(default_factory=tuple)
    targets: tuple = ("rig",)
    soc_clocking: object = None
    rig_options: dict = field(default_factory=dict, hash=False)
    same_die_as: str = ""

    def nextpnr_opts_for(self, target="rig"):
        """The further nextpnr options of ``target``'s build."""
        return self.target_nextpnr_opts.get(target, self.nextpnr_opts)

    def seeds_for(self, target="rig"):
        """The nextpnr seeds of ``target``'s build, in the order they are tried."""
        return tuple(self.target_seeds.get(target, self.seeds)) or (1,)

    @property
    def tick_ns(self):
        """One tick in ns: a ``sync`` clock period over :attr:`tick_step`."""
        return 1e9 / (self.clk_freq * self.tick_step)

    def rig(self, cls=GatewareTop, **kwargs):
        """The :class:`GatewareTop` (or ``cls``, a subclass) configured for this board;
        ``kwargs`` are further GatewareTop parameters."""
        params = dict(clk_freq=self.clk_freq, baud=self.baud, board=self.code,
                      with_model=self.with_model, fifo_depth=self.fifo_depth,
                      with_stats=self.with_stats)
        return cls(**{**params, **self.rig_options, **kwargs})

    @property
    def tick_step(self):
        """Ticks per ``sync`` cycle, the GatewareTop's ``step``: the samples it takes of each
        input per clock (:data:`~rtrig.gateware.features.capture.SAMPLES`)."""
        return SAMPLES


class BoardTop(Elaboratable):
    """The GatewareTop with its clock, UART and target pins on a board.

    Every pin goes through a plain (unregistered) ``io.Buffer``: the GatewareTop's stimulus
    outputs are flip-flop outputs already, and its input synchroniser is the first
    register the target's edges meet, so the delays the GatewareTop subtracts (``IN_DELAY``)
    are the pin-to-pin delays (docs/architecture.md, "Time and resolution"). The
    target's pins reach the GatewareTop through ``io.DDRBuffer``s in domain ``fast`` (twice
    ``sync``, from the board's clocking) behind a
    :class:`~rtrig.gateware.features.capture.QuadSampler` (two ``sync`` cycles deep: the GatewareTop's
    ``pin_latency``), four samples per clock.
    """

    def __init__(self, board):
        self.board = board

    def rig(self):
        """The GatewareTop this top wraps (a subclass may build it another way)."""
        return self.board.rig()

    def clocking(self, platform):
        """The clock generator (a subclass may drive more domains)."""
        return self.board.clocking(platform)

    def add_more(self, m, platform):
        """Adds a subclass's logic and pins to ``m``, the top module (after the rig's
        pins; the pins' order is the netlist's, kept as it was for the placement)."""

    def elaborate(self, platform):
        b = self.board
        m = Module()
        m.submodules.clocking = clocking = self.clocking(platform)
        # A clock held stopped until the PLL locks needs no reset (clocking.ECP5PLL).
        m.domains.sync = ClockDomain("sync",
                                     reset_less="sync" in getattr(clocking, "gated", ()))
        m.submodules.rig = rig = self.rig()
        m.domains.fast = ClockDomain("fast", reset_less=True)
        m.submodules.quad = quad = QuadSampler(len(RIG_INPUTS))
        m.d.comb += rig.ext_inputs.eq(quad.samples[0])
        for j in range(3):
            m.d.comb += rig.ext_later[j].eq(quad.samples[j + 1])

        uart = platform.request(*b.uart, dir="-")
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.d.comb += [rig.uart_rx.eq(uart_rx.i), uart_tx.o.eq(rig.uart_tx)]

        pins = platform.request("rig", 0, dir="-")
        for name in RIG_OUTPUTS:
            buf = io.Buffer("o", getattr(pins, name))
            m.submodules[f"pin_{name}"] = buf
            m.d.comb += buf.o.eq(getattr(rig, name))
        for bit, name in enumerate(RIG_INPUTS):
            buf = io.DDRBuffer("i", getattr(pins, name), i_domain="fast")
            m.d.comb += [quad.pair[0][bit].eq(buf.i[0]), quad.pair[1][bit].eq(buf.i[1])]
            m.submodules[f"pin_{name}"] = buf

        if b.extra is not None:
            b.extra(m, platform)
        self.add_more(m, platform)
        # The UART's other lines (the ULX3S's RTS and DTR, inputs from the FT231X) are
        # unused; each keeps the input buffer a request without dir="-" gave it.
        for sub in platform.lookup(*b.uart).ios:
            if sub.name in ("rx", "tx"):
                continue
            assert sub.ios[0].dir == "i", f"{b.name}: UART line {sub.name} is not an input"
            path = f"{b.uart[0]}_{b.uart[1]}__{sub.name}"
            m.submodules[f"pin_{path}"] = UnusedInput(getattr(uart, sub.name), name=f"{path}__i")
        return m


class UnusedInput(Elaboratable):
    """An input pin nothing reads: an ``io.Buffer`` into the signal ``i`` (named ``name``).

    The netlist is the one Amaranth's deprecated ``platform.request`` without
    ``dir="-"`` made for an input (a module holding the buffer as ``buf``), so the pin
    keeps its I/O cell, its constraints and the build its placement.
    """

    def __init__(self, port, *, name):
        self.port = port
        self.i = Signal(name=name)

    def elaborate(self, platform):
        m = Module()
        m.submodules.buf = buf = io.Buffer("i", self.port)
        m.d.comb += self.i.eq(buf.i)
        return m


def attrs_dict(attrs):
    """Plain dict of an :class:`Attrs` (for pin tables)."""
    return dict(attrs) if isinstance(attrs, Attrs) else {}
