# SPDX-License-Identifier: BSD-2-Clause
"""Reading the on-chip statistics: their shape, a channel's figures and its histogram,
through the statistics' auto-incrementing register windows (a part of
:class:`~rtrig.host.rig.rig.Rig`)."""

import time

from ...errors import LinkError, UsageError
from ...protocol import Reg

__all__ = ["StatisticsReads", "HIST_CHUNK", "unended_pulses"]

#: Words read per request from the statistics' windows: a request must finish within
#: the link timeout, also on a busy machine running the simulation twin (~190
#: responses/s at 0.8 M cycles/s).
HIST_CHUNK = 32


class StatisticsReads:
    """The on-chip statistics' operations of :class:`~rtrig.host.rig.rig.Rig` (which
    provides ``link``)."""

    def statistics_info(self):
        """The on-chip statistics' shape (``STAT_INFO``): ``n_bins`` per histogram,
        ``n_channels``, ``count_bits`` per bin; a one-line :class:`UsageError` on a rig
        without them."""
        info = self.link.read1(Reg.STAT_INFO)
        if info == 0:
            raise UsageError("this rig's gateware has no on-chip statistics",
                             hint="rebuild the gateware, or use --mode records")
        return {"n_bins": 1 << (info & 0xFF), "n_channels": (info >> 8) & 0xFF,
                "count_bits": (info >> 16) & 0xFF}

    def read_channel_stats(self, number):
        """Every figure of channel ``number`` (the ``STAT_WORDS`` of
        :mod:`rtrig.gateware.stat_accumulators`, ticks and counts)."""
        from ...gateware.stat_accumulators import N_STAT_WORDS, STAT_WORDS, WORDS_PER_CHANNEL
        words = self._read_window(Reg.STAT_SEL, Reg.STAT_DATA, number * WORDS_PER_CHANNEL,
                                  N_STAT_WORDS)
        return {name: sum(int(words[first + i]) << (32 * i) for i in range(n))
                for name, (first, n) in STAT_WORDS.items()}

    def read_stat_counts(self, number, names=("answered", "missed")):
        """Only the figures ``names`` of channel ``number``: the words from the first to
        the last of them, in one request. Safe while the statistics accumulate (each
        value is one snapshot of a counter below 2**32)."""
        from ...gateware.stat_accumulators import STAT_WORDS, WORDS_PER_CHANNEL
        first = min(STAT_WORDS[n][0] for n in names)
        last = max(STAT_WORDS[n][0] + STAT_WORDS[n][1] for n in names)
        words = [0] * first + self._read_window(Reg.STAT_SEL, Reg.STAT_DATA,
                                                number * WORDS_PER_CHANNEL + first,
                                                last - first)
        return {n: sum(int(words[STAT_WORDS[n][0] + i]) << (32 * i)
                       for i in range(STAT_WORDS[n][1])) for n in names}

    def read_histogram(self, number, n_bins, first, count):
        """``count`` bins of channel ``number``'s histogram (``n_bins`` bins), from bin
        ``first``."""
        return self._read_window(Reg.HIST_SEL, Reg.HIST_DATA, number * n_bins + first,
                                 count)

    def read_statistics(self, plan, bin_shift=0, bin_offset=0, all_bins=False):
        """The statistics of the channels of ``plan`` (a
        :class:`~rtrig.channels.ChannelPlan`): ``{name: figures}``, figures being the
        ``STAT_WORDS`` values (ticks, :mod:`rtrig.gateware.stat_accumulators`) plus
        ``histogram`` (a list of ``n_bins`` counts), ``bins_read`` ``[first, last]`` and
        ``consistent`` (the bins, underflow and overflow add up to ``answered``).

        Only the bins between the measured min and max latency are read (the others are
        zero since the last CLEAR), unless ``all_bins``; ``bin_shift`` and
        ``bin_offset`` are the ones the statistics were programmed with. Read with
        accumulation stopped (``STAT_CTRL`` = 0) for a consistent snapshot."""
        n_bins = self.statistics_info()["n_bins"]
        out = {}
        for ch in plan:
            fig = self.read_channel_stats(ch.number)
            lo, hi = 0, n_bins - 1
            if not all_bins:
                lo, hi = _bins_of(fig, bin_shift, bin_offset, n_bins)
            hist = [0] * n_bins
            if hi >= lo:
                hist[lo:hi + 1] = self.read_histogram(ch.number, n_bins, lo, hi - lo + 1)
            fig["histogram"] = hist
            fig["bins_read"] = [lo, hi]
            fig["consistent"] = (sum(hist) + fig["underflow"] + fig["overflow"]
                                 == fig["answered"])
            out[ch.name] = fig
        return out

    def await_verdicts(self, plan, pulses_issued, timeout=2.0):
        """Wait (up to ``timeout`` s) until each channel of ``plan`` accounts for every
        pulse issued: answered, missed or dropped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            words = {c.name: self.read_channel_stats(c.number) for c in plan}
            if all(w["answered"] + w["missed"] + w["drops"] >= pulses_issued
                   for w in words.values()):
                return
            time.sleep(0.1)

    def statistics_drops(self):
        """Records the on-chip statistics did not accumulate (``STAT_DROPS``)."""
        return self.link.read1(Reg.STAT_DROPS)

    def _read_window(self, sel_reg, data_reg, start, n, chunk=HIST_CHUNK):
        """Read ``n`` words of an auto-incrementing window from ``start``.

        The window's pointer moves with every read, so a retried request would return
        shifted data: requests go out without the link's own retries and every attempt
        sets the pointer first."""
        link = self.link
        out = []
        saved = link.retries
        link.retries = 0
        try:
            while len(out) < n:
                c = min(chunk, n - len(out))
                for attempt in range(3):
                    try:
                        link.write(sel_reg, start + len(out))
                        vals = link.read(data_reg, count=c)
                        if len(vals) == c:
                            break
                    except LinkError:
                        if attempt == 2:
                            raise
                else:
                    raise LinkError(f"short read of register 0x{int(data_reg):03x}")
                out += vals
        finally:
            link.retries = saved
        return out


def _bins_of(fig, bin_shift, bin_offset, n_bins):
    """The first and last bin a channel's figures ``fig`` can have counts in (from its
    min and max latency); ``(0, -1)`` when it answered no pulse."""
    if fig["answered"] == 0:
        return 0, -1

    def bin_of(v, below):
        return below if v < bin_offset else min((v - bin_offset) >> bin_shift, n_bins - 1)
    return bin_of(fig["lat_min"], 0), bin_of(fig["lat_max"], -1)


def unended_pulses(stat, plan, pulses_issued):
    """Pulses of ``plan``'s one-record-per-pulse channels that got no verdict in the
    statistics ``stat`` (a STAT chunk): their response (or interval end, or its
    completion) had not come when the run stopped
    (:meth:`rtrig.host.rig.rig.Rig.loss_counters`)."""
    per_pulse = set(plan.pulse_numbers)
    figs = (stat["channels"][ch.name] for ch in plan if ch.number in per_pulse)
    return sum(max(pulses_issued - c["answered"] - c["missed"] - c.get("drops", 0), 0)
               for c in figs)
