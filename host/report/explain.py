# SPDX-License-Identifier: BSD-2-Clause
"""The report's section "Why the slowest pulses were slow" (SoC-twin captures with a
recording beside them, docs/explain.md): per channel, a stacked bar of the categories
of each of the worst pulses, and the functions common to the worst 1 %."""

import html
import math
from collections import Counter, defaultdict

import numpy as np

from ...capture import load
from ...channels import channel_order
from ..analysis import missed_mask
from .figures import _AXIS, PALETTE, _layout

__all__ = ["explain_section", "stages_section", "culprits", "categories_figure", "WORST_BARS",
           "MAX_CULPRIT_PULSES"]

#: Bars per channel (the slowest pulses).
WORST_BARS = 5
#: The worst 1 % is explained up to this many pulses per channel.
MAX_CULPRIT_PULSES = 100


def categories_figure(name, items):
    """Stacked bars: one per explained pulse, one trace per category, in µs."""
    from ..explain import CATEGORIES
    x = [f"pulse {i.pulse}" for i in items]
    data = []
    for k, cat in enumerate(CATEGORIES):
        y = [i.explanation.ns(i.explanation.categories.get(cat, 0.0)) / 1000 for i in items]
        if any(y):
            data.append({"type": "bar", "name": cat, "x": x, "y": y,
                         "marker": {"color": PALETTE[k % len(PALETTE)]},
                         "hovertemplate": f"{html.escape(cat)}: %{{y:.3f}} µs<extra></extra>"})
    lay = _layout(380, f"{name.upper()}: where the slowest pulses' latency went", barmode="stack")
    lay["xaxis"] = {**_AXIS}
    lay["yaxis"] = {**_AXIS, "title": {"text": "µs from the STIM0 edge"}}
    return {"data": data, "layout": lay}


def culprits(items, top=8):
    """The functions that took time in most of ``items``: ``[(function, pulses, mean
    µs in the pulses where it ran)]``, the most frequent first."""
    seen, total = Counter(), defaultdict(float)
    for i in items:
        for fn, cycles in i.explanation.functions.items():
            if cycles > 0 and not fn.startswith("("):
                seen[fn] += 1
                total[fn] += i.explanation.ns(cycles) / 1000
    ranked = sorted(seen, key=lambda fn: (-seen[fn], -total[fn]))[:top]
    return [(fn, seen[fn], total[fn] / seen[fn]) for fn in ranked]


def explain_section(page, cap, table, elf):
    """Adds the section when ``cap`` has a recording beside it; nothing otherwise.
    ``elf``: the firmware's ELF, or ``"auto"`` for the build's ELF of the image the
    capture ran (:func:`rtrig.host.explain.capture.firmware_elf`)."""
    from ..explain.capture import default_recording, explain_capture, firmware_elf
    if (cap.meta.get("target") or {}).get("kind") != "soc" or elf is None:
        return
    if not default_recording(cap.path).exists():
        return
    page.add("<h3>Why the slowest pulses were slow</h3>")
    chosen = firmware_elf(cap.meta, elf)
    if chosen is None:
        page.add('<p class="note">No firmware ELF of the build makes the image this '
                 "capture ran: give it with --elf to explain its pulses.</p>")
        return
    page.add('<p class="note">From the SoC twin\'s recording of every instruction around '
             "each pulse (docs/explain.md): each pulse's latency split by what the CPU was "
             "doing; the functions that ran in most of the worst 1 % of pulses.</p>")
    full = load(cap.path)               # a scanned capture has no per-channel records
    names = sorted(full.channels(), key=channel_order)
    worst = {}
    for name in names:
        answered = int((~missed_mask(full.channel(name))).sum())
        worst[name] = min(MAX_CULPRIT_PULSES, max(WORST_BARS, math.ceil(0.01 * answered)))
    notes = []
    explained = explain_capture(cap.path, chosen, worst=worst, channels=names,
                                warn=notes.append)
    for note in notes:
        page.add(f'<p class="note">Warning: {html.escape(note)}.</p>')
    for name in names:
        items = [i for i in explained if i.channel == name]
        if not items:
            continue
        page.figure(categories_figure(name, items[:WORST_BARS]))
        rows = [[html.escape(fn), f"{k} of {len(items)}", f"{us:.3f}"]
                for fn, k, us in culprits(items)]
        page.add(f"<p>{name.upper()}: common culprits across the worst {len(items)} pulses</p>")
        page.add(table(["function", "in pulses", "mean µs there"], rows))


def stages_section(page, cap, table, stages):
    """A table of the time from the stimulus to each stage (``"marker1+,marker2+"``)."""
    from ..explain.stages import parse_stages, stage_times
    full = load(cap.path)
    if not full.meta.get("raw_events"):
        page.add('<p class="note">Stages: this capture has no raw events (--raw).</p>')
        return
    _, times = stage_times(full, parse_stages(stages))
    rows = []
    for name, ns in times.items():
        got = ns[~np.isnan(ns)] / 1000
        cells = ([f"{np.min(got):.3f}", f"{np.percentile(got, 50, method='inverted_cdf'):.3f}",
                  f"{np.percentile(got, 99, method='inverted_cdf'):.3f}", f"{np.max(got):.3f}"]
                 if len(got) else ["—"] * 4)
        rows.append([html.escape(name), f"{len(got)} of {len(ns)}", *cells])
    page.add("<h3>Stages, µs (stimulus rising edge → the first such edge after it)</h3>")
    page.add(table(["stage", "pulses", "min", "p50", "p99", "max"], rows))
