# SPDX-License-Identifier: BSD-2-Clause
"""The suite's host side on data whose answer is known: the configuration block, the
TRACE framing, the cut into tests by MARKER2 and the self-timed comparison."""

import time

import numpy as np
import pytest

from rtrig.errors import LinkError, UsageError
from rtrig.host.procedures.suite import (
    IRQ_TESTS,
    ITERATION_DTYPE,
    MAGIC,
    TESTS,
    TRACE_BEGIN,
    TRACE_END,
    TRACE_RUN_END,
    iteration_figures,
    name_windows,
    parse_trace,
    part_offset,
    patch_config,
    rows_of,
    select_tests,
    split_tests,
)
from rtrig.protocol import EVENT_DTYPE, STIM_INPUT, Input


def test_patch_config_writes_the_words_after_the_magic():
    image = bytes(range(16)) + MAGIC + bytes(16) + b"tail"
    out = patch_config(image, 250, ("sem_wake", "yield"), pause_cycles=77)
    at = 16 + len(MAGIC)
    words = np.frombuffer(out[at:at + 16], dtype="<u4")
    assert list(words) == [250, 1 << 2 | 1 << 6, 77, 0]
    assert out[:at] == image[:at] and out[at + 16:] == b"tail" and len(out) == len(image)


def test_patch_config_refuses_an_image_without_the_block():
    with pytest.raises(UsageError, match="no suite configuration block"):
        patch_config(b"\0" * 64, 10, TESTS)


def test_select_tests_keeps_the_program_order():
    assert select_tests("yield,event_wake") == ("event_wake", "yield")
    assert select_tests(None) == TESTS
    with pytest.raises(UsageError, match="unknown suite test 'nope'"):
        select_tests("yield,nope")


def test_parse_trace_frames_tests_and_runs():
    words = [TRACE_BEGIN | 1 << 16 | 3, 10, 11, 12, TRACE_END | 3,
             TRACE_BEGIN | 7, 5, TRACE_END | 7, TRACE_RUN_END, TRACE_BEGIN | 1, 9,
             TRACE_END | 1, TRACE_RUN_END]
    runs = parse_trace(words)
    assert runs == [[{"index": 3, "loaded": True, "counts": [10, 11, 12]},
                     {"index": 7, "loaded": False, "counts": [5]}],
                    [{"index": 1, "loaded": False, "counts": [9]}]]


@pytest.mark.parametrize("words,words_in_error", [
    ([TRACE_BEGIN | 3, 5, TRACE_END | 4, TRACE_RUN_END], "END of test 4"),
    ([5, TRACE_RUN_END], "count 5 outside a test"),
    ([TRACE_BEGIN | 3, 5, TRACE_RUN_END], "ended inside test 3"),
    ([TRACE_BEGIN | 3, TRACE_BEGIN | 4], "BEGIN of test 4 inside test 3"),
    ([TRACE_BEGIN | 3, 5, TRACE_END | 3], "ends inside a run"),
])
def test_parse_trace_rejects_broken_framing(words, words_in_error):
    with pytest.raises(ValueError, match=words_in_error):
        parse_trace(words)


def _events(edges):
    """(t, input, rising) → EVENT records."""
    e = np.zeros(len(edges), dtype=EVENT_DTYPE)
    for k, (t, inp, rising) in enumerate(edges):
        e[k]["t"], e[k]["input"], e[k]["rising"] = t, inp, rising
    return e


M0, M1, M2 = Input.MARKER0, Input.MARKER1, Input.MARKER2


def test_split_tests_pairs_marker0_with_the_next_marker1_inside_marker2():
    ev = _events([
        (100, M2, 1), (110, M0, 1), (117, M1, 1), (120, M0, 1), (150, M0, 1), (153, M1, 1),
        (190, M1, 1),                 # a MARKER1 rise without a start is not an iteration
        (200, M2, 0),
        (250, M0, 1), (260, M1, 1),   # between tests: ignored
        (300, M2, 1), (310, M0, 1), (400, M2, 0)])
    out = split_tests(ev, ("a", "b", "c"))
    assert list(out) == ["a", "b"]
    assert [tuple(x) for x in out["a"]] == [(110, 7, False), (120, 0, True), (150, 3, False)]
    assert [tuple(x) for x in out["b"]] == [(310, 0, True)]


def _its(intervals, missed=None):
    its = np.zeros(len(intervals), dtype=ITERATION_DTYPE)
    its["start"] = np.arange(len(intervals)) * 1000
    its["interval"] = intervals
    if missed is not None:
        its["missed"] = missed
    return its


