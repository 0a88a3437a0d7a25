# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig history``: record runs into a history, show a figure over them, draw the
trends (:mod:`rtrig.host.history`); and :func:`recording`, which gives ``capture``,
``sweep`` and ``suite`` their ``--history DB`` and ``--label KEY=VALUE``."""

import functools
import json
import os
from pathlib import Path

import click

from .options import CONTEXT, default_path

__all__ = ["history", "recording", "history_option"]


def history_option(f):
    return click.option("--history", "history_db", metavar="DB", envvar="RTRIG_HISTORY",
                        default=None,
                        help="History: an SQLite file or a postgresql:// URL "
                             "[default: captures/history.sqlite; env RTRIG_HISTORY].")(f)


def label_option(f):
    return click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
                        help="A label of the run (repeatable), e.g. --label "
                             "kernel=6.12.117-rt --label commit=abc123.")(f)


def _where_option(f):
    return click.option("--where", "where", multiple=True, metavar="KEY=VALUE",
                        help="Only runs with this label or set-up (board, target, kind, "
                             "source, status); repeatable.")(f)


def recording(f):
    """Give a measuring command ``--history DB`` and ``--label``: the history is
    opened (and checked writable) before the run, and the run is recorded when it
    ends — also when it ends with an error or a stop signal after its file was
    begun (a lost link, Ctrl-C): then with the end status its file holds, as
    ``history add`` of that file records it, or ``failed`` for a file complete in
    itself; or a line says why it is not."""
    @functools.wraps(f)
    def command(*args, history_db, labels, **kwargs):
        from ...errors import RtrigError, UsageError
        from ..history import History, HistoryError
        from ..history.query import parse_pairs
        labels = parse_pairs(labels, "--label")
        if history_db is None:
            if labels:
                raise UsageError("--label applies with --history only")
            return f(*args, **kwargs)
        History(history_db).close()               # a bad history fails before the run
        if "output" in kwargs and kwargs["output"] is None:
            kwargs["output"] = default_path(f.__name__)     # named now, for a cut-off run
        before = _stamp(kwargs.get("output"))
        try:
            res = f(*args, **kwargs)
        except (RtrigError, OSError, KeyboardInterrupt):
            _record_cut_off(kwargs.get("output"), before, history_db, labels)
            raise
        try:
            _record_paths([res.path], history_db, labels)
        except HistoryError as e:
            raise HistoryError(str(e), hint=f"the run is kept in {res.path}: rtrig history "
                                            f"add {res.path} records it later") from None
        return res
    return history_option(label_option(command))


def _stamp(path):
    """What tells a file rewritten from the one there before: ``None`` when none."""
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _record_cut_off(path, before, where, labels):
    """Record the file of a run that ended with an error, if the run wrote one."""
    from ...errors import RtrigError
    if _stamp(path) in (None, before):
        return                                    # the run ended before its file began
    try:
        _record_paths([path], where, labels, failed=True)
    except (RtrigError, OSError) as e:
        click.echo(f"history: the run in {path} is not recorded: {e}", err=True)


def _record_paths(paths, where, labels, failed=False):
    """Record the runs of ``paths``; ``failed``: the command that made them ended
    with an error, so a file complete in itself is recorded ``failed``."""
    from ..history import History, runs_of_file
    ids = []
    with History(where) as h:
        for p in paths:
            for run in runs_of_file(p, labels):
                for w in run.warnings:
                    click.echo(f"warning: {w}", err=True)
                if failed and run.status == "complete":
                    run.status = "failed"
                ids.append(h.record(run))
                status = "" if run.status == "complete" else f", status {run.status}"
                click.echo(f"history: run {ids[-1]} ({run.kind}, {run.source}) recorded "
                           f"into {h.where}{status}", err=True)
    return ids


@click.group("history", context_settings=CONTEXT, no_args_is_help=True)
def history():
    """A results history: runs with their figures, set-up and labels, their trends and
    the steps between versions (docs/history.md)."""


@history.command("add", context_settings=CONTEXT, no_args_is_help=True)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@history_option
@label_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs' ids as JSON.")
def add(files, history_db, labels, as_json):
    """Record FILE(s): rtrig captures, sweeps and suite runs, cyclictest --json output
    and cyclictest -h histograms."""
    from ..history.query import parse_pairs
    ids = _record_paths(files, history_db, parse_pairs(labels, "--label"))
    click.echo(json.dumps({"runs": ids}) if as_json else " ".join(map(str, ids)))


@history.command("show", context_settings=CONTEXT)
@history_option
@click.option("--figure", default=None, metavar="NAME",
              help="The figure to show, e.g. isr.p99, app.max, isr.missed, mf_isr "
                   "[default: list the runs].")
@click.option("--by", default=None, metavar="KEY",
              help="Group consecutive runs by this label or set-up field.")
@_where_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def show(history_db, figure, by, where, as_json):
    """Print the runs, or one figure over them (by run, or by groups of a label)."""
    from ...errors import UsageError
    from ..history import History
    from ..history.query import format_rows, parse_pairs, show_rows
    if by is not None and figure is None:
        raise UsageError("--by needs --figure", hint="e.g. --figure isr.p99 --by kernel")
    where = parse_pairs(where, "--where")
    with History(history_db, write=False) as h:
        rows = show_rows(h, figure, by, where)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
    else:
        click.echo("\n".join(format_rows(rows, figure, by)))


@history.command("report", context_settings=CONTEXT)
@history_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default="trend.html", show_default=True,
              help="HTML file to write, or - for stdout.")
@click.option("--figure", "figures", multiple=True, metavar="NAME",
              help="A figure to draw (repeatable) [default: each channel's p50, p99, "
                   "p99.99, max and missed, the sweeps' and the suites' figures].")
@click.option("--by", default=None, metavar="KEY",
              help="Group consecutive runs by this label or set-up field and mark the "
                   "steps between groups [default: each run its own group].")
@_where_option
@click.option("--confidence", default="0.95", show_default=True, metavar="C",
              help="Confidence of each step's comparison (as rtrig compare).")
def report(history_db, output, figures, by, where, confidence):
    """Write the trends of the history's figures as one HTML page: each figure over
    the runs with its bounds, and every step between consecutive groups that
    `rtrig compare`'s rule calls higher or lower."""
    from ...errors import UsageError
    from ...outputs import check_output
    from ..bounds import check_confidence
    from ..history import History
    from ..history.query import parse_pairs
    from ..history.trend import write_trend
    try:
        confidence = check_confidence(confidence)
    except ValueError as e:
        raise UsageError(f"--confidence: {e}") from None
    where = parse_pairs(where, "--where")
    if str(output) != "-":
        check_output(output)                      # before the history is read
    with History(history_db, write=False) as h:
        out, size, steps = write_trend(h, output, list(figures) or None, by, where,
                                       confidence)
    click.echo(f"trend: {out or 'stdout'} ({size / 1e6:.2f} MB, {steps} steps marked)",
               err=True)
    if out is not None:
        click.echo(str(out))
