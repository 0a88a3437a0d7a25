# SPDX-License-Identifier: BSD-2-Clause
"""The kernel suite timed by the rig: every iteration of every test, from outside.

The target runs the ``suite`` program (``firmware/apps/suite``; the marker protocol in
docs/suite.md): per test, MARKER2 is high around its iterations; per iteration,
MARKER0 rises as the timed operation starts and MARKER1 as it completes. The rig
timestamps those edges (raw events, to the rig's tick: 8.33 ns on the ECP5 boards) and the host pairs each
MARKER0 rise with the MARKER1 rise after it: one interval per iteration, cut into
tests by MARKER2. On the SoC twin the program also frames each test with TRACE words
(BEGIN with the test's index, its counts, END) and counts each iteration itself
(``mcycle``): a MARKER2 window is the test its BEGIN word names, whatever the order or
subset the program runs, and the counts are compared with the rig's figure iteration
by iteration. Without TRACE words (a real target) the windows are the tests of
``--tests``, in the order given.

Two events per iteration go over the link, so the iterations must be far enough apart
for it (docs/suite.md); an event the rig could not queue is counted
(``EVT_OVERFLOW``) and makes the run incomplete, never silently wrong.

One STIM0 pulse starts the run (the program waits for it), so a rig on a real board
runs the suite the same way on a firmware that follows docs/suite.md.

The package's rooms: ``catalog`` (the tests and their rows), ``firmware`` (the
configuration block, the program's ready), ``trace`` (TRACE words), ``windows``
(marker edges to iterations), ``figures`` (a test's figures), ``run`` (one run on a
rig) and ``stall`` (why a run stopped).
"""

from .catalog import (
    IRQ_FREQ,
    IRQ_JITTER_S,
    IRQ_TESTS,
    ITERATION_DTYPE,
    NESTED_OFFSETS_NS,
    STIM_FIXED_CYCLES,
    TESTS,
    index_name,
    irq_freq,
    part_offset,
    pause_cycles,
    rows_of,
    select_tests,
)
from .figures import iteration_figures
from .firmware import MAGIC, patch_config, wait_ready
from .run import SuiteResult, run_suite
from .trace import TRACE_BEGIN, TRACE_END, TRACE_RUN_END, parse_trace
from .windows import name_windows, split_tests

__all__ = ["TESTS", "IRQ_TESTS", "NESTED_OFFSETS_NS", "IRQ_FREQ", "irq_freq", "pause_cycles",
           "IRQ_JITTER_S",
           "STIM_FIXED_CYCLES", "MAGIC", "rows_of", "part_offset", "patch_config",
           "parse_trace", "wait_ready", "select_tests", "run_suite", "name_windows",
           "index_name", "split_tests", "iteration_figures", "SuiteResult", "ITERATION_DTYPE",
           "TRACE_BEGIN", "TRACE_END", "TRACE_RUN_END"]
