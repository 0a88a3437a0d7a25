# SPDX-License-Identifier: BSD-2-Clause
"""The rig's wire protocol and register map, defined once for gateware and host.

Framing (docs/protocol.md)
-------------------
Every packet, in both directions, is::

    END SLIP( type:u8 | seq:u8 | payload | crc16:u16 big-endian ) END

SLIP (RFC 1055) escapes ``END`` (0xC0) as ``ESC ESC_END`` and ``ESC`` (0xDB) as
``ESC ESC_ESC``. ``END`` both opens and closes a packet, so the tail of a torn packet
is closed off as one bad packet and the next packet arrives whole; empty packets
(``END END``) are ignored. The CRC is CRC-16/IBM-3740, also known as CCITT-FALSE
(polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR) over
``type | seq | payload``; transmitted high byte first, so the CRC over a whole good
body is zero. The nonzero initial value makes leading zero bytes count (protocol
version 2; version 1 used CRC-16/XMODEM, initial value 0, blind to them).

``seq`` counts packets per direction modulo 256. Every rig→host packet (responses
and stream packets alike) takes the next rig sequence number, so the host detects
any lost packet from a gap. Multi-byte payload fields are little-endian.
"""

import enum
from dataclasses import dataclass

from .records import EVENT_DTYPE, LATENCY_DTYPE, RECORDS, TRUTH_DTYPE

__all__ = [
    "SLIP_END", "SLIP_ESC", "SLIP_ESC_END", "SLIP_ESC_ESC",
    "PacketType", "Reg", "REGISTERS", "RegisterInfo",
    "RIG_ID", "GATEWARE_VERSION", "Input", "Target", "Caps", "StreamEnable", "StimCtrl",
    "StimStatus",
    "EDGE_SOURCES", "lat_edges", "LAT_EDGES_RESET",
    "ChanFlags", "EVENT_DTYPE", "LATENCY_DTYPE", "TRUTH_DTYPE", "STIM_INPUT",
    "PAYLOAD_LEN", "MODEL_PARAM_REGS",
]

SLIP_END = 0xC0
SLIP_ESC = 0xDB
SLIP_ESC_END = 0xDC
SLIP_ESC_ESC = 0xDD

#: Value of register ``ID``: ASCII "RTG1".
RIG_ID = 0x52544731
#: Version of the register map and packet formats; bumped on any change.
GATEWARE_VERSION = 4


class PacketType(enum.IntEnum):
    """Type byte of a packet."""
    # host → rig
    WRITE = 0x01       #: payload: addr:u16, value:u32
    READ = 0x02        #: payload: addr:u16, count:u16 (count reads of one address)
    # rig → host: responses
    WRITE_ACK = 0x81   #: payload: req_seq:u8, addr:u16, value:u32
    READ_DATA = 0x82   #: payload: req_seq:u8, addr:u16, value:u32
    # rig → host: streams
    EVENT = 0x10       #: payload: one rtrig.records.EVENT record
    LATENCY = 0x11     #: payload: one rtrig.records.LATENCY record
    TRUTH = 0x12       #: payload: one rtrig.records.TRUTH record (model target, simulation)


class Input(enum.IntEnum):
    """Rig input channels (target → rig pins)."""
    ISR_OUT = 0
    APP_OUT = 1
    HEARTBEAT = 2
    MARKER0 = 3
    MARKER1 = 4
    MARKER2 = 5


#: Number of rig inputs.
N_INPUTS = 6
#: The most latency channels a rig has (``isr``, ``app`` and two interval channels);
#: a rig's own count is in ``CAPS`` (:func:`latency_channels`; 2 before the field).
N_LATENCY_CHANNELS = 4
#: ``CAPS`` bits 12..15: the rig's number of latency channels (0: 2).
CAPS_LAT_CHANNELS_SHIFT = 12
#: Edge sources of a channel (``LAT_EDGES``): inputs 0..5, then the stimulus outputs.
EDGE_SOURCES = [i.name for i in Input] + ["STIM0", "STIM1"]


