# SPDX-License-Identifier: BSD-2-Clause
"""Reading the on-chip statistics: their shape, a channel's figures and its histogram,
through the statistics' auto-incrementing register windows (a part of
:class:`~rtrig.host.rig.rig.Rig`)."""

from ...errors import LinkError, UsageError
from ...protocol import Reg

__all__ = ["StatisticsReads", "HIST_CHUNK"]

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
