"""On-chip statistics mode: accumulate in the rig, read once at the end (DESIGN §3).

:func:`run_stats_capture` programs the stimulus and target exactly like
:func:`rtrig.host.measure.run_capture`, runs the pulses with every link stream off
while the rig's :mod:`rtrig.gateware.stats` block accumulates per channel counts,
extrema, sums and a latency histogram, then reads them and writes a capture file with
``meta["mode"] == "statistics"`` and a ``STAT`` chunk. :func:`choose_mode` decides
between records and statistics mode from the link bandwidth.

Percentiles in statistics mode come from the histogram: each is the lower edge of the
bin holding the sample of that rank (clamped to the measured min/max), so the true
sample lies in ``[value, value + bin width)``; with a bin width of one tick they are
exact and equal records mode's. See ``docs/statistics.md``.
"""

import contextlib
import datetime
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..capture import CaptureWriter
from ..gateware.stats import N_STAT_WORDS, STAT_WORDS, WORDS_PER_CHANNEL, StatFlags
from ..protocol import Reg, StimCtrl
from .analysis import PERCENTILES
from .errors import LinkError, UsageError
from .measure import (
    CHANNELS,
    DRAIN_TICKS,
    CaptureResult,
    _Progress,
    capture_meta,
    configure_target,
)

__all__ = ["choose_mode", "run_stats_capture", "StatsCaptureResult", "read_stats",
           "program_statistics", "read_counts",
           "stats_summary", "capture_meta", "auto_bin_shift", "histogram_edges",
           "LATENCY_WIRE_BYTES", "EVENT_WIRE_BYTES"]

#: Bytes on the wire per LATENCY packet: type, seq, 19 payload, CRC16, SLIP END, plus
#: the average SLIP escapes of 23 random bytes (2/256 each).
LATENCY_WIRE_BYTES = 24 + 23 * 2 / 256
#: Bytes on the wire per EVENT packet (7 payload bytes).
EVENT_WIRE_BYTES = 12 + 11 * 2 / 256
#: Fraction of the link that records mode may fill on average; the rest is margin for
#: register traffic, escapes beyond the average and stimulus jitter.
LINK_MARGIN = 0.85
#: Records the rig's latency FIFO absorbs in a burst (``Rig(fifo_depth=512)``).
LAT_FIFO_RECORDS = 512
#: Words read per request: a request must finish within the link timeout, also on a
#: busy machine running the simulation twin (~190 responses/s at 0.8 M cycles/s).
HIST_CHUNK = 32
#: Seconds between status polls while the stimulus runs: two register reads, ~0.2 ms
#: on a 3 Mbaud rig, so polling this often costs the link nothing and ends a short run
#: (a sweep step on the simulation twin) soon after its last pulse.
POLL_S = 0.02


def choose_mode(freq_hz, channels, baud, raw_events=False, count=None,
                fifo_records=LAT_FIFO_RECORDS, margin=LINK_MARGIN):
    """``"records"`` when the link carries every record at ``freq_hz``, else
    ``"statistics"``.

    A LATENCY packet is :data:`LATENCY_WIRE_BYTES` on the wire at 10 bits per byte;
    with ``raw_events`` each pulse also sends its stimulus edges and two edges per
    response channel (:data:`EVENT_WIRE_BYTES` each). Records mode is chosen when that
    load is at most ``margin`` of the link, or — given ``count`` pulses — when the
    rig's latency FIFO absorbs what the link cannot carry during the run.
    Raw events are not recorded in statistics mode.
    """
    n_ch = len(channels)
    if n_ch == 0 or freq_hz <= 0:
        return "records"
    per_pulse = n_ch * LATENCY_WIRE_BYTES
    if raw_events:
        per_pulse += (2 + 2 * n_ch) * EVENT_WIRE_BYTES
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


def _stat_info(link):
    info = link.read1(Reg.STAT_INFO)
    if info == 0:
        raise UsageError("this rig's gateware has no on-chip statistics",
                         hint="rebuild the gateware, or use --mode records")
    return {"n_bins": 1 << (info & 0xFF), "n_channels": (info >> 8) & 0xFF,
            "count_bits": (info >> 16) & 0xFF}


def _read_chunked(link, sel_reg, data_reg, start, n, chunk=HIST_CHUNK):
    """Read ``n`` words of an auto-incrementing window from ``start``.

    The window's pointer moves with every read, so a retried request would return
    shifted data: requests go out without the link's own retries and every attempt
    sets the pointer first."""
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


def _decode_words(words):
    out = {}
    for name, (first, n) in STAT_WORDS.items():
        out[name] = sum(int(words[first + i]) << (32 * i) for i in range(n))
    return out