def lat_edges(start, start_fall, end, end_fall):
    """One channel's byte of ``LAT_EDGES``: sources are :data:`EDGE_SOURCES` indices."""
    return start | start_fall << 3 | end << 4 | end_fall << 7


#: Today's channels: STIM0 rise → ISR_OUT rise (channel 0), → APP_OUT rise (channel 1).
LAT_EDGES_RESET = lat_edges(6, 0, Input.ISR_OUT, 0) | lat_edges(6, 0, Input.APP_OUT, 0) << 8

#: Input number used in EVENT records for the stimulus outputs (exact, internal).
STIM_INPUT = {0: 14, 1: 15}


class Target(enum.IntEnum):
    """What drives the rig inputs (register ``TARGET_SEL``)."""
    EXTERNAL = 0   #: the input pins (a real target wired to the rig)
    LOOPBACK = 1   #: STIM0 → ISR_OUT delayed by ``LOOP_DELAY`` ticks
    MODEL = 2      #: the model target (CPU-like DUT emulator)
    SOC = 3        #: the reference SoC (when built in)


def latency_channels(caps):
    """The number of latency channels of a rig whose ``CAPS`` reads ``caps``."""
    return (caps >> CAPS_LAT_CHANNELS_SHIFT) & 0xF or 2


class Caps(enum.IntFlag):
    """``CAPS`` bits above the targets' (bit n: :class:`Target` n is built in)."""
    INTERVALS = 1 << 8  #: ``LAT_EDGES``: a channel times any edge to any edge
    BURST = 1 << 9      #: ``STIM_BURST``/``STIM_GAP``: bursts of pulses
    #: ``RUN_AT``/``STIM_CTRL.AT``: armed runs (always built with the model or the SoC,
    #: which a run restarts; without, ``AT`` is ignored and a run starts at once)
    ARMED = 1 << 10


class StimCtrl(enum.IntFlag):
    RUN = 1 << 0        #: write 1 to start, 0 to stop
    STIM1_EN = 1 << 1   #: STIM1 follows STIM0 at ``STIM1_OFFSET``
    #: With ``RUN``: arm the run to start at rig time ``RUN_AT`` (its first STIM0 rise
    #: ``STIM_LEAD`` ticks later) instead of at once (version 4).
    AT = 1 << 2
    #: With ``AT``: hold the internal target (the model or the SoC, whichever
    #: ``TARGET_SEL`` names) in reset from this write until ``RUN_AT``, so it starts
    #: from the same state, at the same time before the first pulse, on every run.
    RESTART = 1 << 3


class StimStatus(enum.IntFlag):
    """``STIM_STATUS`` bits."""
    RUNNING = 1 << 0    #: the pulse train is running
    ARMED = 1 << 1      #: an armed run waits for ``RUN_AT`` or its lead


class StreamEnable(enum.IntFlag):
    EVENTS = 1 << 0
    LATENCY = 1 << 1
    TRUTH = 1 << 2


class ChanFlags(enum.IntFlag):
    """Upper bits of the ``chan`` byte of LATENCY and TRUTH records."""
    MISSED = 1 << 7       #: no response rose before the next stimulus or the timeout
    #: Reserved: no gateware sets it (a matcher waits for the fall however long it
    #: takes). Kept while host readers still test it; old capture files never carry it.
    INCOMPLETE = 1 << 6
    CHANNEL_MASK = 0x0F


class Access(enum.Enum):
    RO = "ro"
    RW = "rw"
    STROBE = "strobe"     #: write-only; writing pulses an action, reads 0


@dataclass(frozen=True)
class RegisterInfo:
    name: str
    addr: int
    access: Access
    reset: int
    doc: str
    #: Bits the rig stores (``rw``): the rest read 0 and writes to them are ignored.
    width: int = 32


_R, _W, _S = Access.RO, Access.RW, Access.STROBE