def test_figures_cold_apart_and_self_timed_agreement():
    # 100 MHz rig, 50 MHz CPU: a cycle is 2 ticks; offset 0.
    counts = [50, 20, 21, 20, 22]
    its = _its([100, 40, 43, 40, 44])                      # one tick off at iteration 2
    f = iteration_figures(its, 100e6, counts, cycle_ticks=2)
    assert f["count"] == 5 and f["cold_ns"] == 1000.0
    assert f["min_ns"] == 400.0 and f["max_ns"] == 440.0 and f["mean_ns"] == 417.5
    assert f["self_timed"] == {"agree": True, "max_diff_cycles": 0.5, "iterations": 5}
    assert f["weak"] == ["p99", "p9999"]
    its["interval"][3] = 46                                  # 3 cycles off
    f = iteration_figures(its, 100e6, counts, cycle_ticks=2)
    assert f["self_timed"]["agree"] is False and f["self_timed"]["max_diff_cycles"] == 3.0


def test_figures_a_missed_iteration_is_counted_not_timed():
    f = iteration_figures(_its([40, 40, 0, 44], [False, False, True, False]), 100e6)
    assert f["missed"] == 1 and f["max_ns"] == 440.0 and f["min_ns"] == 400.0


def test_figures_a_missing_count_is_disagreement():
    f = iteration_figures(_its([40, 40, 40]), 100e6, [20, 20], cycle_ticks=2)
    assert f["self_timed"]["agree"] is False


S0, S1 = STIM_INPUT[0], STIM_INPUT[1]


def test_split_tests_isr_to_ist_one_iteration_per_stim0_pulse():
    ev = _events([
        (100, M2, 1),
        (200, S0, 1), (230, M0, 1), (260, S0, 0), (290, M1, 1), (300, M0, 0), (301, M1, 0),
        (1200, S0, 1), (1250, M0, 1), (1260, S0, 0),    # no IST marker: missed
        (2200, S0, 1), (2211, M0, 1), (2240, M1, 1),
        (3000, M2, 0)])
    out = split_tests(ev, ("isr_to_ist",))
    assert list(out) == ["isr_to_ist.isr", "isr_to_ist.ist"]
    assert [tuple(x) for x in out["isr_to_ist.isr"]] == [
        (200, 30, False), (1200, 50, False), (2200, 11, False)]
    assert [tuple(x) for x in out["isr_to_ist.ist"]] == [
        (230, 60, False), (1250, 0, True), (2211, 29, False)]


def test_split_tests_nested_pair_latencies_and_both_serviced():
    # STIM1 300 ticks after STIM0; line 1 preempts line 0's ISR (MARKER1 inside
    # MARKER0) in the first iteration, and waits for it in the second.
    ev = _events([
        (100, M2, 1),
        (1000, S0, 1), (1040, M0, 1), (1300, S1, 1), (1325, M1, 1), (1500, S0, 0),
        (1600, S1, 0), (2325, M1, 0), (3040, M0, 0),
        (11000, S0, 1), (11050, M0, 1), (11300, S1, 1), (12050, M0, 0), (12100, M1, 1),
        (13100, M1, 0),
        (20000, M2, 0)])
    out = split_tests(ev, ("irq_nested_3000ns",))
    assert list(out) == ["irq_nested_3000ns." + p for p in ("isr0", "isr1", "both")]
    assert list(out["irq_nested_3000ns.isr0"]["interval"]) == [40, 50]
    assert list(out["irq_nested_3000ns.isr1"]["interval"]) == [25, 800]
    assert list(out["irq_nested_3000ns.both"]["interval"]) == [2040, 2100]
    assert not out["irq_nested_3000ns.both"]["missed"].any()


def test_interrupt_tests_rows_offsets_and_config_bits():
    assert rows_of("yield") == ("yield",)
    assert rows_of("irq_simultaneous") == tuple(
        f"irq_simultaneous.{p}" for p in ("isr0", "isr1", "both"))
    assert part_offset("isr_to_ist.ist") == 0 and part_offset("isr_to_ist.isr") == 7
    assert part_offset("yield") == 0
    # the program's indices (rtrig_suite.h): isr_to_ist 12, the nested tests 14..23
    assert TESTS.index("isr_to_ist") == 12 and TESTS.index("irq_simultaneous") == 13
    assert TESTS.index("irq_nested_1500ns") == 14
    assert TESTS.index("irq_nested_7500ns_high_first") == 23 and len(TESTS) == 24
    assert IRQ_TESTS["irq_nested_4500ns_high_first"] == 4500


def _traced(*indices, counts=(1, 2)):
    return [{"index": i, "loaded": False, "counts": list(counts)} for i in indices]


