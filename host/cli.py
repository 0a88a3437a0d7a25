"""The ``rtrig`` command: thin wrappers over the library functions.

Results go to stdout (``--json`` for machines); status and progress to stderr.
Errors are one line ``error: …`` plus a hint, with the exit code of their type;
``--debug`` shows tracebacks.
"""

import datetime
import json
import math
import sys
from pathlib import Path

import click

from .. import __version__
from .errors import Interrupted, RtrigError, UsageError
from .units import DURATION, FREQUENCY, format_ns

__all__ = ["cli", "main"]

#: Boards whose gateware the twin can simulate (``--sim-board``; rtrig.boards.BOARDS).
SIM_BOARDS = ["ulx3s", "ulx3s-45f", "ulx3s-25f", "ulx3s-12f", "orangecrab", "orangecrab-85f",
              "icebreaker"]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Obj:
    def __init__(self, port, sim, debug, sim_board=None, sim_link="fast", baud=3_000_000):
        self.port, self.sim, self.debug = port, sim, debug
        self.sim_board = sim_board
        self.sim_link = sim_link
        self.baud = baud
        self.soc, self.firmware = False, None   # set by commands given --target soc

    def use_target(self, target, firmware=None):
        """``--target soc`` in simulation needs the twin built with the SoC."""
        self.soc = target == "soc"
        self.firmware = firmware
        if firmware is not None and not (self.soc and self.sim):
            raise UsageError("--firmware applies to --sim --target soc only")

    def rig(self):
        from .measure import open_rig
        if self.sim and self.port:
            raise UsageError("give either --port or --sim, not both")
        if self.sim_board is not None:
            if self.soc:
                raise UsageError("--sim-board and --target soc do not go together",
                                 hint="the SoC twin is the simulation board's")
            return open_rig(self.port, True, board=self.sim_board, sim_link=self.sim_link)
        if self.soc and self.sim:
            return open_rig(self.port, self.sim, soc=True, firmware=self.firmware,
                            sim_link=self.sim_link)
        return open_rig(self.port, self.sim, sim_link=self.sim_link, baudrate=self.baud)


@click.group(context_settings=CONTEXT, no_args_is_help=True)
@click.version_option(__version__, "-V", "--version", prog_name="rtrig")
@click.option("--port", envvar="RTRIG_PORT", metavar="PORT",
              help="Rig serial port or pyserial URL (env RTRIG_PORT).")
@click.option("--sim", is_flag=True, envvar="RTRIG_SIM",
              help="Use the simulation twin instead of a rig on a port.")
@click.option("--sim-board", metavar="BOARD", envvar="RTRIG_SIM_BOARD",
              type=click.Choice(SIM_BOARDS, case_sensitive=False),
              help="Simulate that board's gateware (its tick rate and build options; "
                   "implies --sim).")
@click.option("--sim-link", type=click.Choice(["fast", "line"]), default="fast",
              envvar="RTRIG_SIM_LINK", show_default=True,
              help="The twin's host link: fast (4 clock cycles per bit: 25 Mbaud at 100 MHz; "
                   "the simulation's default) or line (the board's own baud, 3 Mbaud: the "
                   "bandwidth of a real rig).")
@click.option("--baud", type=FREQUENCY, default="3M", envvar="RTRIG_BAUD", metavar="RATE",
              show_default=True,
              help="Baud rate of the rig's serial port: the rate its gateware was built "
                   "with (`rtrig build --baud`; env RTRIG_BAUD).")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx, port, sim, debug, sim_board, sim_link, baud):
    """rtrig: measure interrupt latency, jitter, max frequency and saturation of an OS."""
    ctx.obj = Obj(port, sim or sim_board is not None, debug,
                  sim_board.lower() if sim_board else None, sim_link, int(baud))


def _sim_option(f):
    """Accept --sim / --port after the subcommand too (``rtrig capture --sim``)."""
    f = click.option("--sim", "sim_here", is_flag=True, help="Use the simulation twin.")(f)
    f = click.option("--port", "port_here", metavar="PORT", help="Rig port (as the global option).")(f)
    return f


def _merge(obj, sim_here, port_here):
    if sim_here:
        obj.sim = True
    if port_here:
        obj.port = port_here


def _default_path(kind):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("captures") / f"{kind}-{stamp}.rtrig"


