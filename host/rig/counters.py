# SPDX-License-Identifier: BSD-2-Clause
"""Reading a run's counters: heartbeat, rejected packets, and every loss counter of a
run from the rig's registers and the host's link (a part of
:class:`~rtrig.host.rig.rig.Rig`)."""

from ...protocol import Reg

__all__ = ["CounterReads"]


class CounterReads:
    """The counters' operations of :class:`~rtrig.host.rig.rig.Rig` (which provides
    ``link`` and ``pulses_issued``)."""

    def heartbeat_edges(self):
        """Heartbeat edges since the last clear (``HB_COUNT``)."""
        return self.link.read1(Reg.HB_COUNT)

    def rx_errors(self):
        """Host → rig packets the rig rejected since the last clear (``RX_ERRORS``)."""
        return self.link.read1(Reg.RX_ERRORS)

    def heartbeat(self):
        """The heartbeat counters: ``edges`` (``HB_COUNT``) and the per-window ones."""
        r = self.link.read1
        return {"edges": r(Reg.HB_COUNT), "last": r(Reg.HB_LAST), "min": r(Reg.HB_MIN),
                "max": r(Reg.HB_MAX), "windows": r(Reg.HB_WINDOWS)}

    def loss_counters(self, plan):
        """Every loss counter of a records-mode run (``final["link"]``, the keys of
        :data:`rtrig.host.rig.loss.LINK_COUNTERS`) and the pulses issued, from the rig's
        registers and the host's link; ``plan``: the run's
        :class:`~rtrig.channels.ChannelPlan`.

        Latency records are counted exactly by their pulse index (every pulse gets one
        record per channel, so those missing after the last one received count too);
        those the rig's full FIFO dropped are its overflows, not link losses (and then a
        gap that looks longer than its sequence numbers say may be such drops).

        ``unended``: pulses the rig made no record of, because their response (or an
        interval's end, or the completion after it) had not come when the run
        stopped: a record is made at its completion. They are the pulses issued on the
        one-record-per-pulse channels less the records the rig produced
        (``LAT_RECORDS``) for them, not link losses."""
        link = self.link
        lat_ovf, evt_ovf = link.read1(Reg.LAT_OVERFLOW), link.read1(Reg.EVT_OVERFLOW)
        truth_ovf = link.read1(Reg.TRUTH_OVERFLOW)
        rx_errors = link.read1(Reg.RX_ERRORS)
        produced = link.read1(Reg.LAT_RECORDS)
        issued = self.pulses_issued()
        per_pulse = plan.pulse_numbers
        # An interval channel that does not start on STIM0 has a record per start edge,
        # not per pulse: its tail is not known from the pulses issued, and its records
        # (at least those received) are part of LAT_RECORDS.
        others = [c.number for c in plan if c.number not in per_pulse]
        got_others = sum(link.received_of(n) for n in others)
        unended = max(issued * len(per_pulse) - (produced - got_others), 0)
        if not unended:
            link.loss.end(per_pulse, issued)
            lost_records = max(link.missing_records - lat_ovf, 0)
            other = link.loss.lost_other_seen if lat_ovf else link.loss.lost_other
        else:
            # Of the records missing after the last one received of each channel, those
            # the rig never made are not lost on the link; the rest are, and their
            # packets are the unclaimed gap that the replies to these reads show after
            # them (so they are not counted twice).
            lost_tail = max(link.loss.tail(per_pulse, issued) - unended, 0)
            lost_records = max(link.missing_records + lost_tail - lat_ovf, 0)
            other = link.loss.lost_other_seen if lat_ovf else link.loss.lost_other
            other = max(other - lost_tail, 0)
        link.reported()     # this run's losses are counted: the next run's start here
        return {
            "crc_errors": link.crc_errors,
            "lost_packets": lost_records + other,
            "lost_records": lost_records,
            "bad_payloads": link.bad_payloads,
            "duplicates": link.duplicates,
            "overflows": lat_ovf + evt_ovf + truth_ovf,
            "lat_overflow": lat_ovf,
            "evt_overflow": evt_ovf,
            "truth_overflow": truth_ovf,
            "rx_errors": rx_errors,
            "unended": unended,
            "setup_lost": link.setup_lost,
        }, issued

    def host_counters(self):
        """The host's own link counters since the last CLEAR: what is known of the
        losses when the rig no longer answers (``lost_records``: latency records
        missing by pulse index up to the last one received; the rig's counters, its
        overflows and ``rx_errors``, cannot be read then and are absent)."""
        link = self.link
        link.reported()
        return {"crc_errors": link.crc_errors, "lost_packets": link.lost_packets,
                "lost_records": link.missing_records, "bad_payloads": link.bad_payloads,
                "duplicates": link.duplicates, "setup_lost": link.setup_lost}
