# SPDX-License-Identifier: BSD-2-Clause
"""How often the percentile bounds hold, and how often two captures of one
configuration are called different (``make bench``).

The bounds (:mod:`rtrig.host.bounds`) assume independent samples. The model target
(:mod:`rtrig.host.model.reference`, cycle-exact with the gateware) gives latencies
whose truth is known, with and without a kernel tick, with the pulse rate asked for
locked to the tick or not, and with stimulus jitter. Each trial is one capture of
``N`` consecutive pulses from a random tick phase and jitter seed, with rtrig's
default settings: the stimulus period moved to meet the tick's phases
(``--phases cover``, :func:`rtrig.host.rhythm.detune`, a stimulus step of 4 ticks)
and jitter drawn as the gateware draws it (:func:`rtrig.host.rhythm.train_times`);
``--as-set`` keeps the asked-for period (the figures before ``--phases cover``). The
truth of a configuration is the pooled distribution of all its trials (``TRIALS`` ×
``N`` pulses, every phase). Printed per configuration: the share of trials whose 95 %
bounds hold the true p50 and p99 (ISR and APP), and the share of pairs of trials
that ``compare`` finds different (it should be at most 5 %). Prints a Markdown
table; ``--write`` replaces the "## How far the bounds hold" section of
docs/report.md.
"""

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
from perfdoc import write_section

N, TRIALS = 1000, 400
HIGH = 120                     # stimulus high time, ticks (1 µs at 8.33 ns)
REPORT_MD = Path(__file__).resolve().parents[1] / "docs" / "report.md"


def _configs():
    from rtrig.host.model.presets import preset
    fast = preset("fast")                      # 100 µs kernel tick, 1 µs ISR jitter
    return [
        ("fast preset, 30.01 µs period (not locked to the tick)", fast, 3601, 0),
        ("fast preset, 25 µs period (4 pulses per tick: locked)", fast, 3000, 0),
        ("the same, stimulus jitter 20 µs", fast, 3000, 2400),
        ("fast preset without the tick, 25 µs period", dataclasses.replace(
            fast, tick_period=0), 3000, 0),
    ]


STEP = 4                       # the rig's stimulus step, ticks


def _run(params, period, jitter, rng, as_set=False):
    from rtrig.host.model.reference import simulate
    from rtrig.host.rhythm import detune, train_times
    if not as_set:
        period, _ = detune(period, params.tick_period, N, STEP, jitter)
    start = int(rng.integers(0, max(params.tick_period, period)))
    edges = start + train_times({"period_ticks": period, "jitter_ticks": jitter,
                                 "seed": int(rng.integers(1, 2**32))}, N, STEP)
    r = simulate(dataclasses.replace(params, seed=int(rng.integers(1, 2**32))), edges,
                 high=HIGH)
    return {"isr": r.isr_latency[~r.isr_missed], "app": r.app_latency[~r.app_missed]}


def _coverage(runs, q):
    from rtrig.host.bounds import quantile_bounds
    out = {}
    for ch in ("isr", "app"):
        pooled = np.concatenate([r[ch] for r in runs])
        truth = np.percentile(pooled, q * 100, method="inverted_cdf")
        hit = 0
        for r in runs:
            lo, hi = quantile_bounds(*np.unique(r[ch], return_counts=True), q)
            hit += (lo is not None and hi is not None and lo <= truth <= hi)
        out[ch] = hit / len(runs)
    return out


def _false_alarms(runs):
    from rtrig.host.report.compare import NONE, Samples, compare_samples
    flagged = 0
    pairs = len(runs) // 2
    for i in range(pairs):
        a, b = runs[2 * i], runs[2 * i + 1]
        c = compare_samples({k: Samples.from_ticks(v) for k, v in a.items()},
                            {k: Samples.from_ticks(v) for k, v in b.items()})
        flagged += any(ch.verdict != NONE for ch in c.channels.values())
    return flagged / pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update docs/report.md")
    ap.add_argument("--as-set", action="store_true",
                    help="keep the asked-for period (--phases as-set)")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    t = time.perf_counter()
    rows = []
    for name, params, period, jitter in _configs():
        runs = [_run(params, period, jitter, rng, args.as_set) for _ in range(TRIALS)]
        p50, p99 = _coverage(runs, 0.5), _coverage(runs, 0.99)
        rows.append(f"| {name} | {p50['isr']:.1%} | {p99['isr']:.1%} | {p50['app']:.1%} | "
                    f"{p99['app']:.1%} | {_false_alarms(runs):.1%} |")
    text = "\n".join([
        "## How far the bounds hold",
        "",
        f"Measured with `python benchmarks/bench_coverage.py` ({TRIALS} captures of {N} "
        "pulses per line, each from a random tick phase and jitter seed, with the "
        "default `--phases cover`; the truth is all of a line's captures pooled). Coverage: the share of captures whose 95 % "
        "bounds hold the true percentile (95 % or more is right). Called different: the "
        f"share of {TRIALS // 2} pairs of captures of the same configuration that "
        "`rtrig compare` calls different at 95 % (5 % or less is right).",
        "",
        "| model target | ISR p50 | ISR p99 | APP p50 | APP p99 | called different |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])
    print(text)
    print(f"({time.perf_counter() - t:.0f} s)", file=sys.stderr)
    if args.write and not args.as_set:
        write_section(text, REPORT_MD)


if __name__ == "__main__":
    main()