@cli.command(context_settings=CONTEXT)
@_sim_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def info(obj, sim_here, port_here, as_json):
    """Identify the rig: board, gateware version and hash, tick rate, link speed."""
    _merge(obj, sim_here, port_here)
    from ..protocol import Target
    with obj.rig() as rig:
        d = rig.describe()
        d["stim_step"] = rig.stim_step
        d["tick_ns"] = 1e9 / d["tick_hz"]
        d["targets"] = [t.name.lower() for t in Target if d["caps"] & (1 << t)]
        d["build_hash"] = f"{d['build_hash']:08x}"
        d["board_name"] = _board_name(d["board"])
        del d["caps"]
    if as_json:
        click.echo(json.dumps(d, indent=2))
        return
    click.echo(f"rig        {'simulation twin' if d['simulation'] else d['port']}")
    click.echo(f"board      {d['board_name']} (code {d['board']})")
    click.echo(f"gateware   protocol v{d['version']}, build {d['build_hash']}")
    click.echo(f"timebase   {d['tick_hz'] / 1e6:g} MHz, {d['tick_ns']:g} ns per tick "
               f"(input delay {d['in_delay']} ticks, subtracted)")
    step = d["stim_step"]
    if step > 1:
        click.echo(f"capture    DDR inputs: edges resolved to {d['tick_ns']:g} ns "
                   f"({step} samples per {step * d['tick_ns']:g} ns clock)")
    click.echo(f"stimulus   steps of {step} tick{'s' if step > 1 else ''} "
               f"({step * d['tick_ns']:g} ns)")
    click.echo(f"link       {d['baud']} baud")
    click.echo(f"inputs     {d['n_inputs']}")
    click.echo(f"targets    {', '.join(d['targets'])}")


def _board_name(code):
    """The board's name from the code in its ``BOARD`` register."""
    if code == 0:
        return "simulation twin"
    try:
        from ..boards import BOARDS
        names = [n for n, b in BOARDS.items() if b.code == code]
    except Exception:
        names = []
    return names[0] if names else "unknown board"


def _parse_model(text):
    """'isr_entry=2us,isr_service=500ns,app=0' → ModelParams.from_ns keyword arguments.

    Durations take units; a key spelt with ``_ns`` also takes a bare number of
    nanoseconds (``isr_entry_ns=1400``). Each value must fit its model register."""
    from dataclasses import fields

    from .measure import _MODEL_REGS, register_max
    from .model_ref import TICK_NS, ModelParams
    from .units import format_s, parse_duration
    names = [f.name for f in fields(ModelParams)]
    out = {}
    if not text:
        return out
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise UsageError(f"--model expects key=value pairs, got '{item}'",
                             hint="e.g. --model isr_entry=2us,isr_service=1us")
        key, v = (s.strip() for s in item.split("=", 1))
        k = key.removesuffix("_ns")
        if k not in names:
            raise UsageError(f"--model: unknown parameter '{key}'",
                             hint=f"parameters: {', '.join(names)} (docs/model.md)")
        if k == "app":
            if v.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise UsageError(f"--model app: '{v}' is not on or off", hint="app=1 or app=0")
            out[k] = v.lower() in ("1", "true", "yes", "on")
            continue
        top = register_max(_MODEL_REGS[k])
        if k == "seed":
            try:
                seed = int(v, 0)
            except ValueError:
                raise UsageError(f"--model seed: '{v}' is not an integer",
                                 hint="e.g. seed=12345 or seed=0x9E3779B9") from None
            if not 0 <= seed <= top:
                raise UsageError(f"--model seed: {seed} is outside 0..{top} "
                                 f"(register {_MODEL_REGS[k].name})")
            out[k] = seed
            continue
        try:
            ns = float(v) if key.endswith("_ns") and _is_number(v) else parse_duration(v) * 1e9
        except ValueError as e:
            raise UsageError(f"--model {key}: {e}",
                             hint=f"durations take a unit (2us), or use {k}_ns=NANOSECONDS"
                             ) from None
        if not (math.isfinite(ns) and ns >= 0):
            raise UsageError(f"--model {key}: must be a duration of 0 or more, got '{v}'")
        if round(ns / TICK_NS) > top:
            raise UsageError(f"--model {key}: {format_s(ns * 1e-9)} is more than the model "
                             f"holds: at most {format_s(top * TICK_NS * 1e-9)} ({top} ticks, "
                             f"register {_MODEL_REGS[k].name})")
        out[k + "_ns"] = ns
    return out


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def model_params(preset, model_text):
    """Model parameters (ticks, ModelParams fields) from a preset and overrides."""
    from dataclasses import asdict

    from .model_ref import ModelParams
    base = {}
    if preset:
        from .presets import PRESETS
        if preset not in PRESETS:
            raise UsageError(f"unknown preset '{preset}'",
                             hint=f"presets: {', '.join(sorted(PRESETS))}")
        base = asdict(PRESETS[preset])
    over = _parse_model(model_text)
    try:
        p = ModelParams.from_ns(**over) if over else None
    except (TypeError, ValueError) as e:
        raise UsageError(f"--model: {e}", hint="see docs/model.md for parameter names") from None
    merged = dict(base) if preset else asdict(ModelParams())
    if p is not None:
        given = {k.removesuffix("_ns") for k in over}
        merged.update({k: v for k, v in asdict(p).items() if k in given})
    return merged


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