#: The register map: name, address, access, reset value, meaning (and, for flag
#: registers, the bits stored). Registers are 32 bits wide on the link; times and
#: periods are in ticks of the rig timebase.
REGISTERS = [
    RegisterInfo("ID", 0x000, _R, RIG_ID, "constant 0x52544731 ('RTG1')"),
    RegisterInfo("VERSION", 0x001, _R, GATEWARE_VERSION, "register map / packet format version"),
    RegisterInfo("BUILD_HASH", 0x002, _R, 0, "low 32 bits of the hash of the rig's logic"),
    RegisterInfo("TICK_HZ", 0x003, _R, 0, "timebase ticks per second"),
    RegisterInfo("BAUD", 0x004, _R, 0, "host link baud rate"),
    RegisterInfo("N_INPUTS", 0x005, _R, N_INPUTS, "number of rig inputs"),
    RegisterInfo("BOARD", 0x006, _R, 0, "board code (rtrig.boards Board.code; 0: a Rig built outside a board)"),
    RegisterInfo("CAPS", 0x007, _R, 0, "bit n set: Target n is built in; Caps bits 8 and up (8 INTERVALS, 9 BURST, 10 ARMED); bits 12..15 the latency channels (0: 2)"),
    RegisterInfo("SCRATCH", 0x008, _W, 0, "free for link tests"),
    RegisterInfo("IN_DELAY", 0x009, _R, 0, "ticks of input synchroniser delay subtracted from timestamps"),
    RegisterInfo("STIM_STEP", 0x00A, _R, 1,
                 "ticks per clock: 4 on every rig, its inputs sampled four times per "
                 "clock (stimulus, loopback and model settings count in steps of 4 ticks)"),
    RegisterInfo("TIME_LO", 0x010, _R, 0, "timebase bits 0..31; reading latches TIME_HI"),
    RegisterInfo("TIME_HI", 0x011, _R, 0, "timebase bits 32..63 latched by the last TIME_LO read"),
    RegisterInfo("STIM_CTRL", 0x020, _W, 0, "StimCtrl bits", width=4),
    RegisterInfo("STIM_PERIOD", 0x021, _W, 10000, "STIM0 period (rising to rising), ticks"),
    RegisterInfo("STIM_HIGH", 0x022, _W, 5000, "STIM0 high time, ticks"),
    RegisterInfo("STIM_COUNT", 0x023, _W, 0, "pulses to issue; 0 = until stopped"),
    RegisterInfo("STIM_JITTER", 0x024, _W, 0, "extra delay per period, uniform 0..J ticks"),
    RegisterInfo("STIM1_OFFSET", 0x025, _W, 0, "STIM1 rising edge after STIM0's, ticks"),
    RegisterInfo("STIM_SEED", 0x026, _W, 1, "jitter LFSR seed (nonzero), loaded at start"),
    RegisterInfo("STIM_PULSES", 0x027, _R, 0, "STIM0 pulses issued since the last start"),
    RegisterInfo("STIM_STATUS", 0x028, _R, 0, "StimStatus bits: bit 0 running, bit 1 armed"),
    RegisterInfo("STIM_BURST", 0x029, _W, 0,
                 "pulses per burst (Caps.BURST): after every k pulses the next rise comes "
                 "STIM_GAP instead of STIM_PERIOD after the last; 0 = no bursts"),
    RegisterInfo("STIM_GAP", 0x02A, _W, 0, "rise to rise from a burst's last pulse to the next burst's first, ticks"),
    RegisterInfo("RUN_AT_LO", 0x02B, _W, 0,
                 "bits 0..31 of the rig time (ticks) at which a run armed with "
                 "StimCtrl.AT starts (Caps.ARMED): the internal target leaves reset "
                 "(RESTART), and STIM0 first rises STIM_LEAD ticks later"),
    RegisterInfo("RUN_AT_HI", 0x02C, _W, 0, "bits 32..47 of RUN_AT", width=16),
    RegisterInfo("STIM_LEAD", 0x02D, _W, 0,
                 "armed runs: ticks from RUN_AT to the first STIM0 rise (a rig with an "
                 "internal target; elsewhere 0)"),
    RegisterInfo("EDGE_EN", 0x030, _W, 0,
                 "raw events: bits 0..7 rising, 8..15 falling per input; bit 16 stimulus edges", width=17),
    RegisterInfo("LAT_CH_EN", 0x031, _W, 0, "latency records: bit n enables channel n (0 ISR, 1 APP, 2 and 3 interval channels where CAPS counts them)", width=N_LATENCY_CHANNELS),
    RegisterInfo("LAT_TIMEOUT", 0x032, _W, 0, "latency window in ticks; 0 = until the next stimulus"),
    RegisterInfo("STREAM_EN", 0x033, _W, 0, "StreamEnable bits", width=3),
    RegisterInfo("EVT_OVERFLOW", 0x034, _R, 0, "raw events dropped because the FIFO was full"),
    RegisterInfo("LAT_OVERFLOW", 0x035, _R, 0, "latency records dropped because the FIFO was full"),
    RegisterInfo("RX_ERRORS", 0x036, _R, 0, "host→rig packets dropped (CRC, length, type)"),
    RegisterInfo("CLEAR", 0x037, _S, 0, "write 1: clear counters (overflows, errors, heartbeat)"),
    RegisterInfo("TRUTH_OVERFLOW", 0x038, _R, 0, "model truth records dropped"),
    RegisterInfo("LAT_RECORDS", 0x039, _R, 0, "latency records produced since CLEAR"),
    RegisterInfo("EVT_RECORDS", 0x03A, _R, 0, "raw events produced since CLEAR"),
    RegisterInfo("LAT_EDGES", 0x03C, _W, LAT_EDGES_RESET,
                 "Caps.INTERVALS: channel n's start and end edges in bits 8n..8n+7: start "
                 "source (bits 0..2: input 0..5, 6 STIM0, 7 STIM1), bit 3 start on its fall, "
                 "end source (bits 4..6), bit 7 end on its fall", width=8 * N_LATENCY_CHANNELS),
    RegisterInfo("IN_GLITCHES", 0x03B, _R, 0,
                 "DDR capture: cycles since CLEAR in which an input changed more than "
                 "once between its samples (a pulse shorter than a clock period)"),
    RegisterInfo("LOAD_EN", 0x040, _W, 0, "bit 0: level of the LOAD_EN output", width=1),
    RegisterInfo("TARGET_SEL", 0x041, _W, 0, "Target driving the rig inputs", width=2),
    RegisterInfo("LOOP_DELAY", 0x042, _W, 0, "loopback target delay, ticks"),
    RegisterInfo("HB_COUNT", 0x043, _R, 0, "heartbeat edges (both) since CLEAR"),
    RegisterInfo("MODEL_CTRL", 0x050, _W, 1, "bit 0: model reset, bit 1: app enable", width=2),
    RegisterInfo("MODEL_ISR_ENTRY", 0x051, _W, 100, "model: ticks from IRQ taken to ISR_OUT rise"),
    RegisterInfo("MODEL_ISR_JITTER", 0x052, _W, 0, "model: extra 0..J ticks of ISR entry"),
    RegisterInfo("MODEL_ISR_SERVICE", 0x053, _W, 50, "model: ISR_OUT high time"),
    RegisterInfo("MODEL_APP_WAKE", 0x054, _W, 500, "model: APP wake-up CPU ticks"),
    RegisterInfo("MODEL_APP_SERVICE", 0x055, _W, 100, "model: APP_OUT high time"),
    RegisterInfo("MODEL_LOAD_QUANTUM", 0x056, _W, 10000, "model: LOAD round-robin quantum"),
    RegisterInfo("MODEL_HB_WORK", 0x057, _W, 1000, "model: LOAD CPU ticks per heartbeat toggle"),
    RegisterInfo("MODEL_TICK_PERIOD", 0x058, _W, 0, "model: kernel tick period; 0 = none"),
    RegisterInfo("MODEL_TICK_SERVICE", 0x059, _W, 0, "model: kernel tick interrupt work"),
    RegisterInfo("MODEL_SEED", 0x05A, _W, 1, "model: jitter PRNG seed"),
    # On-chip statistics (rtrig.gateware.stat_accumulators; docs/statistics.md),
    # 0x060..0x07F.
    RegisterInfo("STAT_CTRL", 0x060, _W, 0,
                 "bit 0: accumulate statistics (runs the LAT_CH_EN matchers even with the "
                 "LATENCY stream off); CLEAR zeroes them", width=1),
    RegisterInfo("STAT_BIN_SHIFT", 0x061, _W, 0, "histogram bin width is 2**k ticks (k 0..31)", width=5),
    RegisterInfo("STAT_BIN_OFFSET", 0x062, _W, 0, "latency of the lower edge of bin 0, ticks"),
    RegisterInfo("STAT_INFO", 0x063, _R, 0,
                 "bits 0..7 log2(histogram bins), 8..15 channels, 16..23 bits per bin"),
    RegisterInfo("STAT_STATUS", 0x064, _R, 0, "bit 0: histogram clear sweep running"),
    RegisterInfo("STAT_DROPS", 0x065, _R, 0, "records not accumulated (all channels)"),
    RegisterInfo("STAT_SEL", 0x066, _S, 0,
                 "write: STAT_DATA pointer = channel * 32 + word (STAT_WORDS)"),
    RegisterInfo("STAT_DATA", 0x067, _R, 0, "statistics word at the pointer; a read advances it"),
    RegisterInfo("HIST_SEL", 0x068, _S, 0, "write: HIST_DATA pointer = channel * bins + bin"),
    RegisterInfo("HIST_DATA", 0x069, _R, 0, "histogram bin at the pointer; a read advances it"),
    RegisterInfo("HB_WINDOW", 0x070, _W, 0, "heartbeat window, ticks; 0 = off"),
    RegisterInfo("HB_LAST", 0x071, _R, 0, "heartbeat edges in the last complete window"),
    RegisterInfo("HB_MIN", 0x072, _R, 0xFFFFFFFF,
                 "fewest heartbeat edges in a window inside a stimulus run (all ones: none)"),
    RegisterInfo("HB_MAX", 0x073, _R, 0, "most heartbeat edges in a window inside a stimulus run"),
    RegisterInfo("HB_WINDOWS", 0x074, _R, 0, "complete windows inside stimulus runs since CLEAR"),
]