def test_windows_are_named_by_the_firmwares_begin_words_not_the_mask():
    # asked 1, 3 (the mask has no order); the firmware ran 3, then 1
    order, mismatch, error = name_windows(_traced(3, 1), 2, ("sem_uncontended",
                                                              "mutex_uncontended"))
    assert order == ["mutex_uncontended", "sem_uncontended"]
    assert mismatch == {} and error is None


def test_what_ran_and_what_was_asked_differ_per_test_never_renamed():
    order, mismatch, error = name_windows(_traced(2, 5, 99, 5), 4,
                                          ("event_wake", "sem_wake"))
    assert order == ["sem_wake", "critical_section", None, None]
    assert mismatch == {
        "critical_section": "firmware ran critical_section 2 times; the first is kept",
        "test 99": "firmware ran test 99, which the suite does not have (0..23)",
        "event_wake": "event_wake asked for, never begun"}
    assert error is None
    order, mismatch, _ = name_windows(_traced(6), 1, ("event_wake", "sem_wake"))
    assert order == ["yield"] and mismatch["yield"] == "firmware ran yield, not asked for"


def test_windows_are_not_named_when_the_trace_and_the_rig_disagree_on_their_number():
    order, mismatch, error = name_windows(_traced(3, 1), 3, ("sem_uncontended",))
    assert order == [None, None, None]
    assert "frame 2 tests, the rig saw 3 MARKER2 windows" in error
    assert mismatch == {"mutex_uncontended": "firmware ran mutex_uncontended, not asked for"}


def test_without_trace_words_the_windows_follow_the_given_order():
    order, mismatch, error = name_windows(None, 1, ("yield", "sem_wake"))
    assert order == ["yield"] and error is None
    assert mismatch == {"sem_wake": "sem_wake asked for, never begun"}
    order, mismatch, _ = name_windows(None, 2, ("yield",))
    assert order == ["yield", None] and "window 1" in mismatch
    assert select_tests("yield,event_wake", keep_order=True) == ("yield", "event_wake")


def test_split_tests_leaves_an_unnamed_window_out():
    ev = _events([(100, M2, 1), (110, M0, 1), (117, M1, 1), (200, M2, 0),
                  (300, M2, 1), (310, M0, 1), (312, M1, 1), (400, M2, 0)])
    out = split_tests(ev, (None, "b"))
    assert list(out) == ["b"] and [tuple(x) for x in out["b"]] == [(310, 2, False)]


def _stall(tmp_path, words, begun, ended, last_edge, tests=("isr_to_ist", "yield")):
    from rtrig.host.procedures.suite.run import _SuiteEvents
    from rtrig.host.procedures.suite.stall import _stalled
    from rtrig.host.procedures.suite.trace import _Trace
    path = tmp_path / "trace.txt"
    path.write_text("")
    trace = _Trace(path)                        # the words before are an earlier run's
    path.write_text("".join(f"{w}\n" for w in words))
    ev = _SuiteEvents(None, None, tests, 10, "soc", False, trace)
    ev.begun, ev.ended, ev.last_edge = begun, ended, last_edge
    return _stalled(ev, 100e6, 120)


def test_a_stall_names_the_last_trace_word_and_marker_edge_with_their_test(tmp_path):
    err = _stall(tmp_path, [TRACE_BEGIN | 12, 40, 500], 1, 0, (int(M0), 1, 2_000_000))
    assert "0 of 2 suite tests ended" in str(err)
    assert "last TRACE word 500 (a count of isr_to_ist)" in str(err)
    assert "last marker edge MARKER0 rising at 20 ms, inside window 0 (isr_to_ist)" in str(err)
    assert "a pulse the firmware missed" in err.hint
    err = _stall(tmp_path, [TRACE_BEGIN | 6, 40, TRACE_END | 6], 1, 1, (int(M2), 0, 5))
    assert "last TRACE word 0x5EFF0006 (END of yield)" in str(err)
    assert "after window 0 (yield)" in str(err)
    assert "0x5EFFFFFF (end of the run) after its last test" in err.hint


