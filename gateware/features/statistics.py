# SPDX-License-Identifier: BSD-2-Clause
"""The on-chip statistics feature: per-channel figures, histograms and heartbeat
windows behind the ``STAT_*``, ``HIST_*`` and ``HB_*`` registers (docs/statistics.md)."""

from amaranth import Module
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ..feature import Feature
from ..latency_matcher import LatencyRecord
from ..stat_accumulators import StatAccumulators

__all__ = ["OnChipStatistics"]


class OnChipStatistics(Feature):
    """:class:`~rtrig.gateware.stat_accumulators.StatAccumulators` behind its registers.

    With ``STAT_CTRL`` bit 0 set it accumulates the records of the latency matchers
    (:class:`~rtrig.gateware.features.latency_records.LatencyRecords` runs them then even with
    the LATENCY stream off); ``CLEAR`` zeroes it. The heartbeat windows count HEARTBEAT
    edges in windows of ``HB_WINDOW`` ticks while the stimulus runs.

    Parameters
    ----------
    step : int
        Ticks per clock cycle (``HB_WINDOW`` is used in clock cycles).
    n_channels : int
        The latency channels accumulated (the rig's, ``STAT_INFO`` bits 8..15).

    Members
    -------
    rec_a_valid, rec_b_valid : In(n_channels)
        Per channel: the matchers' record strobes (``sync``).
    rec_a, rec_b : In(ArrayLayout(LatencyRecord, n_channels))
        Per channel: their records (ticks).
    clear : In(1)
        Zero every figure and sweep the histograms to zero.
    hb_edge : In(1)
        A HEARTBEAT edge this cycle.
    running : In(1)
        The stimulus runs (windows count only then).
    stat_on : Out(1)
        ``STAT_CTRL`` bit 0: accumulate (for :class:`LatencyRecords`).
    regs : Out(Signature)
        ``STAT_CTRL`` .. ``HIST_DATA`` and ``HB_WINDOW`` .. ``HB_WINDOWS``.
    """

    def __init__(self, step=1, n_channels=2):
        self.shift = step.bit_length() - 1
        self.n_channels = ch = n_channels
        super().__init__({
            "rec_a_valid": In(ch), "rec_b_valid": In(ch),
            "rec_a": In(data.ArrayLayout(LatencyRecord, ch)),
            "rec_b": In(data.ArrayLayout(LatencyRecord, ch)),
            "clear": In(1), "hb_edge": In(1), "running": In(1),
            "stat_on": Out(1),
        }, registers=("STAT_CTRL", "STAT_BIN_SHIFT", "STAT_BIN_OFFSET", "STAT_INFO",
                      "STAT_STATUS", "STAT_DROPS", "STAT_SEL", "STAT_DATA", "HIST_SEL",
                      "HIST_DATA", "HB_WINDOW", "HB_LAST", "HB_MIN", "HB_MAX", "HB_WINDOWS"),
            read_strobes=("STAT_DATA", "HIST_DATA"))

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        m.submodules.stats = stats = StatAccumulators(n_channels=self.n_channels)
        m.d.comb += [
            self.stat_on.eq(regs.STAT_CTRL[0]),
            stats.rec_a_valid.eq(self.rec_a_valid),
            stats.rec_a.eq(self.rec_a),
            stats.rec_b_valid.eq(self.rec_b_valid),
            stats.rec_b.eq(self.rec_b),
            stats.enable.eq(regs.STAT_CTRL[0]),
            stats.clear.eq(self.clear),
            stats.bin_shift.eq(regs.STAT_BIN_SHIFT),
            stats.bin_offset.eq(regs.STAT_BIN_OFFSET),
            stats.stat_sel_we.eq(regs.STAT_SEL),
            stats.hist_sel_we.eq(regs.HIST_SEL),
            stats.sel_data.eq(regs.w_value),
            stats.stat_rd.eq(regs.STAT_DATA_read),
            stats.hist_rd.eq(regs.HIST_DATA_read),
            regs.STAT_INFO.eq(stats.info),
            regs.STAT_STATUS.eq(stats.status),
            regs.STAT_DROPS.eq(stats.drops),
            regs.STAT_DATA.eq(stats.stat_data),
            regs.HIST_DATA.eq(stats.hist_data),
            stats.hb_edge.eq(self.hb_edge),
            stats.running.eq(self.running),
            stats.hb_window.eq(regs.HB_WINDOW >> self.shift),
            regs.HB_LAST.eq(stats.hb_last),
            regs.HB_MIN.eq(stats.hb_min),
            regs.HB_MAX.eq(stats.hb_max),
            regs.HB_WINDOWS.eq(stats.hb_windows),
        ]
        return m
