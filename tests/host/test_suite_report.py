# SPDX-License-Identifier: BSD-2-Clause
"""A suite capture in the report and the CSV export: built from records whose times
are known, so every figure in the output can be checked."""

import numpy as np

from rtrig import load
from rtrig.capture import CaptureWriter
from rtrig.host.integrations.export import export
from rtrig.host.procedures.suite import iteration_figures, split_tests
from rtrig.host.report.page import write_report
from rtrig.protocol import EVENT_DTYPE, Input

TESTS = ("yield", "thread_switch_2", "thread_switch_10")


def _suite_capture(path):
    """Three tests of 4 iterations, 1000 ticks apart, MARKER2 around each; iteration k
    of test j takes 100 + 10 j + 2 k ticks from MARKER0's rise to MARKER1's, and the
    target counts half as many cycles (a 50 MHz CPU on a 100 MHz rig)."""
    edges, cycles = [], {}
    t = 1000
    for j, name in enumerate(TESTS):
        edges.append((t - 500, Input.MARKER2, 1))
        cycles[name] = []
        for k in range(4):
            lat = 100 + 10 * j + 2 * k
            edges += [(t, Input.MARKER0, 1), (t + lat, Input.MARKER1, 1)]
            cycles[name].append(lat // 2)
            t += 1000
        edges.append((t, Input.MARKER2, 0))
        t += 2000
    ev = np.zeros(len(edges), dtype=EVENT_DTYPE)
    for i, (te, inp, rising) in enumerate(edges):
        ev[i]["t"], ev[i]["input"], ev[i]["rising"] = te, inp, rising
    per = split_tests(ev, TESTS)
    figures = {n: iteration_figures(per[n], 100e6, cycles[n], cycle_ticks=2) for n in TESTS}
    meta = {"tick_hz": 100e6, "mode": "suite", "channels": [], "raw_events": True,
            "stimulus": {"freq_hz": 10_000}, "target": {"kind": "soc"},
            "suite": {"tests": list(TESTS), "iterations": 4, "loaded": False}}
    with CaptureWriter(path, meta) as w:
        w.array(b"EVNT", ev)
        w.close(final={"status": "complete",
                       "suite": {"tests": figures, "self_timed_cycles": cycles}})
    return figures


def test_suite_figures_of_known_iterations(tmp_path):
    figures = _suite_capture(tmp_path / "s.rtrig")
    f = figures["thread_switch_10"]           # 120, 122, 124, 126 ticks
    assert f["count"] == 4 and f["cold_ns"] == 1200.0
    assert (f["min_ns"], f["max_ns"], f["mean_ns"]) == (1220.0, 1260.0, 1240.0)
    assert f["self_timed"]["agree"] and f["self_timed"]["max_diff_cycles"] == 0


def test_suite_csv_has_one_row_per_iteration(tmp_path):
    _suite_capture(tmp_path / "s.rtrig")
    out = export(load(tmp_path / "s.rtrig"), "csv", tmp_path / "s.csv")
    lines = out.read_text().splitlines()
    assert lines[0] == "test,iteration,start_ns,time_ns,missed,self_timed_cycles"
    assert len(lines) == 1 + 12
    assert lines[1] == "yield,0,10000,1000,0,50"
    assert lines[-1].startswith("thread_switch_10,3,") and lines[-1].endswith(",1260,0,63")


def test_suite_report_has_the_table_and_the_scaling_plot(tmp_path):
    _suite_capture(tmp_path / "s.rtrig")
    out = tmp_path / "r.html"
    write_report([tmp_path / "s.rtrig"], out)
    text = out.read_text()
    assert "Kernel suite, µs" in text and "thread_switch_10" in text
    assert "Thread switch time against thread count" in text
    assert "agree (±0 cycles)" in text


def test_nested_plot_has_both_orders_against_the_offset():
    from rtrig.host.report.suite import nested_figure
    figures = {}
    for off in (0, 1500, 3000):
        for suffix in ("", "_high_first"):
            if off == 0 and suffix:
                continue
            test = "irq_simultaneous" if off == 0 else f"irq_nested_{off}ns{suffix}"
            for k, part in enumerate(("isr0", "isr1", "both")):
                figures[f"{test}.{part}"] = {"p50_ns": 1000.0 * (k + 1) + off,
                                             "max_ns": 1000.0 * (k + 1) + 2 * off}
    fig = nested_figure(figures)
    names = [d["name"] for d in fig["data"]]
    assert len(names) == 6 and "isr1, high-priority line second" in names
    second = fig["data"][1]                     # isr1, high-priority line second
    assert second["x"] == [0, 1500, 3000] and second["y"] == [2.0, 3.5, 5.0]
    assert second["error_y"]["array"] == [0.0, 1.5, 3.0]    # up to the max
    first = fig["data"][4]                      # isr1, high-priority line first
    assert first["x"] == [1500, 3000] and first["y"] == [3.5, 5.0]
    assert nested_figure({"yield": {"max_ns": 1.0}}) is None
