# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig capture``: one pulse train, every response latency (or on-chip statistics)."""

import dataclasses
import json

import click

from ...units import format_ns
from ..rhythm import describe
from .history import recording
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
@recording
@rig_options
@measurement_options("capture", "target")
@run_options("capture", "No progress on stderr.")
@measurement_options("capture", "measurement")
@click.option("--replay", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Run the capture of FILE again, with the settings it recorded (the "
                   "options above are not used); on the twin its records come again.")
def capture(obj, output, as_json, quiet, firmware, console, mode, bin_shift, replay,
            **options):
    """Send stimulus pulses and record every response latency."""
    from ..procedures.measure import measure
    from ..procedures.options import capture_settings
    from ..procedures.replay import check_replay_rig, replay_settings
    if replay is not None:
        settings, mode, bin_shift, recorded = replay_settings(replay)
    else:
        settings = None
    obj.use_target(settings.target if settings else options["target"], firmware, console)
    if settings is None:
        settings = capture_settings(**options, **obj.model_ticks)
    path = capture_path(output, "capture")
    with obj.rig() as rig:
        if replay is not None:
            check_replay_rig(recorded, rig)
        regs = settings.ticks(rig.tick_hz, rig.stim_step)   # validate before anything runs
        note = _step_note(settings, rig.tick_hz, rig.stim_step, regs)
        if note:
            click.echo(note, err=True)
        res = measure(rig, settings, path, mode=mode, bin_shift=bin_shift,
                      progress=not quiet, log=lambda m: click.echo(m, err=True))
    rhythm = _rhythm(res.path)
    if as_json:
        click.echo(json.dumps({**res.to_json(), "rhythm": rhythm}, indent=2))
    else:
        print_summary(res, rhythm)
    warn_counters(res.link)
    return res


#: Stimulus settings a stimulus step rounds: register key, name.
_STEPPED = (("period", "period"), ("high", "high time"), ("jitter", "jitter"),
            ("delay", "loopback delay"), ("stim1_offset", "STIM1 offset"))


def _step_note(settings, tick_hz, step, regs):
    """A one-line note naming the settings rounded to the rig's stimulus step (beyond
    the rounding to whole ticks), or None."""
    rh = regs.get("rhythm") or {}
    moved_by = ""
    if rh.get("requested_period_ticks") not in (None, regs["period"]):
        ns = 1e9 / tick_hz
        moved_by = (f"note: period {rh['requested_period_ticks'] * ns:.6g} → "
                    f"{regs['period'] * ns:.6g} ns ({tick_hz / regs['period']:.6g} Hz), so "
                    f"that the pulses meet every phase of the target period "
                    f"{rh['period_ticks'] * ns / 1000:.6g} µs (--phases as-set keeps it)")
    if step == 1:
        return moved_by or None
    fine = dataclasses.replace(settings, phases="as-set").ticks(tick_hz, 1)
    regs = {**regs, "period": regs["rhythm"]["requested_period_ticks"]} if moved_by else regs
    ns = 1e9 / tick_hz
    moved = [f"{name} {fine[k] * ns:.6g} → {regs[k] * ns:.6g} ns" for k, name in _STEPPED
             if fine[k] is not None and fine[k] != regs[k]]
    if not moved:
        return moved_by or None
    return "\n".join(filter(None, (
        f"note: this rig's stimulus moves in steps of {step} ticks ({step * ns:.6g} ns): "
        + ", ".join(moved), moved_by)))


def _bounds_cell(st, col):
    """The second row's cell under column ``col``: a percentile's 95 % bounds, the
    maximum's exceedance bound, else empty."""
    if col == "max_ns":
        p = st.get("max_exceedance")
        return "" if p is None else f"≤{100 * p:.2g} %"
    if col.endswith("_ns") and f"{col[:-3]}_lo_ns" in st:
        lo, hi = st[f"{col[:-3]}_lo_ns"], st[f"{col[:-3]}_hi_ns"]
        if lo is None and hi is None:
            return "—"
        us = max(abs(v) for v in (lo, hi) if v is not None) >= 10_000
        text = [("—" if v is None else f"{v / 1000:.1f}" if us else f"{v:.0f}")
                for v in (lo, hi)]
        return f"[{text[0]}, {text[1]}] {'µs' if us else 'ns'}"
    return ""


def _rhythm(path):
    """The capture's rhythm (:func:`rtrig.host.rhythm.capture_rhythm`, from its first
    records: memory bounded), None if its file cannot be read back (it was cut off: the
    summary says so)."""
    from ...capture import scan
    from ...errors import CaptureFormatError
    from ..rhythm import capture_rhythm
    try:
        return capture_rhythm(scan(path))
    except (CaptureFormatError, OSError):
        return None


def print_summary(res, rhythm=None):
    """The summary table: one row per channel, and under it the 95 % bounds of the
    percentiles and the bound on how often a pulse exceeds the maximum; then the
    target's rhythm (``rhythm``: :func:`rtrig.host.rhythm.capture_rhythm`)."""
    s = res.summary
    cols = ["pulses", "answered", "missed", "min_ns", "mean_ns", "p50_ns", "p99_ns",
            "p999_ns", "max_ns", "jitter_ns"]
    heads = ["pulses", "answered", "missed", "min", "mean", "p50", "p99", "p99.9", "max",
             "jitter"]
    label = "  95 % bounds"
    rows = []
    for name, st in s.items():
        rows.append((name, [str(st[c]) if c in ("pulses", "answered", "missed")
                            else format_ns(st[c]) for c in cols]))
        rows.append((label, [_bounds_cell(st, c) for c in cols]))
    w = max([8, *(len(n) + 1 for n, _ in rows)])
    widths = [max([11, *(len(r[i]) + 2 for _, r in rows)]) for i in range(len(cols))]
    click.echo(f"{'channel':{w}}" + "".join(f"{h:>{cw}}" for h, cw in zip(heads, widths,
                                                                             strict=True)))
    for name, row in rows:
        click.echo((f"{name:{w}}" + "".join(f"{v:>{cw}}" for v, cw in zip(row, widths,
                                                                           strict=True))).rstrip())
    locked = bool(rhythm and rhythm.get("locked") and rhythm.get("phase_dependent") is not False)
    click.echo("bounds: 95 % confidence, distribution-free (binomial order statistics), "
               "assuming independent samples;\n"
               "— where too few samples lie beyond; under max: how often one more pulse "
               "may exceed it")
    if locked:
        click.echo("bounds: NOT REPRESENTATIVE: phase-locked (the pulses met only some "
                   "phases of the target period)")
    if (line := describe(rhythm)):
        click.echo(line)
    for line in counter_lines(res.link):
        click.echo(line)
    click.echo(f"capture: {res.path} ({res.final['status']})")
