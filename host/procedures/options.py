# SPDX-License-Identifier: BSD-2-Clause
"""The measurement options, each defined once in :data:`OPTIONS`: its name, type,
range, unit, default and help, and the commands that take it.

* the ``rtrig`` subcommands ``capture``, ``sweep`` and ``suite`` build their click
  options from the table (:func:`rtrig.host.cli.options.measurement_options`);
* :class:`rtrig.host.api.RigAPI`'s ``capture`` and ``sweep`` take the same keywords
  (their signatures are :func:`api_signature`), and so does the pytest plugin's
  ``rtrig`` fixture, whose ``--rtrig-target`` offers the table's targets;
* the CLI and ``RigAPI`` turn the values into settings with the same two functions,
  :func:`capture_settings` and :func:`sweep_settings` (the CLI's values converted by
  click, a script's by :func:`option_values`, both with the option's type).

``tests/host/test_options.py`` fails when one of them has an option the table lacks,
or the table one they lack.

An option's ``name`` is its keyword everywhere; its CLI flag is ``--name`` with dashes
unless ``flag`` says otherwise (``--from`` for ``f_from``, ``--no-confirm`` for
``confirm``). Defaults are written as the CLI takes them (``"1k"``, ``"0.5%"``).

Not in the table, as they are not measurement settings and stay where they are:

* which rig is opened: ``--sim`` and ``--port`` (and the group's ``--sim-board``,
  ``--sim-link``, ``--baud``, ``--debug``), ``--firmware`` and ``--console`` (the
  simulated SoC's image and console, fixed when the twin starts). ``RigAPI`` is
  handed a rig already open: these are :func:`rtrig.host.api.open_api`'s arguments
  and the plugin's ``--rtrig-port``, ``--rtrig-sim``, ``--rtrig-baud`` and
  ``--rtrig-firmware``.
* where results go and how they are shown: ``-o/--output``, ``--json``, ``--quiet``
  (``RigAPI``: ``path``, the result it returns, ``progress``/``log``; the plugin's
  ``--rtrig-captures`` and ``--rtrig-results``).

``RigAPI`` has no ``suite``: the suite's options are patched into the SoC image
before the twin starts, which a call on an open rig comes too late for.
"""

import inspect
import textwrap
from dataclasses import dataclass

import click

from ...errors import UsageError
from ...units import parse_duration, parse_frequency

__all__ = ["Option", "OPTIONS", "FREQUENCY", "DURATION", "FRACTION", "options",
           "option_values", "api_signature", "describe", "capture_settings",
           "sweep_settings"]


class _Quantity(click.ParamType):
    """A frequency or duration with its unit (``5k``, ``127kHz``, ``1.5us``)."""

    def __init__(self, name, parser):
        self.name = name
        self._parse = parser

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return self._parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


FREQUENCY = _Quantity("frequency", parse_frequency)
DURATION = _Quantity("duration", parse_duration)


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


