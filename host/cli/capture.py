# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig capture``: one pulse train, every response latency (or on-chip statistics)."""

import json

import click

from ...units import format_ns
from .options import (
    CONTEXT,
    capture_path,
    counter_lines,
    measurement_options,
    rig_options,
    run_options,
    warn_counters,
)

__all__ = ["capture"]


@click.command(context_settings=CONTEXT)
@rig_options
@measurement_options("capture", "target")
@run_options("capture", "No progress on stderr.")
@measurement_options("capture", "measurement")
def capture(obj, output, as_json, quiet, firmware, console, mode, bin_shift, **options):
    """Send stimulus pulses and record every response latency."""
    obj.use_target(options["target"], firmware, console)
    from ..procedures.measure import measure
    from ..procedures.options import capture_settings
    settings = capture_settings(**options)
    path = capture_path(output, "capture")
    with obj.rig() as rig:
        regs = settings.ticks(rig.tick_hz, rig.stim_step)   # validate before anything runs
        note = _step_note(settings, rig.tick_hz, rig.stim_step, regs)
        if note:
            click.echo(note, err=True)
        res = measure(rig, settings, path, mode=mode, bin_shift=bin_shift,
                      progress=not quiet, log=lambda m: click.echo(m, err=True))
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        print_summary(res)
    warn_counters(res.link)


#: Stimulus settings a stimulus step rounds: register key, name.
_STEPPED = (("period", "period"), ("high", "high time"), ("jitter", "jitter"),
            ("delay", "loopback delay"), ("stim1_offset", "STIM1 offset"))


def _step_note(settings, tick_hz, step, regs):
    """A one-line note naming the settings rounded to the rig's stimulus step (beyond
    the rounding to whole ticks), or None."""
    if step == 1:
        return None
    fine = settings.ticks(tick_hz, 1)
    ns = 1e9 / tick_hz
    moved = [f"{name} {fine[k] * ns:.6g} → {regs[k] * ns:.6g} ns" for k, name in _STEPPED
             if fine[k] is not None and fine[k] != regs[k]]
    if not moved:
        return None
    return (f"note: this rig's stimulus moves in steps of {step} ticks ({step * ns:.6g} ns): "
            + ", ".join(moved))


def print_summary(res):
    s = res.summary
    cols = ["pulses", "answered", "missed", "min_ns", "mean_ns", "p50_ns", "p99_ns",
            "p999_ns", "max_ns", "jitter_ns"]
    heads = ["pulses", "answered", "missed", "min", "mean", "p50", "p99", "p99.9", "max",
             "jitter"]
    w = max([8, *(len(n) + 1 for n in s)])
    click.echo(f"{'channel':{w}}" + "".join(f"{h:>11}" for h in heads))
    for name, st in s.items():
        row = []
        for c in cols:
            v = st[c]
            row.append(str(v) if c in ("pulses", "answered", "missed") else format_ns(v))
        click.echo(f"{name:{w}}" + "".join(f"{v:>11}" for v in row))
    for line in counter_lines(res.link):
        click.echo(line)
    click.echo(f"capture: {res.path} ({res.final['status']})")
