# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig sweep``: find MF-ISR, MF-APP and SF between two frequencies."""

import contextlib
import copy
import json
import os

import click

from ...channels import sweep_figure_name
from ...errors import UsageError
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


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


def twin_count(obj, twins):
    """How many simulation twins a sweep runs its steps on: ``--twins``, else one per
    usable core with ``--sim`` (one while the SoC twin records its CPU,
    ``$RTRIG_SOC_RECORD``: the twins would share the file), never more than the usable
    cores (a note on stderr says so). A rig on a port is one instrument: one."""
    if twins is not None and twins < 1:
        raise UsageError(f"--twins must be 1 or more, got {twins}")
    if not obj.sim:
        if twins is not None and twins > 1:
            raise UsageError("--twins applies to --sim only: a rig on a port is one "
                             "instrument and runs its steps in turn")
        return 1
    cores = usable_cores()
    if twins is None:
        return 1 if os.environ.get("RTRIG_SOC_RECORD") else cores
    if twins > cores:
        # more would only share the cores: each twin is a full simulation
        click.echo(f"note: --twins {twins} capped at {cores}, the usable cores", err=True)
        return cores
    return twins


@contextlib.contextmanager
def more_twins(obj, n):
    """``n`` further twins like the one ``obj`` opens; their SoC consoles are temporary
    files (``--console`` is the first twin's). Started from this thread: a twin ends
    with the thread that started it (``PR_SET_PDEATHSIG``)."""
    other = copy.copy(obj)
    other.console = None
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(other.rig()) for _ in range(n)]


@click.command("sweep", context_settings=CONTEXT)
@recording
@rig_options
@measurement_options("sweep", "target")
@run_options("sweep", "No step progress on stderr.")
@measurement_options("sweep", "measurement")
@click.option("--twins", type=int, default=None, metavar="N",
              help="Simulation twins that measure steps at once (--sim) [default: one "
                   "per usable core; a rig on a port: 1].")
def sweep(obj, output, as_json, quiet, firmware, console, twins, **options):
    """Find MF-ISR, MF-APP and (with --load) SF between --from and --to.

    An interval channel in --channels (stim0+..marker0+) gets its own MF, the lowest
    frequency at which its end edge misses a start.

    Brackets each figure in geometric steps, bisects to --resolution and confirms
    the result; every step is recorded in the sweep capture. With --sim, steps run
    on parallel twins (--twins), each search recording the steps it records on one.
    """
    obj.use_target(options["target"], firmware, console)
    from ..procedures.options import sweep_settings
    from ..procedures.sweep import run_sweep
    settings = sweep_settings(**options, **obj.model_ticks)
    path = capture_path(output, "sweep")
    log = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    n = twin_count(obj, twins)
    with obj.rig() as rig:
        settings.validate(rig.tick_hz, rig.stim_step)   # before any step runs
        note = long_sweep_note(settings, simulated=obj.sim)
        if note:
            click.echo(note, err=True)
        with more_twins(obj, n - 1) as others:
            res = run_sweep(rig, settings, path, log=log, twins=others)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        print_table(res)
    warn_counters(res.final.get("link") or {})
    return res
