# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig capture``: one pulse train, every response latency (or on-chip statistics)."""

import json

import click

from ...errors import UsageError
from ...units import format_ns
from ..model.params import target_model
from .options import (
    CONTEXT,
    DURATION,
    FREQUENCY,
    counter_lines,
    default_path,
    rig_options,
    target_options,
    warn_counters,
)

__all__ = ["capture"]


@click.command(context_settings=CONTEXT)
@rig_options
@target_options(["external", "loopback", "model", "soc"], None,
                "Channels: isr, app, or intervals between two edges START..END "
                "(e.g. isr,marker0+..marker0-; sources isr, app, heartbeat, marker0..2, "
                "stim0, stim1; + rising, - falling).", "capture",
                "No progress on stderr.")
@click.option("--freq", type=FREQUENCY, default="1k", show_default=True,
              help="Stimulus frequency (e.g. 5k, 127kHz).")
@click.option("--count", type=int, default=None, help="Pulses to send [default: 1000].")
@click.option("--duration", type=DURATION, default=None,
              help="Capture length instead of --count (e.g. 200ms).")
@click.option("--duty", type=float, default=0.5, show_default=True,
              help="Stimulus high fraction, 0 < duty < 1.")
@click.option("--jitter", type=DURATION, default="0", show_default=True,
              help="Extra random delay per period, uniform 0..J (avoids phase lock).")
@click.option("--delay", type=DURATION, default="0", show_default=True,
              help="Loopback target: echo delay.")
@click.option("--stim1-offset", type=DURATION, default=None,
              help="Also drive STIM1, this long after each STIM0 rising edge.")
@click.option("--burst", type=click.IntRange(1), default=None,
              help="Bursts of N pulses at --freq, each followed by --gap.")
@click.option("--gap", type=DURATION, default=None,
              help="With --burst: rise to rise from a burst's last pulse to the next's first.")
@click.option("--timeout", type=DURATION, default=None,
              help="Response window (default: until the next stimulus).")
@click.option("--raw", is_flag=True, help="Also record raw edge events.")
@click.option("--truth", is_flag=True, help="Model target: also record its true latencies.")
@click.option("--mode", type=click.Choice(["auto", "records", "statistics"]), default="auto",
              show_default=True,
              help="records: every pulse over the link; statistics: on-chip histograms "
                   "(any rate); auto: records when the link keeps up.")
@click.option("--bin-shift", type=click.IntRange(0, 20), default=None,
              help="Statistics mode: histogram bin width 2^N ticks [default: automatic].")
def capture(obj, target, model_text, preset, load, channels, output, as_json, quiet,
            firmware, console, freq, count, duration, duty, jitter, delay, stim1_offset, burst,
            gap, timeout, raw, truth, mode, bin_shift):
    """Send stimulus pulses and record every response latency."""
    obj.use_target(target, firmware, console)
    from ..procedures.measure import measure
    from ..procedures.settings import CaptureSettings, default_channels, parse_channels
    if count is not None and duration is not None:
        raise UsageError("give --count or --duration, not both")
    if count is None and duration is None:
        count = 1000
    model = target_model(target, preset, model_text)
    if channels is None:
        chans = default_channels(target, model)
    else:
        chans = parse_channels(channels)
        if model is not None and not model.get("app", True):
            chans = tuple(c for c in chans if c != "app")
    settings = CaptureSettings(freq=freq, count=count, duration=duration, duty=duty,
                               jitter=jitter, channels=chans, target=target, delay=delay,
                               model=model, preset=preset, load=load, timeout=timeout,
                               raw_events=raw, truth=truth,
                               stim1_offset=stim1_offset, burst=burst or 0, gap=gap)
    path = output or default_path("capture")
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
