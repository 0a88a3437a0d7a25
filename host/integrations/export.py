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
  1-bit wires) for PulseView/sigrok and GTKWave; the timescale is 1 ns (each edge
  rounded to the nearest ns) unless the tick is a whole 1, 10 or 100 ns, or exact
  to the ps with ``timescale="ps"``.
* ``cyclictest`` — the latency histogram in the layout of rt-tests' ``cyclictest -h``
  (one line per µs bucket, a column per channel, then ``# Min Latencies:`` … lines)
  so histogram plotting scripts written for cyclictest (OSADL's) work unchanged.

Each writer takes a loaded :class:`rtrig.capture.Capture` and a binary file object and
lives in its format's module (``export_csv``, ``export_summary``, ``export_vcd``,
``export_cyclictest``; the Chrome trace in ``trace``). This module names the formats
(:data:`FORMATS`, :data:`SUFFIX`) and :func:`export` picks one by name and writes to a
path (``-`` for stdout); the writers are importable from here too.
"""

import sys
from pathlib import Path

from ...errors import UsageError
from ...outputs import atomic_output
from .export_csv import pulse_table, write_csv
from .export_cyclictest import cyclictest_histogram, write_cyclictest
from .export_summary import SUMMARY_COLUMNS, summary_json, write_json, write_summary_csv
from .export_vcd import VCD_WIRES, write_vcd

__all__ = ["FORMATS", "SUFFIX", "export", "write_csv", "write_json", "write_summary_csv",
           "write_vcd", "write_cyclictest", "write_trace", "pulse_table",
           "cyclictest_histogram", "summary_json", "SUMMARY_COLUMNS", "VCD_WIRES"]


def write_trace(cap, f, elf=None, stages=None, warn=None):
    """Chrome trace event JSON (:mod:`rtrig.host.integrations.trace`)."""
    from .trace import write_trace as write
    write(cap, f, elf=elf, stages=stages, warn=warn)


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
