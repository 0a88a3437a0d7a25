# SPDX-License-Identifier: BSD-2-Clause
"""On-chip statistics mode: accumulate in the rig, read once at the end (docs/statistics.md).

:func:`run_stats_capture` programs the stimulus and target exactly like
:func:`rtrig.host.procedures.measure.run_capture`, runs the pulses with every link stream off
while the rig's :mod:`rtrig.gateware.stat_accumulators` block accumulates per channel
counts, extrema, sums and a latency histogram, then reads them and writes a capture file with
``meta["mode"] == "statistics"`` and a ``STAT`` chunk (the reads are the rig's:
:meth:`~rtrig.host.rig.statistics.StatisticsReads.read_statistics`). :func:`choose_mode` decides
between records and statistics mode from the link bandwidth.

Percentiles in statistics mode come from the histogram: each is the lower edge of the
bin holding the sample of that rank (clamped to the measured min/max), so the true
sample lies in ``[value, value + bin width)``; with a bin width of one tick they are
exact and equal records mode's. See ``docs/statistics.md``.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UsageError
from ...records import EVENT, LATENCY, TRUTH
from ..rig.rig import POLL_S
from ..rig.run import CaptureResult, CaptureRun, Progress, capture_meta
from ..rig.statistics import unended_pulses

__all__ = ["choose_mode", "run_stats_capture", "StatsCaptureResult", "program_statistics",
           "auto_bin_shift", "histogram_edges", "LATENCY_WIRE_BYTES", "EVENT_WIRE_BYTES",
           "TRUTH_WIRE_BYTES"]


def _wire_bytes(payload):
    """Bytes on the wire of a packet with ``payload`` bytes: type, seq, payload and
    CRC-16, each escaped by SLIP with probability 2/256 on average, then SLIP END."""
    return (payload + 4) * (1 + 2 / 256) + 1


#: Bytes on the wire per LATENCY packet.
LATENCY_WIRE_BYTES = _wire_bytes(LATENCY.payload_len)
#: Bytes on the wire per EVENT packet.
EVENT_WIRE_BYTES = _wire_bytes(EVENT.payload_len)
#: Bytes on the wire per TRUTH packet (the model target's truth records).
TRUTH_WIRE_BYTES = _wire_bytes(TRUTH.payload_len)
#: Fraction of the link that records mode may fill on average; the rest is margin for
#: register traffic, escapes beyond the average and stimulus jitter.
LINK_MARGIN = 0.85
#: Records the rig's latency FIFO absorbs in a burst (``Rig(fifo_depth=512)``).
LAT_FIFO_RECORDS = 512


def choose_mode(freq_hz, channels, baud, raw_events=False, count=None,
                fifo_records=LAT_FIFO_RECORDS, margin=LINK_MARGIN, truth=False,
                on_chip=True):
    """``"records"`` when the link carries every record at ``freq_hz``, else
    ``"statistics"``; always ``"records"`` on a rig without on-chip statistics
    (``on_chip`` False: the iCEBreaker's gateware).

    A LATENCY packet is :data:`LATENCY_WIRE_BYTES` on the wire at 10 bits per byte;
    with ``raw_events`` each pulse also sends its stimulus edges and two edges per
    response channel (:data:`EVENT_WIRE_BYTES` each); with ``truth`` one TRUTH packet
    per pulse and channel (:data:`TRUTH_WIRE_BYTES`). Records mode is chosen when that
    load is at most ``margin`` of the link, or — given ``count`` pulses — when the
    rig's latency FIFO absorbs what the link cannot carry during the run.
    Raw events are not recorded in statistics mode.
    """
    n_ch = len(channels)
    if n_ch == 0 or freq_hz <= 0 or not on_chip:
        return "records"
    per_pulse = n_ch * LATENCY_WIRE_BYTES
    if raw_events:
        per_pulse += (2 + 2 * n_ch) * EVENT_WIRE_BYTES
    if truth:
        per_pulse += n_ch * TRUTH_WIRE_BYTES
    capacity = baud / 10 * margin                       # bytes/s
    if freq_hz * per_pulse <= capacity:
        return "records"
    if count is not None:
        duration = count / freq_hz
        carried = capacity * duration / per_pulse        # pulses the link keeps up with
        if (count - carried) * n_ch <= fifo_records * margin:
            return "records"
    return "statistics"


def auto_bin_shift(max_latency_ticks, n_bins):
    """Smallest ``k`` with ``n_bins * 2**k > max_latency_ticks`` (no overflow possible)."""
    k = 0
    while (n_bins << k) <= max_latency_ticks and k < 31:
        k += 1
    return k


def histogram_edges(stat):
    """Lower bin edges in ticks of a ``STAT`` chunk's histogram (``n_bins + 1`` edges)."""
    w, off = stat["bin_width_ticks"], stat["bin_offset_ticks"]
    return [off + i * w for i in range(stat["n_bins"] + 1)]


def program_statistics(rig, settings, plan, bin_shift=None, bin_offset=0, hb_window=1e-3):
    """Set the rig up for ``settings`` (:meth:`Rig.prepare`, the channels of ``plan``)
    with the statistics' bins and heartbeat window, and start accumulating
    (``STAT_CTRL`` = 1); the stimulus is left stopped. Returns ``(regs, bin_shift,
    window_ticks, n_bins, stat_info)``; see :func:`run_stats_capture` for the
    arguments."""
    regs = settings.ticks(rig.tick_hz, rig.stim_step)
    info = rig.statistics_info()
    n_bins = info["n_bins"]
    if bin_shift is None:
        bin_shift = auto_bin_shift(regs["timeout"], n_bins)
    if not 0 <= bin_shift <= 31:
        raise UsageError(f"bin shift must be 0..31, got {bin_shift}")
    if not 0 <= bin_offset < 2**32:
        raise UsageError(f"bin offset must be 0..2^32-1 ticks, got {bin_offset}")
    window = round(hb_window * rig.tick_hz) if hb_window else 0
    rig.prepare(settings, regs, plan, statistics=True, EDGE_EN=0, STAT_BIN_SHIFT=bin_shift,
                STAT_BIN_OFFSET=bin_offset, HB_WINDOW=window)
    rig.start_statistics()
    return regs, bin_shift, window, n_bins, info


@dataclass
class StatsCaptureResult(CaptureResult):
    """A :class:`CaptureResult` of a statistics-mode capture; ``stats`` is the STAT
    chunk (raw figures in ticks, histograms, heartbeat windows)."""
    stats: dict = field(default_factory=dict)

    def to_json(self):
        out = super().to_json()
        st = self.stats
        tick_ns = 1e9 / st["tick_hz"]
        out["histogram"] = {
            "bin_width_ns": st["bin_width_ticks"] * tick_ns,
            "offset_ns": st["bin_offset_ticks"] * tick_ns,
            "bins": st["n_bins"],
            "percentile_resolution_ns": st["bin_width_ticks"] * tick_ns,
        }
        out["heartbeat"] = st["heartbeat"]
        return out


def run_stats_capture(rig, settings, path, bin_shift=None, progress=True,
                      bin_offset=0, hb_window=1e-3, all_bins=False):
    """Run one capture in on-chip statistics mode into ``path``.

    ``bin_shift``: bin width ``2**bin_shift`` ticks; default: the smallest width whose
    bins cover every latency the matcher can report (up to the timeout), so nothing
    overflows. ``bin_offset``: ticks below which latencies count as underflow.
    ``hb_window``: heartbeat window in s (0 = off). Returns a
    :class:`StatsCaptureResult`; its ``summary`` has the keys of ``channel_stats``.

    On KeyboardInterrupt or a link failure the stimulus is stopped, whatever has been
    accumulated is read (when the link still answers) and written, the file is closed
    with status ``interrupted``/``link lost`` and the exception propagates.
    """
    plan = settings.plan
    regs, bin_shift, window, n_bins, info = program_statistics(
        rig, settings, plan, bin_shift, bin_offset, hb_window)
    count = regs["count"]

    meta = capture_meta(rig, settings, regs, "statistics", plan)
    meta["statistics"] = {"bin_shift": bin_shift, "bin_width_ticks": 1 << bin_shift,
                          "bin_offset_ticks": bin_offset, "n_bins": n_bins,
                          "hb_window_ticks": window}
    bar = Progress(count, f"statistics {settings.target} @ {settings.freq:g} Hz", progress)

    def collect():
        rig.stop_statistics()               # freeze (the matchers stop with it)
        chans = rig.read_statistics(plan, bin_shift, bin_offset, all_bins)
        hb = {"window_ticks": window, **rig.heartbeat()}
        if hb["windows"] == 0:
            hb["min"] = None
        return {"tick_hz": rig.tick_hz, "bin_shift": bin_shift,
                "bin_width_ticks": 1 << bin_shift, "bin_offset_ticks": bin_offset,
                "n_bins": n_bins, "bin_count_bits": info["count_bits"], "channels": chans,
                "heartbeat": hb, "drops": rig.statistics_drops()}

    def salvage(status):
        out = {"link": rig.host_counters()}
        try:
            run.writer.json(b"STAT", collect())
            out["link"]["rx_errors"] = rig.rx_errors()
        except Exception:
            pass
        return out

    with CaptureRun(rig, path, meta, bar, salvage) as run:
        rig.run(stim1=regs.get("stim1_offset") is not None)
        while True:
            time.sleep(POLL_S)
            bar.update(rig.pulses_issued())
            if not rig.running():
                break
        bar.update(count, force=True)
        rig.wait_windows_closed(regs)
        pulses_issued = rig.pulses_issued()
        rig.await_verdicts(plan, pulses_issued)
        stat = collect()
        bar.done()
        run.writer.json(b"STAT", stat)
        # Host counters since the CLEAR of program_statistics (Rig.host_counters), the rig's.
        counters = {**rig.host_counters(), "overflows": stat["drops"],
                    "stat_drops": stat["drops"], "rx_errors": rig.rx_errors(),
                    "unended": unended_pulses(stat, plan, pulses_issued)}
        accounted = sum(c["answered"] + c["missed"] for c in stat["channels"].values())
        expected = count * len(plan)
        complete = accounted >= expected and all(c["consistent"]
                                                 for c in stat["channels"].values())
        run.finish({"status": "complete" if complete else "incomplete",
                    "records": accounted, "expected_records": expected,
                    "pulses_issued": pulses_issued,
                    "heartbeat_edges": stat["heartbeat"]["edges"], "link": counters})
    # (analysis imports scipy: a sweep's steps, which program the statistics only, do
    # without it)
    from ..analysis import stats_summary
    return StatsCaptureResult(Path(path), stats_summary(stat, rig.tick_hz), counters, meta,
                              run.final, stats=stat)

