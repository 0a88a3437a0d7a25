# SPDX-License-Identifier: BSD-2-Clause
"""A suite run that stopped: what was last seen (the last TRACE word, the last marker
edge, each with its test) and what that asks of the firmware, as one error."""

from ....errors import LinkError
from ....protocol import Input
from ....units import format_s
from .catalog import IRQ_TESTS
from .trace import _describe_word

_MARKERS = {Input.MARKER0: "MARKER0", Input.MARKER1: "MARKER1", Input.MARKER2: "MARKER2"}


def _stalled(events, tick_hz, stall_s):
    """The :class:`LinkError` of a run that stopped: what was last seen (the last TRACE
    word and the last marker edge, each with its test) and what that asks of the
    firmware."""
    traced = events.trace.path is not None
    words, begins = events.trace.run(), events.trace.begins()
    k = events.begun - 1
    name = events.window_name(k) if k >= 0 else None
    inside = events.begun > events.ended
    if events.last_edge is None:
        edge = "no marker edge since the go pulse"
    else:
        inp, rising, t = events.last_edge
        edge = (f"last marker edge {_MARKERS.get(inp, inp)} {'rising' if rising else 'falling'}"
                f" at {format_s(t / tick_hz)}, "
                + (f"inside window {k} ({name or 'unnamed'})" if inside
                   else f"after window {k} ({name or 'unnamed'})" if k >= 0
                   else "before any MARKER2 window"))
    word = ("no TRACE word since the go pulse" if not words
            else f"last TRACE word {_describe_word(words[-1], begins)}")
    asked = len(begins) if traced and events.trace.ended() else len(events.tests)
    msg = (f"the target stopped: {events.ended} of {asked} suite tests ended, no test "
           f"began or ended for {format_s(stall_s)}; "
           + (f"{word}; " if traced else "") + edge)
    if events.begun == 0 and (not traced or not words):
        hint = ("after the go pulse (one STIM0 rising edge: the interrupt block's PENDING "
                "bit 0) the firmware must frame each test: TRACE BEGIN (0x5E000000 | "
                "index), then MARKER2 high around its iterations (docs/suite.md, "
                "\"Timing your own firmware\")")
        if not traced:
            hint = "no MARKER2 window began: " + hint.replace("TRACE BEGIN (0x5E000000 | "
                                                              "index), then ", "")
    elif inside:
        hint = (f"{name or 'the test'} is still running (MARKER2 high): "
                + ("an interrupt test ends after one pulse per iteration; a pulse the "
                   "firmware missed stalls it" if name in IRQ_TESTS
                   else "it lowers MARKER2 after its last iteration"))
    elif traced and not events.trace.ended():
        hint = ("the firmware must write TRACE 0x5EFFFFFF (end of the run) after its last "
                "test (docs/suite.md, \"Timing your own firmware\")")
    elif traced:
        hint = (f"the firmware framed {len(begins)} tests in TRACE words, the rig saw "
                f"{events.begun} MARKER2 windows: each BEGIN word needs its MARKER2 window")
    else:
        hint = ("without TRACE words the rig expects one MARKER2 window per test of --tests, "
                "in that order")
    return LinkError(msg, hint=hint)
