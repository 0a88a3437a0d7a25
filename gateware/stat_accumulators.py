# SPDX-License-Identifier: BSD-2-Clause
"""On-chip statistics: per-channel latency accumulators, histograms and heartbeat windows.

At pulse rates the host link cannot carry (docs/architecture.md, "Measurement modes"), the rig
accumulates, per response channel, everything the host needs for a summary and reads
it once at the end:

* :class:`ChannelStats` — answered/missed counts, min/max/sum/sum of squares of the
  latency, min/max/sum of the completion time, and a latency histogram in block RAM
  with a host-chosen offset and bin width ``2**k`` ticks, plus underflow and overflow
  counters (no value is ever clipped silently).
* :class:`HeartbeatWindows` — heartbeat edges per programmable window: the last complete
  window and min/max over the windows that lay entirely inside a stimulus run, so a
  saturated load task shows up as a window with zero edges.
* :class:`StatAccumulators` — both channels behind two auto-incrementing read windows (one for
  the scalar words, one for the histogram bins) and the heartbeat windows.

The register map is in :mod:`rtrig.protocol` (addresses 0x060..0x07F); the layout of the
scalar words read through ``STAT_DATA`` is :data:`STAT_WORDS` here, imported by the
host (:mod:`rtrig.host.procedures.stats`).

Widths and limits (documented in ``docs/statistics.md``)
-------------------------------------------------------
=================  =====  ===========================================================
figure             bits   limit
=================  =====  ===========================================================
answered, missed   48     2**48 records (130 days of records at 25 M records/s)
under/overflow     48     as above
latency sum        64     exact while answered * max latency < 2**64
latency sum sq.    96     exact while answered * max latency**2 < 2**96
completion sum     64     as the latency sum
histogram bin      32     saturates at 2**32 - 1 (sticky flag ``BIN_SATURATED``)
=================  =====  ===========================================================

A sum that wraps sets a sticky flag in the channel's ``FLAGS`` word; the host refuses
to report a mean or a deviation from a wrapped sum.
"""

import enum
from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .heartbeat import HeartbeatWindows
from .latency_matcher import LatencyRecord

__all__ = ["ChannelStats", "HeartbeatWindows", "StatAccumulators", "STAT_WORDS", "StatFlags",
           "WORDS_PER_CHANNEL", "HIST_BINS", "COUNT_WIDTH", "PIPELINE_DEPTH"]

#: Default number of histogram bins per channel (a power of two).
HIST_BINS = 1024
#: Width of one histogram bin counter.
COUNT_WIDTH = 32
#: Stride of one channel's block in the ``STAT_SEL`` address space.
WORDS_PER_CHANNEL = 32
#: Cycles from a record strobe to the last accumulator it touches (the histogram
#: write): reading the statistics this many cycles after the last record is exact.
PIPELINE_DEPTH = 7


class StatFlags(enum.IntFlag):
    """Sticky bits of a channel's ``FLAGS`` word."""
    LAT_SUM_WRAPPED = 1 << 0
    LAT_SUMSQ_WRAPPED = 1 << 1
    COMP_SUM_WRAPPED = 1 << 2
    BIN_SATURATED = 1 << 3


#: Scalar words of one channel, read through ``STAT_SEL``/``STAT_DATA`` at
#: ``channel * WORDS_PER_CHANNEL + index``: name → (first index, number of 32-bit words).
#: Multi-word values are little-endian (least significant word first).
STAT_WORDS = {
    "answered": (0, 2),
    "missed": (2, 2),
    "lat_min": (4, 1),        # 0xFFFFFFFF while nothing was answered
    "lat_max": (5, 1),
    "lat_sum": (6, 2),
    "lat_sumsq": (8, 3),
    "comp_min": (11, 1),      # over answered records that completed
    "comp_max": (12, 1),
    "comp_sum": (13, 2),
    "underflow": (15, 2),     # latency < offset
    "overflow": (17, 2),      # latency >= offset + bins * 2**shift
    "drops": (19, 1),         # records offered but not accumulated (see ChannelStats)
    # Reserved, reads 0: no record is incomplete (a matcher waits for the fall however
    # long it takes); kept so that readers of the word map find it where it was.
    "incomplete": (20, 1),
    "flags": (21, 1),         # StatFlags
}
N_STAT_WORDS = 22


