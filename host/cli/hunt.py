# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig hunt``: the stimulus phase in the target's own period at which a channel's
latency is highest, and a capture that replays it."""

import json
import shutil
import tempfile
from pathlib import Path

import click

from ...errors import UsageError
from ...units import format_ns
from .options import CONTEXT, DURATION, FREQUENCY, capture_path, rig_options

__all__ = ["hunt_cmd"]


@click.command("hunt", context_settings=CONTEXT)
@rig_options
@click.option("--target", type=click.Choice(["model", "soc"]), default="model",
              show_default=True, help="A target the rig restarts for every run.")
@click.option("--preset", default=None, help="The model's preset (docs/model.md).")
@click.option("--model", "model_text", metavar="K=V,...", default=None,
              help="The model's parameters (docs/model.md).")
@click.option("--load/--no-load", default=False, help="The target's load task on.")
@click.option("--channel", type=click.Choice(["isr", "app"]), default="isr",
              show_default=True, help="The latency to maximise.")
@click.option("--freq", type=FREQUENCY, default="10k", show_default=True,
              help="The pilot's pulse rate.")
@click.option("--pilot", type=click.IntRange(16, 100_000), default=128, show_default=True,
              help="The pilot's pulses.")
@click.option("--target-period", type=DURATION, default=None,
              help="The target's period to hunt in [default: the model's tick; the "
                   "SoC's 1 ms].")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="The recipe: the slowest probe's capture file "
                                 "(replay it with rtrig capture --replay).")
@click.option("--json", "as_json", is_flag=True, help="The result as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
def hunt_cmd(obj, target, preset, model_text, load, channel, freq, pilot, target_period,
             output, as_json, quiet):
    """Hunt the worst latency over the phases of the target's own period."""
    from ..procedures.hunt import RigProbe, hunt
    from ..procedures.options import capture_settings
    obj.use_target(target, None, None)
    settings = capture_settings(
        target=target, model=model_text, preset=preset, load=load, channels=channel,
        freq=freq, count=pilot, duration=None, duty=0.5, jitter=0.0, delay=0.0,
        stim1_offset=None, burst=None, gap=None, timeout=None, raw=False, truth=False,
        target_period=target_period, phases="cover", **obj.model_ticks)
    path = capture_path(output, "hunt")
    say = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    with obj.rig() as rig, tempfile.TemporaryDirectory(prefix="rtrig-hunt-") as tmp:
        regs = settings.ticks(rig.tick_hz, rig.stim_step)
        period = regs["rhythm"]["period_ticks"]     # given, the model's tick, the SoC's
        if not period:
            raise UsageError("the target has no period to hunt in (a model without its "
                             "tick)", hint="give --target-period, or a preset with a tick")
        probe = RigProbe(rig, settings, Path(tmp), channel)
        try:
            res = hunt(probe, period, rig.stim_step, regs["period"], pilot, rig.tick_hz,
                       log=say)
        except ValueError as e:
            raise UsageError(f"hunt: {e}") from None
        shutil.copyfile(res.recipe, path)
        res.recipe = path
    out = {**res.to_json(), "channel": channel, "recipe_pulse": 1}
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        ns = 1e9 / res.tick_hz
        click.echo(f"worst {channel.upper()} latency: {format_ns(out['worst_ns'])} at "
                   f"{res.phase_ticks * ns / 1000:.4g} µs into the target's "
                   f"{res.period_ticks * ns / 1000:.4g} µs period (to one stimulus step, "
                   f"{res.step * ns:.4g} ns); the pilot's slowest "
                   f"{format_ns(out['pilot_worst_ns'])}")
        click.echo(f"{res.pulses} pulses in {res.runs} runs; recipe: {path} (its pulse 1; "
                   f"rtrig capture --replay {path})")
        if target == "soc":
            rec, again = path.with_suffix(".rec"), path.with_name(path.stem + "-again.rtrig")
            click.echo(f"why it was slow: RTRIG_SOC_RECORD={rec} rtrig --sim capture "
                       f"--replay {path} -o {again} && rtrig explain {again}")
    return res
