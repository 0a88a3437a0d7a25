# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig compare``: a thin wrapper over :func:`rtrig.host.report.compare_text.compare`."""

import json
from pathlib import Path

import click

from ...errors import UsageError
from .options import CONTEXT

__all__ = ["compare_cmd"]


@click.command("compare", context_settings=CONTEXT, no_args_is_help=True)
@click.argument("a", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--confidence", default="0.95", show_default=True,
              metavar="C", help="Confidence of the whole comparison (0.5 to below 1).")
@click.option("--channels", default=None, metavar="LIST",
              help="Channels to compare, comma-separated [default: all; A and B must "
                   "then hold the same].")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_cmd(a, b, confidence, channels, as_json):
    """Is B higher, lower, or is no difference shown? Compare two captures (A is the
    reference) or two sweeps.

    Captures: per channel, every percentile with its distribution-free bounds and the
    bounds of B − A, missed pulses, and a two-sample Kolmogorov–Smirnov test; the
    confidence holds for the whole comparison. Sweeps: MF-ISR, MF-APP and SF with the
    sweeps' resolution as their bounds. Warns when A and B were measured differently
    (frequency, load, jitter, target, rig).
    """
    from ..bounds import check_confidence
    from ..report.compare_text import compare, format_comparison
    try:
        confidence = check_confidence(confidence)
    except ValueError as e:
        raise UsageError(f"--confidence: {e}") from None
    names = None
    if channels is not None:
        names = [c.strip().lower() for c in channels.split(",") if c.strip()]
        if not names:
            raise UsageError("--channels names no channel (e.g. --channels isr,app)")
    result = compare(a, b, confidence=confidence, channels=names)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=1))
    else:
        click.echo("\n".join(format_comparison(result)))
