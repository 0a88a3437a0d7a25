# SPDX-License-Identifier: BSD-2-Clause
"""What the ``rtrig`` subcommands share: parameter types, option decorators, the rig
to open, and the lines that report a run's losses.

The measurement options (and the frequency, duration and fraction types) are those of
the one option table, :mod:`rtrig.host.procedures.options`, which ``RigAPI`` and the
pytest plugin read too; only the options that pick the rig or say where results go
are declared here.

Every subcommand module imports this one and nothing of its siblings, and the group
(``rtrig.host.cli``) imports the subcommands: the CLI has no import circle.
"""

import contextlib
import datetime
import functools
from pathlib import Path

import click

from ...errors import UsageError
from ..procedures.options import DURATION, FRACTION, FREQUENCY, options

__all__ = ["CONTEXT", "FREQUENCY", "DURATION", "FRACTION", "BoardChoice", "RigOptions",
           "rig_options", "measurement_options", "run_options", "default_path",
           "counter_lines", "warn_counters"]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class BoardChoice(click.Choice):
    """One of the boards of :data:`rtrig.boards.BOARDS`, the one board registry. The
    list is read when a value is checked or help is shown, so that starting the CLI
    does not elaborate board modules."""

    def __init__(self):
        super().__init__([], case_sensitive=False)

    @property
    def choices(self):
        from ...boards import board_names
        return board_names()

    @choices.setter
    def choices(self, value):
        pass                                    # always the registry's


class RigOptions:
    """The rig a command opens: ``--port``/``--sim`` and the twin's options (global,
    or given after the subcommand), set by the group and the subcommand together."""

    def __init__(self, port, sim, debug, sim_board=None, sim_link="fast", baud=3_000_000,
                 accept_gateware=False):
        self.port, self.sim, self.debug = port, sim, debug
        self.accept_gateware = accept_gateware
        self.sim_board = sim_board
        self.sim_link = sim_link
        self.baud = baud
        self.soc, self.firmware = False, None   # set by commands given --target soc
        self.console = None                     # --console FILE (the SoC twin's)

    def merge(self, sim_here, port_here, accept_here=False):
        """``--sim`` / ``--port`` / ``--accept-gateware`` given after the subcommand."""
        if accept_here:
            self.accept_gateware = True
        if sim_here:
            self.sim = True
        if port_here:
            self.port = port_here

    def use_target(self, target, firmware=None, console=None):
        """``--target soc`` in simulation needs the twin built with the SoC."""
        self.soc = target == "soc"
        self.firmware = firmware
        self.console = console
        for name, value in (("--firmware", firmware), ("--console", console)):
            if value is not None and not (self.soc and self.sim):
                raise UsageError(f"{name} applies to --sim --target soc only")
        # before any twin is built or started: an image that is a FIFO would block it,
        # a console path that is one would never be a file
        from ...outputs import check_input, check_output
        if firmware is not None:
            check_input(firmware)
        if console is not None:
            check_output(console)

    @property
    def model_ticks(self):
        """The ticks the model target takes its times in, known before the rig is
        opened: ``tick_hz`` and ``step`` of the twin's board (``--sim-board``, else the
        default twin's, :data:`~rtrig.host.sim.builder.SIM_BOARD`); none given for a
        rig on a port (a board has no model target of its own to ask)."""
        if not self.sim:
            return {}
        from ..sim.builder import sim_board
        try:
            board = sim_board(self.sim_board)
        except KeyError:
            return {}                   # named in one line when the rig is opened
        return {"tick_hz": board.clk_freq * board.tick_step, "step": board.tick_step}

    def rig(self, measure=True):
        """Open the rig (a context manager giving a :class:`rtrig.host.rig.rig.Rig`).
        ``measure``: refuse a rig whose gateware is not this rtrig's build, unless
        ``--accept-gateware`` was given (:func:`rtrig.host.rig.gateware.refuse_mismatch`)."""
        opened = self._open()
        if not measure or self.accept_gateware:
            return opened
        return _checked(opened)

    def _open(self):
        from ..rig.connect import open_rig
        if self.sim and self.port:
            raise UsageError("give either --port or --sim, not both")
        # (a socket ignores the baud rate; --sim-board implies --sim)
        opts = {"sim_link": self.sim_link, "baudrate": self.baud}
        if self.sim_board is not None:
            from ...boards import get_board
            if self.soc and "soc" not in get_board(self.sim_board).targets:
                raise UsageError(f"board {self.sim_board} has no SoC target",
                                 hint="the boards with one: rtrig build --list; or "
                                      "--sim for the default twin's (the ULX3S's)")
            opts["board"] = self.sim_board
        if self.soc and self.sim:
            opts.update(soc=True, firmware=self.firmware, console=self.console)
        return open_rig(self.port, self.sim, **opts)