@dataclass(frozen=True)
class Option:
    """One measurement option.

    ``type``: a click ParamType (:data:`FREQUENCY`, :data:`DURATION`,
    :data:`FRACTION`), ``int``, ``float``, ``bool`` (a flag) or None (text, or what a
    script gives as it is: a model's dict, a channel tuple); ``range``: an int's
    (min, max), either end None; ``choices``: the values it takes; ``unit``: what its
    number counts; ``commands``: the subcommands that take it; ``group``: ``target``
    (what is measured, shown before the output options) or ``measurement``;
    ``flag``: the CLI's flag when not ``--name`` (``--load/--no-load``; with
    ``negate``, a flag that sets the option to False); ``api``: ``RigAPI`` takes it.
    """
    name: str
    type: object = None
    default: object = None
    help: str = ""
    unit: str | None = None
    range: tuple | None = None
    choices: tuple | None = None
    commands: tuple = ("capture",)
    group: str = "measurement"
    flag: str | None = None
    negate: bool = False
    show_default: bool = False
    required: bool = False
    metavar: str | None = None
    api: bool = True

    @property
    def flags(self):
        """The CLI's flag (``--stim1-offset``)."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def param_type(self):
        """The click ParamType that converts its values (None: taken as they are)."""
        if self.choices is not None:
            return click.Choice(list(self.choices))
        if self.range is not None:
            return click.IntRange(*self.range)
        if self.type is None:
            return None
        return click.types.convert_type(self.type)


_CHANNELS_HELP = ("Channels: isr, app, or intervals between two edges START..END "
                  "(e.g. isr,marker0+..marker0-; sources isr, app, heartbeat, marker0..2, "
                  "stim0, stim1; + rising, - falling).")

#: Every measurement option of ``capture``, ``sweep`` and ``suite``, in the order their
#: help lists them. An option whose type, default or help differs between commands
#: has one entry per variant.
OPTIONS = (
    # What is measured.
    Option("target", choices=("external", "loopback", "model", "soc"), default="external",
           show_default=True, help="What drives the rig inputs.", group="target"),
    Option("target", choices=("external", "model", "soc"), default="external",
           show_default=True, help="What drives the rig inputs.", group="target",
           commands=("sweep",)),
    Option("target", choices=("soc", "external"), default="soc", show_default=True,
           help="What runs the suite program.", group="target", commands=("suite",),
           api=False),
    Option("model", metavar="K=V,...", group="target", commands=("capture", "sweep"),
           help="Model target parameters with units (see docs/model.md)."),
    Option("preset", group="target", commands=("capture", "sweep"),
           help="Model target preset (see docs/model.md)."),
    Option("tests", metavar="A,B,...", group="target", commands=("suite",), api=False,
           help="Tests to run [--sim --target soc: default all; a real target: required, "
                "in the order its firmware runs them; see docs/suite.md]."),
    Option("iterations", int, 1000, range=(1, 1_000_000), show_default=True,
           group="target", commands=("suite",), api=False, unit="iterations",
           help="Iterations per test (--sim --target soc)."),
    Option("load", bool, False, flag="--load/--no-load", group="target",
           commands=("capture", "suite"), help="Run the target's load task."),
    Option("load", bool, False, flag="--load/--no-load", group="target",
           commands=("sweep",), help="Run the target's load task (and look for SF)."),
    Option("channels", group="target", help=_CHANNELS_HELP),
    Option("channels", default="isr,app", show_default=True, group="target",
           commands=("sweep",),
           help="Channels whose MF is sought: isr, app, intervals (stim0+..marker0+)."),
    # capture: the stimulus and how it is recorded.
    Option("freq", FREQUENCY, "1k", unit="Hz", show_default=True,
           help="Stimulus frequency (e.g. 5k, 127kHz)."),
    Option("count", int, None, unit="pulses", help="Pulses to send [default: 1000]."),
    Option("duration", DURATION, None, unit="s",
           help="Capture length instead of --count (e.g. 200ms)."),
    Option("duty", float, 0.5, unit="of the period", show_default=True,
           help="Stimulus high fraction, 0 < duty < 1."),
    Option("jitter", DURATION, "0", unit="s", show_default=True,
           help="Extra random delay per period, uniform 0..J (avoids phase lock)."),
    Option("delay", DURATION, "0", unit="s", show_default=True,
           help="Loopback target: echo delay."),
    Option("stim1_offset", DURATION, None, unit="s",
           help="Also drive STIM1, this long after each STIM0 rising edge."),
    Option("burst", int, None, range=(1, None), unit="pulses",
           help="Bursts of N pulses at --freq, each followed by --gap."),
    Option("gap", DURATION, None, unit="s",
           help="With --burst: rise to rise from a burst's last pulse to the next's first."),
    Option("target_period", DURATION, None, unit="s", group="target",
           help="The period of the target's own activity (its kernel tick), 0 for none "
                "[default: the model's tick, else found in the latencies or 1 ms assumed]."),
    Option("phases", choices=("cover", "as-set"), default="cover", show_default=True,
           help="cover: move the period by the fewest stimulus steps that let the "
                "pulses meet every phase of the target period; as-set: keep it."),
    Option("timeout", DURATION, None, unit="s",
           help="Response window (default: until the next stimulus)."),
    Option("raw", bool, False, help="Also record raw edge events."),
    Option("raw_inputs", metavar="IN,...",
           help="With --raw: record the edges of these inputs only (isr, app, "
                "heartbeat, marker0, marker1, marker2, stim) [default: all]."),
    Option("truth", bool, False, help="Model target: also record its true latencies."),
    Option("mode", choices=("auto", "records", "statistics"), default="auto",
           show_default=True,
           help="records: every pulse over the link; statistics: on-chip histograms "
                "(any rate); auto: records when the link keeps up."),
    Option("bin_shift", int, None, range=(0, 20), unit="log2 ticks",
           help="Statistics mode: histogram bin width 2^N ticks [default: automatic]."),
    # sweep: the range and the search.
    Option("f_from", FREQUENCY, flag="--from", required=True, unit="Hz",
           commands=("sweep",), help="Lowest stimulus frequency (e.g. 10k)."),
    Option("f_to", FREQUENCY, flag="--to", required=True, unit="Hz", commands=("sweep",),
           help="Highest stimulus frequency (e.g. 200k)."),
    Option("sf_threshold", FRACTION, "0.01", show_default=True, commands=("sweep",),
           unit="of the load's progress",
           help="Load progress below which LOAD counts as starved."),
    Option("pulses", int, None, unit="pulses", commands=("sweep",),
           help="Pulses per MF step [default: 200, see docs/sweep.md]."),
    Option("resolution", FRACTION, "0.5%", show_default=True, commands=("sweep",),
           unit="of the frequency", help="Relative width of the final bracket."),
    Option("factor", float, 2.0, show_default=True, commands=("sweep",),
           help="Geometric bracketing step."),
    Option("stim_jitter", DURATION, None, unit="s", commands=("sweep",),
           help="Extra random delay per period [default: automatic]."),
    Option("tick", DURATION, None, unit="s", commands=("sweep",),
           help="The target's tick period; MF steps run until it has met every phase "
                "of the pulse train, 0 for none [default: the model's tick, else 1ms]."),
    Option("phase_gap", FRACTION, "2%", show_default=True, commands=("sweep",),
           unit="of the period",
           help="Widest phase gap (of the pulse period) an MF step may leave unmet."),
    Option("max_pulses", int, None, unit="pulses", commands=("sweep",),
           help="At most this many pulses per MF step [default: 20000, or --pulses "
                "if more]."),
    Option("confirm", bool, True, flag="--no-confirm", negate=True, commands=("sweep",),
           help="Skip the confirmation steps."),
    Option("early_end", bool, True, flag="--full-steps", negate=True, commands=("sweep",),
           help="Run every pulse of every step (the whole missed-fraction and load "
                "curve) instead of ending a step once its verdict is known."),
)


def options(command, group=None, api=False):
    """``command``'s options (name → :class:`Option`) in the table's order: those of
    ``group`` only when given, those ``RigAPI`` takes only with ``api``."""
    out = {}
    for o in OPTIONS:
        if command in o.commands and group in (None, o.group) and (o.api or not api):
            if o.name in out:
                raise AssertionError(f"option table: '{o.name}' twice for {command}")
            out[o.name] = o
    return out


def option_values(command, given):
    """A script's values of ``command``'s options (name → value) converted as the CLI
    converts them (``"8k"`` → 8000.0), the options not given at their defaults. A value
    the option's type refuses is a UsageError naming the option."""
    table = options(command)
    unknown = sorted(given.keys() - table.keys())
    if unknown:
        raise TypeError(f"{command}: unknown option(s) {', '.join(unknown)}")
    out = {}
    for name, o in table.items():
        value = given.get(name, o.default)
        kind = o.param_type
        if value is not None and kind is not None:
            try:
                value = kind.convert(value, None, None)
            except click.BadParameter as e:
                raise UsageError(f"{name}: {e.message}") from None
        out[name] = value
    return out


