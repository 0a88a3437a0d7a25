# SPDX-License-Identifier: BSD-2-Clause
"""Exports of captures for other tools (docs/exports.md): CSV, JSON, VCD, cyclictest.

* ``csv`` — one row per stimulus pulse: pulse index, stimulus time, and for each
  channel latency, completion and the missed/incomplete flags (ns, integers when
  the tick is a whole number of ns).
* ``json`` — the summary: metadata, how the capture ended, per-channel statistics,
  sweep steps and results.
* ``summary-csv`` — the per-channel statistics as CSV, one row per channel: counts,
  every figure in ns, each percentile's 95 % bounds and the maximum's exceedance
  bound (the numbers of ``json``'s ``channels``, for a spreadsheet).
* ``vcd`` — the raw events as a Value Change Dump (stimulus outputs and rig inputs as
  1-bit wires) for PulseView/sigrok and GTKWave; the timescale is the rig's tick.
* ``cyclictest`` — the latency histogram in the layout of rt-tests' ``cyclictest -h``
  (one line per µs bucket, a column per channel, then ``# Min Latencies:`` … lines)
  so histogram plotting scripts written for cyclictest (OSADL's) work unchanged.

Each writer takes a loaded :class:`rtrig.capture.Capture` and a binary file object;
:func:`export` picks one by name and writes to a path (``-`` for stdout).
"""

import json
import sys
from pathlib import Path

import numpy as np

from ...channels import channel_order, sweep_figure_keys
from ...errors import UsageError
from ...outputs import atomic_output
from ...protocol import STIM_INPUT, ChanFlags, Input
from ..analysis import PERCENTILES, channel_stats, missed_mask, stats_summary
from ..report.data import channel_records

__all__ = ["FORMATS", "export", "write_csv", "write_json", "write_summary_csv", "write_vcd", "write_cyclictest",
           "pulse_table", "cyclictest_histogram", "summary_json", "VCD_WIRES"]

#: VCD wire names by event input number, in the order they are declared.
VCD_WIRES = {STIM_INPUT[0]: "STIM0", STIM_INPUT[1]: "STIM1",
             Input.ISR_OUT: "ISR_OUT", Input.APP_OUT: "APP_OUT",
             Input.HEARTBEAT: "HEARTBEAT", Input.MARKER0: "MARKER0",
             Input.MARKER1: "MARKER1", Input.MARKER2: "MARKER2"}


def _tick_ns(cap):
    return 1e9 / cap.tick_hz


# ------------------------------------------------------------------------------ CSV


def pulse_table(cap):
    """Per-pulse columns (numpy arrays) of every channel, aligned by pulse number.

    Returns ``(columns, names)``: ``pulse`` and ``stim_t`` (ticks) and, per channel
    ``c``, ``c_latency``/``c_completion`` (ticks; -1 where there is no value),
    ``c_missed`` and ``c_incomplete`` (0/1; -1 where the channel has no record of
    that pulse).
    """
    lat = cap.latency
    if len(lat) == 0:
        _no_records(cap)
    pulses, first = np.unique(lat["pulse"], return_index=True)
    cols = {"pulse": pulses.astype(np.int64),
            "stim_t": lat["stim_t"][first].astype(np.int64)}
    for name, rec in channel_records(cap).items():
        pos = np.searchsorted(pulses, rec["pulse"])
        missed = missed_mask(rec)
        incomplete = (rec["flags"] & ChanFlags.INCOMPLETE) != 0
        lcol = np.full(len(pulses), -1, dtype=np.int64)
        ccol = np.full(len(pulses), -1, dtype=np.int64)
        mcol = np.full(len(pulses), -1, dtype=np.int64)
        icol = np.full(len(pulses), -1, dtype=np.int64)
        lcol[pos] = np.where(missed, -1, rec["latency"].astype(np.int64))
        ccol[pos] = np.where(missed | incomplete, -1, rec["completion"].astype(np.int64))
        mcol[pos] = missed
        icol[pos] = incomplete
        cols[f"{name}_latency"] = lcol
        cols[f"{name}_completion"] = ccol
        cols[f"{name}_missed"] = mcol
        cols[f"{name}_incomplete"] = icol
    return cols, list(cols)


def _no_records(cap):
    if cap.stats and cap.stats.get("channels"):
        raise UsageError("this statistics-mode capture has no per-pulse records",
                         hint="export json or cyclictest, or capture with --mode records")
    raise UsageError("the capture holds no latency records",
                     hint="sweeps keep their curve in steps: export them as json")


