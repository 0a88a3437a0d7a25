"""The rig: every block of the instrument behind one host link.

:class:`Rig` is the same design on an FPGA board (wrapped by a board top that adds
pin buffers and a PLL) and in the simulation twin (converted to Verilog as it is).
"""

import hashlib
from pathlib import Path

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out, connect

from ..protocol import N_INPUTS, N_LATENCY_CHANNELS, REGISTERS, STIM_INPUT, PacketType, Target
from ..records import EVENT, TRUTH
from .capture import IN_DELAY, EdgeDetector
from .link import CommandUnit, PacketRx, PacketTx, StreamRoundRobin, TxPacket
from .loopback import LoopbackDelayLine, LoopbackTarget
from .matcher import LatencyMatcher, LatencyRecord
from .merge import RecordMerger
from .registers import RegisterFile
from .stimulus import StimulusGenerator
from .timebase import Timebase
from .uart import UARTRx, UARTTx

__all__ = ["Rig", "EventRecord", "gateware_hash", "LOOP_LINE_DEPTH"]

#: Clock cycles of the compact rig's loopback delay line (four iCE40 block RAMs).
LOOP_LINE_DEPTH = 8192


#: The EVENT record, declared in :data:`rtrig.records.EVENT` (7 bytes on the wire).
EventRecord = EVENT.struct()
#: The TRUTH record as it leaves the rig (:data:`rtrig.records.TRUTH`, 13 bytes).
TruthWireRecord = TRUTH.struct()


def gateware_hash():
    """SHA-256 over the gateware sources, the protocol and the records: identifies a
    build (register ``BUILD_HASH``).

    The files are found through the imported modules, so an installed package hashes
    what it runs; a source that cannot be read is an error, never skipped.
    """
    from .. import protocol, records
    here = Path(__file__).parent
    files = sorted(here.glob("*.py")) + [Path(protocol.__file__), Path(records.__file__)]
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(p.read_bytes())        # raises if a file is missing: never skipped
    return h.hexdigest()


def _pkt(m, ptype, length, record, src):
    """A TxPacket stream carrying ``record`` bits from FIFO ``src``."""
    s = stream.Signature(TxPacket).create()
    m.d.comb += [
        s.valid.eq(src.r_rdy),
        s.payload.type.eq(ptype),
        s.payload.length.eq(length),
        s.payload.payload.eq(record),
        src.r_en.eq(s.ready),
    ]
    return s


def _stream_pkt(m, ptype, length, src):
    """A TxPacket stream carrying the records of stream ``src``."""
    s = stream.Signature(TxPacket).create()
    m.d.comb += [
        s.valid.eq(src.valid),
        s.payload.type.eq(ptype),
        s.payload.length.eq(length),
        s.payload.payload.eq(src.payload),
        src.ready.eq(s.ready),
    ]
    return s


def _space(m, f, ahead):
    """A registered ``w_rdy`` for FIFO ``f``: room for ``ahead`` more records (the
    records already on their way to it, plus one: the flag lags the level by one
    cycle). Keeps the FIFO's level compare off the record mergers' paths."""
    space = Signal()
    m.d.sync += space.eq(f.w_level < f.depth - ahead)
    return space


def _record_fifo(m, merger, shape, depth, clear, overflow_reg, count_reg, in_reg=True):
    """The FIFO behind a :class:`RecordMerger`: the merger's drops go to
    ``overflow_reg``, records written since ``clear`` to ``count_reg``.

    A record leaving the merger is registered once before it is written (the FIFO, in
    block RAM, sits elsewhere on the chip than the merger), so up to two records are
    on their way to the FIFO when the merger sees its space flag (``in_reg=False``:
    written directly)."""
    q = fifo.SyncFIFOBuffered(width=shape.as_shape().size, depth=depth + 1)
    w_en, w_data = Signal(), Signal.like(q.w_data)
    domain = m.d.sync if in_reg else m.d.comb
    domain += [w_en.eq(merger.out.valid & merger.out.ready), w_data.eq(merger.out.payload)]
    m.d.comb += [
        q.w_data.eq(w_data),
        q.w_en.eq(w_en),
        merger.out.ready.eq(_space(m, q, 3)),
        overflow_reg.eq(merger.overflow),
    ]
    with m.If(clear):
        m.d.sync += count_reg.eq(0)
    with m.Elif(q.w_en & q.w_rdy):
        m.d.sync += count_reg.eq(count_reg + 1)
    return q


