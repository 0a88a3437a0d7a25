# SPDX-License-Identifier: BSD-2-Clause
"""How fast ``rtrig history show`` answers over a large history (``make bench``).

Fills an SQLite history with ``RUNS`` runs, each the figures and samples of one
synthetic capture of 2000 pulses (recorded in one transaction, for the filling's
speed; the runs are the same as ``history add`` writes), with a ``kernel`` label that
changes every 100 runs and two boards; then times ``rtrig history show`` in a fresh
process: the run list, one figure per run, one figure by kernel with a board filter.
Prints a Markdown section; ``--write`` replaces "## History" in docs/performance.md.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from perfdoc import write_section

RUNS = 10_000


def _fill(db, capture):
    from rtrig.host.history import History, runs_of_file
    (run,) = runs_of_file(capture)
    t = time.perf_counter()
    with History(db) as h, h.conn.transaction():
        for i in range(RUNS):
            run.labels = {"kernel": f"6.{i // 100}", "commit": f"c{i}"}
            run.board = "ulx3s" if i % 2 else "orangecrab"
            h._insert(run)
    return time.perf_counter() - t


def _time(db, *args):
    best = None
    for _ in range(3):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "rtrig", "history", "show", "--history",
                            str(db), *args], capture_output=True, text=True)
        dt = time.perf_counter() - t
        assert r.returncode == 0, r.stderr
        best = dt if best is None else min(best, dt)
    return best, len(r.stdout.splitlines())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "history"))
    from history_helpers import write_capture
    with tempfile.TemporaryDirectory() as tmp:
        cap = write_capture(Path(tmp) / "c.rtrig",
                            np.random.default_rng(1).integers(1000, 1200, 2000))
        db = Path(tmp) / "h.sqlite"
        fill = _fill(db, cap)
        size = db.stat().st_size + sum(p.stat().st_size for p in Path(tmp).glob("h.sqlite-*"))
        rows = [("`history show`", *_time(db)),
                ("`history show --figure isr.p99`", *_time(db, "--figure", "isr.p99")),
                ("`history show --figure isr.p99 --by kernel --where board=ulx3s`",
                 *_time(db, "--figure", "isr.p99", "--by", "kernel", "--where",
                        "board=ulx3s"))]
        text = ["## History", "",
                f"`python benchmarks/bench_history.py` on the development machine (2 cores "
                f"shared with other jobs): an SQLite history of {RUNS} runs, each with the "
                f"figures and samples of a 2000-pulse capture ({size / 1e6:.0f} MB, filled in "
                f"{fill:.1f} s in one transaction). Each command in a fresh process, "
                "best of three, Python's start-up and imports included.", "",
                "| command | wall time | lines printed |", "| --- | --- | --- |"]
        text += [f"| {c} | {t:.2f} s | {n} |" for c, t, n in rows]
        out = "\n".join(text) + "\n"
    print(out)
    if args.write:
        write_section(out)


if __name__ == "__main__":
    main()
