# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig sweep``: find MF-ISR, MF-APP and SF between two frequencies."""

import json

import click

from ...channels import sweep_figure_name
from ...units import format_hz, format_s
from .history import recording
from .options import (
    CONTEXT,
    capture_path,
    measurement_options,
    rig_options,
    run_options,
    warn_counters,
)

__all__ = ["sweep"]


def print_table(res):
    """The figures as docs/method.md's table, then how they were found."""
    names = list(res.figures)
    click.echo("| " + " | ".join(sweep_figure_name(n) for n in names) + " |")
    click.echo("|" + " --- |" * len(names))
    click.echo("| " + " | ".join(format_hz(res.value(n)) for n in names) + " |")
    for n in names:
        t = res.figures[n]
        label = sweep_figure_name(n)
        if t is not None and t.hz is not None:
            conf = {True: "confirmed", False: "NOT reproduced on re-measurement",
                    None: "not confirmed"}[t.confirmed]
            click.echo(f"{label}: {format_hz(t.hz)} (no event at {format_hz(t.below_hz)}; "
                       f"{conf}; {t.steps} steps)")
        else:
            click.echo(f"{label}: not found — {res.reasons.get(n)}")
    f = res.final
    click.echo(f"{f['steps']} steps, {f['pulses_simulated']} pulses, {f['wall_s']:.1f} s; "
               f"capture: {res.path} ({f['status']})")


#: Rig time of a sweep's first step above which the sweep warns before it starts.
LONG_SWEEP_S = 60.0


def long_sweep_note(settings, simulated=False):
    """A warning line when the sweep's first step alone, ``pulses`` pulses at
    ``--from``, takes longer than :data:`LONG_SWEEP_S` of rig time, else None. The
    whole sweep takes longer: the bracket climbs from there by ``--factor``, then
    bisects and confirms."""
    from ..procedures.sweep import default_pulses
    pulses = settings.pulses or default_pulses()
    seconds = pulses / settings.f_from
    if seconds < LONG_SWEEP_S:
        return None
    note = (f"warning: the sweep's first step alone takes {format_s(seconds)} of rig time "
            f"({pulses} pulses at {format_hz(settings.f_from)}), the whole sweep longer")
    if simulated:
        note += "; the simulation runs far slower than real time"
    return note + "\nhint: raise --from or lower --pulses for a shorter sweep"


@click.command("sweep", context_settings=CONTEXT)
@recording
@rig_options
@measurement_options("sweep", "target")
@run_options("sweep", "No step progress on stderr.")
@measurement_options("sweep", "measurement")
def sweep(obj, output, as_json, quiet, firmware, console, **options):
    """Find MF-ISR, MF-APP and (with --load) SF between --from and --to.

    An interval channel in --channels (stim0+..marker0+) gets its own MF, the lowest
    frequency at which its end edge misses a start.

    Brackets each figure in geometric steps, bisects to --resolution and confirms
    the result; every step is recorded in the sweep capture.
    """
    obj.use_target(options["target"], firmware, console)
    from ..procedures.options import sweep_settings
    from ..procedures.sweep import run_sweep
    settings = sweep_settings(**options, **obj.model_ticks)
    path = capture_path(output, "sweep")
    log = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    with obj.rig() as rig:
        settings.validate(rig.tick_hz, rig.stim_step)   # before any step runs
        note = long_sweep_note(settings, simulated=obj.sim)
        if note:
            click.echo(note, err=True)
        res = run_sweep(rig, settings, path, log=log)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        print_table(res)
    warn_counters(res.final.get("link") or {})
    return res
