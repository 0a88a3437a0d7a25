# SPDX-License-Identifier: BSD-2-Clause
"""Loss accounting: the loss counters a capture reports, and :class:`LossCounter`, which
finds the rig → host packets that did not arrive."""

import collections

__all__ = ["LINK_COUNTERS", "LossCounter"]

#: Every loss counter a capture reports (``final["link"]``), in the order shown:
#: key → (``link`` for the host link, ``rig`` for the rig's FIFOs; label; what a
#: nonzero count means). The CLI summary, its warnings and the report use this table.
LINK_COUNTERS = {
    "crc_errors": ("link", "CRC errors",
                   "packets damaged on the link: check the cable, its ground and the baud rate"),
    "lost_packets": ("link", "lost packets",
                     "rig packets whose content never arrived: dropped, damaged or malformed"),
    "lost_records": ("link", "lost latency records",
                     "of the lost packets: their pulses are missing from the capture"),
    "setup_lost": ("link", "packets lost before the CLEAR",
                   "responses lost in the set-up exchanges before the run's CLEAR (since "
                   "the link opened or the previous run's counters): retried, they carried "
                   "nothing of the capture; with lost packets, every packet the link lost"),
    "bad_payloads": ("link", "bad payloads",
                     "packets with a good CRC but a wrong length or type: their content is lost"),
    "duplicates": ("link", "duplicate packets", "packets that arrived twice: the copies were dropped"),
    "rx_errors": ("link", "rig RX errors",
                  "host → rig packets the rig rejected (RX_ERRORS): the link is noisy"),
    "overflows": ("rig", "FIFO overflows", "records the rig dropped because a FIFO was full"),
    "lat_overflow": ("rig", "latency record overflows",
                     "latency records dropped by the rig (LAT_OVERFLOW): lower the rate, record "
                     "fewer channels or use --mode statistics"),
    "evt_overflow": ("rig", "raw event overflows",
                     "raw events dropped by the rig (EVT_OVERFLOW): lower the rate or record "
                     "without --raw"),
    "truth_overflow": ("rig", "truth record overflows",
                       "model truth records dropped by the rig (TRUTH_OVERFLOW)"),
    "stat_drops": ("rig", "statistics drops",
                   "records the on-chip statistics did not accumulate (STAT_DROPS)"),
    "unended": ("rig", "pulses never ended",
                "pulses whose response, or interval end, had not completed when the "
                "capture stopped: the rig records a pulse at its completion, so these "
                "have no record (docs/protocol.md)"),
}

_U32 = 0xFFFF_FFFF


