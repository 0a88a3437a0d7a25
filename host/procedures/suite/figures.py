# SPDX-License-Identifier: BSD-2-Clause
"""A suite test's figures from its iterations: cold, min, mean, percentiles with their
95 % bounds, max with its exceedance bound, and the agreement of the rig's intervals
with the target's own counts."""

import numpy as np

from ...analysis import claimable, ticks_to_ns
from ...bounds import max_exceedance, rank_bounds
from .catalog import ITERATION_DTYPE, part_offset, rows_of
from .windows import split_tests

#: The percentiles of a suite test: name → fraction.
_SUITE_PERCENTILES = {"p50": 0.5, "p99": 0.99, "p9999": 0.9999}


def _warm_bounds(warm):
    """95 % bounds of each percentile (``p99_lo_ns``, ``p99_hi_ns``, …; None for a side
    too few iterations bound) and the maximum's exceedance bound
    (:mod:`rtrig.host.bounds`), from the sorted warm iterations in ns."""
    out = {}
    for name, q in _SUITE_PERCENTILES.items():
        lo, hi = rank_bounds(len(warm), q) if len(warm) else (None, None)
        out[f"{name}_lo_ns"] = None if lo is None else round(float(warm[lo]), 1)
        out[f"{name}_hi_ns"] = None if hi is None else round(float(warm[hi]), 1)
    out["max_exceedance"] = max_exceedance(len(warm))
    return out


def iteration_figures(its, tick_hz, counts=None, cycle_ticks=None, offset_cycles=0,
                      tolerance_ticks=None):
    """One test's figures (ns) from its iterations ``its`` (:data:`ITERATION_DTYPE`):
    count, cold (iteration 0), min, mean, p50, p99, p99.99 (each with its 95 % bounds),
    max (with its exceedance bound) over the iterations after the first, and with
    ``counts`` (the target's own cycle counts, ``cycle_ticks`` rig ticks each, not
    necessarily a whole number) their agreement with the rig: every iteration within
    ``tolerance_ticks`` (default one target cycle)."""
    missed = its["missed"]
    lat = ticks_to_ns(its["interval"], tick_hz)
    out = {"count": int(len(its)), "missed": int(missed.sum()),
           "cold_ns": round(float(lat[0]), 1) if len(its) and not missed[0] else None}
    warm = lat[1:][~missed[1:]]
    if len(warm):
        pct = np.percentile(warm, [50, 99, 99.99], method="inverted_cdf")
        out.update(min_ns=round(float(warm.min()), 1), mean_ns=round(float(warm.mean()), 1),
                   p50_ns=round(float(pct[0]), 1), p99_ns=round(float(pct[1]), 1),
                   p9999_ns=round(float(pct[2]), 1), max_ns=round(float(warm.max()), 1))
    else:
        out.update(dict.fromkeys(("min_ns", "mean_ns", "p50_ns", "p99_ns", "p9999_ns",
                                  "max_ns")))
    out.update(_warm_bounds(np.sort(warm)))
    out["weak"] = [k for k, p in (("p99", 99), ("p9999", 99.99)) if not claimable(len(warm), p)]
    if counts is not None:
        c = np.asarray(counts, dtype=np.int64)
        n = min(len(c), len(its))
        diff = its["interval"][:n].astype(np.int64) - c[:n] * cycle_ticks \
            - offset_cycles * cycle_ticks
        diff = diff[~missed[:n]]
        worst = float(np.abs(diff).max()) if len(diff) else 0.0
        tolerance = cycle_ticks if tolerance_ticks is None else tolerance_ticks
        out["self_timed"] = {
            "agree": bool(len(c) == len(its) and worst <= tolerance + 1e-9),
            "max_diff_cycles": round(worst / cycle_ticks, 2),
            "iterations": int(len(c)),
        }
    return out


def _suite_figures(events, order, traced, tick_hz, cycle_ticks, offset_cycles, mismatch,
                   tolerance_ticks):
    """Each row's figures (:func:`iteration_figures`) from the run's ``events``, the
    MARKER2 windows named by ``order`` (None: left out), with the target's own counts
    (``traced``, window by window); and those counts by row. A window whose iteration
    count is not the firmware's is added to ``mismatch``."""
    per_test = split_tests(events, order)
    figures, cycles = {}, {}
    for k, name in enumerate(order):
        if name is None:
            continue
        rows = rows_of(name)
        counts_of = {}
        if k < len(traced) and traced[k]["counts"] is not None:
            for j, row in enumerate(rows):
                counts_of[row] = cycles[row] = traced[k]["counts"][j::len(rows)]
        for row in rows:
            its = per_test.get(row, np.zeros(0, dtype=ITERATION_DTYPE))
            counts = counts_of.get(row)
            if counts is not None and len(counts) != len(its):
                mismatch.setdefault(name, f"the rig saw {len(its)} iterations of {name}, "
                                          f"the firmware counted {len(counts)}")
            figures[row] = iteration_figures(its, tick_hz, counts, cycle_ticks,
                                             offset_cycles + part_offset(row),
                                             tolerance_ticks)
    return figures, cycles
