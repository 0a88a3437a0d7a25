# SPDX-License-Identifier: BSD-2-Clause
"""What a closed-loop tool would have said: a capture's records subsampled as a tool
with one pulse in flight (latmon style) would have sampled the same target.

The rig is open-loop: it fires on its own schedule whatever the target does. A
closed-loop tool sends its next pulse only once the previous one was answered, or
after a timeout, so during a slow stretch it sends few pulses and under-samples
exactly the bad periods ("coordinated omission"). :func:`closed_loop` emulates such a
tool on a capture, per channel independently (docs/report.md, "What a closed-loop
tool would have said"):

* its first pulse is the channel's first record;
* each next one is the first record whose ``stim_t`` is at or after the previous
  chosen pulse's *release*: its ``stim_t`` + its latency when it was answered within
  the timeout, else its ``stim_t`` + the timeout;
* a chosen pulse that was missed, or answered later than the timeout, is one of the
  tool's timeouts: it is counted, and its latency is not among the tool's samples.

The emulation keeps the open-loop target's state (its load from the rig's pulses):
it shows the sampling bias only, not how a lighter stimulus would have changed the
target.

Records are read whole (a loaded capture) or a block at a time (a scanned one,
:func:`rtrig.capture.scan`), so memory does not grow with the capture: the chain of
chosen pulses is followed per block with numpy (one Python step per *jump*, where
the next chosen pulse is not the next record), and the latencies are kept as value
counts.
"""

import numpy as np

from ..capture import CaptureChunks, load, scan
from .analysis import PERCENTILES, channel_stats_from_counts, missed_mask, percentile_ranks

__all__ = ["DEFAULT_TIMEOUT_S", "NOT_AVAILABLE_STATISTICS", "closed_loop",
           "closed_loop_of_file", "chosen", "channel_closed_loop"]

#: The closed-loop tool's timeout unless a caller says otherwise (1 ms).
DEFAULT_TIMEOUT_S = 1e-3
#: The reason given for a capture without per-pulse records.
NOT_AVAILABLE_STATISTICS = "not available: statistics-mode capture has no per-pulse records"
#: The latency figures given for the tool and the open-loop capture (analysis keys).
FIGURES = ("min_ns", "p50_ns", "p99_ns", "max_ns", "mean_ns")


def _release(stim_t, latency, answered, timeout_ticks):
    """When the tool may send its next pulse after each record (ticks, int64)."""
    t = stim_t.astype(np.int64)
    ok = answered & (latency.astype(np.int64) <= timeout_ticks)
    return np.where(ok, t + latency.astype(np.int64), t + timeout_ticks)


def _chain(stim_t, release, after):
    """The records of one block the tool sends a pulse on, and the release after the
    block's last chosen one.

    ``stim_t`` ascending (int64), ``release`` per record; ``after``: the earliest
    ``stim_t`` of the tool's next pulse (None: the first record is its first pulse).
    Returns ``(chosen, after)``, ``chosen`` a boolean mask.
    """
    n = len(stim_t)
    chosen = np.zeros(n, dtype=bool)
    i = 0 if after is None else int(np.searchsorted(stim_t, after, side="left"))
    if i >= n:
        return chosen, after
    idx = np.arange(n)
    # the record the tool takes after each one: never the record itself
    nxt = np.maximum(np.searchsorted(stim_t, release, side="left"), idx + 1)
    # a run of records each followed by the next ends at a jump (or the block's end)
    jumps = np.flatnonzero((nxt != idx + 1) | (idx == n - 1))
    edges = np.zeros(n + 1, dtype=np.int64)
    while i < n:
        j = int(jumps[np.searchsorted(jumps, i)])
        edges[i] += 1
        edges[j + 1] -= 1
        last, i = j, int(nxt[j])
    chosen = np.cumsum(edges[:n]) > 0
    return chosen, max(int(release[last]), int(stim_t[last]) + 1)