#: Model parameter (a ``ModelTarget`` port and a ``ModelParams`` field) → its
#: register. All are durations in ticks (the gateware turns them into clock cycles)
#: except ``seed``, a number. Written by the host while the model is held in reset.
MODEL_PARAM_REGS = {
    "isr_entry": "MODEL_ISR_ENTRY", "isr_jitter": "MODEL_ISR_JITTER",
    "isr_service": "MODEL_ISR_SERVICE", "app_wake": "MODEL_APP_WAKE",
    "app_service": "MODEL_APP_SERVICE", "load_quantum": "MODEL_LOAD_QUANTUM",
    "heartbeat_work": "MODEL_HB_WORK", "tick_period": "MODEL_TICK_PERIOD",
    "tick_service": "MODEL_TICK_SERVICE", "seed": "MODEL_SEED",
}

Reg = enum.IntEnum("Reg", {r.name: r.addr for r in REGISTERS})
Reg.__doc__ = "Register addresses (see REGISTERS for access and meaning)."
REGISTER_BY_ADDR = {r.addr: r for r in REGISTERS}

#: Wire payload sizes (bytes) per packet type; the stream records' come from their
#: one declaration in :mod:`rtrig.records`.
PAYLOAD_LEN = {
    PacketType.WRITE: 6, PacketType.READ: 4,
    PacketType.WRITE_ACK: 7, PacketType.READ_DATA: 7,
    **{PacketType[name]: record.payload_len for name, record in RECORDS.items()},
}

# The host's side of the framing (CRC, SLIP encoder and decoder) is rtrig.framing,
# which imports this module (never the reverse): it is not part of the gateware, so
# editing it does not change the gateware hash (register BUILD_HASH) and with it every
# board's placement. The gateware declares the same CRC in gateware/link.py; the
# tests check both agree.
