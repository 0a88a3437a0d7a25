# SPDX-License-Identifier: BSD-2-Clause
"""iCEBreaker (Lattice iCE40UP5K-SG48).

The UP5K closes the rig at 24 MHz. Its inputs are sampled on both edges of a
48 MHz clock (DDR input registers in domain ``fast``), four samples per cycle of the
24 MHz ``sync`` clock that runs the rest of the rig: a tick is 10.42 ns (``TICK_HZ`` =
96 MHz), the stimulus moves in whole ``sync`` cycles (41.67 ns, ``STIM_STEP`` = 4).
Both clocks come from the 12 MHz oscillator through one SB_PLL40_2F_PAD (VCO 768 MHz /
16 = 48 MHz on port A, half of it on port B, rising edges aligned); 24 MHz divides
3 Mbaud exactly.
Host link: channel B of the on-board FT2232H (UART), channel A stays the flash
programmer.
Target pins: PMOD1A (and two pins of PMOD1B), 3.3 V.
"""

from amaranth.build import Attrs
from amaranth_boards.icebreaker import ICEBreakerPlatform

from .board import Board, rig_resource
from .clocking import ICE40PLL

__all__ = ["BOARDS", "PIN_LABELS"]

#: rig pin → FPGA pin (SG48 package ball) on the PMOD1A / PMOD1B connectors.
PINS = {
    "stim0": "4", "stim1": "2", "load_en": "47",       # PMOD1A pins 1, 2, 3
    "isr_out": "3", "app_out": "48", "heartbeat": "46",  # PMOD1A pins 7, 8, 9
    "marker0": "44",                                     # PMOD1A pin 10
    "marker1": "43", "marker2": "38",                    # PMOD1B pins 1, 2
}
PIN_LABELS = {
    "stim0": "P1A1", "stim1": "P1A2", "load_en": "P1A3",
    "isr_out": "P1A7", "app_out": "P1A8", "heartbeat": "P1A9",
    "marker0": "P1A10", "marker1": "P1B1", "marker2": "P1B2",
}

_RIG = rig_resource(
    PINS,
    out_attrs=Attrs(IO_STANDARD="SB_LVCMOS"),
    # The iCE40 has pull-ups only: an unconnected input reads high and stays quiet.
    in_attrs=Attrs(IO_STANDARD="SB_LVCMOS", PULLUP=1),
)

CLK_FREQ = 24_000_000

#: The rig's block RAMs are FIFOs (``SyncFIFOBuffered``), which never read the entry
#: being written in the same cycle. Telling Yosys so (the read port's data is undefined
#: on a collision) spares the read-first emulation it would otherwise build around each
#: iCE40 RAM: a copy of the written data, an address compare and a bypass mux, about
#: 470 logic cells for the latency FIFO alone.
_NO_COLLISION = "setparam -set COLLISION_X_MASK 1 t:$memrd_v2 r:CLK_ENABLE=1 %i"


class RigICEBreakerPlatform(ICEBreakerPlatform):
    resources = [*ICEBreakerPlatform.resources, _RIG]


def _clocking(platform):
    return ICE40PLL(platform.request("clk12", dir="-"), 12_000_000, CLK_FREQ, fast="fast")


def _iceprog(bitstream):
    return ["iceprog", str(bitstream)]


BOARDS = [
    Board(
        name="icebreaker", code=3, title="iCEBreaker (iCE40UP5K)",
        platform=RigICEBreakerPlatform, clk_freq=CLK_FREQ, clocking=_clocking,
        # The small rig (docs/boards.md): no model target, no on-chip statistics; to
        # fit the UP5K's 5280 logic cells, no interval channels, no bursts, the
        # one-level register read, no armed runs (a run starts when its write lands;
        # its twin, with the model, has them); four samples per clock: 10.4 ns bins.
        uart=("uart", 0), fifo_depth=256, with_model=False, with_stats=False,
        rig_options={"pin_latency": 2, "intervals": False, "bursts": False,
                     "read_pipeline": False, "lat_channels": 2, "armed": False},
        yosys_after_read=_NO_COLLISION,
        programmer=_iceprog,
        bitstream_ext="bin",
        # The FT2232H makes 12 Mbaud and whole fractions of it; the rig's receiver
        # needs 4 cycles of the 24 MHz clock per bit, so 6 Mbaud is the fastest.
        link_bauds=(6_000_000,),
    ),
]