def read_stats(link, channels=("isr",), bin_shift=0, bin_offset=0, all_bins=False):
    """Read the statistics of ``channels`` (names) from the rig.

    Returns ``{name: figures}``, figures being the :data:`STAT_WORDS` values (ticks)
    plus ``histogram`` (a list of ``n_bins`` counts) and ``bins_read`` ``[first, last]``.
    Only the bins between the measured min and max latency are read (the others are
    zero since the last CLEAR), unless ``all_bins``. Read with accumulation stopped
    (``STAT_CTRL`` = 0) for a consistent snapshot.
    """
    info = _stat_info(link)
    n_bins = info["n_bins"]
    out = {}
    for name in channels:
        ch = CHANNELS[name] if name in CHANNELS else int(name)
        words = _read_chunked(link, Reg.STAT_SEL, Reg.STAT_DATA, ch * WORDS_PER_CHANNEL,
                              N_STAT_WORDS)
        fig = _decode_words(words)
        hist = [0] * n_bins
        lo, hi = 0, n_bins - 1
        if not all_bins:
            if fig["answered"] == 0:
                lo, hi = 0, -1
            else:
                def bin_of(v, below):
                    return below if v < bin_offset else min((v - bin_offset) >> bin_shift,
                                                            n_bins - 1)
                lo, hi = bin_of(fig["lat_min"], 0), bin_of(fig["lat_max"], -1)
        if hi >= lo:
            hist[lo:hi + 1] = _read_chunked(link, Reg.HIST_SEL, Reg.HIST_DATA,
                                            ch * n_bins + lo, hi - lo + 1)
        fig["histogram"] = hist
        fig["bins_read"] = [lo, hi]
        fig["consistent"] = sum(hist) + fig["underflow"] + fig["overflow"] == fig["answered"]
        out[name] = fig
    return out


def program_statistics(session, settings, bin_shift=None, bin_offset=0, hb_window=1e-3):
    """Stop the stimulus, program target, stimulus and statistics for ``settings``,
    clear the counters and start accumulating (``STAT_CTRL`` = 1); the stimulus is
    left stopped. Returns ``(regs, bin_shift, window_ticks, n_bins, stat_info)``;
    see :func:`run_stats_capture` for the arguments."""
    link = session.link
    tick_hz = session.tick_hz
    regs = settings.ticks(tick_hz, session.stim_step)
    chan_mask = sum(1 << CHANNELS[c] for c in settings.channels)
    link.write(Reg.STIM_CTRL, 0)
    link.write(Reg.STREAM_EN, 0)
    link.write(Reg.STAT_CTRL, 0)
    info = _stat_info(link)
    n_bins = info["n_bins"]
    if bin_shift is None:
        bin_shift = auto_bin_shift(regs["timeout"], n_bins)
    if not 0 <= bin_shift <= 31:
        raise UsageError(f"bin shift must be 0..31, got {bin_shift}")
    if not 0 <= bin_offset < 2**32:
        raise UsageError(f"bin offset must be 0..2^32-1 ticks, got {bin_offset}")
    window = round(hb_window * tick_hz) if hb_window else 0
    configure_target(link, settings, regs)
    link.configure(
        STIM_PERIOD=regs["period"], STIM_HIGH=regs["high"], STIM_COUNT=regs["count"],
        STIM_JITTER=regs["jitter"], STIM_SEED=1, LAT_CH_EN=chan_mask,
        LAT_TIMEOUT=regs["timeout"], EDGE_EN=0, STIM1_OFFSET=regs["stim1_offset"] or 0,
        STAT_BIN_SHIFT=bin_shift, STAT_BIN_OFFSET=bin_offset, HB_WINDOW=window,
    )
    link.write(Reg.CLEAR, 1)
    link.write(Reg.STAT_CTRL, 1)
    for _ in range(100):
        if not link.read1(Reg.STAT_STATUS) & 1:
            break
    else:
        raise LinkError("the statistics histogram clear never finished")
    return regs, bin_shift, window, n_bins, info


def read_counts(link, channel, names=("answered", "missed")):
    """Read only the :data:`STAT_WORDS` ``names`` of ``channel`` (a name or number):
    the words from the first to the last of them, in one request. Safe while the
    statistics accumulate (each value is one snapshot of a counter below 2**32)."""
    ch = CHANNELS[channel] if channel in CHANNELS else int(channel)
    first = min(STAT_WORDS[n][0] for n in names)
    last = max(STAT_WORDS[n][0] + STAT_WORDS[n][1] for n in names)
    words = [0] * first + _read_chunked(link, Reg.STAT_SEL, Reg.STAT_DATA,
                                        ch * WORDS_PER_CHANNEL + first, last - first)
    return {n: sum(int(words[STAT_WORDS[n][0] + i]) << (32 * i)
                   for i in range(STAT_WORDS[n][1])) for n in names}