def chosen(records, timeout_ticks):
    """Boolean mask of the records (one channel, in ``stim_t`` order) the closed-loop
    tool would have sent a pulse on (see the module doc)."""
    stim_t = records["stim_t"].astype(np.int64)
    if len(stim_t) and np.any(np.diff(stim_t) < 0):
        raise ValueError("records are not in stim_t order")
    answered = ~missed_mask(records)
    return _chain(stim_t, _release(stim_t, records["latency"], answered, timeout_ticks),
                  None)[0]


class _Counts:
    """Exact value counts of integer samples (ticks), added block by block."""

    def __init__(self):
        self.parts = []

    def add(self, ticks):
        if len(ticks):
            self.parts.append(np.unique(ticks.astype(np.int64), return_counts=True))

    def result(self):
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        values = np.concatenate([v for v, _ in self.parts])
        counts = np.concatenate([c for _, c in self.parts])
        uniq, inv = np.unique(values, return_inverse=True)
        self.parts = [(uniq, np.bincount(inv, weights=counts).astype(np.int64))]
        return self.parts[0]


class _Channel:
    """One channel's emulation, fed block by block in ``stim_t`` order."""

    def __init__(self, timeout_ticks):
        self.timeout = timeout_ticks
        self.after = None               # earliest stim_t of the tool's next pulse
        self.last_t = None
        self.in_order = True
        self.pulses = self.missed = self.sent = self.sent_missed = 0
        self.all = _Counts()            # answered latencies, every record
        self.sent_lat = _Counts()       # answered latencies of the tool's pulses

    def add(self, rec):
        if not len(rec):
            return
        stim_t = rec["stim_t"].astype(np.int64)
        if (self.last_t is not None and stim_t[0] < self.last_t) or np.any(np.diff(stim_t) < 0):
            self.in_order = False
            return
        self.last_t = int(stim_t[-1])
        answered = ~missed_mask(rec)
        pick, self.after = _chain(stim_t, _release(stim_t, rec["latency"], answered,
                                                   self.timeout), self.after)
        self.pulses += len(rec)
        self.missed += int(np.count_nonzero(~answered))
        self.sent += int(np.count_nonzero(pick))
        self.sent_missed += int(np.count_nonzero(pick & ~answered))
        self.all.add(rec["latency"][answered])
        self.sent_lat.add(rec["latency"][pick & answered])

    def figures(self, tick_hz):
        values, counts = self.all.result()
        sv, sc = self.sent_lat.result()
        empty = (np.zeros(0, np.int64),) * 2
        open_ = channel_stats_from_counts(self.pulses, (values, counts), empty, tick_hz)
        within = sv <= self.timeout
        tool = channel_stats_from_counts(self.sent, (sv[within], sc[within]), empty, tick_hz)
        samples = int(sc[within].sum())
        out = {"pulses": self.sent, "samples": samples, "timeouts": self.sent - samples,
               **{k: tool[k] for k in FIGURES},
               "open_loop": {"pulses": self.pulses, "answered": open_["answered"],
                             "missed": self.missed, **{k: open_[k] for k in FIGURES}}}
        for k in ("p50_ns", "p99_ns", "max_ns", "mean_ns"):
            a, b = tool[k], open_[k]
            out[f"{k[:-3]}_difference_ns"] = None if a is None or b is None else \
                round(a - b, 1)
        # slow pulses: answered at or above the open-loop p99 (ticks compared, not ns)
        p99 = open_["p99_ns"]
        if p99 is None:
            slow = sampled = 0
        else:
            threshold = values[np.searchsorted(np.cumsum(counts),
                                               _p99_rank(int(counts.sum())), side="right")]
            slow = int(counts[values >= threshold].sum())
            sampled = int(sc[sv >= threshold].sum())
        out.update({"slow_from_ns": p99, "slow_pulses": slow, "slow_sampled": sampled,
                    "slow_unsampled_fraction": (slow - sampled) / slow if slow else None})
        return out


