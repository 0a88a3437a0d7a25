# SPDX-License-Identifier: BSD-2-Clause
"""The latency records feature: stimulus pulses matched with the response channels."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ...protocol import N_INPUTS, N_LATENCY_CHANNELS, PacketType
from ...records import LATENCY
from ..feature import Feature, packet_from_fifo, record_fifo
from ..latency_matcher import LatencyMatcher, LatencyRecord
from ..link import TxPacket
from ..merge import RecordMerger
from ..timebase import TIME_WIDTH

__all__ = ["LatencyRecords"]

#: Bit of the capture's edge strobes that is STIM0.
_STIM0 = N_INPUTS


class LatencyRecords(Feature):
    """One LATENCY record per stimulus pulse and enabled response channel.

    A matcher per channel (``LAT_CH_EN`` bit n: channel n, 0 ISR_OUT, 1 APP_OUT) pairs
    STIM0 rising edges with the channel's edges
    (:class:`~rtrig.gateware.latency_matcher.LatencyMatcher`); its records pass
    a :class:`~rtrig.gateware.merge.RecordMerger` straight into a FIFO in front of the
    link while ``STREAM_EN`` bit 1 is set. The pulse index counts STIM0 rising
    edges from 0 at ``clear`` and at a stimulus start.

    Interval channels (``intervals``): ``LAT_EDGES`` chooses each channel's start edge
    (the matcher's "stimulus") and end edge (its "response rise"; the end source's
    other edge is its "response fall", the completion) among the inputs and STIM0/STIM1,
    rising or falling. Its reset value is the latency channels above. A channel's pulse
    index then counts its own start edges (from 0 at ``clear`` and at a stimulus
    start). The selected strobes go straight into the matchers' input registers, so
    an interval channel's figures are pin-time differences like a latency's. With
    ``n_channels`` 4, channels 2 and 3 are interval channels beside ``isr`` and
    ``app`` (their ``LAT_EDGES`` bytes reset to 0).

    Parameters
    ----------
    depth : int
        Records the FIFO holds.
    step : int
        Ticks per clock cycle (the matchers' sampling phases): a rig's 4; 1 and 2 give
        the same records from coarser edges (a reference in the tests).
    with_statistics : bool
        The on-chip statistics take the matchers' records (``rec_*`` members): with
        ``stat_on`` the matchers run even while the LATENCY stream is off, and their
        records reach the stream only while it is on.
    intervals : bool
        Interval channels (``LAT_EDGES``). With several samples per cycle, each
        channel's start edge keeps its phase
        (:class:`~rtrig.gateware.latency_matcher.LatencyMatcher`
        ``start_phase``), so an interval between two pins is exact to the tick.

    Members
    -------
    rise, fall : In(8)
        Edge strobes of inputs 0..5, STIM0, STIM1 (``sync``; :class:`InputCapture`).
    phase : In(ArrayLayout(2, 8))
        The edges' tick within the cycle.
    t : In(48)
        Pin time of this cycle's edges, ticks.
    clear : In(1)
        Drop the pulses held, zero the counters and the pulse index.
    start, running : In(1)
        The stimulus's start pulse and running level (a start while stopped zeroes
        the pulse index).
    stat_on : In(1)
        ``with_statistics``: run the enabled matchers for the statistics.
    n_channels : int
        Latency channels: 2, or 4 with ``intervals``.
    rec_a_valid, rec_b_valid : Out(n_channels)
        Per channel: one-cycle record strobes
        (:func:`~rtrig.gateware.latency_matcher.matcher_signature`).
    rec_a, rec_b : Out(ArrayLayout(LatencyRecord, n_channels))
        Per channel: the records, valid with their strobes.
    packets : Out(stream.Signature(TxPacket))
        LATENCY packets (19-byte payloads, :data:`rtrig.records.LATENCY`).
    regs : Out(Signature)
        ``LAT_CH_EN``, ``LAT_TIMEOUT`` (ticks; 0: until the next stimulus),
        ``LAT_OVERFLOW``, ``LAT_RECORDS``, ``LAT_EDGES`` (with ``intervals``); it reads
        ``STREAM_EN``.
    """

    def __init__(self, depth=512, step=4, with_statistics=True, intervals=True,
                 n_channels=2):
        self.depth = depth
        self.n_channels = n_channels
        self.step = step
        self.with_statistics = with_statistics
        self.intervals = intervals
        if n_channels not in (2, N_LATENCY_CHANNELS):
            raise ValueError(f"a rig has 2 or {N_LATENCY_CHANNELS} latency channels, "
                             f"not {n_channels!r}")
        if n_channels > 2 and not self.intervals:
            raise ValueError("channels beyond isr and app are interval channels "
                             "(intervals=True)")
        n, ch = N_INPUTS + 2, n_channels
        super().__init__({
            "rise": In(n), "fall": In(n), "phase": In(data.ArrayLayout(2, n)),
            "t": In(TIME_WIDTH), "clear": In(1), "start": In(1), "running": In(1),
            "stat_on": In(1),
            "rec_a_valid": Out(ch), "rec_b_valid": Out(ch),
            "rec_a": Out(data.ArrayLayout(LatencyRecord, ch)),
            "rec_b": Out(data.ArrayLayout(LatencyRecord, ch)),
            "packets": Out(stream.Signature(TxPacket)),
        }, registers=("LAT_CH_EN", "LAT_TIMEOUT", "LAT_OVERFLOW", "LAT_RECORDS")
            + (("LAT_EDGES",) if self.intervals else ()), uses=("STREAM_EN",))

    def elaborate(self, platform):
        m = Module()
        regs, clear = self.regs, self.clear
        restart = clear | (self.start & ~self.running)
        # Intervals with several samples per cycle: start edges on pins come at
        # any phase, and each channel's chosen edges are registered once before its
        # matcher (the choice by LAT_EDGES leaves the matcher's cycle). The matchers,
        # the merger and the FIFO then run one cycle behind; the times travel with the
        # edges, so no figure changes.
        phased = self.intervals and self.step > 1
        t, clear_m = self.t, clear
        if phased:
            t, clear_m = Signal(TIME_WIDTH, name="t_q"), Signal(name="clear_q")
            m.d.sync += [t.eq(self.t), clear_m.eq(clear)]
        m.submodules.merge = merge = RecordMerger(LatencyRecord, 2 * self.n_channels)
        on = regs.STREAM_EN[1]
        # With the statistics, the matchers also run for them, and the stream takes
        # their records only while it is on.
        run = on | self.stat_on if self.with_statistics else on
        for ch in range(self.n_channels):
            m.submodules[f"match{ch}"] = mt = LatencyMatcher(
                ch, step=self.step, start_phase=phased)
            in_phase = self.phase[ch]
            if not self.intervals:
                # Latency channels only, sharing one pulse index (area).
                start, end_rise, end_fall = self.rise[_STIM0], self.rise[ch], self.fall[ch]
                if ch == 0:
                    pulse = self._pulse_index(m, restart, start, "pulse")
            else:
                sel = regs.LAT_EDGES[8 * ch:][:8]
                start, end_rise, end_fall = self._edges(m, sel)
                pulse = self._pulse_index(m, restart, start, f"pulse{ch}")
                if phased:
                    sph, in_phase = self._phases(m, sel, ch)
                    start, end_rise, end_fall, sph, in_phase, pulse = self._stage(
                        m, ch, start, end_rise, end_fall, sph, in_phase, pulse)
                    m.d.comb += mt.stim_phase.eq(sph)
            a_valid, b_valid = mt.rec_a_valid, mt.rec_b_valid
            if self.with_statistics:
                a_valid, b_valid = a_valid & on, b_valid & on
            m.d.comb += [
                mt.enable.eq(run & regs.LAT_CH_EN[ch]),
                mt.clear.eq(clear_m),
                mt.stim_rise.eq(start),
                mt.in_rise.eq(end_rise),
                mt.in_fall.eq(end_fall),
                mt.in_phase.eq(in_phase),
                mt.t.eq(t),
                mt.pulse.eq(pulse),
                mt.timeout.eq(regs.LAT_TIMEOUT),
                merge.valid[2 * ch].eq(a_valid),
                merge.payload[2 * ch].eq(mt.rec_a),
                merge.valid[2 * ch + 1].eq(b_valid),
                merge.payload[2 * ch + 1].eq(mt.rec_b),
                self.rec_a_valid[ch].eq(mt.rec_a_valid),
                self.rec_a[ch].eq(mt.rec_a),
                self.rec_b_valid[ch].eq(mt.rec_b_valid),
                self.rec_b[ch].eq(mt.rec_b),
            ]
        m.d.comb += merge.clear.eq(clear_m)
        m.submodules.fifo = q = record_fifo(
            m, merge, LatencyRecord, self.depth, clear_m,
            regs.LAT_OVERFLOW, regs.LAT_RECORDS)
        packet_from_fifo(m, self.packets, PacketType.LATENCY, LATENCY, q)
        return m

    @staticmethod
    def _pulse_index(m, restart, start, name):
        """Index of the start edge flagged this cycle: 0 for the first after ``restart``."""
        pulse = Signal(32, name=name)
        with m.If(restart):
            m.d.sync += pulse.eq(0)
        with m.Elif(start):
            m.d.sync += pulse.eq(pulse + 1)
        return pulse

    def _phases(self, m, sel, ch):
        """With several samples per cycle, the phases of a channel's chosen edges: the
        start source's (the matcher's ``stim_phase``) and the end source's (its
        ``in_phase``; both edges of a source have its one phase per cycle)."""
        start_src, end_src = sel[0:3], sel[4:7]
        sph, eph = Signal(2, name=f"start_phase{ch}"), Signal(2, name=f"end_phase{ch}")
        m.d.comb += [sph.eq(self.phase[start_src]), eph.eq(self.phase[end_src])]
        return sph, eph

    @staticmethod
    def _stage(m, ch, *values):
        """``values`` registered once (a channel's edges, phases and pulse index)."""
        out = []
        for k, v in enumerate(values):
            q = Signal.like(v, name=f"stage{ch}_{k}") if isinstance(v, Signal) else \
                Signal(len(v), name=f"stage{ch}_{k}")
            m.d.sync += q.eq(v)
            out.append(q)
        return out

    def _edges(self, m, sel):
        """A channel's start strobe and end rise/fall strobes, chosen by its
        ``LAT_EDGES`` byte ``sel`` (with several samples per cycle their phases come
        from :meth:`_phases`)."""
        start_src, start_fall, end_src, end_fall = sel[0:3], sel[3], sel[4:7], sel[7]
        start = Mux(start_fall, self.fall.bit_select(start_src, 1),
                    self.rise.bit_select(start_src, 1))
        e_rise, e_fall = self.rise.bit_select(end_src, 1), self.fall.bit_select(end_src, 1)
        end_rise = Signal()
        end_other = Signal()
        m.d.comb += [end_rise.eq(Mux(end_fall, e_fall, e_rise)),
                     end_other.eq(Mux(end_fall, e_rise, e_fall))]
        return start, end_rise, end_other