def _print_summary(res):
    s = res.summary
    cols = ["pulses", "answered", "missed", "min_ns", "mean_ns", "p50_ns", "p99_ns",
            "p999_ns", "max_ns", "jitter_ns"]
    heads = ["pulses", "answered", "missed", "min", "mean", "p50", "p99", "p99.9", "max",
             "jitter"]
    click.echo(f"{'channel':8}" + "".join(f"{h:>11}" for h in heads))
    for name, st in s.items():
        row = []
        for c in cols:
            v = st[c]
            row.append(str(v) if c in ("pulses", "answered", "missed") else format_ns(v))
        click.echo(f"{name:8}" + "".join(f"{v:>11}" for v in row))
    for line in _counter_lines(res.link):
        click.echo(line)
    click.echo(f"capture: {res.path} ({res.final['status']})")


def _counter_lines(counters):
    """The summary's ``link:`` and ``rig:`` lines: every loss counter, zero or not."""
    from .link import LINK_COUNTERS
    lines = []
    for group in ("link", "rig"):
        parts = [f"{counters[k]} {label}" for k, (g, label, _) in LINK_COUNTERS.items()
                 if g == group and k in counters]
        if parts:
            lines.append(f"{group}: " + ", ".join(parts))
    return lines


def _warn_counters(counters):
    """A ``warning:`` line on stderr for each nonzero loss counter (the total of the
    rig's overflows only when its parts are not there)."""
    from .link import LINK_COUNTERS
    parts = {"lat_overflow", "evt_overflow", "truth_overflow", "stat_drops"}
    for k, (_, label, meaning) in LINK_COUNTERS.items():
        if not counters.get(k) or (k == "overflows" and parts & counters.keys()):
            continue
        click.echo(f"warning: {counters[k]} {label} ({meaning})", err=True)


@cli.command(context_settings=CONTEXT)
@_sim_option
@click.option("--target", default="external", show_default=True,
              type=click.Choice(["external", "loopback", "model", "soc"]),
              help="What drives the rig inputs.")
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
@click.option("--channels", default=None, help="Response channels: isr, app or isr,app.")
@click.option("--stim1-offset", type=DURATION, default=None,
              help="Also drive STIM1, this long after each STIM0 rising edge.")
@click.option("--model", "model_text", default=None, metavar="K=V,...",
              help="Model target parameters with units (see docs/model.md).")
@click.option("--preset", default=None, help="Model target preset (see docs/model.md).")
@click.option("--load/--no-load", default=False, help="Run the target's load task.")
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
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Capture file [default: captures/capture-DATE.rtrig].")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option("--firmware", type=click.Path(exists=True, dir_okay=False), default=None,
              help="--sim --target soc: the SoC's RAM image (.bin) [default: rt_test].")
@click.pass_obj
def capture(obj, sim_here, port_here, target, freq, count, duration, duty, jitter, delay,
            channels, stim1_offset, model_text, preset, load, timeout, raw, truth, mode,
            bin_shift, output, as_json, quiet, firmware):
    """Send stimulus pulses and record every response latency."""
    _merge(obj, sim_here, port_here)
    obj.use_target(target, firmware)
    from .measure import CaptureSettings, run_capture
    if count is not None and duration is not None:
        raise UsageError("give --count or --duration, not both")
    if count is None and duration is None:
        count = 1000
    if channels is None:
        channels = "isr,app" if target in ("model", "soc") and "app=0" not in (model_text or "") \
            else "isr"
    chans = tuple(c.strip().lower() for c in channels.split(",") if c.strip())
    model = None
    if target == "model":
        model = model_params(preset, model_text)
        if not model.get("app", True):
            chans = tuple(c for c in chans if c != "app")
    elif preset or model_text:
        raise UsageError("--model and --preset apply to --target model only")
    settings = CaptureSettings(freq=freq, count=count, duration=duration, duty=duty,
                               jitter=jitter, channels=chans, target=target, delay=delay,
                               model=model, preset=preset, load=load, timeout=timeout,
                               raw_events=raw, truth=truth,
                               stim1_offset=stim1_offset)
    path = output or _default_path("capture")
    with obj.rig() as rig:
        regs = settings.ticks(rig.tick_hz, rig.stim_step)   # validate before anything runs
        note = _step_note(settings, rig.tick_hz, rig.stim_step, regs)
        if note:
            click.echo(note, err=True)
        if mode == "auto":
            from .stats import choose_mode
            mode = choose_mode(settings.freq, settings.channels, rig.info["baud"],
                               settings.raw_events, count=regs["count"])
            click.echo(f"mode: {mode} (auto, from {settings.freq:g} Hz and the link "
                       f"at {rig.info['baud']} baud)", err=True)
        if mode == "statistics":
            if raw or truth:
                click.echo("warning: raw events and truth records are not recorded in "
                           "statistics mode (use --mode records at a lower rate)", err=True)
            from .stats import run_stats_capture
            res = run_stats_capture(rig, settings, path, bin_shift=bin_shift,
                                    progress=not quiet)
        else:
            res = run_capture(rig, settings, path, progress=not quiet)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        _print_summary(res)
    _warn_counters(res.link)