def test_figures_carry_percentile_bounds_at_the_binomial_ranks():
    """Each suite percentile has the 95 % bounds of rtrig.host.bounds: the warm
    iterations (the cold first one apart) at the ranks rank_bounds names."""
    from rtrig.host.bounds import max_exceedance, rank_bounds
    rng = np.random.default_rng(4)
    intervals = rng.integers(300, 900, 2001)
    f = iteration_figures(_its(intervals), 100e6)
    warm = np.sort(intervals[1:]) * 10.0                   # ns at 100 MHz
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        lo, hi = rank_bounds(2000, q)
        assert (f[f"{name}_lo_ns"], f[f"{name}_hi_ns"]) == (warm[lo], warm[hi])
        assert f[f"{name}_lo_ns"] <= f[f"{name}_ns"] <= f[f"{name}_hi_ns"]
    assert f["p9999_hi_ns"] is None                         # 2000 iterations cannot bound it
    assert f["max_exceedance"] == max_exceedance(2000)
    empty = iteration_figures(_its([40]), 100e6)            # only the cold iteration
    assert empty["p50_lo_ns"] is None and empty["max_exceedance"] is None


class _SlowTwin:
    """A rig whose clock runs ``ticks_per_call`` per read: a twin on a loaded machine."""

    tick_hz = 100_000_000

    def __init__(self, ticks_per_call, queued=0):
        self.t, self.step, self.runs = 0, ticks_per_call, 0
        self.queued = queued        # events the rig has made that have not come yet

    def run(self):
        self.runs += 1

    def all_records_in(self, latency, events=None):
        return self.queued == 0

    def running(self):
        return False

    def receive(self, wait=0.0):
        time.sleep(wait)
        return False

    def time(self):
        self.t += self.step
        return self.t


class _NoTestYet:
    begun = ended = 0
    last_edge, tests = None, ("isr_to_ist",)

    class trace:
        path = None

        @staticmethod
        def run():
            return []

        @staticmethod
        def begins():
            return []

        @staticmethod
        def ended():
            return False

    def take(self):
        pass

    def count(self):
        return 0

    def drive(self):
        pass

    def done(self):
        return False


@pytest.mark.parametrize("ticks_per_call,repeated", [(1_000, False), (1_000_000, True)])
def test_the_go_pulse_is_repeated_on_the_rigs_clock_not_the_hosts(monkeypatch, ticks_per_call,
                                                                 repeated):
    # A twin that has run 1000 ticks per poll has had no time to begin its first test:
    # the go pulse is not repeated into its set-up, however long the host has waited.
    # A rig whose clock moves on (a board, in real time) gets it again.
    from rtrig.host.procedures.suite import run as suite_mod
    monkeypatch.setattr(suite_mod, "_GO_RETRY_S", 0.0)
    rig = _SlowTwin(ticks_per_call)
    with pytest.raises(LinkError, match="the target stopped"):
        suite_mod._await_suite_end(rig, _NoTestYet(), type("Bar", (), {"update": print}), 0.3)
    assert (rig.runs > 2) == repeated and rig.runs >= 1


def test_no_go_pulse_while_the_rigs_events_are_still_coming(monkeypatch):
    # A host that fell seconds behind a twin reads the rig's clock far on while the
    # run's first MARKER2 rise still waits in the rig's queue: a go pulse repeated then
    # started a second run after the first (a clean-clone CI run, under load).
    from rtrig.host.procedures.suite import run as suite_mod
    monkeypatch.setattr(suite_mod, "_GO_RETRY_S", 0.0)
    rig = _SlowTwin(1_000_000, queued=1)
    with pytest.raises(LinkError, match="the target stopped"):
        suite_mod._await_suite_end(rig, _NoTestYet(), type("Bar", (), {"update": print}), 0.3)
    assert rig.runs == 1


@pytest.mark.parametrize("baud", [3_000_000, 7_500_000, 25_000_000])
def test_the_suite_paces_its_edges_to_the_link(baud):
    # A run whose marker edges outran the link lost events in the rig, and a test whose
    # MARKER2 fall was lost never ended (the full suite stopped in the interrupt tests
    # at 10 kHz on the boards' 7.5 Mbaud twin link).
    from rtrig.host.procedures.suite import IRQ_FREQ, irq_freq, pause_cycles
    from rtrig.host.procedures.suite.catalog import (
        EDGES_PER_IRQ_ITERATION,
        EDGES_PER_ITERATION,
        link_events_per_s,
    )
    carried = link_events_per_s(baud)
    assert carried == pytest.approx(baud / 130)        # 13 bytes a packet, 8N1
    f = irq_freq(baud)
    assert 0 < f <= IRQ_FREQ and f * EDGES_PER_IRQ_ITERATION < carried
    assert f == IRQ_FREQ or f * EDGES_PER_IRQ_ITERATION > 0.7 * carried
    cycles = pause_cycles(baud, 50_000_000)
    assert cycles >= 1000
    assert EDGES_PER_ITERATION / (cycles / 50e6) < carried
    assert (irq_freq(3_000_000), irq_freq(25_000_000)) == (2300, IRQ_FREQ)
