# SPDX-License-Identifier: BSD-2-Clause
"""One pulse's latency, from the STIM0 edge to the response, split over what the CPU
executed: the time between two retired instructions is charged to the second (the one
the pipeline was busy with), and each span gets the function of its instruction and a
category from the CPU's state then (docs/explain.md, "Categories")."""

from collections import defaultdict
from dataclasses import dataclass, field

from .recording import FLAG_EXC, FLAG_MIE, FLAG_TRAP, SOC_HZ

__all__ = ["CATEGORIES", "PulseExplanation", "explain_pulse", "MRET", "EXTERNAL_IRQ",
           "TIMER_IRQ"]

#: The categories, in the order of the stacked bars.
CATEGORIES = ("masked", "entry", "other interrupt", "kernel tick", "scheduler", "handler",
              "application", "unrecorded")
MRET = 0x3020_0073        #: the ``mret`` instruction word
EXTERNAL_IRQ = 11         #: machine external interrupt (STIM0's line)
TIMER_IRQ = 7             #: machine timer interrupt (the kernel tick)
SCHEDULER_FILES = ("kernel/sched.c",)
#: The scheduler's code outside those files: a thread's own switch, called (not
#: trapped into) from the kernel's yield and block (arch/riscv32/trap.S).
SCHEDULER_FUNCTIONS = ("riscv_switch_thread",)


@dataclass
class PulseExplanation:
    """Where one pulse's latency went, in SoC cycles (``cycles``) from the edge."""
    latency_cycles: float
    edge_pc: int = 0
    edge_function: str = "?"
    masked_before: float = 0.0       # how long interrupts had been off at the edge
    masked_by: str = ""              # the function that turned them off (at the edge,
    #                                  or after it, before the interrupt was taken)
    trap_at: float = None            # the STIM0 interrupt's trap entry
    categories: dict = field(default_factory=lambda: defaultdict(float))
    functions: dict = field(default_factory=lambda: defaultdict(float))
    segments: list = field(default_factory=list)   # [start, end, function, category]

    def ns(self, cycles):
        return cycles * 1e9 / SOC_HZ


class _State:
    """The CPU's state while walking a window: interrupt enable, trap nesting."""

    def __init__(self):
        self.mie = True
        self.stack = []          # trap contexts: "ours", "timer", "exception", "other"
        self.ours_taken = False

    def category(self, file, function=""):
        top = self.stack[-1] if self.stack else None
        if top == "timer":
            return "kernel tick"
        if top == "exception" or file in SCHEDULER_FILES or function in SCHEDULER_FUNCTIONS:
            return "scheduler" if top != "other" else "other interrupt"
        if top == "other":
            return "other interrupt"
        if top == "ours":
            return "handler"
        if not self.ours_taken:
            return "masked" if not self.mie else "entry"
        return "application"

    def trap(self, flags, t, edge_t):
        code = (flags >> 8) & 15
        if flags & FLAG_EXC:
            kind = "exception"
        elif code == TIMER_IRQ:
            kind = "timer"
        elif code == EXTERNAL_IRQ and t >= edge_t and not self.ours_taken:
            kind, self.ours_taken = "ours", True
        else:
            kind = "other"
        self.stack.append(kind)
        self.mie = False
        return kind


def _charge(ex, start, end, edge_t, resp_t, function, category):
    lo, hi = max(start, edge_t), min(end, resp_t)
    if hi <= lo:
        return
    d = hi - lo
    ex.categories[category] += d
    ex.functions[function] += d
    seg = ex.segments[-1] if ex.segments else None
    if seg and seg[2] == function and seg[3] == category and seg[1] == lo - edge_t:
        seg[1] = hi - edge_t
    else:
        ex.segments.append([lo - edge_t, hi - edge_t, function, category])


def explain_pulse(entries, edge_index, latency_cycles, symbols):
    """Split ``latency_cycles`` (SoC cycles from the edge) over ``entries`` (a window
    of the recording, :meth:`Recording.window`; ``edge_index`` its edge's position)."""
    edge_t = float(entries["t"][edge_index])
    resp_t = edge_t + latency_cycles
    ex = PulseExplanation(latency_cycles)
    st = _State()
    masked_from, masked_fn = float(entries["t"][0]), "?"
    prev_t = float(entries["t"][0])
    for i, e in enumerate(entries):
        if i == edge_index:
            continue
        t, flags, pc = float(e["t"]), int(e["flags"]), int(e["pc"])
        if flags & FLAG_TRAP:
            label = "(trap entry)"
            cat = st.category("")
            _charge(ex, prev_t, t, edge_t, resp_t, label, cat)
            kind = st.trap(flags, t, edge_t)
            if kind == "ours":
                ex.trap_at = t - edge_t
        else:
            fn = symbols.function(pc)
            if i > edge_index and ex.edge_function == "?":
                ex.edge_pc, ex.edge_function = pc, fn
            _charge(ex, prev_t, t, edge_t, resp_t, fn, st.category(symbols.file_of(fn), fn))
            mie = bool(flags & FLAG_MIE)
            if e["aux"] == MRET and st.stack:
                st.stack.pop()
            elif not st.stack and st.mie and not mie:
                masked_from, masked_fn = t, fn
                if i > edge_index and ex.trap_at is None and not ex.masked_by:
                    # masked after the edge, before its interrupt reached the CPU
                    ex.masked_by = fn
            st.mie = mie
        if i < edge_index:
            ex.masked_before = 0.0 if st.mie or st.stack else edge_t - masked_from
            ex.masked_by = "" if st.mie or st.stack else masked_fn
        prev_t = t
        if t >= resp_t:
            break
    if prev_t < resp_t:
        _charge(ex, prev_t, resp_t, edge_t, resp_t, "?", "unrecorded")
    return ex