def _ns(ticks, tick_hz):
    return ticks * 1e9 / tick_hz


def _percentiles(fig, stat):
    """Percentile values in ticks from a channel's histogram (see the module doc)."""
    n = fig["answered"]
    w, off = stat["bin_width_ticks"], stat["bin_offset_ticks"]
    hist = fig["histogram"]
    out = {}
    for name, q in PERCENTILES.items():
        rank = max(math.ceil(n * q / 100), 1)          # 1-based rank, inverted CDF
        cum = fig["underflow"]
        if rank <= cum:
            value = fig["lat_min"]                      # below the offset: a lower bound
        else:
            value = None
            for i, c in enumerate(hist):
                cum += c
                if rank <= cum:
                    value = off + i * w
                    break
            if value is None:                           # in the overflow range
                value = off + len(hist) * w
        out[name] = min(max(value, fig["lat_min"]), fig["lat_max"])
    return out


def stats_summary(stat, tick_hz):
    """Per-channel summaries of a ``STAT`` chunk, with the keys of
    :func:`rtrig.host.analysis.channel_stats` (ns).

    Mean and standard deviation are exact (from the sums); percentiles have the
    resolution of one bin (see :func:`_percentiles`); completion time has min, max,
    mean and jitter only (no sum of squares, no histogram): its ``std`` and
    percentiles are None.
    """
    out = {}
    for name, fig in stat["channels"].items():
        n, missed = fig["answered"], fig["missed"]
        s = {"pulses": n + missed, "answered": n, "missed": missed,
             "missed_fraction": missed / (n + missed) if n + missed else 0.0}
        flags = StatFlags(fig["flags"])
        if n == 0:
            for k in ("min", "max", "mean", "std", *PERCENTILES, "jitter"):
                s[f"{k}_ns"] = None
        else:
            s["min_ns"] = int(round(_ns(fig["lat_min"], tick_hz)))
            s["max_ns"] = int(round(_ns(fig["lat_max"], tick_hz)))
            wrapped = flags & (StatFlags.LAT_SUM_WRAPPED | StatFlags.LAT_SUMSQ_WRAPPED)
            s["mean_ns"] = None if flags & StatFlags.LAT_SUM_WRAPPED else \
                round(_ns(fig["lat_sum"] / n, tick_hz), 1)
            if wrapped:
                s["std_ns"] = None
            else:
                var = (n * fig["lat_sumsq"] - fig["lat_sum"] ** 2) / (n * n)   # ticks²
                s["std_ns"] = round(_ns(math.sqrt(max(var, 0.0)), tick_hz), 1)
            for k, v in _percentiles(fig, stat).items():
                s[f"{k}_ns"] = int(round(_ns(v, tick_hz)))
            s["jitter_ns"] = s["max_ns"] - s["min_ns"]
        done = n - fig["incomplete"]
        keys = ("min", "max", "mean", "std", *PERCENTILES, "jitter")
        for k in keys:
            s[f"completion_{k}_ns"] = None
        if done > 0:
            s["completion_min_ns"] = int(round(_ns(fig["comp_min"], tick_hz)))
            s["completion_max_ns"] = int(round(_ns(fig["comp_max"], tick_hz)))
            if not flags & StatFlags.COMP_SUM_WRAPPED:
                s["completion_mean_ns"] = round(_ns(fig["comp_sum"] / done, tick_hz), 1)
            s["completion_jitter_ns"] = s["completion_max_ns"] - s["completion_min_ns"]
        out[name] = s
    return out


@dataclass
class StatsCaptureResult(CaptureResult):
    """A :class:`CaptureResult` of a statistics-mode capture; ``stats`` is the STAT
    chunk (raw figures in ticks, histograms, heartbeat windows)."""
    stats: dict = field(default_factory=dict)

    def to_json(self):
        out = super().to_json()
        st = self.stats
        out["histogram"] = {
            "bin_width_ns": _ns(st["bin_width_ticks"], st["tick_hz"]),
            "offset_ns": _ns(st["bin_offset_ticks"], st["tick_hz"]),
            "bins": st["n_bins"],
            "percentile_resolution_ns": _ns(st["bin_width_ticks"], st["tick_hz"]),
        }
        out["heartbeat"] = st["heartbeat"]
        return out


