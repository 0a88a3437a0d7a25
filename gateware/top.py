# SPDX-License-Identifier: BSD-2-Clause
"""The rig: every feature of the instrument behind one host link.

:class:`GatewareTop` is the same design on an FPGA board (wrapped by a board top that adds
pin buffers and a PLL) and in the simulation twin (converted to Verilog as it is).
It lists the features (:mod:`rtrig.gateware.feature`), builds the register file from
the registers they declare and connects them; each feature is a component of its own
with its registers and streams.
"""

import hashlib
from pathlib import Path

from amaranth import Cat, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect

from ..protocol import CAPS_LAT_CHANNELS_SHIFT, N_INPUTS, REGISTERS, Caps, Target
from .feature import connect_registers
from .features.capture import IN_DELAY, SAMPLES, InputCapture
from .features.control import RigControl
from .features.events import EventRecord, RawEvents
from .features.hostlink import HostLink
from .features.latency_records import LatencyRecords
from .features.stimulus import Stimulus
from .features.targets import LOOP_LINE_DEPTH, SOC_OUTPUTS, Targets, TruthWireRecord
from .registers import RegisterFile

__all__ = ["GatewareTop", "EventRecord", "TruthWireRecord", "gateware_hash", "LOOP_LINE_DEPTH"]