class _Rec(data.Struct):
    """The fields of a latency record the statistics use."""
    latency: 32
    completion: 32


class ChannelStats(wiring.Component):
    """Statistics of one response channel, accumulated from latency records.

    Every answered record updates the counters, extrema and sums; its latency goes into
    the histogram: ``latency < offset`` counts in ``underflow``,
    ``(latency - offset) >> shift >= n_bins`` in ``overflow``, every other value in bin
    ``(latency - offset) >> shift``. A missed record only counts in ``missed``.

    Records are accepted when ``enable`` is high, up to two per cycle (the matcher's
    ``rec_a`` and ``rec_b``). Missed records are counted at once; answered ones pass one
    per cycle through a fixed pipeline (histogram read-modify-write with forwarding, so
    back-to-back records to one bin are exact). Should two answered records arrive in
    one cycle, the second waits in a one-entry stash. A record that finds the stash
    full, or arrives (with ``enable`` high) during the histogram clear sweep, is not
    accumulated at all and is counted in ``drops``; so ``answered + missed + drops`` is
    the number of records offered, and ``sum(bins) + underflow + overflow ==
    answered`` always holds. With :class:`LatencyMatcher` as the source ``rec_b`` is
    always a miss, so the stash never fills: drops only happen during a clear sweep.

    Parameters
    ----------
    n_bins : int
        Histogram bins (a power of two).
    count_width : int
        Bits per bin; a bin saturates (sticky ``BIN_SATURATED``) rather than wrapping.

    Members
    -------
    enable : In(1)
        Accept records.
    clear : In(1)
        Zero every figure (extrema to their start values) and sweep the histogram to
        zero, one bin per cycle (``n_bins`` cycles, ``busy`` high meanwhile).
    rec_a_valid, rec_b_valid : In(1)
        One-cycle record strobes (``sync`` domain).
    rec_a, rec_b : In(LatencyRecord)
        ``latency`` and ``completion`` in ticks; the ``missed`` flag.
    bin_shift : In(5)
        Bin width is ``2**bin_shift`` ticks. Change only while no record is in flight.
    bin_offset : In(32)
        Latency (ticks) of the lower edge of bin 0.
    word_sel : In(5)
        Index of the scalar word on ``word`` (see :data:`STAT_WORDS`).
    word : Out(32)
        The selected word, two cycles after ``word_sel`` (a mux registered in two
        levels).
    hist_addr : In(range(n_bins))
        Bin shown on ``hist_data``.
    hist_data : Out(count_width)
        Bin ``hist_addr``, two cycles after ``hist_addr`` settles, while no record is
        passing the histogram read stage (read with ``enable`` low for exact values).
    busy : Out(1)
        The histogram clear sweep is running.
    answered, missed, underflow, overflow : Out(48)
    lat_min, lat_max, comp_min, comp_max : Out(32)
        Minimum registers start at 0xFFFFFFFF, maximum registers at 0.
    lat_sum, comp_sum : Out(64)
    lat_sumsq : Out(96)
    drops : Out(32)
    flags : Out(4)
        :class:`StatFlags`.
    """

    def __init__(self, n_bins=HIST_BINS, count_width=COUNT_WIDTH):
        if n_bins < 2 or n_bins & (n_bins - 1):
            raise ValueError(f"n_bins must be a power of two, not {n_bins}")
        self.n_bins = n_bins
        self.bin_bits = n_bins.bit_length() - 1
        self.count_width = count_width
        super().__init__({
            "enable": In(1), "clear": In(1),
            "rec_a_valid": In(1), "rec_a": In(LatencyRecord),
            "rec_b_valid": In(1), "rec_b": In(LatencyRecord),
            "bin_shift": In(5), "bin_offset": In(32),
            "word_sel": In(5), "word": Out(32),
            "hist_addr": In(range(n_bins)), "hist_data": Out(count_width),
            "busy": Out(1),
            "answered": Out(48), "missed": Out(48),
            "underflow": Out(48), "overflow": Out(48),
            "lat_min": Out(32, init=0xFFFF_FFFF), "lat_max": Out(32),
            "comp_min": Out(32, init=0xFFFF_FFFF), "comp_max": Out(32),
            "lat_sum": Out(64), "comp_sum": Out(64), "lat_sumsq": Out(96),
            "drops": Out(32), "flags": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        ans, in_rec = self._input_stage(m)
        p1_v, p1, stash_v, drop_now = self._one_per_cycle(m, ans, in_rec)
        acc_v = self._accumulate(m, p1_v, p1)
        sq = self._sum_of_squares(m, p1_v, p1.latency)
        hist = self._histogram(m, p1_v, p1.latency, drop_now)

        # ``clear``: the histogram sweep starts, the pipeline empties, every figure
        # returns to its start value.
        with m.If(self.clear):
            m.d.sync += [
                self.busy.eq(1), hist.clr_addr.eq(0),
                stash_v.eq(0), p1_v.eq(0), acc_v.eq(0), sq.mul_v.eq(0), sq.pp_v.eq(0),
                sq.sq_v.eq(0), sq.sq_hi.eq(0), hist.s2_v.eq(0), hist.s3_v.eq(0),
                hist.s4_v.eq(0), hist.s5_v.eq(0), hist.w1_v.eq(0), hist.w2_v.eq(0),
                self.answered.eq(0), self.underflow.eq(0), self.overflow.eq(0),
                self.lat_min.eq(0xFFFF_FFFF), self.lat_max.eq(0),
                self.comp_min.eq(0xFFFF_FFFF), self.comp_max.eq(0),
                self.lat_sum.eq(0), self.comp_sum.eq(0),
                sq.ss_lo.eq(0), sq.ss_hi.eq(0), sq.ss_carry.eq(0),
                self.drops.eq(0), self.flags.eq(0),
            ]

        self._read_window(m)
        return m

    def _input_stage(self, m):
        """Stage 0: the record strobes registered (only the fields used), and the
        missed records counted (directly, any number per cycle). Returns the answered
        strobes and the records."""
        clear = self.clear
        in_v = [Signal(name="in_a_v"), Signal(name="in_b_v")]
        in_miss = [Signal(name="in_a_miss"), Signal(name="in_b_miss")]
        in_rec = [Signal(_Rec, name="in_a"), Signal(_Rec, name="in_b")]
        for k, (valid, rec) in enumerate(((self.rec_a_valid, self.rec_a),
                                          (self.rec_b_valid, self.rec_b))):
            m.d.sync += [
                in_v[k].eq(valid & self.enable & ~clear & ~self.busy),
                in_miss[k].eq(rec.missed),
                in_rec[k].latency.eq(rec.latency),
                in_rec[k].completion.eq(rec.completion),
            ]

        ans = [Signal(name="ans_a"), Signal(name="ans_b")]
        miss = [Signal(name="miss_a"), Signal(name="miss_b")]
        for k in range(2):
            m.d.comb += [ans[k].eq(in_v[k] & ~in_miss[k]), miss[k].eq(in_v[k] & in_miss[k])]

        with m.If(clear):
            m.d.sync += self.missed.eq(0)
        with m.Else():
            m.d.sync += self.missed.eq(self.missed + miss[0] + miss[1])
        return ans, in_rec

    def _one_per_cycle(self, m, ans, in_rec):
        """Stage 1 input: one answered record per cycle; a second waits in the stash.
        Returns the stage-1 record and its strobe, the stash's flag and the records
        lost to a full stash this cycle (0 or 1)."""
        stash_v = Signal()
        stash = Signal(_Rec)
        p1_v = Signal()
        p1 = Signal(_Rec)
        drop_now = Signal(2)      # records lost to a full stash this cycle (0 or 1)
        with m.If(stash_v):
            m.d.sync += [p1_v.eq(1), p1.eq(stash)]
            with m.If(ans[0]):
                m.d.sync += stash.eq(in_rec[0])
                m.d.comb += drop_now.eq(ans[1])
            with m.Elif(ans[1]):
                m.d.sync += stash.eq(in_rec[1])
            with m.Else():
                m.d.sync += stash_v.eq(0)
        with m.Elif(ans[0]):
            m.d.sync += [p1_v.eq(1), p1.eq(in_rec[0])]
            with m.If(ans[1]):
                m.d.sync += [stash_v.eq(1), stash.eq(in_rec[1])]
        with m.Elif(ans[1]):
            m.d.sync += [p1_v.eq(1), p1.eq(in_rec[1])]
        with m.Else():
            m.d.sync += p1_v.eq(0)
        return p1_v, p1, stash_v, drop_now

    def _accumulate(self, m, p1_v, p1):
        """Stage 2: the counters, extrema and sums, from a registered copy of the
        stage-1 record (the record register's fanout is large: a copy per use keeps
        its nets short). Returns the copy's strobe."""
        acc_v, acc = Signal(), Signal(_Rec)
        m.d.sync += [acc_v.eq(p1_v), acc.eq(p1)]
        a_lat, a_comp = acc.latency, acc.completion
        lat_sum_next = Signal(65)
        comp_sum_next = Signal(65)
        m.d.comb += [lat_sum_next.eq(self.lat_sum + a_lat),
                     comp_sum_next.eq(self.comp_sum + a_comp)]
        flags = self.flags
        with m.If(acc_v):
            m.d.sync += [
                self.answered.eq(self.answered + 1),
                self.lat_sum.eq(lat_sum_next[:64]),
            ]
            with m.If(lat_sum_next[64]):
                m.d.sync += flags[0].eq(1)
            with m.If(a_lat < self.lat_min):
                m.d.sync += self.lat_min.eq(a_lat)
            with m.If(a_lat > self.lat_max):
                m.d.sync += self.lat_max.eq(a_lat)
            m.d.sync += self.comp_sum.eq(comp_sum_next[:64])
            with m.If(comp_sum_next[64]):
                m.d.sync += flags[2].eq(1)
            with m.If(a_comp < self.comp_min):
                m.d.sync += self.comp_min.eq(a_comp)
            with m.If(a_comp > self.comp_max):
                m.d.sync += self.comp_max.eq(a_comp)
        return acc_v

    def _sum_of_squares(self, m, p1_v, lat):
        """The sum of squares of the latency.

        Three 16x16 partial products are registered (stage 3), summed into the square
        (stage 4: the outer two do not overlap, so one 64-bit adder suffices), then
        added by a 48+48-bit split accumulator; the carry between the halves and the
        upper product bits reach the high half one cycle later (stage 6). (The
        multiplier operand is registered first: a copy the placer can put next to the
        multipliers. It is loaded with an enable, unlike stage 2's copy: otherwise
        synthesis merges the two identical registers and the copy is gone.)
        """
        mul_v, mul_in = Signal(), Signal(32)
        m.d.sync += mul_v.eq(p1_v)
        with m.If(p1_v):
            m.d.sync += mul_in.eq(lat)
        pp_v, pp_hh, pp_hl, pp_ll = Signal(), Signal(32), Signal(32), Signal(32)
        m.d.sync += [pp_v.eq(mul_v), pp_hh.eq(mul_in[16:] * mul_in[16:]),
                     pp_hl.eq(mul_in[16:] * mul_in[:16]), pp_ll.eq(mul_in[:16] * mul_in[:16])]
        sq_v, sq = Signal(), Signal(64)
        m.d.sync += [sq_v.eq(pp_v), sq.eq(Cat(pp_ll, pp_hh) + (pp_hl << 17))]
        ss_lo, ss_hi, ss_carry, sq_hi = Signal(48), Signal(48), Signal(), Signal(16)
        ss_lo_next, ss_hi_next = Signal(49), Signal(49)
        m.d.comb += [ss_lo_next.eq(ss_lo + Mux(sq_v, sq[:48], 0)),
                     ss_hi_next.eq(ss_hi + sq_hi + ss_carry)]
        m.d.sync += [ss_lo.eq(ss_lo_next[:48]), ss_carry.eq(ss_lo_next[48]),
                     sq_hi.eq(Mux(sq_v, sq[48:], 0)), ss_hi.eq(ss_hi_next[:48])]
        with m.If(ss_hi_next[48]):
            m.d.sync += self.flags[1].eq(1)
        m.d.comb += self.lat_sumsq.eq(Cat(ss_lo, ss_hi))
        return SimpleNamespace(mul_v=mul_v, pp_v=pp_v, sq_v=sq_v, sq_hi=sq_hi, ss_lo=ss_lo,
                               ss_hi=ss_hi, ss_carry=ss_carry)

    def _histogram(self, m, p1_v, lat, drop_now):
        """The histogram, its underflow and overflow counters, the drops counter and
        the clear sweep. Returns the pipeline's registers that ``clear`` zeroes."""
        # Histogram stage 2: below the offset? at or above the last bin's upper edge
        # (``upper`` = offset + bins * 2**shift, registered)?  stage 3: shift to a bin index.
        upper = Signal(32 + 32)
        m.d.sync += upper.eq(self.bin_offset + (self.n_bins << self.bin_shift))
        s2_v, s2_under, s2_over, s2_diff = Signal(), Signal(), Signal(), Signal(32)
        m.d.sync += [s2_v.eq(p1_v), s2_under.eq(lat < self.bin_offset),
                     s2_over.eq(lat >= upper), s2_diff.eq(lat - self.bin_offset)]
        s3_v, s3_under, s3_over, s3_idx = Signal(), Signal(), Signal(), Signal(32)
        m.d.sync += [s3_v.eq(s2_v), s3_under.eq(s2_under), s3_over.eq(s2_over),
                     s3_idx.eq(s2_diff >> self.bin_shift)]

        # Histogram stage 3: classify, read the bin.
        m.submodules.hist = hist = Memory(shape=self.count_width, depth=self.n_bins, init=[])
        rd = hist.read_port()
        wr = hist.write_port()
        in_range = Signal()
        m.d.comb += in_range.eq(~s3_over)
        s3_hit = Signal()
        m.d.comb += s3_hit.eq(s3_v & ~s3_under & in_range)
        host_rd = Signal()
        with m.If(s3_hit):
            m.d.comb += rd.addr.eq(s3_idx[:self.bin_bits])
        with m.Else():
            m.d.comb += [rd.addr.eq(self.hist_addr), host_rd.eq(1)]
        host_rd_q = Signal()
        m.d.sync += host_rd_q.eq(host_rd)
        with m.If(host_rd_q):
            m.d.sync += self.hist_data.eq(rd.data)

        # (``busy`` never meets a record in flight: only ``clear`` starts the sweep, and
        # it empties the pipeline.)
        s4_v, s4_addr = Signal(), Signal(self.bin_bits)
        m.d.sync += [s4_v.eq(s3_hit), s4_addr.eq(s3_idx[:self.bin_bits])]
        drop_clr = Signal(2)
        m.d.comb += drop_clr.eq((self.rec_a_valid & self.enable & self.busy) +
                                (self.rec_b_valid & self.enable & self.busy))
        with m.If(s3_v & s3_under):
            m.d.sync += self.underflow.eq(self.underflow + 1)
        with m.If(s3_v & ~s3_under & ~in_range):
            m.d.sync += self.overflow.eq(self.overflow + 1)
        m.d.sync += self.drops.eq(self.drops + drop_now + drop_clr)

        # Histogram stage 4: register the bin read from block RAM.
        s5_v, s5_addr, s5_rd = Signal(), Signal(self.bin_bits), Signal(self.count_width)
        m.d.sync += [s5_v.eq(s4_v), s5_addr.eq(s4_addr), s5_rd.eq(rd.data)]
        w = self._bin_update(m, s4_addr, s5_v, s5_addr, s5_rd)

        # Clear sweep (owns the write port while busy).
        clr_addr = Signal(self.bin_bits)
        with m.If(self.busy):
            m.d.comb += [wr.en.eq(1), wr.addr.eq(clr_addr), wr.data.eq(0)]
            m.d.sync += clr_addr.eq(clr_addr + 1)
            with m.If(clr_addr == self.n_bins - 1):
                m.d.sync += self.busy.eq(0)
        with m.Else():
            m.d.comb += [wr.en.eq(s5_v), wr.addr.eq(s5_addr), wr.data.eq(w.bumped)]
        return SimpleNamespace(s2_v=s2_v, s3_v=s3_v, s4_v=s4_v, s5_v=s5_v, w1_v=w.w1_v,
                               w2_v=w.w2_v, clr_addr=clr_addr)

    def _bin_update(self, m, s4_addr, s5_v, s5_addr, s5_rd):
        """Histogram stage 5: add one to the bin read and write it back, forwarding the
        two previous writes (w1: last cycle's, w2: the one before; neither reached the
        stage-3 read). The address matches are compared one stage early."""
        w1_v, w1_addr, w1_data = Signal(), Signal(self.bin_bits), Signal(self.count_width)
        w2_v, w2_addr, w2_data = Signal(), Signal(self.bin_bits), Signal(self.count_width)
        fwd1, fwd2 = Signal(), Signal()
        m.d.sync += [fwd1.eq(s5_v & (s5_addr == s4_addr)),
                     fwd2.eq(w1_v & (w1_addr == s4_addr))]
        base = Signal(self.count_width)
        with m.If(fwd1):
            m.d.comb += base.eq(w1_data)
        with m.Elif(fwd2):
            m.d.comb += base.eq(w2_data)
        with m.Else():
            m.d.comb += base.eq(s5_rd)
        bumped = Signal(self.count_width)
        inc = Signal(self.count_width + 1)
        # Saturating: base + 1 wraps to 0 only from all ones, which it then stays.
        m.d.comb += [inc.eq(base + 1),
                     bumped.eq(inc[:-1] | inc[-1].replicate(self.count_width))]
        with m.If(s5_v & inc[-1]):
            m.d.sync += self.flags[3].eq(1)
        m.d.sync += [w1_v.eq(s5_v), w1_addr.eq(s5_addr), w1_data.eq(bumped),
                     w2_v.eq(w1_v), w2_addr.eq(w1_addr), w2_data.eq(w1_data)]
        return SimpleNamespace(w1_v=w1_v, w2_v=w2_v, bumped=bumped)

    def _read_window(self, m):
        """The scalar read window (:data:`STAT_WORDS` on ``word``), a mux registered in
        two levels: eight words per group, then the group."""
        values = {
            "answered": self.answered, "missed": self.missed,
            "lat_min": self.lat_min, "lat_max": self.lat_max, "lat_sum": self.lat_sum,
            "lat_sumsq": self.lat_sumsq, "comp_min": self.comp_min,
            "comp_max": self.comp_max, "comp_sum": self.comp_sum,
            "underflow": self.underflow, "overflow": self.overflow, "drops": self.drops,
            "flags": self.flags,
        }
        words = {}
        for name, (first, n) in STAT_WORDS.items():
            if name not in values:
                continue            # reserved: the mux's default, 0
            for i in range(n):
                words[first + i] = values[name][32 * i:32 * (i + 1)]
        n_groups = (max(words) >> 3) + 1
        groups = [Signal(32, name=f"word_group{g}") for g in range(n_groups)]
        group_sel = Signal(2)
        m.d.sync += group_sel.eq(self.word_sel[3:])
        for g, reg in enumerate(groups):
            with m.Switch(self.word_sel[:3]):
                for k in range(8):
                    if 8 * g + k in words:
                        with m.Case(k):
                            m.d.sync += reg.eq(words[8 * g + k])
                with m.Default():
                    m.d.sync += reg.eq(0)
        with m.Switch(group_sel):
            for g, reg in enumerate(groups):
                with m.Case(g):
                    m.d.sync += self.word.eq(reg)
            with m.Default():
                m.d.sync += self.word.eq(0)


class StatAccumulators(wiring.Component):
    """Statistics of every latency channel behind two read windows, and heartbeat
    windows; the block :class:`~rtrig.gateware.top.GatewareTop` instantiates.

    All ports are in the ``sync`` domain.

    Members
    -------
    enable, clear : In(1)
    rec_a_valid, rec_b_valid : In(n_channels)
        Record strobes, bit ``n`` for channel ``n``.
    rec_a, rec_b : In(ArrayLayout(LatencyRecord, n_channels))
    bin_shift : In(5)
    bin_offset : In(32)
    stat_sel_we : In(1)
        Load the scalar window pointer from ``sel_data``
        (``channel * WORDS_PER_CHANNEL + word``).
    hist_sel_we : In(1)
        Load the histogram window pointer from ``sel_data`` (``channel * n_bins + bin``).
    sel_data : In(32)
    stat_rd, hist_rd : In(1)
        A read of the window happened: advance its pointer (the next value is ready
        three cycles later).
    stat_data, hist_data : Out(32)
    info : Out(32)
        Bits 0..7 log2(bins), 8..15 channels, 16..23 bits per bin.
    status : Out(32)
        Bit 0: a histogram clear sweep is running.
    drops : Out(32)
        Sum of the channels' ``drops``.
    hb_edge, running : In(1)
    hb_window : In(32)
    hb_last, hb_min, hb_max, hb_windows : Out(32)
    """

    def __init__(self, n_channels=2, n_bins=HIST_BINS,
                 count_width=COUNT_WIDTH):
        self.n_channels = n_channels
        self.n_bins = n_bins
        self.count_width = count_width
        super().__init__({
            "enable": In(1), "clear": In(1),
            "rec_a_valid": In(n_channels), "rec_b_valid": In(n_channels),
            "rec_a": In(data.ArrayLayout(LatencyRecord, n_channels)),
            "rec_b": In(data.ArrayLayout(LatencyRecord, n_channels)),
            "bin_shift": In(5), "bin_offset": In(32),
            "stat_sel_we": In(1), "hist_sel_we": In(1), "sel_data": In(32),
            "stat_rd": In(1), "hist_rd": In(1),
            "stat_data": Out(32), "hist_data": Out(32),
            "info": Out(32), "status": Out(32), "drops": Out(32),
            "hb_edge": In(1), "running": In(1), "hb_window": In(32),
            "hb_last": Out(32), "hb_min": Out(32, init=0xFFFF_FFFF), "hb_max": Out(32),
            "hb_windows": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.n_channels
        bin_bits = self.n_bins.bit_length() - 1
        ch_bits = max(1, (n - 1).bit_length())
        stat_ptr = Signal(5 + ch_bits)
        hist_ptr = Signal(bin_bits + ch_bits)
        with m.If(self.stat_sel_we):
            m.d.sync += stat_ptr.eq(self.sel_data)
        with m.Elif(self.stat_rd):
            m.d.sync += stat_ptr.eq(stat_ptr + 1)
        with m.If(self.hist_sel_we):
            m.d.sync += hist_ptr.eq(self.sel_data)
        with m.Elif(self.hist_rd):
            m.d.sync += hist_ptr.eq(hist_ptr + 1)

        busy = Signal()
        drops = Const(0, 32)
        chans = []
        for ch in range(n):
            cs = ChannelStats(self.n_bins, self.count_width)
            m.submodules[f"ch{ch}"] = cs
            chans.append(cs)
            # Each channel's word select is its own register next to its word mux (the
            # init value differs per channel only so that synthesis keeps the copies).
            word_sel = Signal(5, init=ch, name=f"word_sel{ch}")
            m.d.sync += word_sel.eq(stat_ptr[:5])
            m.d.comb += [
                cs.enable.eq(self.enable), cs.clear.eq(self.clear),
                cs.rec_a_valid.eq(self.rec_a_valid[ch]), cs.rec_a.eq(self.rec_a[ch]),
                cs.rec_b_valid.eq(self.rec_b_valid[ch]), cs.rec_b.eq(self.rec_b[ch]),
                cs.bin_shift.eq(self.bin_shift), cs.bin_offset.eq(self.bin_offset),
                cs.word_sel.eq(word_sel), cs.hist_addr.eq(hist_ptr[:bin_bits]),
            ]
            busy = busy | cs.busy
            drops = drops + cs.drops
        stat_ch = stat_ptr[5:]
        hist_ch = hist_ptr[bin_bits:]
        m.d.comb += [self.stat_data.eq(0), self.hist_data.eq(0)]
        for ch, cs in enumerate(chans):
            with m.If(stat_ch == ch):
                m.d.comb += self.stat_data.eq(cs.word)
            with m.If(hist_ch == ch):
                m.d.comb += self.hist_data.eq(cs.hist_data)
        m.d.comb += [
            self.info.eq(bin_bits | n << 8 | self.count_width << 16),
            self.status.eq(busy),
            self.drops.eq(drops),
        ]

        m.submodules.hb = hb = HeartbeatWindows()
        m.d.comb += [
            hb.clear.eq(self.clear), hb.edge.eq(self.hb_edge), hb.running.eq(self.running),
            hb.window.eq(self.hb_window),
            self.hb_last.eq(hb.last), self.hb_min.eq(hb.min), self.hb_max.eq(hb.max),
            self.hb_windows.eq(hb.windows),
        ]
        return m