def api_signature(command, positional=(), defaults=None, extra=()):
    """The signature of ``RigAPI``'s method for ``command``: ``self``, the options in
    ``positional`` (in that order), then the others keyword-only, at the table's
    defaults unless ``defaults`` says otherwise, then the ``extra`` parameters."""
    P = inspect.Parameter
    table = options(command, api=True)
    defaults = defaults or {}

    def param(o, kind):
        default = defaults.get(o.name, P.empty if o.required else o.default)
        return P(o.name, kind, default=default)

    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [param(table[n], P.POSITIONAL_OR_KEYWORD) for n in positional]
    params += [param(o, P.KEYWORD_ONLY) for n, o in table.items() if n not in positional]
    return inspect.Signature(params + list(extra))


def describe(command, defaults=None):
    """``command``'s options as a docstring's list (name, default, unit and help), at
    the table's defaults unless ``defaults`` says otherwise."""
    defaults = defaults or {}
    lines = []
    for name, o in options(command, api=True).items():
        default = defaults.get(name, o.default)
        head = name if o.required else f"{name}={default!r}"
        text = o.help
        if o.negate:
            text = f"False as {o.flags}: {text}"
        unit = f" ({o.unit})" if o.unit else ""
        lines += textwrap.wrap(f"- ``{head}``{unit}: {text}", 88, subsequent_indent="  ")
    return "\n".join(lines)


