# SPDX-License-Identifier: BSD-2-Clause
"""The ``rtrig`` group and its entry point: the global options, the subcommands' list,
the stop signals and the one-line errors (:func:`main`)."""

import sys

import click

from ... import __version__
from ...errors import Interrupted, RtrigError, stop_requested
from .boards import build_cmd, flash_cmd
from .capture import capture
from .compare import compare_cmd
from .doctor import doctor
from .explain import explain
from .history import history
from .hunt import hunt_cmd
from .info import info
from .options import CONTEXT, FREQUENCY, BoardChoice, RigOptions
from .report import export, report
from .selftest import selftest
from .suite import suite
from .sweep import sweep
from .udev import udev

__all__ = ["cli", "main"]


@click.group(context_settings=CONTEXT, no_args_is_help=True)
@click.version_option(__version__, "-V", "--version", prog_name="rtrig")
@click.option("--port", envvar="RTRIG_PORT", metavar="PORT",
              help="Rig serial port or pyserial URL; auto: the board found by its USB "
                   "identity; serial:XYZ: the port of serial number XYZ (env RTRIG_PORT).")
@click.option("--sim", is_flag=True, envvar="RTRIG_SIM",
              help="Use the simulation twin instead of a rig on a port: the ULX3S "
                   "gateware (with --target soc its SoC target's).")
@click.option("--sim-board", metavar="BOARD", envvar="RTRIG_SIM_BOARD", type=BoardChoice(),
              help="Simulate that board's gateware instead of the ULX3S's (its tick rate "
                   "and build options; with --target soc its SoC target's; implies --sim).")
@click.option("--sim-link", type=click.Choice(["fast", "line"]), default="fast",
              envvar="RTRIG_SIM_LINK", show_default=True,
              help="The twin's host link: fast (4 clock cycles per bit: 7.5 Mbaud at the "
                   "ECP5 boards' 30 MHz; the simulation's default) or line (the board's "
                   "own baud, 3 Mbaud: the bandwidth of a real rig).")
@click.option("--baud", type=FREQUENCY, default="3M", envvar="RTRIG_BAUD", metavar="RATE",
              show_default=True,
              help="Baud rate of the rig's serial port: the rate its gateware was built "
                   "with (`rtrig build --baud`; env RTRIG_BAUD).")
@click.option("--accept-gateware", is_flag=True, envvar="RTRIG_ACCEPT_GATEWARE",
              help="Measure even on a rig whose gateware is not what this rtrig builds "
                   "for its board (recorded in the capture's META).")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx, port, sim, debug, sim_board, sim_link, baud, accept_gateware):
    """rtrig: measure interrupt latency, jitter, max frequency and saturation of an OS."""
    ctx.obj = RigOptions(port, sim or sim_board is not None, debug,
                         sim_board.lower() if sim_board else None, sim_link, int(baud),
                         accept_gateware)


for _command in (info, capture, sweep, suite, selftest, report, export, compare_cmd, build_cmd,
                 flash_cmd, history, explain, doctor, udev, hunt_cmd):
    cli.add_command(_command)


#: Printed when a signal ends a command that writes a capture (docs/quickstart.md,
#: "Errors"); any other command says only :data:`INTERRUPTED_OTHER`.
INTERRUPTED = "interrupted: everything recorded so far is kept in the capture file"
INTERRUPTED_OTHER = "interrupted"
#: The subcommands that write a capture file as they run.
CAPTURING = {"capture", "sweep", "suite"}
#: The subcommand being run (set by :func:`main`), for the message of an interrupt.
_running = {"command": None}
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
        stop_requested(signum)          # raised again at the next poll if this is lost
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
    click.echo(INTERRUPTED if _running["command"] in CAPTURING else INTERRUPTED_OTHER,
               err=True)
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
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args
    _running["command"] = next((a for a in args if a in cli.commands), None)
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

