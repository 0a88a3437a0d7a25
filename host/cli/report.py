# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig report`` and ``rtrig export``: thin wrappers over host.report and host.export."""

import time
from pathlib import Path

import click

from ...errors import UsageError
from .options import CONTEXT

__all__ = ["report", "export"]


@click.command(context_settings=CONTEXT, no_args_is_help=True)
@click.argument("captures", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default="report.html", show_default=True, help="HTML file to write.")
@click.option("--title", default=None, help="Page title [default: the capture names].")
@click.option("--elf", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The SoC firmware's ELF: with a SoC-twin recording beside "
                                 "a capture (CAPTURE.rec), the section \"Why the slowest "
                                 "pulses were slow\" [default: the build's ELF of the image "
                                 "each capture ran].")
@click.option("--stages", default=None, metavar="EDGES",
              help="Marker edges as stages, e.g. marker1+,marker2+: a table of the time "
                   "from the stimulus to each (captures with --raw).")
def report(captures, output, title, elf, stages):
    """Write one self-contained interactive HTML report of CAPTURE(s).

    With several captures the report starts with a comparison table and overlaid
    histograms and tail curves. A CAPTURE may also be a `cyclictest -h` histogram
    file: it is shown beside the rig's captures. The file embeds plotly.js and works offline.
    """
    from ...outputs import check_output
    from ..integrations.cyclictest import split_paths
    from ..report import write_report
    check_output(output)                 # before reading any capture
    t = time.perf_counter()
    captures, histograms = split_paths(captures)     # cyclictest -h files beside captures
    if stages is not None:
        from ..explain.stages import parse_stages
        parse_stages(stages)             # a bad spec before any work
    out, size = write_report(captures, output, title=title, cyclictest=histograms,
                             elf=elf or "auto", stages=stages)
    click.echo(f"report: {out} ({size / 1e6:.2f} MB, {time.perf_counter() - t:.1f} s)",
               err=True)
    click.echo(str(out))


@click.command(context_settings=CONTEXT, no_args_is_help=True)
@click.argument("capture", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-f", "--format", "fmt", required=True,
              type=click.Choice(["csv", "json", "summary-csv", "vcd", "cyclictest", "trace"]),
              help="csv: one row per pulse; json: summary; summary-csv: one row per "
                   "channel with every percentile's 95 % bounds; vcd: raw events; "
                   "cyclictest: histogram in cyclictest -h layout; trace: Chrome trace "
                   "event JSON (ui.perfetto.dev), with the SoC twin's recording "
                   "(CAPTURE.rec) the CPU's spans of the slowest pulses.")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Output file, '-' for stdout [default: CAPTURE with the format's suffix].")
@click.option("--buckets", type=int, default=None,
              help="cyclictest: number of 1 µs buckets [default: up to the maximum].")
@click.option("--elf", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="trace: the SoC firmware's ELF, for the CPU's spans "
                                 "[default: the build's ELF of the image the capture ran, "
                                 "when there is one].")
@click.option("--stages", default=None, metavar="EDGES",
              help="trace: marker edges as stages, e.g. marker1+,marker2+ (a capture "
                   "with --raw): a track per stage.")
@click.option("--timescale", default=None, metavar="ns|ps",
              help="vcd: ns (1 ns, each edge rounded to the nearest ns: sigrok and "
                   "PulseView read it in seconds) or ps (exact to the ps) [default: ns].")
def export(capture, fmt, output, buckets, elf, stages, timescale):
    """Export CAPTURE for other tools: CSV, JSON, a summary CSV, VCD or a cyclictest
    histogram."""
    from ...capture import load
    from ..integrations.export import SUFFIX
    from ..integrations.export import export as do_export
    options = {}
    if buckets is not None:
        if fmt != "cyclictest":
            raise UsageError("--buckets applies to --format cyclictest only")
        options["buckets"] = buckets
    if (elf is not None or stages is not None) and fmt != "trace":
        raise UsageError("--elf and --stages apply to --format trace only")
    if timescale is not None:
        from ..integrations.export_vcd import TIMESCALES
        if fmt != "vcd":
            raise UsageError("--timescale applies to --format vcd only")
        if timescale not in TIMESCALES:
            raise UsageError(f"--timescale must be {' or '.join(TIMESCALES)}, "
                             f"not '{timescale}'")
        options["timescale"] = timescale
    if fmt == "trace":
        options["elf"] = elf or "auto"
        options["stages"] = stages
        options["warn"] = lambda m: click.echo(f"warning: {m}", err=True)
    from ...outputs import check_output
    from ..analysis import answered_counts, capture_warnings
    if output is None:
        output = capture.with_suffix(SUFFIX[fmt])
    if str(output) != "-":
        check_output(output)             # before reading the capture
    cap = load(capture)
    answered = None if cap.meta.get("kind") == "sweep" else answered_counts(cap)
    for w in capture_warnings(cap, answered):
        click.echo(f"warning: {w}", err=True)
    out = do_export(cap, fmt, output, **options)
    if out is not None:
        click.echo(f"export: {out}", err=True)