def _decimal_bytes(columns, decimals):
    """CSV text of integer columns, built as one byte matrix (no per-row Python).

    ``columns``: int64 arrays of equal length; a negative value is an empty field.
    ``decimals[j]`` digits of column ``j`` go after a decimal point (the value is
    scaled by 10**decimals). Each field's digits are laid out at a fixed width,
    then the leading zeros are masked out and the kept bytes read row by row.
    """
    n = len(columns[0])
    mats, masks = [], []
    for j, (v, dec) in enumerate(zip(columns, decimals, strict=True)):
        top = int(v.max()) if n else 0
        width = max(len(str(max(top, 0))), dec + 1)
        power = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        digits = (np.maximum(v, 0)[:, None] // power) % 10
        keep = np.maximum.accumulate(digits != 0, axis=1)
        keep[:, width - dec - 1:] = True           # units digit and the decimals
        keep &= (v >= 0)[:, None]
        chars = (digits + 48).astype(np.uint8)
        if dec:
            point = np.full((n, 1), ord("."), dtype=np.uint8)
            chars = np.hstack([chars[:, :width - dec], point, chars[:, width - dec:]])
            keep = np.hstack([keep[:, :width - dec], (v >= 0)[:, None], keep[:, width - dec:]])
        end = ord("\n") if j == len(columns) - 1 else ord(",")
        mats += [chars, np.full((n, 1), end, dtype=np.uint8)]
        masks += [keep, np.ones((n, 1), dtype=bool)]
    return np.hstack(mats)[np.hstack(masks)].tobytes()


def write_csv(cap, f, chunk=200_000):
    """One row per pulse (see :func:`pulse_table`), times in ns; empty = no value.

    Times are integers when the tick is a whole number of ns, else (8.33 ns on the
    ECP5 boards) they carry three decimals. A suite capture (``rtrig suite``) gets one row per
    iteration instead (:func:`write_suite_csv`).
    """
    if cap.meta.get("mode") == "suite":
        return write_suite_csv(cap, f)
    cols, names = pulse_table(cap)
    tick_ns = _tick_ns(cap)
    whole = abs(tick_ns - round(tick_ns)) < 1e-9
    header, decimals, scale = [], [], []
    for n in names:
        if n == "stim_t" or n.endswith(("_latency", "_completion")):
            header.append(f"{n}_ns")
            decimals.append(0 if whole else 3)
            scale.append(int(round(tick_ns)) if whole else tick_ns * 1000)
        else:
            header.append(n)
            decimals.append(0)
            scale.append(None)
    f.write((",".join(header) + "\n").encode())
    for start in range(0, len(cols["pulse"]), chunk):
        part = []
        for n, sc in zip(names, scale, strict=True):
            v = cols[n][start:start + chunk]
            if sc is not None:
                scaled = v * sc if isinstance(sc, int) else np.round(v * sc).astype(np.int64)
                v = np.where(v < 0, -1, scaled)
            part.append(v)
        f.write(_decimal_bytes(part, decimals))


def _ns_text(ns):
    """A time in ns with at most three decimals, never in exponent form."""
    return f"{ns:.3f}".rstrip("0").rstrip(".")


def write_suite_csv(cap, f):
    """One row per iteration of a suite capture: test, iteration (0 = cold), start
    time and the rig's interval in ns, missed, and the target's own cycle count (empty
    when it gave none)."""
    from ..report.suite import suite_iterations
    per_test, cycles = suite_iterations(cap)
    tick_ns = _tick_ns(cap)
    f.write(b"test,iteration,start_ns,time_ns,missed,self_timed_cycles\n")
    for name, it in per_test.items():
        own = cycles.get(name) or []
        lines = []
        for k, r in enumerate(it):
            c = str(own[k]) if k < len(own) else ""
            t = "" if r["missed"] else _ns_text(int(r["interval"]) * tick_ns)
            start = _ns_text(int(r["start"]) * tick_ns)
            lines.append(f"{name},{k},{start},{t},{int(r['missed'])},{c}\n")
        f.write("".join(lines).encode())


# ------------------------------------------------------------------------------ JSON


def summary_json(cap):
    """The capture's summary as a JSON-ready dict."""
    out = {
        "format": "rtrig-summary",
        "capture": str(cap.path),
        "meta": cap.meta,
        "final": cap.final,
        "complete": cap.complete,
        "tick_hz": cap.tick_hz,
        "channels": {name: channel_stats(rec, cap.tick_hz)
                     for name, rec in channel_records(cap).items()},
        "channels_from": "records",
        "raw_events": int(len(cap.events)),
    }
    if not out["channels"] and cap.stats and cap.stats.get("channels"):
        out["channels"] = stats_summary(cap.stats, cap.tick_hz)
        out["channels_from"] = "statistics"
    if cap.stats is not None:
        out["onchip_stats"] = cap.stats
    if cap.steps:
        out["steps"] = sorted(cap.steps, key=lambda s: s.get("freq_hz") or 0)
    if cap.meta.get("kind") == "sweep" and cap.final:
        # MF-ISR, MF-APP, every swept interval channel's MF and SF
        swept = (cap.meta.get("sweep") or {}).get("channels") or ()
        out["results"] = {k: cap.final.get(k) for k in sweep_figure_keys(swept)}
    return out


def write_json(cap, f):
    f.write((json.dumps(summary_json(cap), indent=2) + "\n").encode())


#: The columns of ``summary-csv`` after ``channel``: the keys of a channel's summary.
SUMMARY_COLUMNS = ["pulses", "answered", "missed", "missed_fraction", "min_ns", "mean_ns",
                   "std_ns", *(f"{p}{side}_ns" for p in PERCENTILES
                               for side in ("", "_lo", "_hi")),
                   "max_ns", "max_exceedance", "jitter_ns"]


def write_summary_csv(cap, f):
    """The per-channel statistics of :func:`summary_json` as CSV: a header, then one
    row per channel; an empty field where a figure is None (no sample, or too few to
    bound that side)."""
    channels = summary_json(cap)["channels"]
    if not channels:
        raise UsageError(f"{cap.path}: no latency channel to summarise",
                         hint="a sweep's figures are in --format json")
    lines = [",".join(["channel", *SUMMARY_COLUMNS])]
    for name, st in channels.items():
        lines.append(",".join([name, *("" if st.get(k) is None else f"{st[k]:g}"
                                       if isinstance(st[k], float) else str(st[k])
                                       for k in SUMMARY_COLUMNS)]))
    f.write(("\n".join(lines) + "\n").encode())


# ------------------------------------------------------------------------------- VCD


def _vcd_timescale(tick_hz):
    """(timescale text, factor ticks → timescale units) for a tick rate."""
    tick_ns = 1e9 / tick_hz
    for unit, per_ns in (("ns", 1.0), ("ps", 1000.0), ("fs", 1e6)):
        for mult in (1, 10, 100):
            if abs(tick_ns * per_ns - mult) < 1e-9 * mult:
                return f"{mult} {unit}", 1
    return "1 ps", tick_ns * 1000.0


def write_vcd(cap, f):
    """Raw events as a VCD: one wire per input seen, times from the first event.

    The timescale is one tick when it can be written exactly (1, 10 or 100 ns, ps
    or fs), else 1 ps (the ECP5 boards' 8.33 ns ticks). Times are rebased so the
    file starts at #0 (the original tick of #0 is in a ``$comment``); every wire
    starts low unless its first edge is a falling one.
    """
    ev = cap.events
    if len(ev) == 0:
        raise UsageError("the capture holds no raw events to export as VCD",
                         hint="capture with --raw to record every edge")
    ev = ev[np.argsort(ev["t"], kind="stable")]
    inputs = [i for i in VCD_WIRES if np.any(ev["input"] == i)]
    inputs += sorted(set(ev["input"].tolist()) - set(inputs))
    ids = {inp: chr(33 + k) for k, inp in enumerate(inputs)}
    scale, factor = _vcd_timescale(cap.tick_hz)
    t0 = int(ev["t"][0])
    head = [f"$date {cap.meta.get('start_time', '')} $end",
            f"$version rtrig {cap.meta.get('rtrig_version', '')} $end",
            f"$comment rtrig capture {cap.path.name}; #0 is rig tick {t0}; "
            f"tick rate {cap.tick_hz} Hz $end",
            f"$timescale {scale} $end", "$scope module rtrig $end"]
    for inp in inputs:
        head.append(f"$var wire 1 {ids[inp]} {VCD_WIRES.get(inp, f'IN{inp}')} $end")
    head += ["$upscope $end", "$enddefinitions $end", "#0", "$dumpvars"]
    for inp in inputs:
        first = ev["rising"][ev["input"] == inp][0]
        head.append(f"{0 if first else 1}{ids[inp]}")
    head.append("$end")
    f.write(("\n".join(head) + "\n").encode())

    t = ev["t"].astype(np.int64) - t0
    if factor != 1:
        t = np.round(t * factor).astype(np.int64)
    id_arr = np.array([ids.get(i, "?") for i in range(256)])[ev["input"]]
    change = np.where(ev["rising"] != 0, "1", "0").astype(object) + id_arr.astype(object)
    new_time = np.ones(len(t), dtype=bool)
    new_time[1:] = t[1:] != t[:-1]
    stamp = np.where(new_time, np.char.add("#", t.astype(str)), "")
    lines = np.where(new_time, stamp.astype(object) + "\n" + change, change)
    # Skip a stamp of #0 that repeats the header's.
    if len(lines) and t[0] == 0:
        lines[0] = change[0]
    chunk = 500_000
    for s in range(0, len(lines), chunk):
        f.write(("\n".join(lines[s:s + chunk].tolist()) + "\n").encode())


# ------------------------------------------------------------------------ cyclictest


#: Most 1 µs buckets of a cyclictest histogram (one line each): latencies up to 1 s.
#: Beyond the last bucket they are counted as overflows, as cyclictest does.
MAX_BUCKETS = 1_000_000


def _check_buckets(buckets):
    if not 1 <= buckets <= MAX_BUCKETS:
        raise UsageError(f"--buckets must be between 1 and {MAX_BUCKETS} (1 s of 1 µs "
                         f"buckets), got {buckets}",
                         hint="latencies beyond the last bucket are counted as overflows")


def cyclictest_histogram(cap, buckets=None):
    """cyclictest's figures per channel, in µs: ``(names, hist, stats)``.

    ``hist`` has shape ``(buckets, channels)``: bucket ``i`` counts latencies with
    ``floor(ns / 1000) == i`` (cyclictest's integer µs). ``stats`` per channel:
    ``min``, ``avg``, ``max`` (integer µs like cyclictest: truncated), ``total``,
    ``overflows``, ``overflow_pulses`` (pulse numbers at or beyond the last
    bucket) and ``missed``. Default bucket count: enough for the largest latency,
    at most :data:`MAX_BUCKETS`.
    """
    recs = channel_records(cap)
    names = list(recs)
    if not names and cap.stats and cap.stats.get("channels"):
        return _cyclictest_from_stats(cap, buckets)
    if not names:
        _no_records(cap)
    tick_ns = _tick_ns(cap)
    us_all, pulses_all = [], []
    missed = []
    for name in names:
        rec = recs[name]
        ok = ~missed_mask(rec)
        missed.append(int(len(rec) - ok.sum()))
        ns = rec["latency"][ok].astype(np.int64) * tick_ns
        us_all.append(np.floor(ns / 1000.0 + 1e-9).astype(np.int64))
        pulses_all.append(rec["pulse"][ok])
    if buckets is None:
        buckets = min(max([int(u.max()) + 1 for u in us_all if len(u)] + [1]), MAX_BUCKETS)
    _check_buckets(buckets)
    hist = np.zeros((buckets, len(names)), dtype=np.int64)
    stats = []
    for j, (u, p) in enumerate(zip(us_all, pulses_all, strict=True)):
        inside = u < buckets
        hist[:, j] = np.bincount(u[inside], minlength=buckets)[:buckets]
        stats.append({
            "min": int(u.min()) if len(u) else 0,
            "avg": int(u.sum() // len(u)) if len(u) else 0,
            "max": int(u.max()) if len(u) else 0,
            "total": int(len(u)),
            "overflows": int((~inside).sum()),
            "overflow_pulses": p[~inside],
            "missed": missed[j],
        })
    return names, hist, stats


def _cyclictest_from_stats(cap, buckets):
    """:func:`cyclictest_histogram` from the rig's on-chip histograms. Exact when
    every bin lies inside one µs bucket (bin width dividing 1 µs) and no sample fell
    outside the histogram's range; refused otherwise."""
    stat = cap.stats
    tick_ns = _tick_ns(cap)
    w, off = int(stat["bin_width_ticks"]), int(stat["bin_offset_ticks"])
    bin_ns = w * tick_ns
    if abs(1000.0 / bin_ns - round(1000.0 / bin_ns)) > 1e-9 or (off % w):
        raise UsageError(f"the rig's histogram bins ({bin_ns:g} ns) do not divide 1 µs "
                         "buckets exactly", hint="export json for the exact figures, or "
                         "capture with --mode records")
    names = sorted(stat["channels"], key=channel_order)
    figs = [stat["channels"][n] for n in names]
    for n, fig in zip(names, figs, strict=True):
        if fig.get("underflow") or fig.get("overflow"):
            raise UsageError(f"{n}: {fig.get('underflow', 0)} latencies below and "
                             f"{fig.get('overflow', 0)} above the rig's histogram range",
                             hint="export json for the exact figures")

    def us(ticks):
        return int(np.floor(ticks * tick_ns / 1000.0 + 1e-9))

    if buckets is None:
        buckets = min(max([us(f["lat_max"]) + 1 for f in figs if f["answered"]] + [1]),
                      MAX_BUCKETS)
    _check_buckets(buckets)
    hist = np.zeros((buckets, len(names)), dtype=np.int64)
    stats = []
    for j, fig in enumerate(figs):
        counts = np.asarray(fig.get("histogram") or [], dtype=np.int64)
        bucket = np.floor((off + w * np.arange(len(counts))) * tick_ns / 1000.0
                          + 1e-9).astype(np.int64)
        inside = bucket < buckets
        hist[:, j] = np.bincount(bucket[inside], weights=counts[inside],
                                 minlength=buckets)[:buckets].astype(np.int64)
        n = int(fig["answered"])
        stats.append({"min": us(fig["lat_min"]) if n else 0,
                      "avg": us(fig["lat_sum"] / n) if n else 0,
                      "max": us(fig["lat_max"]) if n else 0,
                      "total": n, "overflows": int(counts[~inside].sum()),
                      "overflow_pulses": np.zeros(0, dtype=np.int64),
                      "missed": int(fig["missed"])})
    return names, hist, stats


def write_cyclictest(cap, f, buckets=None):
    """The histogram in ``cyclictest -h`` layout, one column per channel."""
    names, hist, stats = cyclictest_histogram(cap, buckets)
    n = len(names)
    out = [f"# rtrig {cap.path.name}: latency histogram in cyclictest -h layout; "
           f"columns: {' '.join(names)} (one per response channel), 1 µs buckets",
           "# Histogram"]
    idx = np.char.mod("%06d", np.arange(len(hist)))
    cells = [np.char.mod("%06d", hist[:, j]) for j in range(n)]
    row = idx.astype(object) + " " + cells[0].astype(object)
    for c in cells[1:]:
        row = row + "\t" + c.astype(object)
    out += row.tolist()
    out.append("# Total:" + "".join(f" {s['total']:09d}" for s in stats))
    out.append("# Min Latencies:" + "".join(f" {s['min']:05d}" for s in stats))
    out.append("# Avg Latencies:" + "".join(f" {s['avg']:05d}" for s in stats))
    out.append("# Max Latencies:" + "".join(f" {s['max']:05d}" for s in stats))
    out.append("# Histogram Overflows:" + "".join(f" {s['overflows']:05d}" for s in stats))
    out.append("# Histogram Overflow at cycle number:")
    for j, s in enumerate(stats):
        shown = s["overflow_pulses"][:100].tolist()
        line = f"# Thread {j}:" + "".join(f" {p:05d}" for p in shown)
        if s["overflows"] > len(shown):
            line += f" # {s['overflows'] - len(shown):05d} others"
        out.append(line)
    out.append("# rtrig missed pulses (not in the histogram):"
               + "".join(f" {s['missed']:05d}" for s in stats))
    f.write(("\n".join(out) + "\n").encode())


# ---------------------------------------------------------------------------- driver

def write_trace(cap, f, elf=None, stages=None):
    """Chrome trace event JSON (:mod:`rtrig.host.integrations.trace`)."""
    from .trace import write_trace as write
    write(cap, f, elf=elf, stages=stages)


FORMATS = {"csv": write_csv, "json": write_json, "summary-csv": write_summary_csv,
           "vcd": write_vcd, "cyclictest": write_cyclictest, "trace": write_trace}
SUFFIX = {"csv": ".csv", "json": ".json", "summary-csv": ".summary.csv", "vcd": ".vcd",
          "cyclictest": ".hist", "trace": ".trace.json"}


def export(cap, fmt, output, **options):
    """Write ``cap`` in format ``fmt`` to ``output`` (a path, or ``-`` for stdout)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format '{fmt}'", hint=f"formats: {', '.join(FORMATS)}")
    writer = FORMATS[fmt]
    if str(output) == "-":
        writer(cap, sys.stdout.buffer, **options)
        sys.stdout.buffer.flush()
        return None
    out = Path(output)
    with atomic_output(out) as f:
        writer(cap, f, **options)
    return out
