# SPDX-License-Identifier: BSD-2-Clause
"""ULX3S (Lattice ECP5, LFE5U-12F/25F/45F/85F, speed grade 6).

Clock: the 25 MHz oscillator through an EHXPLLL to 30 MHz (``sync``) and 60 MHz
(``fast``, rising edges aligned). Each input is sampled on both edges of ``fast`` (an
IDDRX1F per pin), four samples per ``sync`` cycle: 1 tick = 8.33 ns (``TICK_HZ`` =
120 MHz); the stimulus moves in whole cycles (33.33 ns, ``STIM_STEP`` = 4). At this
clock every build closes timing on nextpnr's first seed with margin
(docs/performance.md, "FPGA boards"); 30 MHz divides 3 Mbaud exactly.
Host link: the on-board FT231X USB-serial chip (the ``uart`` resource of the platform).
Target pins: the J1 GPIO header, bank 0, 3.3 V; outputs on GP0..GP2, inputs on GN0..GN5
(labels as printed on the board).

The 85F also builds the reference SoC (``rtrig.boards.soc``, 50 MHz on the PLL's
CLKOS2, the rig's 30 MHz on CLKOP): with the rig (``soc``; the SoC's pins copied to GP7/GP9 and GN7..GN12) and
alone (``soc-alone``; its pins on the rig's, GP0/GP2 in and GN0..GN5 out, so a
straight cable joins a rig board and a target board).
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

from .board import ECP5_CLK_FREQ, ECP5_RIG_OPTIONS, Board, rig_resource
from .clocking import ECP5PLL
from .soc import SOC_CLK_HZ, soc_debug_resource, soc_target_resource

__all__ = ["BOARDS", "PIN_LABELS", "SOC_DEBUG_PINS", "SOC_TARGET_PINS", "label"]

#: rig pin → connector pin of the platform's ``gpio`` connector ("0+" is GP0, "0-" GN0).
PINS = {
    "stim0": "0+", "stim1": "1+", "load_en": "2+",
    "isr_out": "0-", "app_out": "1-", "heartbeat": "2-",
    "marker0": "3-", "marker1": "4-", "marker2": "5-",
}

#: Target ``soc``: copies of the SoC's pins for a scope, on spare J1 pins, laid out
#: like the rig's seven pins further along (GP0 → GP7, GN0 → GN7).
SOC_DEBUG_PINS = {
    "irq": "7+", "load_en": "9+",
    "isr_out": "7-", "app_out": "8-", "heartbeat": "9-",
    "marker0": "10-", "marker1": "11-", "marker2": "12-",
}

#: Target ``soc-alone``: the SoC's pins on the rig's (a straight cable from a rig
#: board), named by the rig pin each one meets.
SOC_TARGET_PINS = {n: PINS[n] for n in (
    "stim0", "stim1", "load_en", "isr_out", "app_out", "heartbeat", "marker0", "marker1", "marker2")}


def label(pin):
    """Silkscreen label of a ``gpio`` connector pin ("0+" is GP0, "0-" GN0)."""
    return ("GP" if pin.endswith("+") else "GN") + pin[:-1]


#: rig pin → silkscreen label, for the docs.
PIN_LABELS = {n: label(p) for n, p in PINS.items()}

_OUT_ATTRS = Attrs(IO_TYPE="LVCMOS33", DRIVE="8", SLEWRATE="FAST")
# A pull-down keeps an unconnected input quiet (no spurious edges).
_IN_ATTRS = Attrs(IO_TYPE="LVCMOS33", PULLMODE="DOWN")
_RIG = rig_resource(PINS, conn=("gpio", 0), out_attrs=_OUT_ATTRS, in_attrs=_IN_ATTRS)
_SOC_DEBUG = soc_debug_resource(SOC_DEBUG_PINS, conn=("gpio", 0), out_attrs=_OUT_ATTRS)
_SOC_TARGET = soc_target_resource(SOC_TARGET_PINS, conn=("gpio", 0), out_attrs=_OUT_ATTRS,
                                  in_attrs=_IN_ATTRS)


def _platform(base):
    return type(f"Rig{base.__name__}", (base,),
                {"resources": [*base.resources, _RIG, _SOC_DEBUG, _SOC_TARGET]})


def _clocking(platform):
    return ECP5PLL(platform.request("clk25", dir="-"), 25_000_000, ECP5_CLK_FREQ,
                   secondary={"fast": 2 * ECP5_CLK_FREQ}, gated=("sync", "fast"))


def _soc_clocking(platform, with_rig):
    # VCO 600 MHz: CLKOP / 20 = 30 MHz (sync), CLKOS / 10 = 60 MHz (fast), CLKOS2 / 12
    # = 50 MHz (soc); alone, CLKOP / 12 = 50 MHz.
    clk = platform.request("clk25", dir="-")
    if with_rig:
        return ECP5PLL(clk, 25_000_000, ECP5_CLK_FREQ,
                       secondary={"fast": 2 * ECP5_CLK_FREQ, "soc": SOC_CLK_HZ},
                       gated=("sync", "fast"))
    return ECP5PLL(clk, 25_000_000, SOC_CLK_HZ, domain="soc")


def _extra(m, platform):
    # Hold the ESP32's GPIO0 high: if it floats low while the ESP32 resets, the ESP32
    # enters its bootloader and may reconfigure the FPGA (ULX3S manual, "ESP32").
    esp32 = platform.request("esp32", 0, dir="-")
    m.submodules.esp32_gpio0 = buf = io.Buffer("o", esp32.gpio0)
    m.d.comb += buf.o.eq(Const(1))


def _openfpgaloader(bitstream):
    return ["openFPGALoader", "-b", "ulx3s", str(bitstream)]


def _board(name, base, title, targets=("rig",), same_die_as=""):
    return Board(
        name=name, code=1, title=title, platform=_platform(base),
        clk_freq=ECP5_CLK_FREQ, clocking=_clocking, uart=("uart", 0), rig_options=ECP5_RIG_OPTIONS,
        # The model target is left out: the ECP5 boards are measured against real
        # targets; the simulation twin carries it (docs/boards.md, "Targets").
        fifo_depth=512, with_model=False, programmer=_openfpgaloader, bitstream_ext="bit",
        extra=_extra,
        # router2 converges on the rig where router1 keeps ripping up arcs
        # (docs/performance.md, FPGA boards).
        nextpnr_opts="--router router2 --tmg-ripup",
        # The SoC targets: their worst paths are the CPU's own, spread over the die by
        # the RAM's block RAMs; a placer weighing timing more keeps them together, seed 1
        # (docs/performance.md, "FPGA boards"): the SoC alone 62.70 MHz against 50 at
        # weight 30, where the rig's options give 52.09; the rig with the SoC 57.89 at
        # weight 60, where 30 gives 53.15 and the rig's options 52.58.
        target_nextpnr_opts={
            "soc-alone": "--router router2 --tmg-ripup --placer-heap-timingweight 30",
            "soc": "--router router2 --tmg-ripup --placer-heap-timingweight 60"},
        targets=targets, soc_clocking=_soc_clocking, same_die_as=same_die_as,
    )


BOARDS = [
    # The SoC's 64 KiB RAM has two read ports (instruction and data bus), so Yosys
    # builds it twice: 64 DP16KD of the 85F's 208. The smaller parts are not offered.
    _board("ulx3s", ULX3S_85F_Platform, "ULX3S 85F", targets=("rig", "soc", "soc-alone")),
    _board("ulx3s-45f", ULX3S_45F_Platform, "ULX3S 45F"),
    _board("ulx3s-25f", ULX3S_25F_Platform, "ULX3S 25F"),
    # The LFE5U-12F is the 25F's die: nextpnr places and routes it with the 25F's chip
    # database, so the 25F's result stands for it and only the bitstream is packed
    # again, with the 12F's IDCODE (verified: rtrig.boards.build._build_same_die).
    _board("ulx3s-12f", ULX3S_12F_Platform, "ULX3S 12F", same_die_as="ulx3s-25f"),
]
