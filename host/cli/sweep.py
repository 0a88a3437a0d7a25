# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig sweep``: find MF-ISR, MF-APP and SF between two frequencies."""

import json

import click

from ...units import format_hz
from ..model.params import target_model
from .options import (
    CONTEXT,
    DURATION,
    FRACTION,
    FREQUENCY,
    default_path,
    rig_options,
    target_options,
    warn_counters,
)

__all__ = ["sweep"]


def print_table(res):
    """The figures as METHOD.md's table, then how they were found."""
    names = list(res.figures)
    heads = [n.removesuffix("_hz") for n in names]
    click.echo("| " + " | ".join(h.upper().replace("_", "-") for h in heads) + " |")
    click.echo("|" + " --- |" * len(names))
    click.echo("| " + " | ".join(format_hz(res.value(n)) for n in names) + " |")
    for n in names:
        t = res.figures[n]
        label = n.removesuffix("_hz").upper().replace("_", "-")
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


@click.command("sweep", context_settings=CONTEXT)
@rig_options
@target_options(["external", "model", "soc"], "isr,app", "Channels whose MF is sought.",
                "sweep", "No step progress on stderr.")
@click.option("--from", "f_from", type=FREQUENCY, required=True,
              help="Lowest stimulus frequency (e.g. 10k).")
@click.option("--to", "f_to", type=FREQUENCY, required=True,
              help="Highest stimulus frequency (e.g. 200k).")
@click.option("--sf-threshold", type=FRACTION, default="0.01", show_default=True,
              help="Load progress below which LOAD counts as starved.")
@click.option("--pulses", type=int, default=None,
              help="Pulses per MF step [default: 200, see docs/sweep.md].")
@click.option("--resolution", type=FRACTION, default="0.5%", show_default=True,
              help="Relative width of the final bracket.")
@click.option("--factor", type=float, default=2.0, show_default=True,
              help="Geometric bracketing step.")
@click.option("--stim-jitter", type=DURATION, default=None,
              help="Extra random delay per period [default: automatic].")
@click.option("--tick", type=DURATION, default=None,
              help="The target's tick period; MF steps run until it has met every phase "
                   "of the pulse train, 0 for none [default: the model's tick, else 1ms].")
@click.option("--phase-gap", type=FRACTION, default="2%", show_default=True,
              help="Widest phase gap (of the pulse period) an MF step may leave unmet.")
@click.option("--max-pulses", type=int, default=None,
              help="At most this many pulses per MF step [default: 20000, or --pulses "
                   "if more].")
@click.option("--no-confirm", is_flag=True, help="Skip the confirmation steps.")
@click.option("--full-steps", is_flag=True,
              help="Run every pulse of every step (the whole missed-fraction and load "
                   "curve) instead of ending a step once its verdict is known.")
def sweep(obj, target, model_text, preset, load, channels, output, as_json, quiet, firmware,
          console, f_from, f_to, sf_threshold, pulses, resolution, factor, stim_jitter,
          tick, phase_gap, max_pulses, no_confirm, full_steps):
    """Find MF-ISR, MF-APP and (with --load) SF between --from and --to.

    Brackets each figure in geometric steps, bisects to --resolution and confirms
    the result; every step is recorded in the sweep capture.
    """
    obj.use_target(target, firmware, console)
    from ..procedures.sweep import SweepSettings, run_sweep
    chans = tuple(c.strip().lower() for c in channels.split(",") if c.strip())
    settings = SweepSettings(
        f_from=f_from, f_to=f_to, target=target, model=target_model(target, preset, model_text),
        preset=preset, load=load, sf_threshold=sf_threshold, resolution=resolution,
        pulses=pulses, factor=factor, stim_jitter=stim_jitter, confirm=not no_confirm,
        channels=chans, early_end=not full_steps, tick=tick, phase_gap=phase_gap,
        max_pulses=max_pulses).validate()
    path = output or default_path("sweep")
    log = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    with obj.rig() as rig:
        settings.validate(rig.tick_hz, rig.stim_step)   # before any step runs
        res = run_sweep(rig, settings, path, log=log)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        print_table(res)
    warn_counters(res.final.get("link") or {})
