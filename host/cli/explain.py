# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig explain``: why each slow pulse of a SoC-twin capture was slow
(docs/explain.md); a thin wrapper over :mod:`rtrig.host.explain`."""

from pathlib import Path

import click
import numpy as np

from .options import CONTEXT

__all__ = ["explain"]


def _us(ex, cycles):
    return f"{ex.ns(cycles) / 1000:8.3f} µs"


def _print_pulse(item, top):
    ex = item.explanation
    click.echo(f"{item.channel} pulse {item.pulse}: {item.latency_ns / 1000:.3f} µs "
               f"({ex.latency_cycles:.1f} SoC cycles)")
    click.echo(f"  at the edge: {ex.edge_function} ({item.edge_line or '?'})")
    if ex.masked_by and ex.masked_before:
        click.echo(f"  interrupts masked for {ex.ns(ex.masked_before) / 1000:.3f} µs "
                   f"before the edge, by {ex.masked_by}")
    elif ex.masked_by:
        click.echo(f"  interrupts masked just after the edge, before its interrupt reached "
                   f"the CPU, by {ex.masked_by}")
    if ex.trap_at is not None:
        click.echo(f"  trap entry at +{ex.ns(ex.trap_at) / 1000:.3f} µs")
    click.echo("  timeline:")
    for start, end, fn, cat in ex.segments:
        click.echo(f"    +{_us(ex, start)} … +{_us(ex, end)}  {cat:<15} {fn}")
    from ..explain import CATEGORIES
    click.echo("  categories: " + ", ".join(
        f"{c} {ex.ns(ex.categories[c]) / 1000:.3f} µs" for c in CATEGORIES
        if ex.categories.get(c)))
    worst = sorted(ex.functions.items(), key=lambda kv: -kv[1])[:top]
    click.echo("  functions: " + ", ".join(f"{fn} {ex.ns(c) / 1000:.3f} µs"
                                           for fn, c in worst))


def _print_stage_line(times, pulse):
    pulses, by_stage = times
    i = int(np.searchsorted(pulses, pulse))
    if i >= len(pulses) or pulses[i] != pulse:
        return
    click.echo("  stages: " + ", ".join(
        f"{name} " + ("—" if np.isnan(v[i]) else f"+{v[i] / 1000:.3f} µs")
        for name, v in by_stage.items()))


def _print_stages_only(cap, times, worst, pulses, channels):
    """Without a recording: the stages of each channel's slowest pulses."""
    from ..explain.capture import worst_pulses
    for ch in channels or cap.channels():
        recs = cap.channel(ch)
        for p in (pulses or worst_pulses(recs, worst)):
            row = recs[recs["pulse"] == p]
            if len(row):
                lat = float(row["latency"][0]) * 1e9 / cap.tick_hz
                click.echo(f"{ch} pulse {p}: {lat / 1000:.3f} µs")
                _print_stage_line(times, p)


@click.command(context_settings=CONTEXT, no_args_is_help=True)
@click.argument("capture", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--elf", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The firmware's ELF [default: the build's ELF of "
                                 "the image the capture ran].")
@click.option("--recording", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The SoC twin's recording [default: CAPTURE with .rec].")
@click.option("--worst", "-n", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many of each channel's slowest pulses to explain.")
@click.option("--pulse", "pulses", type=click.IntRange(min=0), multiple=True,
              help="Explain this pulse (repeatable) instead of the slowest.")
@click.option("--channel", "channels", multiple=True,
              help="Only this channel (repeatable) [default: every channel].")
@click.option("--functions", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many functions to list per pulse, longest first.")
@click.option("--stages", default=None, metavar="EDGES",
              help="Marker edges as stages, e.g. marker1+,marker2+: per pulse the time "
                   "from the stimulus to each (a capture with --raw; any target).")
def explain(capture, elf, recording, worst, pulses, channels, functions, stages):
    """Explain the slowest pulses of a SoC-twin CAPTURE: where the CPU was at the
    STIM0 edge, how long interrupts had been masked and by which function, and the
    latency split into functions and categories, from the twin's recording of every
    retired instruction (run the capture with RTRIG_SOC_RECORD=CAPTURE.rec)."""
    from ...capture import load
    from ..explain.capture import AUTO_ELF, default_recording, explain_capture
    from ..explain.stages import parse_stages, stage_times
    spec = parse_stages(stages) if stages is not None else None
    cap = load(capture)
    times = stage_times(cap, spec) if spec else None
    recorded = (recording or default_recording(capture)).exists()
    if spec and (not recorded or (cap.meta.get("target") or {}).get("kind") != "soc"):
        _print_stages_only(cap, times, worst, list(pulses) or None, list(channels) or None)
        return
    items = explain_capture(capture, elf or AUTO_ELF, recording, worst,
                            list(pulses) or None, list(channels) or None,
                            warn=lambda m: click.echo(f"warning: {m}", err=True))
    for item in items:
        _print_pulse(item, functions)
        if times is not None:
            _print_stage_line(times, item.pulse)