def _model_text(model):
    """A model's parameters as ``--model`` takes them: a script may give a dict."""
    if isinstance(model, dict):
        return ",".join(f"{k}={v}" for k, v in model.items())
    return model


def capture_settings(*, target, model, preset, load, channels, freq, count, duration,
                     duty, jitter, delay, stim1_offset, burst, gap, timeout, raw, truth,
                     raw_inputs=None, target_period=None, phases="cover", tick_hz=None,
                     step=1):
    """The :class:`~rtrig.host.procedures.settings.CaptureSettings` of the capture
    options' values (converted; ``mode`` and ``bin_shift`` go to
    :func:`rtrig.host.procedures.measure.measure`). ``count`` and ``duration`` exclude
    each other; with neither, 1000 pulses. ``tick_hz`` and ``step`` (``STIM_STEP``):
    the rig's, for the model's durations (None: the default twin's)."""
    from ..model.params import target_model
    from .settings import CaptureSettings, default_channels, parse_channels
    if count is not None and duration is not None:
        raise UsageError("give --count or --duration, not both")
    if count is None and duration is None:
        count = 1000
    params = target_model(target, preset, _model_text(model), tick_hz, step)
    if channels is None:
        chans = default_channels(target, params)
    else:
        chans = parse_channels(channels)
        if params is not None and not params.get("app", True):
            chans = tuple(c for c in chans if c != "app")
    return CaptureSettings(freq=freq, count=count, duration=duration, duty=duty,
                           jitter=jitter, channels=chans, target=target, delay=delay,
                           model=params, preset=preset, load=load, timeout=timeout,
                           raw_events=raw, truth=truth, stim1_offset=stim1_offset,
                           burst=burst or 0, gap=gap, target_period=target_period,
                           phases=phases,
                           raw_inputs=None if raw_inputs is None else parse_channels(raw_inputs))


def sweep_settings(*, target, model, preset, load, channels, f_from, f_to, sf_threshold,
                   pulses, resolution, factor, stim_jitter, tick, phase_gap, max_pulses,
                   confirm, early_end, tick_hz=None, step=1):
    """The :class:`~rtrig.host.procedures.sweep.SweepSettings` of the sweep options'
    values (converted), checked (:meth:`~rtrig.host.procedures.sweep.SweepSettings.validate`)."""
    from ..model.params import target_model
    from .settings import parse_channels
    from .sweep import SweepSettings
    return SweepSettings(
        f_from=f_from, f_to=f_to, target=target,
        model=target_model(target, preset, _model_text(model), tick_hz, step), preset=preset,
        load=load,
        sf_threshold=sf_threshold, resolution=resolution, pulses=pulses, factor=factor,
        stim_jitter=stim_jitter, confirm=confirm, channels=parse_channels(channels),
        early_end=early_end, tick=tick, phase_gap=phase_gap,
        max_pulses=max_pulses).validate()