def gateware_hash():
    """SHA-256 over the gateware sources, the protocol and the records: identifies the
    sources (the simulation twin's build cache key). A build is identified by its
    logic instead (:meth:`GatewareTop.logic_hash`, register ``BUILD_HASH``).

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


class GatewareTop(wiring.Component):
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
    intervals : bool
        Interval channels (register ``LAT_EDGES``, ``CAPS`` bit ``INTERVALS``); each
        channel's start edge keeps its sample's phase.
    bursts : bool
        Bursts (``STIM_BURST``, ``STIM_GAP``, ``CAPS`` bit ``BURST``): the stimulus
        generator with bursts; without, a smaller one.
    read_pipeline : bool
        The register file's read mux in two registered levels (without: one level,
        fewer flip-flops, slower).
    lat_channels : int
        Latency channels: 2 (``isr``, ``app``), or 4 with ``intervals`` (two interval
        channels beside them); ``CAPS`` bits 12..15 report it.
    armed : bool
        Armed runs (``RUN_AT``, ``CAPS`` bit ``ARMED``) on a rig with no internal
        target too; a rig with the model or the SoC always has them (a run restarts
        its target). Without, ``STIM_CTRL.AT`` is ignored: a run starts when its write
        lands.
    pin_latency : int
        Cycles of registers in front of ``ext_inputs`` outside this component (2 behind a
        board's DDR input buffers and :class:`~rtrig.gateware.features.capture.QuadSampler`);
        internal targets and the stimulus are delayed as much, and ``IN_DELAY``
        includes it.

    Every input pin is sampled four times per clock
    (:data:`~rtrig.gateware.features.capture.SAMPLES`): ``ext_inputs`` is the earliest sample
    of a cycle, ``ext_later`` the others in order; a tick is a quarter of a clock
    period (``TICK_HZ`` = 4 × ``clk_freq``). The stimulus, the loopback and the model
    target run in clock cycles: their settings are used in steps of 4 ticks (register
    ``STIM_STEP``; other values are rounded down). The build is for area: matchers
    without a record register of their own
    (:class:`~rtrig.gateware.latency_matcher.LatencyMatcher`), raw events
    queued once per cycle (:class:`~rtrig.gateware.features.events.EventGroups`: ``fifo_depth``
    counts cycles with edges, events come out in the order of their cycles), no
    register stage before the latency FIFO or after the packet arbiter, a block-RAM
    loopback delay line (delays up to ``LOOP_LINE_DEPTH`` clock cycles; a longer
    ``LOOP_DELAY`` answers nothing) and the host → rig byte FIFO in block RAM.

    The defaults are the ECP5 boards' gateware (the simulation twin's): 30 MHz,
    intervals, bursts, the two-level read, four latency channels and armed runs; the
    iCEBreaker builds it without those five.

    Members
    -------
    uart_rx : In(1)
    uart_tx : Out(1)
    ext_inputs : In(6)
        Target → rig pins (ISR_OUT, APP_OUT, HEARTBEAT, MARKER0..2), asynchronous.
    ext_later : In(ArrayLayout(6, 3))
        The later samples of the pins in each cycle.
    stim0, stim1, load_en : Out(1)
        GatewareTop → target pins.
    """

    def __init__(self, clk_freq=30_000_000, baud=3_000_000, board=0, with_model=True,
                 fifo_depth=512, with_soc=False, soc_firmware=b"", with_stats=True,
                 pin_latency=2, intervals=True, bursts=True, read_pipeline=True,
                 lat_channels=4, armed=True, build_hash=None):
        self._params = {k: v for k, v in locals().items()
                        if k not in ("self", "build_hash", "__class__")}
        self._build_hash = build_hash
        self.clk_freq = clk_freq
        self.baud = baud
        self.board = board
        self.with_model = with_model
        self.fifo_depth = fifo_depth
        self.with_stats = with_stats
        self.intervals = intervals
        self.bursts = bursts
        self.read_pipeline = read_pipeline
        if lat_channels > 2 and not self.intervals:
            raise ValueError("latency channels beyond isr and app are interval channels "
                             "(intervals=True)")
        self.lat_channels = lat_channels
        # A rig with an internal target arms its runs to restart it, whatever ``armed``.
        self.armed = armed or with_model or with_soc
        self.pin_latency = pin_latency
        #: Ticks per clock cycle: the samples of every input per clock.
        self.step = step = SAMPLES
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
        members["ext_later"] = In(data.ArrayLayout(N_INPUTS, step - 1))
        if with_soc:
            # SoC debug outputs for the simulation harness (domain "soc"), see docs/soc.md.
            # Its GPIO outputs (ISR_OUT, APP_OUT, HEARTBEAT, MARKER0..2), domain
            # "soc": what TARGET_SEL = SOC routes to the capture, for header pins.
            members.update({f"soc_{name}": Out(width) for name, width in SOC_OUTPUTS.items()})
        super().__init__(members)

    def logic_hash(self):
        """The value of ``BUILD_HASH``: the low 32 bits of the SHA-256 of this rig's
        logic (:func:`~rtrig.gateware.identity.logic_text` of its RTLIL, built with
        ``BUILD_HASH`` 0). Two rigs of the same configuration from sources that build
        the same hardware have the same value; any change to the hardware changes it.
        (``build_hash`` given to the constructor: that value.)"""
        if self._build_hash is None:
            from amaranth.back import rtlil

            from .identity import logic_digest
            bare = _Defined(GatewareTop(**self._params, build_hash=0))
            self._build_hash = int(logic_digest(rtlil.convert(bare, name="rig"))[:8], 16)
        return self._build_hash

    def features(self):
        """The rig's features, by submodule name, as this configuration builds them
        (a :class:`~rtrig.gateware.feature.Feature` each)."""
        step = self.step
        caps = 1 << Target.EXTERNAL | 1 << Target.LOOPBACK
        if self.with_model:
            caps |= 1 << Target.MODEL
        if self.with_soc:
            caps |= 1 << Target.SOC
        if self.intervals:
            caps |= Caps.INTERVALS
        if self.bursts:
            caps |= Caps.BURST
        if self.armed:
            caps |= Caps.ARMED
        # A plain int: as an enum member Amaranth would give it the flags' width (bits
        # 0..9) and drop the channel count.
        caps = int(caps) | self.lat_channels << CAPS_LAT_CHANNELS_SHIFT
        divisor = self.clk_freq // self.baud
        f = {
            "control": RigControl(
                build_hash=self.logic_hash(), tick_hz=self.clk_freq * step,
                baud=self.clk_freq // divisor, board=self.board, caps=caps,
                in_delay=(IN_DELAY + self.pin_latency) * step, step=step),
            "stim": Stimulus(step, bursts=self.bursts,
                             restart=self.with_model or self.with_soc, armed=self.armed),
            "targets": Targets(step=step, pin_latency=self.pin_latency,
                               with_model=self.with_model,
                               truth_depth=self.fifo_depth, with_soc=self.with_soc,
                               soc_firmware=self.soc_firmware,
                               clk_freq=self.clk_freq),
            "capture": InputCapture(self.pin_latency),
            "events": RawEvents(self.fifo_depth),
            "latency": LatencyRecords(self.fifo_depth, step, intervals=self.intervals,
                                      with_statistics=self.with_stats,
                                      n_channels=self.lat_channels),
        }
        if self.with_stats:
            from .features.statistics import OnChipStatistics
            f["stats"] = OnChipStatistics(step, self.lat_channels)
        f["link"] = HostLink(divisor, 3 if self.with_model else 2)
        return f

    def elaborate(self, platform):
        m = Module()
        f = self.features()
        owned = [name for feature in f.values() for name in feature.registers]
        if len(owned) != len(set(owned)):
            raise ValueError("a register is declared by two features")
        # Registers of features not built in read their map value; writes are ignored.
        absent = [r.name for r in REGISTERS if r.name not in owned]
        m.submodules.regs = regs = RegisterFile(absent=absent, read_pipeline=self.read_pipeline)
        for name, feature in f.items():
            m.submodules[name] = feature
            connect_registers(m, regs, feature)

        control, stim, targets = f["control"], f["stim"], f["targets"]
        capture, events, latency, link = f["capture"], f["events"], f["latency"], f["link"]
        clear = control.clear
        m.d.comb += [
            self.stim0.eq(stim.stim0),
            self.stim1.eq(stim.stim1),
            self.load_en.eq(stim.load_en),
            # Targets → capture.
            targets.stim0.eq(stim.stim0),
            targets.stim1.eq(stim.stim1),
            targets.load_en.eq(stim.load_en),
            targets.hold.eq(stim.hold),
            stim.now.eq(control.now),
            targets.ext_inputs.eq(self.ext_inputs),
            capture.pins.eq(targets.pins),
            capture.pins_later.eq(targets.pins_later),
            capture.stim.eq(Cat(stim.stim0, stim.stim1)),
            capture.now.eq(control.now),
            capture.clear.eq(clear),
        ]
        m.d.comb += targets.ext_later.eq(self.ext_later)
        # Capture → raw events and latency records.
        for consumer in (events, latency):
            m.d.comb += [
                consumer.rise.eq(capture.rise),
                consumer.fall.eq(capture.fall),
                consumer.phase.eq(capture.phase),
                consumer.t.eq(capture.t),
                consumer.clear.eq(clear),
            ]
        m.d.comb += [latency.start.eq(stim.start), latency.running.eq(stim.running)]
        if self.with_stats:
            stats = f["stats"]
            m.d.comb += [
                latency.stat_on.eq(stats.stat_on),
                stats.rec_a_valid.eq(latency.rec_a_valid),
                stats.rec_a.eq(latency.rec_a),
                stats.rec_b_valid.eq(latency.rec_b_valid),
                stats.rec_b.eq(latency.rec_b),
                stats.clear.eq(clear),
                stats.hb_edge.eq(capture.hb_edge),
                stats.running.eq(stim.running),
            ]
        if self.with_soc:
            for name in SOC_OUTPUTS:
                m.d.comb += getattr(self, f"soc_{name}").eq(getattr(targets, f"soc_{name}"))

        # The host link: the register bus and the packet streams, in this order after
        # the command responses.
        m.d.comb += [
            link.uart_rx.eq(self.uart_rx),
            self.uart_tx.eq(link.uart_tx),
            link.clear.eq(clear),
            regs.addr.eq(link.addr),
            regs.w_en.eq(link.w_en),
            regs.w_data.eq(link.w_data),
            regs.r_en.eq(link.r_en),
            link.r_data.eq(regs.r_data),
        ]
        streams = [latency.packets, events.packets]
        if self.with_model:
            streams.append(targets.truth)
        for k, s in enumerate(streams):
            connect(m, s, getattr(link, f"s{k}"))
        return m


class _Defined(wiring.Component):
    """A rig with its clock domains defined in a fixed order, for its logic hash: a rig
    converted alone gets a domain it uses but does not define (``sync``, ``soc``) as
    ports in the order of a Python set, which changes from process to process."""

    def __init__(self, rig):
        self.rig = rig
        super().__init__({})

    def elaborate(self, platform):
        from amaranth import ClockDomain
        m = Module()
        m.domains.sync = ClockDomain("sync")
        if self.rig.with_soc:
            m.domains.soc = ClockDomain("soc")
        m.submodules.rig = self.rig
        return m