def run_stats_capture(session, settings, path, bin_shift=None, progress=True,
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
    link = session.link
    tick_hz = session.tick_hz
    regs, bin_shift, window, n_bins, info = program_statistics(
        session, settings, bin_shift, bin_offset, hb_window)
    count = regs["count"]

    meta = capture_meta(session, settings, regs, "statistics")
    meta["statistics"] = {"bin_shift": bin_shift, "bin_width_ticks": 1 << bin_shift,
                          "bin_offset_ticks": bin_offset, "n_bins": n_bins,
                          "hb_window_ticks": window}
    writer = CaptureWriter(path, meta)
    bar = _Progress(count, f"statistics {settings.target} @ {settings.freq:g} Hz", progress)
    status = "complete"

    def collect():
        link.write(Reg.STAT_CTRL, 0)        # freeze (the matchers stop with it)
        chans = read_stats(link, settings.channels, bin_shift, bin_offset, all_bins)
        hb = {"window_ticks": window, "edges": link.read1(Reg.HB_COUNT),
              "last": link.read1(Reg.HB_LAST), "min": link.read1(Reg.HB_MIN),
              "max": link.read1(Reg.HB_MAX), "windows": link.read1(Reg.HB_WINDOWS)}
        if hb["windows"] == 0:
            hb["min"] = None
        return {"tick_hz": tick_hz, "bin_shift": bin_shift, "bin_width_ticks": 1 << bin_shift,
                "bin_offset_ticks": bin_offset, "n_bins": n_bins,
                "bin_count_bits": info["count_bits"], "channels": chans, "heartbeat": hb,
                "drops": link.read1(Reg.STAT_DROPS)}

    try:
        link.write(Reg.STIM_CTRL, StimCtrl.RUN | (StimCtrl.STIM1_EN if regs.get("stim1_offset")
                                                  is not None else 0))
        while True:
            time.sleep(POLL_S)
            pulses = link.read1(Reg.STIM_PULSES)
            bar.update(pulses)
            if (link.read1(Reg.STIM_STATUS) & 1) == 0:
                break
        bar.update(count, force=True)
        # Every response window has closed once the rig's clock has passed the last
        # pulse by the timeout; then each channel's figures must account for every pulse.
        done_at = link.time()
        while link.time() <= done_at + regs["timeout"] + DRAIN_TICKS:
            time.sleep(0.02)
        pulses_issued = link.read1(Reg.STIM_PULSES)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            words = {c: _decode_words(_read_chunked(
                link, Reg.STAT_SEL, Reg.STAT_DATA, CHANNELS[c] * WORDS_PER_CHANNEL,
                N_STAT_WORDS)) for c in settings.channels}
            if all(w["answered"] + w["missed"] + w["drops"] >= pulses_issued
                   for w in words.values()):
                break
            time.sleep(0.1)
        stat = collect()
    except (KeyboardInterrupt, LinkError) as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "link lost"
        with contextlib.suppress(Exception):
            link.write(Reg.STIM_CTRL, 0)
        with contextlib.suppress(Exception):
            writer.json(b"STAT", collect())
        final = {"status": status, "end_time": _now(),
                 "link": {"crc_errors": link.crc_errors, "lost_packets": link.lost_packets,
                          "bad_payloads": link.bad_payloads, "duplicates": link.duplicates}}
        with contextlib.suppress(Exception):
            final["link"]["rx_errors"] = link.read1(Reg.RX_ERRORS)
        writer.close(final=final)
        bar.done()
        raise
    bar.done()
    writer.json(b"STAT", stat)
    # Host counters since the CLEAR of program_statistics (RigLink.counters), the rig's.
    counters = {
        "crc_errors": link.crc_errors, "lost_packets": link.lost_packets,
        "bad_payloads": link.bad_payloads, "duplicates": link.duplicates,
        "overflows": stat["drops"], "stat_drops": stat["drops"],
        "rx_errors": link.read1(Reg.RX_ERRORS),
    }
    accounted = sum(c["answered"] + c["missed"] for c in stat["channels"].values())
    expected = count * len(settings.channels)
    if accounted < expected or not all(c["consistent"] for c in stat["channels"].values()):
        status = "incomplete"
    final = {"status": status, "records": accounted, "expected_records": expected,
             "pulses_issued": pulses_issued, "heartbeat_edges": stat["heartbeat"]["edges"],
             "link": counters, "end_time": _now()}
    writer.close(final=final)
    return StatsCaptureResult(Path(path), stats_summary(stat, tick_hz), counters, meta,
                              final, stats=stat)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
