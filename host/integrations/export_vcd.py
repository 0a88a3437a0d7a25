# SPDX-License-Identifier: BSD-2-Clause
"""The ``vcd`` export (docs/exports.md): a capture's raw events as a Value Change Dump.

Stimulus outputs and rig inputs are 1-bit wires, for PulseView/sigrok and GTKWave.
By default (``timescale="ns"``) the timescale is 1, 10 or 100 ns when the rig's tick
is exactly that, else 1 ns with each edge rounded to the nearest ns (at most 0.5 ns
off): sigrok makes one sample per timescale unit, so a ps timescale turns a capture of
a fraction of a second into hundreds of billions of samples. ``timescale="ps"`` keeps
every edge exact to the ps.
"""

import numpy as np

from ...errors import UsageError
from ...protocol import STIM_INPUT, Input

__all__ = ["write_vcd", "VCD_WIRES", "TIMESCALES"]

#: The timescale choices of :func:`write_vcd`.
TIMESCALES = ("ns", "ps")

#: VCD wire names by event input number, in the order they are declared.
VCD_WIRES = {STIM_INPUT[0]: "STIM0", STIM_INPUT[1]: "STIM1",
             Input.ISR_OUT: "ISR_OUT", Input.APP_OUT: "APP_OUT",
             Input.HEARTBEAT: "HEARTBEAT", Input.MARKER0: "MARKER0",
             Input.MARKER1: "MARKER1", Input.MARKER2: "MARKER2"}


def _vcd_timescale(tick_hz, timescale="ps"):
    """(timescale text, factor ticks → timescale units) for a tick rate.

    One tick when it is exactly 1, 10 or 100 ns (``"ns"``), or that or 1, 10 or
    100 ps or fs (``"ps"``); else ``1 ns`` or ``1 ps`` and a fractional factor (the
    edges are rounded to the nearest unit).
    """
    if timescale not in TIMESCALES:
        raise UsageError(f"unknown VCD timescale '{timescale}'",
                         hint=f"timescales: {', '.join(TIMESCALES)}")
    tick_ns = 1e9 / tick_hz
    units = (("ns", 1.0),) if timescale == "ns" else (("ns", 1.0), ("ps", 1e3), ("fs", 1e6))
    for unit, per_ns in units:
        for mult in (1, 10, 100):
            if abs(tick_ns * per_ns - mult) < 1e-9 * mult:
                return f"{mult} {unit}", 1
    if timescale == "ns":
        if tick_ns < 1.0:
            raise UsageError(f"the rig's tick ({tick_ns:.3g} ns) is shorter than 1 ns: "
                             "edges would merge at a 1 ns timescale",
                             hint="export with --timescale ps")
        return "1 ns", tick_ns
    return "1 ps", tick_ns * 1000.0


def write_vcd(cap, f, timescale="ns"):
    """Raw events as a VCD: one wire per input seen, times from the first event.

    ``timescale="ns"``: one tick when it is exactly 1, 10 or 100 ns, else 1 ns with
    each edge rounded to the nearest ns (the boards' 8.33 and 10.42 ns ticks).
    ``timescale="ps"``: one tick when it can be written exactly (1, 10 or 100 ns, ps
    or fs), else 1 ps with each edge rounded to the nearest ps. The ``$comment``
    says which. Times are rebased so the file starts at #0 (the original tick of #0
    is in the ``$comment``); every wire starts low unless its first edge is a
    falling one. The file ends with a stamp one unit after the last edge.
    """
    ev = cap.events
    if len(ev) == 0:
        raise UsageError("the capture holds no raw events to export as VCD",
                         hint="capture with --raw to record every edge")
    ev = ev[np.argsort(ev["t"], kind="stable")]
    inputs = [i for i in VCD_WIRES if np.any(ev["input"] == i)]
    inputs += sorted(set(ev["input"].tolist()) - set(inputs))
    ids = {inp: chr(33 + k) for k, inp in enumerate(inputs)}
    scale, factor = _vcd_timescale(cap.tick_hz, timescale)
    t0 = int(ev["t"][0])
    if factor == 1:
        times = f"times exact (one tick = {scale})"
    else:
        unit = scale.split()[1]
        times = (f"tick {1e9 / cap.tick_hz:.4f} ns; each edge rounded to the nearest "
                 f"{unit} (at most 0.5 {unit} off)")
    # An empty $date section is misread by some readers (GTKWave's): none is written.
    head = ([f"$date {cap.meta['start_time']} $end"] if cap.meta.get("start_time") else [])
    head += [f"$version rtrig {cap.meta.get('rtrig_version', '')} $end",
             f"$comment rtrig capture {cap.path.name}; #0 is rig tick {t0}; "
             f"tick rate {cap.tick_hz} Hz; {times} $end",
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
    # A last stamp one unit after the last edge: sigrok's samples end before the file's
    # last stamp, so without it the last edge would be dropped.
    f.write(f"#{int(t[-1]) + 1}\n".encode())
