# SPDX-License-Identifier: BSD-2-Clause
"""OrangeCrab r0.2 (Lattice ECP5 LFE5U-25F or -85F, speed grade 8), Feather form factor.

Clock: the 48 MHz oscillator through an EHXPLLL to 30 MHz (``sync``) and 60 MHz
(``fast``), with four samples of each input per cycle as on the ULX3S
(``rtrig.boards.ulx3s``): 1 tick = 8.33 ns, stimulus steps of 33.33 ns.
Host link: the OrangeCrab has no USB-serial chip (its USB port goes straight to the
FPGA), so the link is a 3.3 V USB-serial adapter (FT232H/FT2232H class, 3 Mbaud) on
the Feather UART pins 0 (RX) and 1 (TX).
Target pins: the Feather header, 3.3 V; outputs on 5, 6, 9, inputs on 10..13, A0, A1.
"""

from amaranth.build import Attrs, Pins, Resource, Subsignal
from amaranth.vendor import LatticeECP5Platform
from amaranth_boards.orangecrab_r0_2 import (
    OrangeCrabR0_2_25FPlatform,
    OrangeCrabR0_2_85FPlatform,
)

from .board import ECP5_CLK_FREQ, ECP5_RIG_OPTIONS, Board, rig_resource
from .clocking import ECP5PLL

__all__ = ["BOARDS", "PIN_LABELS"]

#: rig pin → pin of the platform's ``io`` connector (named as on the silkscreen).
PINS = {
    "stim0": "5", "stim1": "6", "load_en": "9",
    "isr_out": "10", "app_out": "11", "heartbeat": "12",
    "marker0": "13", "marker1": "a0", "marker2": "a1",
}
PIN_LABELS = {n: p.upper() for n, p in PINS.items()}

_RIG = rig_resource(
    PINS, conn=("io", 0),
    out_attrs=Attrs(IO_TYPE="LVCMOS33", DRIVE="8", SLEWRATE="FAST"),
    in_attrs=Attrs(IO_TYPE="LVCMOS33", PULLMODE="DOWN"),
)

#: Host link on the Feather UART pins: the rig receives on "0" and sends on "1".
_UART = Resource(
    "feather_uart", 0,
    Subsignal("rx", Pins("0", dir="i", conn=("io", 0))),
    Subsignal("tx", Pins("1", dir="o", conn=("io", 0))),
    Attrs(IO_TYPE="LVCMOS33", PULLMODE="UP"),
)


def _platform(base):
    # The stock platform runs dfu-suffix after ecppack (for the DFU bootloader);
    # the rig is loaded with openFPGALoader, which takes the plain bitstream, so the
    # build needs no tool outside the pip toolchain.
    return type(f"Rig{base.__name__}", (base,), {
        "resources": [*base.resources, _RIG, _UART],
        "required_tools": property(lambda self: LatticeECP5Platform.required_tools.fget(self)),
        "command_templates": property(
            lambda self: LatticeECP5Platform.command_templates.fget(self)),
    })


def _clocking(platform):
    return ECP5PLL(platform.request("clk", dir="-"), 48_000_000, ECP5_CLK_FREQ,
                   secondary={"fast": 2 * ECP5_CLK_FREQ}, gated=("sync", "fast"))


def _openfpgaloader(bitstream):
    # The board must be in its DFU bootloader: hold the button while plugging USB in.
    return ["openFPGALoader", "-b", "orangeCrab", str(bitstream)]


def _board(name, base, title):
    return Board(
        name=name, code=2, title=title, platform=_platform(base),
        clk_freq=ECP5_CLK_FREQ, clocking=_clocking, uart=("feather_uart", 0),
        rig_options=ECP5_RIG_OPTIONS,
        # As on the ULX3S, the model target is left out (docs/boards.md, "Timing").
        fifo_depth=512, with_model=False, programmer=_openfpgaloader, bitstream_ext="bit",
        nextpnr_opts="--router router2",
    )


BOARDS = [
    _board("orangecrab", OrangeCrabR0_2_25FPlatform, "OrangeCrab r0.2 25F"),
    _board("orangecrab-85f", OrangeCrabR0_2_85FPlatform, "OrangeCrab r0.2 85F"),
]
