"""ULX3S (Lattice ECP5, LFE5U-12F/25F/45F/85F, speed grade 6).

Clock: the 25 MHz oscillator through an EHXPLLL to 100 MHz (1 tick = 10 ns).
Host link: the on-board FT231X USB-serial chip (the ``uart`` resource of the platform).
Target pins: the J1 GPIO header, bank 0, 3.3 V; outputs on GP0..GP2, inputs on GN0..GN5
(labels as printed on the board).
"""

from amaranth import Const
from amaranth.build import Attrs
from amaranth.lib import io
from amaranth_boards.ulx3s import (
    ULX3S_12F_Platform,
    ULX3S_25F_Platform,
    ULX3S_45F_Platform,
    ULX3S_85F_Platform,
)

from .board import Board, rig_resource
from .clocking import ECP5PLL

__all__ = ["BOARDS", "PIN_LABELS"]

#: Rig pin → connector pin of the platform's ``gpio`` connector ("0+" is GP0, "0-" GN0).
PINS = {
    "stim0": "0+", "stim1": "1+", "load_en": "2+",
    "isr_out": "0-", "app_out": "1-", "heartbeat": "2-",
    "marker0": "3-", "marker1": "4-", "marker2": "5-",
}

#: Rig pin → silkscreen label, for the docs.
PIN_LABELS = {n: ("GP" if p.endswith("+") else "GN") + p[:-1] for n, p in PINS.items()}

_RIG = rig_resource(
    PINS, conn=("gpio", 0),
    out_attrs=Attrs(IO_TYPE="LVCMOS33", DRIVE="8", SLEWRATE="FAST"),
    # A pull-down keeps an unconnected input quiet (no spurious edges).
    in_attrs=Attrs(IO_TYPE="LVCMOS33", PULLMODE="DOWN"),
)


def _platform(base):
    return type(f"Rig{base.__name__}", (base,), {"resources": [*base.resources, _RIG]})


def _clocking(platform):
    return ECP5PLL(platform.request("clk25", dir="-"), 25_000_000, 100_000_000)


def _extra(m, platform):
    # Hold the ESP32's GPIO0 high: if it floats low while the ESP32 resets, the ESP32
    # enters its bootloader and may reconfigure the FPGA (ULX3S manual, "ESP32").
    esp32 = platform.request("esp32", 0, dir={"en": "-", "tx": "-", "rx": "-", "gpio0": "-",
                                              "gpio5": "-", "gpio16": "-", "gpio17": "-"})
    m.submodules.esp32_gpio0 = buf = io.Buffer("o", esp32.gpio0)
    m.d.comb += buf.o.eq(Const(1))


def _openfpgaloader(bitstream):
    return ["openFPGALoader", "-b", "ulx3s", str(bitstream)]


def _board(name, base, title):
    return Board(
        name=name, code=1, title=title, platform=_platform(base),
        clk_freq=100_000_000, clocking=_clocking, uart=("uart", 0),
        # The model target is left out: its decision logic (one CPU's scheduler in a
        # cycle) does not close 100 MHz on the ECP5-6 (docs/boards.md, "Timing").
        fifo_depth=512, with_model=False, programmer=_openfpgaloader, bitstream_ext="bit",
        extra=_extra,
        # router2 converges on the full rig where router1 keeps ripping up arcs.
        nextpnr_opts="--router router2",
    )


BOARDS = [
    _board("ulx3s", ULX3S_85F_Platform, "ULX3S 85F"),
    _board("ulx3s-45f", ULX3S_45F_Platform, "ULX3S 45F"),
    _board("ulx3s-25f", ULX3S_25F_Platform, "ULX3S 25F"),
    _board("ulx3s-12f", ULX3S_12F_Platform, "ULX3S 12F"),
]