class Rig(wiring.Component):
    """The rig top level.

    Parameters
    ----------
    clk_freq : int
        ``sync`` clock in Hz; one tick is ``1 / clk_freq``.
    baud : int
        Host link baud rate (the divisor is ``clk_freq // baud``).
    board : int
        Board code reported in register ``BOARD`` (0 = simulation).
    with_model : bool
        Build the model target in.
    fifo_depth : int
        Depth of the event and latency record FIFOs.
    with_stats : bool
        Build the on-chip statistics in (``STAT_INFO`` reads 0 without them).
    loop_depth : int
        Depth of the loopback target's edge queue: up to ``loop_depth + 1`` STIM0
        edges in flight, i.e. a loopback delay of up to ``loop_depth / 2`` stimulus
        periods (:class:`~rtrig.gateware.loopback.LoopbackTarget`). Not used with
        ``compact``.
    compact : bool
        Area over speed, for small FPGAs at up to about 50 MHz (the iCE40UP5K): lean
        latency matchers (:class:`~rtrig.gateware.matcher_lean.LeanLatencyMatcher`)
        and stimulus generator (:class:`~rtrig.gateware.stimulus_lean.LeanStimulusGenerator`)
        without a record register of their own; raw events queued once per cycle
        (:class:`~rtrig.gateware.events.EventGroups`, ``fifo_depth`` then counts
        cycles with edges, events come out in the order of their cycles); no register stage before
        the latency FIFO, after the packet arbiter or in the register read mux; a
        block-RAM loopback delay line (any number of edges in flight, delays up to
        ``LOOP_LINE_DEPTH`` clock cycles; a longer ``LOOP_DELAY`` answers nothing); the
        host → rig byte FIFO in block RAM (no distributed RAM on an iCE40). The
        behaviour seen from the host is the same.
    ddr : bool
        DDR input capture: ``samples=2``.
    samples : int
        Samples of every input pin per clock: 1; 2 (DDR input registers) or 4 (DDR
        input registers at twice the clock, :class:`~rtrig.gateware.capture.QuadSampler`),
        both needing ``compact``. ``ext_inputs`` is the earliest sample of a cycle,
        ``ext_later`` the others in order; a tick is ``1 / samples`` of a clock period
        (``TICK_HZ`` = ``samples`` × ``clk_freq``). The stimulus, the loopback and the
        model target run in clock cycles: their settings are used in steps of
        ``samples`` ticks (register ``STIM_STEP``; other values are rounded down).
    pin_latency : int
        Cycles of registers in front of ``ext_inputs`` outside the Rig (an iCE40 DDR
        input buffer's: 2, the I/O cell's register and the one that re-registers both
        samples; 3 behind a :class:`~rtrig.gateware.capture.QuadSampler`); internal
        targets and the stimulus are delayed as much, and ``IN_DELAY`` includes it.

    Members
    -------
    uart_rx : In(1)
    uart_tx : Out(1)
    ext_inputs : In(6)
        Target → rig pins (ISR_OUT, APP_OUT, HEARTBEAT, MARKER0..2), asynchronous.
    ext_later : In(ArrayLayout(6, samples - 1))
        ``samples`` > 1 only: the later samples of the pins in each cycle.
    stim0, stim1, load_en : Out(1)
        Rig → target pins.
    """

    def __init__(self, clk_freq=100_000_000, baud=3_000_000, board=0, with_model=True,
                 fifo_depth=512, with_soc=False, soc_firmware=b"", with_stats=True,
                 loop_depth=16, compact=False, ddr=False, samples=None, pin_latency=0):
        step = samples or (2 if ddr else 1)
        if step not in (1, 2, 4):
            raise ValueError(f"samples must be 1, 2 or 4, not {step!r}")
        if step > 1 and not compact:
            raise ValueError("DDR input capture needs the compact rig (compact=True)")
        if step > 1 and with_soc:
            raise ValueError("DDR input capture and the SoC target do not go together")
        self.clk_freq = clk_freq
        self.baud = baud
        self.board = board
        self.with_model = with_model
        self.fifo_depth = fifo_depth
        self.with_stats = with_stats
        self.loop_depth = loop_depth
        self.compact = compact
        #: Inputs sampled more than once per clock (DDR input registers).
        self.ddr = step > 1
        self.pin_latency = pin_latency
        #: Ticks per clock cycle: the samples of every input per clock.
        self.step = step
        self.with_soc = with_soc          # the reference SoC target, clock domain "soc"
        self.soc_firmware = soc_firmware  # its RAM image (raw .bin bytes or a path)
        members = {
            "uart_rx": In(1, init=1),
            "uart_tx": Out(1, init=1),
            "ext_inputs": In(N_INPUTS),
            "stim0": Out(1),
            "stim1": Out(1),
            "load_en": Out(1),
        }
        if step > 1:
            members["ext_later"] = In(data.ArrayLayout(N_INPUTS, step - 1))
        if with_soc:
            # SoC debug outputs for the simulation harness (domain "soc"), see docs/soc.md.
            members.update({
                "soc_console_valid": Out(1), "soc_console_data": Out(8),
                "soc_exit_valid": Out(1), "soc_exit_code": Out(32),
                "soc_trace_valid": Out(1), "soc_trace_data": Out(32),
                # Its GPIO outputs (ISR_OUT, APP_OUT, HEARTBEAT, MARKER0..2), domain
                # "soc": what TARGET_SEL = SOC routes to the capture, for header pins.
                "soc_gpio_out": Out(N_INPUTS),
            })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        divisor = self.clk_freq // self.baud

        absent = []
        if not self.with_model:
            absent += [r.name for r in REGISTERS if r.name.startswith("MODEL_")]
        if not self.with_stats:
            absent += [r.name for r in REGISTERS if r.name.startswith(("STAT_", "HIST_", "HB_"))
                       and r.name != "HB_COUNT"]
        m.submodules.regs = regs = RegisterFile(absent=absent, read_pipeline=not self.compact)
        rw, ro, strobe = regs.rw, regs.ro, regs.strobe
        # CLEAR reaches nearly every block: registered, so its wide fan-out starts at a
        # flip-flop (the clear lands one cycle after the write).
        clear = Signal()
        m.d.sync += clear.eq(strobe["CLEAR"])

        caps = 1 << Target.EXTERNAL | 1 << Target.LOOPBACK
        if self.with_model:
            caps |= 1 << Target.MODEL
        step = self.step
        shift = step.bit_length() - 1        # settings in ticks → clock cycles

        def cycles(value):
            return value >> shift

        m.d.comb += [
            ro["BUILD_HASH"].eq(int(gateware_hash()[:8], 16)),
            ro["TICK_HZ"].eq(self.clk_freq * step),
            ro["BAUD"].eq(self.clk_freq // divisor),
            ro["BOARD"].eq(self.board),
            ro["CAPS"].eq(caps),
            ro["IN_DELAY"].eq((IN_DELAY + self.pin_latency) * step),
            ro["STIM_STEP"].eq(step),
        ]

        # Timebase
        m.submodules.timebase = tb = Timebase(step)
        m.d.comb += [
            tb.latch.eq(regs.read_strobe["TIME_LO"]),
            ro["TIME_LO"].eq(tb.now[:32]),
            ro["TIME_HI"].eq(tb.latched_hi),
        ]

        # Stimulus
        if self.compact:
            from .stimulus_lean import LeanStimulusGenerator
            m.submodules.stim = stim = LeanStimulusGenerator()
        else:
            m.submodules.stim = stim = StimulusGenerator()
        ctrl_write = regs.wrote["STIM_CTRL"]
        # Start/stop registered once more (off the write decode's path).
        stim_start, stim_stop = Signal(), Signal()
        m.d.sync += [stim_start.eq(ctrl_write & regs.w_value[0]),
                     stim_stop.eq(ctrl_write & ~regs.w_value[0])]
        m.d.comb += [
            stim.period.eq(cycles(rw["STIM_PERIOD"])),
            stim.high.eq(cycles(rw["STIM_HIGH"])),
            stim.count.eq(rw["STIM_COUNT"]),
            stim.jitter.eq(cycles(rw["STIM_JITTER"])),
            stim.offset.eq(cycles(rw["STIM1_OFFSET"])),
            stim.seed.eq(rw["STIM_SEED"]),
            stim.stim1_en.eq(rw["STIM_CTRL"][1]),
            stim.start.eq(stim_start),
            stim.stop.eq(stim_stop),
            ro["STIM_PULSES"].eq(stim.pulses),
            ro["STIM_STATUS"].eq(stim.running),
            self.stim0.eq(stim.stim0),
            self.stim1.eq(stim.stim1),
            self.load_en.eq(rw["LOAD_EN"][0]),
        ]

        # Targets
        if self.compact:
            m.submodules.loopback = loop = LoopbackDelayLine(LOOP_LINE_DEPTH)
        else:
            m.submodules.loopback = loop = LoopbackTarget(self.loop_depth)
        m.d.comb += [loop.stim.eq(stim.stim0), loop.delay.eq(cycles(rw["LOOP_DELAY"]))]
        # ``target_pins``: what the capture sees. The internal targets change at clock
        # edges (phase 0); they are delayed as the external pins are outside the Rig.
        target_pins = Signal(N_INPUTS)
        internal = Signal(N_INPUTS)
        sel = rw["TARGET_SEL"]
        truth_src = None
        with m.Switch(sel):
            with m.Case(Target.LOOPBACK):
                m.d.comb += internal.eq(loop.out)
            if self.with_model:
                from .model import ModelTarget
                m.submodules.model = model = ModelTarget()
                params = {
                    "isr_entry": "MODEL_ISR_ENTRY", "isr_jitter": "MODEL_ISR_JITTER",
                    "isr_service": "MODEL_ISR_SERVICE", "app_wake": "MODEL_APP_WAKE",
                    "app_service": "MODEL_APP_SERVICE", "load_quantum": "MODEL_LOAD_QUANTUM",
                    "heartbeat_work": "MODEL_HB_WORK", "tick_period": "MODEL_TICK_PERIOD",
                    "tick_service": "MODEL_TICK_SERVICE", "seed": "MODEL_SEED",
                }
                for port, reg in params.items():
                    value = rw[reg] if port == "seed" else cycles(rw[reg])
                    m.d.comb += getattr(model, port).eq(value)
                # Registered: the reset fans out over the whole model.
                model_reset = Signal(init=1)
                m.d.sync += model_reset.eq(rw["MODEL_CTRL"][0] | (sel != Target.MODEL))
                m.d.comb += [
                    model.irq.eq(stim.stim0),
                    model.load_en.eq(rw["LOAD_EN"][0]),
                    model.reset.eq(model_reset),
                    model.app_enable.eq(rw["MODEL_CTRL"][1]),
                    ro["TRUTH_OVERFLOW"].eq(model.truth_overflow),
                ]
                with m.Case(Target.MODEL):
                    m.d.comb += internal.eq(Cat(model.isr_out, model.app_out,
                                                model.heartbeat))
                truth_src = model.truth
        internal_d = internal
        for k in range(self.pin_latency):
            d = Signal(N_INPUTS, name=f"internal_d{k}")
            m.d.sync += d.eq(internal_d)
            internal_d = d
        is_ext = Signal()
        m.d.comb += is_ext.eq(~sel.matches(Target.LOOPBACK, *((Target.MODEL,) if self.with_model else ())))
        m.d.comb += target_pins.eq(Mux(is_ext, self.ext_inputs, internal_d))

        # ---- reference SoC target (gateware/soc.py, docs/soc.md) -------------------------
        # The SoC runs in its own clock domain "soc" (50 MHz; the board or the simulation
        # harness supplies it), free-running like a real board: TARGET_SEL only routes its
        # pins. STIM0 → IRQ and LOAD_EN → GPIO input 0 are synchronised inside the SoC; its
        # GPIO outputs enter the capture synchroniser like external pins.
        if self.with_soc:
            from amaranth.hdl import DomainRenamer

            from .soc import SoC
            m.submodules.soc = soc = DomainRenamer("soc")(SoC(self.soc_firmware))
            m.d.comb += [
                soc.irq.eq(stim.stim0),
                soc.gpio_in.eq(rw["LOAD_EN"][0]),
                ro["CAPS"].eq(caps | 1 << Target.SOC),
            ]
            for name in ("console_valid", "console_data", "exit_valid", "exit_code",
                         "trace_valid", "trace_data", "gpio_out"):
                m.d.comb += getattr(self, f"soc_{name}").eq(getattr(soc, name))
            with m.If(sel == Target.SOC):
                m.d.comb += target_pins.eq(soc.gpio_out)
        # ---- end of reference SoC target ---------------------------------------------------

        # Capture
        m.submodules.edges = edges = EdgeDetector(N_INPUTS, step, self.pin_latency)
        for j in range(step - 1):
            m.d.comb += edges.pins_later[j].eq(Mux(is_ext, self.ext_later[j], internal_d))
        m.d.comb += [edges.pins.eq(target_pins),
                     edges.stim.eq(Cat(stim.stim0, stim.stim1)),
                     edges.now.eq(tb.now), edges.clear.eq(clear),
                     ro["IN_GLITCHES"].eq(edges.glitches)]
        stim0_bit = N_INPUTS

        # Heartbeat edges
        hb = ro["HB_COUNT"]
        with m.If(clear):
            m.d.sync += hb.eq(0)
        with m.Elif(edges.rise[2] | edges.fall[2]):
            m.d.sync += hb.eq(hb + 1)

        # Raw events
        n_ev = N_INPUTS + 2
        edge_en = rw["EDGE_EN"]
        events_on = rw["STREAM_EN"][0]
        ev_valid = Signal(n_ev)
        codes = []
        for i in range(n_ev):
            if i < N_INPUTS:
                code, r_en, f_en = i, edge_en[i], edge_en[8 + i]
            else:
                code, r_en, f_en = STIM_INPUT[i - N_INPUTS], edge_en[16], edge_en[16]
            codes.append(code)
            m.d.comb += ev_valid[i].eq(
                events_on & ((edges.rise[i] & r_en) | (edges.fall[i] & f_en)))
        if self.compact:
            from .events import EventGroups
            m.submodules.ev_groups = ev_groups = EventGroups(
                n_ev, codes, self.fifo_depth, EventRecord, phase_bits=shift)
            m.d.comb += [
                ev_groups.valid.eq(ev_valid),
                ev_groups.rising.eq(edges.rise),
                ev_groups.phase.eq(edges.phase),
                ev_groups.t.eq(edges.t),
                ev_groups.clear.eq(clear),
                ro["EVT_OVERFLOW"].eq(ev_groups.overflow),
                ro["EVT_RECORDS"].eq(ev_groups.records),
            ]
            ev_source = _stream_pkt(m, PacketType.EVENT, 7, ev_groups.out)
        else:
            m.submodules.ev_merge = ev_merge = RecordMerger(EventRecord, n_ev)
            for i in range(n_ev):
                m.d.comb += [
                    ev_merge.valid[i].eq(ev_valid[i]),
                    ev_merge.payload[i].t.eq(edges.t),
                    ev_merge.payload[i].input.eq(codes[i]),
                    ev_merge.payload[i].rising.eq(edges.rise[i]),
                ]
            m.d.comb += ev_merge.clear.eq(clear)
            m.submodules.ev_fifo = ev_fifo = _record_fifo(
                m, ev_merge, EventRecord, self.fifo_depth, clear,
                ro["EVT_OVERFLOW"], ro["EVT_RECORDS"])
            ev_source = _pkt(m, PacketType.EVENT, 7, ev_fifo.r_data, ev_fifo)

        # Latency matching
        pulse_idx = Signal(32)
        with m.If(clear | (stim_start & ~stim.running)):
            m.d.sync += pulse_idx.eq(0)
        with m.Elif(edges.rise[stim0_bit]):
            m.d.sync += pulse_idx.eq(pulse_idx + 1)
        m.submodules.lat_merge = lat_merge = RecordMerger(LatencyRecord, 2 * N_LATENCY_CHANNELS)
        lat_on = rw["STREAM_EN"][1]
        for ch in range(N_LATENCY_CHANNELS):
            if self.compact:
                from .matcher_lean import LeanLatencyMatcher
                mt = LeanLatencyMatcher(ch, step=step)
                m.d.comb += mt.in_phase.eq(edges.phase[ch])
            else:
                mt = LatencyMatcher(ch)
            m.submodules[f"match{ch}"] = mt
            m.d.comb += [
                mt.enable.eq(lat_on & rw["LAT_CH_EN"][ch]),
                mt.clear.eq(clear),
                mt.stim_rise.eq(edges.rise[stim0_bit]),
                mt.in_rise.eq(edges.rise[ch]),
                mt.in_fall.eq(edges.fall[ch]),
                mt.t.eq(edges.t),
                mt.pulse.eq(pulse_idx),
                mt.timeout.eq(rw["LAT_TIMEOUT"]),
                lat_merge.valid[2 * ch].eq(mt.rec_a_valid),
                lat_merge.payload[2 * ch].eq(mt.rec_a),
                lat_merge.valid[2 * ch + 1].eq(mt.rec_b_valid),
                lat_merge.payload[2 * ch + 1].eq(mt.rec_b),
            ]
        m.d.comb += lat_merge.clear.eq(clear)
        m.submodules.lat_fifo = lat_fifo = _record_fifo(
            m, lat_merge, LatencyRecord, self.fifo_depth, clear,
            ro["LAT_OVERFLOW"], ro["LAT_RECORDS"], in_reg=not self.compact)

        # ---- On-chip statistics (gateware/stats.py, docs/statistics.md) ---------------
        # With STAT_CTRL bit 0 set, the matchers of the LAT_CH_EN channels run even while
        # the LATENCY stream is off, and their records reach the stream only while it is
        # on. These assignments override the matcher enables and merger strobes made
        # above (last assignment wins); with STAT_CTRL = 0 the rig behaves as before.
        if self.with_stats:
            from .stats import Statistics
            m.submodules.stats = stats = Statistics()
            stat_on = rw["STAT_CTRL"][0]
            for ch in range(N_LATENCY_CHANNELS):
                mt = m.submodules[f"match{ch}"]
                m.d.comb += [
                    mt.enable.eq((lat_on | stat_on) & rw["LAT_CH_EN"][ch]),
                    lat_merge.valid[2 * ch].eq(mt.rec_a_valid & lat_on),
                    lat_merge.valid[2 * ch + 1].eq(mt.rec_b_valid & lat_on),
                    stats.rec_a_valid[ch].eq(mt.rec_a_valid),
                    stats.rec_a[ch].eq(mt.rec_a),
                    stats.rec_b_valid[ch].eq(mt.rec_b_valid),
                    stats.rec_b[ch].eq(mt.rec_b),
                ]
            m.d.comb += [
                stats.enable.eq(stat_on),
                stats.clear.eq(clear),
                stats.bin_shift.eq(rw["STAT_BIN_SHIFT"]),
                stats.bin_offset.eq(rw["STAT_BIN_OFFSET"]),
                stats.stat_sel_we.eq(strobe["STAT_SEL"]),
                stats.hist_sel_we.eq(strobe["HIST_SEL"]),
                stats.sel_data.eq(regs.w_value),
                stats.stat_rd.eq(regs.read_strobe["STAT_DATA"]),
                stats.hist_rd.eq(regs.read_strobe["HIST_DATA"]),
                ro["STAT_INFO"].eq(stats.info),
                ro["STAT_STATUS"].eq(stats.status),
                ro["STAT_DROPS"].eq(stats.drops),
                ro["STAT_DATA"].eq(stats.stat_data),
                ro["HIST_DATA"].eq(stats.hist_data),
                stats.hb_edge.eq(edges.rise[2] | edges.fall[2]),
                stats.running.eq(stim.running),
                stats.hb_window.eq(cycles(rw["HB_WINDOW"])),
                ro["HB_LAST"].eq(stats.hb_last),
                ro["HB_MIN"].eq(stats.hb_min),
                ro["HB_MAX"].eq(stats.hb_max),
                ro["HB_WINDOWS"].eq(stats.hb_windows),
            ]
        # ---- end of on-chip statistics ---------------------------------------------------

        # Host link
        rx_errors = Signal(32)
        m.submodules.rx = rx = UARTRx(divisor)
        if self.compact:
            rx_fifo = fifo.SyncFIFOBuffered(width=8, depth=513)
        else:
            rx_fifo = fifo.SyncFIFO(width=8, depth=16)
        m.submodules.rx_fifo = rx_fifo
        m.submodules.prx = prx = PacketRx()
        m.submodules.cmdu = cmdu = CommandUnit(hold=self.compact)
        m.d.comb += [
            rx.rx.eq(self.uart_rx),
            rx.clear.eq(clear),
            rx_fifo.w_data.eq(rx.data.payload),
            rx_fifo.w_en.eq(rx.data.valid),
            rx.data.ready.eq(rx_fifo.w_rdy),
            prx.bytes_in.payload.eq(rx_fifo.r_data),
            prx.bytes_in.valid.eq(rx_fifo.r_rdy),
            rx_fifo.r_en.eq(prx.bytes_in.ready),
            prx.clear.eq(clear),
            ro["RX_ERRORS"].eq(rx_errors),
            regs.addr.eq(cmdu.addr),
            regs.w_en.eq(cmdu.w_en),
            regs.w_data.eq(cmdu.w_data),
            regs.r_en.eq(cmdu.r_en),
            cmdu.r_data.eq(regs.r_data),
        ]
        connect(m, prx.cmd, cmdu.cmd)
        if self.compact:
            # One counter for both kinds (the blocks' own counters are then unused).
            with m.If(clear):
                m.d.sync += rx_errors.eq(0)
            with m.Else():
                m.d.sync += rx_errors.eq(rx_errors + prx.error + rx.error)
        else:
            m.d.sync += rx_errors.eq(prx.errors + rx.errors)

        sources = [
            cmdu.resp,
            _pkt(m, PacketType.LATENCY, 19, lat_fifo.r_data, lat_fifo),
            ev_source,
        ]
        if truth_src is not None:
            m.submodules.truth_fifo = truth_fifo = fifo.SyncFIFOBuffered(
                width=TRUTH.payload_len * 8, depth=self.fifo_depth + 1)
            tp = truth_src.payload
            truth_rec = Signal(TruthWireRecord)
            m.d.comb += [
                truth_rec.pulse.eq(tp.pulse), truth_rec.channel.eq(tp.channel),
                truth_rec.missed.eq(tp.missed),
                truth_rec.latency.eq((tp.latency << shift)[:32]),
                truth_rec.completion.eq((tp.completion << shift)[:32]),
                truth_fifo.w_data.eq(truth_rec),
                truth_fifo.w_en.eq(truth_src.valid & rw["STREAM_EN"][2]),
                truth_src.ready.eq(truth_fifo.w_rdy | ~rw["STREAM_EN"][2]),
            ]
            sources.append(_pkt(m, PacketType.TRUTH, 13, truth_fifo.r_data, truth_fifo))

        m.submodules.arb = arb = StreamRoundRobin(TxPacket, len(sources),
                                                   out_reg=not self.compact)
        for k, s in enumerate(sources):
            connect(m, s, getattr(arb, f"i{k}"))
        m.submodules.ptx = ptx = PacketTx(hold=self.compact)
        m.submodules.tx = tx = UARTTx(divisor)
        connect(m, arb.out, ptx.pkt)
        connect(m, ptx.bytes_out, tx.data)
        m.d.comb += self.uart_tx.eq(tx.tx)
        return m
