# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig explain``: why each slow pulse of a SoC-twin capture was slow
(docs/explain.md); a thin wrapper over :mod:`rtrig.host.explain`."""

from pathlib import Path

import click

from .options import CONTEXT

__all__ = ["explain"]


def _default_elf():
    from ...firmware import FIRMWARE_DIR
    return FIRMWARE_DIR / "build" / "rtrig-soc" / "rt_test.elf"


def _us(ex, cycles):
    return f"{ex.ns(cycles) / 1000:8.3f} µs"


def _print_pulse(item, top):
    ex = item.explanation
    click.echo(f"{item.channel} pulse {item.pulse}: {item.latency_ns / 1000:.3f} µs "
               f"({ex.latency_cycles:.1f} SoC cycles)")
    click.echo(f"  at the edge: {ex.edge_function} ({item.edge_line or '?'})")
    if ex.masked_by:
        click.echo(f"  interrupts masked for {ex.ns(ex.masked_before) / 1000:.3f} µs "
                   f"before the edge, by {ex.masked_by}")
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


@click.command(context_settings=CONTEXT, no_args_is_help=True)
@click.argument("capture", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--elf", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The firmware's ELF [default: the rt_test build's].")
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
def explain(capture, elf, recording, worst, pulses, channels, functions):
    """Explain the slowest pulses of a SoC-twin CAPTURE: where the CPU was at the
    STIM0 edge, how long interrupts had been masked and by which function, and the
    latency split into functions and categories, from the twin's recording of every
    retired instruction (run the capture with RTRIG_SOC_RECORD=CAPTURE.rec)."""
    from ..explain.capture import explain_capture
    items = explain_capture(capture, elf or _default_elf(), recording, worst,
                            list(pulses) or None, list(channels) or None)
    for item in items:
        _print_pulse(item, functions)
