# SPDX-License-Identifier: BSD-2-Clause
"""The report's section "What a closed-loop tool would have said": the figures of
:func:`rtrig.host.closed_loop.closed_loop` beside the capture's own, one table per
capture (docs/report.md)."""

import html

from ..closed_loop import closed_loop

__all__ = ["TITLE", "closed_loop_section"]

TITLE = "What a closed-loop tool would have said"

_HEADS = ["channel", "", "pulses", "answered", "timeouts / missed", "min", "p50", "p99",
          "max", "mean", "slow pulses never sampled"]


def _us(ns):
    return "—" if ns is None else f"{ns / 1000:.4g}"


def _diff(ns):
    return "—" if ns is None else f"{ns / 1000:+.4g}"


def _rows(channels):
    rows = []
    for name, c in channels.items():
        o = c["open_loop"]
        slow = "—"
        if c["slow_pulses"]:
            never = c["slow_pulses"] - c["slow_sampled"]
            slow = (f"{never} of {c['slow_pulses']} ({100 * c['slow_unsampled_fraction']:.3g} %)"
                    f'<br><span class="ci">at or above the rig\'s p99, {_us(c["slow_from_ns"])}'
                    "</span>")
        label = html.escape(name.upper())
        rows.append([label, "closed-loop tool", c["pulses"], c["samples"], c["timeouts"],
                     *(_us(c[k]) for k in ("min_ns", "p50_ns", "p99_ns", "max_ns", "mean_ns")),
                     slow])
        rows.append([label, "rig (open loop)", o["pulses"], o["answered"], o["missed"],
                     *(_us(o[k]) for k in ("min_ns", "p50_ns", "p99_ns", "max_ns", "mean_ns")),
                     ""])
        rows.append([label, "tool − rig", "", "", "", "",
                     *(_diff(c[f"{k}_difference_ns"]) for k in ("p50", "p99", "max", "mean")),
                     ""])
    return rows


def closed_loop_section(page, cap, table):
    """Add the section of ``cap`` (loaded or scanned) to ``page``; ``table(heads,
    rows)`` makes an HTML table."""
    page.add(f"<h3>{TITLE}</h3>")
    result = closed_loop(cap)
    if not result["available"]:
        page.add(f'<p class="note">{html.escape(result["reason"])}.</p>')
        return
    page.add(table(_HEADS, _rows(result["channels"])))
    page.add('<p class="note">A closed-loop tool (one pulse in flight, latmon style) sends '
             "its next pulse only after the answer to the previous one, or after its "
             f"timeout ({result['timeout_ns'] / 1e6:g} ms). Emulated on this capture, per "
             "channel: its first pulse is the capture's first, each next one the first "
             "captured pulse at or after the previous one's answer (or its stimulus edge + "
             "the timeout, when it was missed or answered later); such a pulse is one of "
             "its timeouts, not a sample. During a slow stretch it sends few pulses, so it "
             "under-samples the slow pulses (coordinated omission). Latencies in µs. The "
             "target's state is the open-loop capture's (the tool's fewer pulses would "
             "have loaded it less): this shows the sampling bias only.</p>")