def _p99_rank(n):
    """0-based rank of p99 among ``n`` sorted samples (inverted CDF, as analysis)."""
    return int(percentile_ranks(n)[list(PERCENTILES).index("p99")])


def _unavailable(meta):
    """Why a capture of ``META`` ``meta`` gets no closed-loop figures, or None."""
    meta = meta or {}
    if meta.get("mode") == "statistics":
        return NOT_AVAILABLE_STATISTICS
    if meta.get("kind") == "sweep":
        return "not available: a sweep capture holds one pulse train per step"
    if meta.get("mode") == "suite":
        return "not available: a suite capture's channels are its tests' intervals"
    return None


def _run(cap, timeout_ticks):
    """``{channel number: _Channel}`` over ``cap``'s records, or None when a scanned
    capture's channel is out of ``stim_t`` order."""
    chans = {}
    if isinstance(cap, CaptureChunks):
        blocks = cap.blocks(b"LATR")
    else:
        lat = cap.latency
        blocks = [lat[np.lexsort((lat["stim_t"], lat["channel"]))]] if len(lat) else []
    for block in blocks:
        ch = block["channel"]
        for c in np.unique(ch):
            st = chans.setdefault(int(c), _Channel(timeout_ticks))
            st.add(block[ch == c])
    if not all(st.in_order for st in chans.values()):
        return None
    return chans


def closed_loop(cap, timeout_s=DEFAULT_TIMEOUT_S):
    """The figures a closed-loop tool with ``timeout_s`` would have printed for the
    target of ``cap`` (loaded or scanned), beside the open-loop capture's.

    Returns a JSON-ready dict: ``available``; without records, ``reason``; else
    ``timeout_ns`` and ``channels``: per channel ``pulses`` (the tool's), ``samples``
    (answered within the timeout), ``timeouts``, ``min_ns`` … ``mean_ns``, the
    ``open_loop`` figures, ``p50/p99/max/mean_difference_ns`` (tool − open loop),
    and the slow pulses (answered at or above the open-loop p99): ``slow_from_ns``,
    ``slow_pulses``, ``slow_sampled`` (the tool sent a pulse on them) and
    ``slow_unsampled_fraction``.
    """
    try:
        timeout_s = float(timeout_s)
    except (TypeError, ValueError):
        raise ValueError(f"closed-loop timeout must be a duration in s, not {timeout_s!r}") \
            from None
    if not timeout_s > 0 or timeout_s == float("inf"):
        raise ValueError(f"closed-loop timeout must be above 0 s, not {timeout_s!r}")
    reason = _unavailable(cap.meta)
    if reason is not None:
        return {"available": False, "reason": reason}
    tick_hz = cap.tick_hz
    timeout_ticks = max(1, round(timeout_s * tick_hz))
    chans = _run(cap, timeout_ticks)
    if chans is None:                       # a hand-assembled file: load and sort it
        chans = _run(load(cap.path), timeout_ticks)
    if not chans:
        return {"available": False, "reason": "not available: the capture has no "
                                              "latency records"}
    return {"available": True, "timeout_ns": round(timeout_ticks * 1e9 / tick_hz, 1),
            "channels": {cap.channel_name(c): chans[c].figures(tick_hz)
                         for c in sorted(chans)}}


def closed_loop_of_file(path, meta, timeout_s=DEFAULT_TIMEOUT_S):
    """:func:`closed_loop` of the capture file at ``path`` whose ``META`` is ``meta``,
    read a block at a time (a statistics-mode capture is not opened)."""
    reason = _unavailable(meta)
    if reason is not None:
        return {"available": False, "reason": reason}
    return closed_loop(scan(path), timeout_s)


def channel_closed_loop(records, tick_hz, timeout_s=DEFAULT_TIMEOUT_S):
    """:func:`closed_loop`'s figures of one channel's records (in ``stim_t`` order)."""
    st = _Channel(max(1, round(float(timeout_s) * tick_hz)))
    st.add(records)
    if not st.in_order:
        raise ValueError("records are not in stim_t order")
    return st.figures(tick_hz)
