# SPDX-License-Identifier: BSD-2-Clause
"""The ``csv`` export (docs/exports.md): one row per stimulus pulse, times in ns.

Each row holds the pulse index, its stimulus time and, for each channel, latency,
completion and the missed/incomplete flags (ns, integers when the tick is a whole
number of ns). A suite capture gets one row per iteration instead. The rows are built
as one numpy byte matrix per chunk, without a Python step per row.
"""

import numpy as np

from ...errors import UsageError
from ...protocol import ChanFlags
from ..analysis import missed_mask
from ..report.data import channel_records

__all__ = ["pulse_table", "write_csv", "write_suite_csv", "no_records", "ns_per_tick"]


def ns_per_tick(cap):
    """The capture's tick in ns."""
    return 1e9 / cap.tick_hz


def pulse_table(cap):
    """Per-pulse columns (numpy arrays) of every channel, aligned by pulse number.

    Returns ``(columns, names)``: ``pulse`` and ``stim_t`` (ticks) and, per channel
    ``c``, ``c_latency``/``c_completion`` (ticks; -1 where there is no value),
    ``c_missed`` and ``c_incomplete`` (0/1; -1 where the channel has no record of
    that pulse).
    """
    lat = cap.latency
    if len(lat) == 0:
        no_records(cap)
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


def no_records(cap):
    """Refuse a capture without latency records: one clear line, and what to export
    instead."""
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
    tick_ns = ns_per_tick(cap)
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
    tick_ns = ns_per_tick(cap)
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