@contextlib.contextmanager
def _checked(opened):
    from ..rig.gateware import refuse_mismatch
    with opened as rig:
        refuse_mismatch(rig.gateware)
        yield rig


def rig_options(f):
    """A subcommand that opens a rig: takes ``--sim``/``--port`` after its name too
    (``rtrig capture --sim``) and receives the :class:`RigOptions` first."""
    @functools.wraps(f)
    def command(obj, sim_here, port_here, accept_here, **kwargs):
        obj.merge(sim_here, port_here, accept_here)
        return f(obj, **kwargs)

    command = click.pass_obj(command)
    command = click.option("--accept-gateware", "accept_here", is_flag=True,
                           help="Measure even on a rig whose gateware is not this "
                                "rtrig's build (as the global option).")(command)
    command = click.option("--port", "port_here", metavar="PORT",
                           help="Rig port (as the global option).")(command)
    return click.option("--sim", "sim_here", is_flag=True,
                        help="Use the simulation twin.")(command)


def _decorator(options):
    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f
    return decorate


def _click_option(o):
    """The click option of a table entry (:class:`rtrig.host.procedures.options.Option`),
    passing its value to the command as the keyword ``o.name``."""
    kw = {"default": o.default, "show_default": o.show_default, "required": o.required,
          "metavar": o.metavar, "help": o.help}
    if o.type is bool:
        if "/" not in o.flags:
            kw.update(is_flag=True, flag_value=not o.default)
    else:
        kw["type"] = o.param_type
    return click.option(o.flags, o.name, **kw)


def measurement_options(command, group=None):
    """``command``'s measurement options, from the one table
    (:mod:`rtrig.host.procedures.options`): all, or those of ``group`` (``target``:
    what is measured; ``measurement``), in the table's order."""
    return _decorator([_click_option(o) for o in options(command, group).values()])


def run_options(output_kind, quiet_help):
    """The options of a measurement on a target (``capture``, ``sweep``) that are not
    measurement settings: where the capture goes, how results are printed, and the
    simulated SoC's image and console."""
    return _decorator([
        click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                     default=None,
                     help=f"Capture file [default: captures/{output_kind}-DATE.rtrig]."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        click.option("--quiet", "-q", is_flag=True, help=quiet_help),
        click.option("--firmware", type=click.Path(exists=True, dir_okay=False),
                     default=None,
                     help="--sim --target soc: the SoC's RAM image (.bin) [default: rt_test]."),
        click.option("--console", type=click.Path(dir_okay=False), default=None,
                     help="--sim --target soc: write the SoC's console to FILE and keep it "
                          "[default: a temporary file, removed at the end]."),
    ])


def default_path(kind):
    """``captures/KIND-DATE.rtrig``: where a capture goes when ``-o`` is not given."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("captures") / f"{kind}-{stamp}.rtrig"


def capture_path(output, kind):
    """Where a command's capture goes: ``-o``, else :func:`default_path`; checked
    before any rig or twin is started (a directory, device or FIFO, or a folder that
    cannot be written, is refused at once)."""
    from ...outputs import check_output
    return check_output(output if output is not None else default_path(kind))


def counter_lines(counters):
    """The summary's ``link:`` and ``rig:`` lines: every loss counter, zero or not."""
    from ..rig.loss import LINK_COUNTERS
    lines = []
    for group in ("link", "rig"):
        parts = [f"{counters[k]} {label}" for k, (g, label, _) in LINK_COUNTERS.items()
                 if g == group and k in counters]
        if parts:
            lines.append(f"{group}: " + ", ".join(parts))
    return lines


def warn_counters(counters):
    """A ``warning:`` line on stderr for each nonzero loss counter (the total of the
    rig's overflows only when its parts are not there)."""
    from ..rig.loss import LINK_COUNTERS
    parts = {"lat_overflow", "evt_overflow", "truth_overflow", "stat_drops"}
    for k, (_, label, meaning) in LINK_COUNTERS.items():
        if not counters.get(k) or (k == "overflows" and parts & counters.keys()):
            continue
        click.echo(f"warning: {counters[k]} {label} ({meaning})", err=True)