class LossCounter:
    """Counts the rig → host packets that did not arrive, from what the packets carry.

    A gap in the 8-bit sequence numbers gives the number of packets lost there only
    modulo 256; a latency record's 32-bit pulse index gives the number of records of
    its channel missing since that channel's previous record exactly, whatever the
    gap. ``missing_records`` counts latency records missing by pulse index: lost on the
    link, and also any the rig's full FIFO dropped (only its ``LAT_OVERFLOW`` register
    tells those apart). Each missing record is matched with a packet of a sequence gap
    in its channel's window; when the gaps there hold fewer packets than are missing,
    one of them was longer by whole multiples of 256. The packets of the gaps that no
    record claims (responses, events, truth records) are ``lost_other``: exact for any
    gap that also lost latency records, modulo 256 for a gap of other packets alone.
    docs/protocol.md, "Sequence numbers and loss accounting".

    A packet received with a good CRC but an unusable payload counts like a lost one
    (its content is lost). Records of one channel may arrive out of pulse order by a
    few places (the rig's round-robin merger): a late record is taken back out of the
    missing ones; a record seen before is a duplicate and is dropped.
    """

    #: Pulses a record may arrive late and still be taken as not lost.
    LATE = 64
    #: Sequence gaps kept for matching with records (older ones stay counted as other).
    KEEP = 4096

    def __init__(self):
        self.clear()

    def clear(self, from_pulse_0=False):
        """Zero the counters. ``from_pulse_0``: the next records start a pulse train at
        pulse index 0 (after the rig's CLEAR), so records missing before the first one
        of a channel are counted too."""
        self.missing_records = 0
        self.duplicates = 0
        # Unclaimed packets of the gaps: seen in sequence numbers, or ([2]) implied by
        # records missing beyond them (a gap longer by multiples of 256).
        self._room = [0, 0, 0]
        self._pos = 0             # packets received (with a good CRC) since clear
        # [position of the packet after the gap, seen, implied, implied at first]
        self._gaps = collections.deque()
        self._chan = {}           # channel -> [next pulse, position, {late pulse: claim}]
        self._origin = 0 if from_pulse_0 else None
        #: Latency records received per channel (duplicates not counted).
        self.received = collections.Counter()

    @property
    def lost_other(self):
        """Packets lost in gaps that no missing latency record accounts for."""
        return self._room[1] + self._room[2]

    @property
    def lost_other_seen(self):
        """:attr:`lost_other` without the packets of gaps found longer than their
        sequence numbers said: the figure to use when the rig dropped records itself
        (a record missing for that reason also makes a gap look longer)."""
        return self._room[1]

    @property
    def lost_packets(self):
        return self.missing_records + self.lost_other

    def is_duplicate(self, chan, pulse):
        """Has a record of ``chan`` for ``pulse`` already arrived?"""
        c = self._chan.get(chan)
        if c is None or (pulse - c[0]) & _U32 < 1 << 31:
            return False
        return pulse not in c[2]

    def packet(self, gap, bad=False):
        """One packet received, ``gap`` packets (modulo 256) after the previous one;
        ``bad``: its payload is unusable (counted like a lost packet)."""
        self._pos += 1
        if gap or bad:
            self._add([self._pos, gap + bad, 0, 0], 1, gap + bad)

    def record(self, chan, pulse):
        """A latency record of ``chan`` for ``pulse`` arrived (after :meth:`packet`)."""
        self.received[chan] += 1
        c = self._chan.get(chan)
        if c is None:
            if self._origin is None:        # no known start: this record is the first
                self._chan[chan] = [(pulse + 1) & _U32, self._pos, {}]
                return
            c = self._chan[chan] = [0, self._origin, {}]
        if pulse in c[2]:                   # late, not lost: give its packet back
            gap, kind = c[2].pop(pulse)
            self.missing_records -= 1
            gap[kind] += 1
            self._room[kind] += 1
            if kind == 2 and gap[2] == gap[3]:
                # nothing left claims the packets this gap was found longer by: it was not
                self._room[2] -= gap[2]
                gap[2] = gap[3] = 0
            return
        self._missing(c, pulse)
        c[0], c[1] = (pulse + 1) & _U32, self._pos
        for p in [p for p in c[2] if (pulse - p) & _U32 > self.LATE]:
            del c[2][p]

    def end(self, channels, pulses):
        """The pulse train is over: ``pulses`` pulses, a record each on ``channels``.
        Counts the records missing after the last one received of each channel."""
        for chan in channels:
            c = self._chan.get(chan)
            if c is None:
                if self._origin is None:
                    continue
                c = self._chan[chan] = [0, self._origin, {}]
            if (pulses - c[0]) & _U32 < 1 << 31:
                self._missing(c, pulses)
                c[0], c[1] = pulses & _U32, self._pos

    def tail(self, channels, pulses):
        """Records of ``channels`` that :meth:`end` would count missing after the last
        one received of each, for a train of ``pulses`` pulses."""
        n = 0
        for chan in channels:
            c = self._chan.get(chan)
            if c is None:
                n += pulses if self._origin is not None else 0
            elif (pulses - c[0]) & _U32 < 1 << 31:
                n += (pulses - c[0]) & _U32
        return n

    def _add(self, gap, kind, n):
        self._gaps.append(gap)
        self._room[kind] += n
        while len(self._gaps) > self.KEEP or (self._gaps and not any(self._gaps[0][1:3])):
            self._gaps.popleft()

    def _missing(self, c, pulse):
        """Records ``c[0]`` .. ``pulse - 1`` of a channel are missing: claim packets of
        the gaps since its previous record, in order, those seen before those implied."""
        n = (pulse - c[0]) & _U32
        if not n:
            return
        self.missing_records += n
        window = []
        for gap in reversed(self._gaps):
            if gap[0] <= c[1]:
                break
            window.append(gap)
        window.reverse()
        total = sum(g[1] + g[2] for g in window)
        if total < n:
            # The gaps hold fewer packets than are missing: the last one was longer, by
            # whole multiples of 256 (packets of other kinds in it are then counted too).
            extra = (n - total + 255) // 256 * 256
            if window and window[-1][0] == self._pos:
                window[-1][2] += extra
                window[-1][3] += extra
                self._room[2] += extra
            else:
                window.append([self._pos, 0, extra, extra])
                self._add(window[-1], 2, extra)
        left, claims = n, []
        for gap in window:
            for kind in (1, 2):
                take = min(gap[kind], left)
                gap[kind] -= take
                self._room[kind] -= take
                left -= take
                claims += [(gap, kind)] * min(take, self.LATE)
        for i, claim in enumerate(claims[-self.LATE:]):
            c[2][(pulse - min(n, self.LATE) + i) & _U32] = claim
