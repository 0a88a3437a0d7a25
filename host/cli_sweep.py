"""``rtrig sweep``: find MF-ISR, MF-APP and SF between two frequencies."""

import json

import click

from .cli import CONTEXT, _default_path, _merge, _sim_option, _warn_counters, model_params
from .errors import UsageError
from .units import DURATION, FREQUENCY, format_hz

__all__ = ["register", "sweep"]


class _Fraction(click.ParamType):
    """'0.5%' or '0.005' → 0.005."""
    name = "fraction"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            if text.endswith("%"):
                return float(text[:-1]) / 100
            return float(text)
        except ValueError:
            self.fail(f"'{value}' is not a fraction (try 0.5% or 0.005)", param, ctx)


FRACTION = _Fraction()


def sweep_model(preset, model_text):
    """Model parameters for the sweep: a preset's fields, overridden by --model."""
    return model_params(preset, model_text)


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


def sweep_command():
    @click.command("sweep", context_settings=CONTEXT)
    @_sim_option
    @click.option("--target", default="external", show_default=True,
                  type=click.Choice(["external", "model", "soc"]),
                  help="What drives the rig inputs.")
    @click.option("--from", "f_from", type=FREQUENCY, required=True,
                  help="Lowest stimulus frequency (e.g. 10k).")
    @click.option("--to", "f_to", type=FREQUENCY, required=True,
                  help="Highest stimulus frequency (e.g. 200k).")
    @click.option("--model", "model_text", default=None, metavar="K=V,...",
                  help="Model target parameters with units (see docs/model.md).")
    @click.option("--preset", default=None, help="Model target preset (see docs/model.md).")
    @click.option("--load/--no-load", default=False,
                  help="Run the target's load task (and look for SF).")
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
    @click.option("--channels", default="isr,app", show_default=True,
                  help="Channels whose MF is sought.")
    @click.option("--no-confirm", is_flag=True, help="Skip the confirmation steps.")
    @click.option("--full-steps", is_flag=True,
                  help="Run every pulse of every step (the whole missed-fraction and load "
                       "curve) instead of ending a step once its verdict is known.")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                  help="Sweep capture [default: captures/sweep-DATE.rtrig].")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @click.option("--quiet", "-q", is_flag=True, help="No step progress on stderr.")
    @click.option("--firmware", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="--sim --target soc: the SoC's RAM image (.bin) [default: rt_test].")
    @click.pass_obj
    def sweep(obj, sim_here, port_here, target, f_from, f_to, model_text, preset, load,
              sf_threshold, pulses, resolution, factor, stim_jitter, channels, no_confirm,
              full_steps, output, as_json, quiet, firmware):
        """Find MF-ISR, MF-APP and (with --load) SF between --from and --to.

        Brackets each figure in geometric steps, bisects to --resolution and confirms
        the result; every step is recorded in the sweep capture.
        """
        _merge(obj, sim_here, port_here)
        obj.use_target(target, firmware)
        from .sweep import SweepSettings, run_sweep
        chans = tuple(c.strip().lower() for c in channels.split(",") if c.strip())
        model = None
        if target == "model":
            model = sweep_model(preset, model_text)
        elif preset or model_text:
            raise UsageError("--model and --preset apply to --target model only")
        settings = SweepSettings(
            f_from=f_from, f_to=f_to, target=target, model=model, preset=preset, load=load,
            sf_threshold=sf_threshold, resolution=resolution, pulses=pulses, factor=factor,
            stim_jitter=stim_jitter, confirm=not no_confirm, channels=chans,
            early_end=not full_steps).validate()
        path = output or _default_path("sweep")
        log = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
        with obj.rig() as rig:
            settings.validate(rig.tick_hz, rig.stim_step)   # before any step runs
            res = run_sweep(rig, settings, path, log=log)
        if as_json:
            click.echo(json.dumps(res.to_json(), indent=2))
        else:
            print_table(res)
        _warn_counters(res.final.get("link") or {})

    return sweep


sweep = sweep_command()


def register(group):
    """Add ``sweep`` to the ``rtrig`` command group."""
    group.add_command(sweep)


def _register_late():
    """When this module is imported before rtrig.host.cli, the group could not take
    the command at its own import time: add it now."""
    from .cli import cli
    if "sweep" not in cli.commands:
        register(cli)


_register_late()