@cli.command(context_settings=CONTEXT)
@_sim_option
@click.option("--wire/--no-wire", default=None,
              help="Also check a wire from STIM0 to the ISR_OUT input (fit a jumper on a "
                   "board; always present in the simulation twin).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def selftest(obj, sim_here, port_here, wire, as_json):
    """Check the rig itself: loopback delays and frequencies must read exactly."""
    _merge(obj, sim_here, port_here)
    from .selftest import run_selftest
    with obj.rig() as rig:
        results = run_selftest(rig, log=lambda m: click.echo(m, err=True), wire=wire)
    ok = all(r["passed"] for r in results)
    if as_json:
        click.echo(json.dumps({"passed": ok, "checks": results}, indent=2))
    else:
        for r in results:
            click.echo(f"{'PASS' if r['passed'] else 'FAIL'}  {r['name']}: {r['detail']}")
        click.echo(f"{sum(r['passed'] for r in results)} passed, "
                   f"{sum(not r['passed'] for r in results)} failed")
    if not ok:
        sys.exit(1)


def _register_optional():
    """Commands that live in their own modules (reports, sweeps, boards)."""
    import importlib
    for mod in ("cli_sweep", "cli_report", "cli_boards"):
        try:
            m = importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name and e.name.endswith(mod):
                continue
            raise
        if hasattr(m, "register"):
            m.register(cli)
        # else: that module is being imported first and imports us; it registers
        # itself when it has finished loading (see the end of cli_sweep.py).


_register_optional()


#: Printed when a signal ends a command (docs/quickstart.md, "Errors").
INTERRUPTED = "interrupted: everything recorded so far is kept in the capture file"
#: Signals that end a command like Ctrl-C; the exit status is then 128 + the number.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def _catch_stop_signals():
    """Make the first of SIGINT, SIGTERM or SIGHUP raise :class:`Interrupted` (a
    KeyboardInterrupt: a capture, statistics run or sweep then stops the stimulus and
    writes its end status, and the twin is stopped); later ones are only noted, so they
    cannot cut that cleanup short. A signal ignored already (``nohup``) stays ignored.
    Returns the handlers to restore."""
    import signal
    sigs = [getattr(signal, n) for n in STOP_SIGNALS if hasattr(signal, n)]
    previous = {s: signal.getsignal(s) for s in sigs}

    def noted(signum, frame):
        pass

    def stop(signum, frame):
        for s in sigs:
            if previous[s] != signal.SIG_IGN:
                signal.signal(s, noted)
        raise Interrupted(signum)

    try:
        for s in sigs:
            if previous[s] != signal.SIG_IGN:
                signal.signal(s, stop)
    except ValueError:          # not the main thread: signals are not ours to handle
        return {}
    return previous


def _interrupted(exc):
    """Report an interrupt; returns the exit status (128 + the signal number)."""
    import signal
    click.echo(INTERRUPTED, err=True)
    return 128 + getattr(exc, "signum", signal.SIGINT)


def main(argv=None):
    """Entry point: run the CLI with the project's error handling. SIGINT (Ctrl-C),
    SIGTERM and SIGHUP end a command alike: exit status 128 + the signal number."""
    import signal
    previous = _catch_stop_signals()
    try:
        _main(argv)
    except KeyboardInterrupt as e:      # a signal while an error was being reported
        sys.exit(_interrupted(e))
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main(argv):
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="rtrig", standalone_mode=False)
    except click.exceptions.Abort as e:
        if isinstance(e.__cause__, KeyboardInterrupt):     # click wraps Ctrl-C in Abort
            sys.exit(_interrupted(e.__cause__))
        click.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt as e:
        sys.exit(_interrupted(e))
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except RtrigError as e:
        if debug:
            raise
        click.echo(f"error: {e}", err=True)
        if e.hint:
            click.echo(f"hint: {e.hint}", err=True)
        sys.exit(e.exit_code)
    except OSError as e:
        if debug:
            raise
        click.echo(f"error: {e.strerror or e}: {getattr(e, 'filename', '') or ''}".rstrip(": "),
                   err=True)
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except Exception as e:          # a bug: still one line, unless --debug
        if debug:
            raise
        click.echo(f"error: internal error: {type(e).__name__}: {e}", err=True)
        click.echo("hint: run again with --debug and report the traceback", err=True)
        sys.exit(70)

