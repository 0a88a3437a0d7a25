# SPDX-License-Identifier: BSD-2-Clause
"""Draining a records-mode run: the latency, event and truth records taken from the link
into the capture file in blocks, until everything the rig produced is in or counted
lost (:func:`rtrig.host.procedures.measure.run_capture` runs it)."""

import time

from .rig import DRAIN_TICKS

__all__ = ["RecordDrain"]

#: Seconds between checks of the stimulus and the record counters while a capture runs
#: (one to three register reads: ~1 ms on the simulation twin, less on a rig).
_CHECK_S = 0.05
#: After the counters agree, the link must have been quiet this long (truth records,
#: which no counter counts, arrive by then) before the capture ends.
_QUIET_S = 0.1
#: Seconds between writes of the records received to the file (and at most
#: :data:`_FLUSH_RECORDS` records held in memory in between).
_FLUSH_S = 0.5
_FLUSH_RECORDS = 20_000


class RecordDrain:
    """The records of one run on their way from the rig to the capture file
    (``writer``, a :class:`~rtrig.capture.CaptureWriter`); ``on_block`` is told the
    latency records written after each block."""

    def __init__(self, rig, writer, on_block=None):
        self.rig, self.writer, self.on_block = rig, writer, on_block
        self.latency = 0
        self.events = 0

    def flush(self, notify=True):
        rig = self.rig
        lat = rig.take_latency()
        self.latency += len(lat)
        self.writer.array(b"LATR", lat)
        ev = rig.take_events()
        self.events += len(ev)
        self.writer.array(b"EVNT", ev)
        self.writer.array(b"TRTH", rig.take_truth())
        if notify and self.on_block is not None:
            self.on_block(self.latency)

    def drained(self, raw_events):
        """Has every record the rig produced reached the host (or been counted lost)?"""
        return self.rig.all_records_in(self.latency, self.events if raw_events else None)

    def collect(self, timeout_ticks, raw_events, bar):
        """Take records from the link into the file until the pulse train has ended,
        every window (``timeout_ticks`` after its pulse) has closed, every record is in
        (or counted lost) and the link has gone quiet; ``bar`` shows the records in."""
        rig = self.rig
        last_flush = time.monotonic()
        last_check = 0.0
        stim_done_at = None
        quiet_since = None
        edges_off = False
        while True:
            got = rig.receive(wait=0.05)
            t = time.monotonic()
            pending = rig.latency_pending()
            if t - last_flush > _FLUSH_S or pending > _FLUSH_RECORDS:
                self.flush()
                last_flush = t
                pending = 0
            bar.update(self.latency + pending)
            quiet_since = None if got else (quiet_since or t)
            if t - last_check <= _CHECK_S:
                continue
            last_check = t
            if stim_done_at is None:
                if not rig.running():
                    stim_done_at = rig.time()
                continue
            # Every window has closed once the rig's clock has passed the last pulse by the
            # timeout; then everything the rig produced must have arrived and the link gone
            # quiet (the twin may run slower than real time, so "quiet" is judged after the
            # counts agree).
            if rig.time() <= stim_done_at + timeout_ticks + DRAIN_TICKS:
                continue
            if raw_events and not edges_off:
                # A target that keeps toggling its markers (a tick traced on them) would
                # never let the event count settle: the run's raw events end with its
                # last window.
                rig.record_edges(0)
                edges_off = True
                continue
            if self.drained(raw_events):
                if quiet_since is not None and t - quiet_since > _QUIET_S:
                    return
            elif quiet_since is not None and t - quiet_since > 5.0:
                return          # the rest is lost: counted by loss_counters, not waited for
