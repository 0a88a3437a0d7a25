# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig selftest``: the rig checks itself against targets of known latency."""

import json
import sys

import click

from .options import CONTEXT, rig_options

__all__ = ["selftest"]


@click.command(context_settings=CONTEXT)
@rig_options
@click.option("--wire/--no-wire", default=None,
              help="Also check a wire from STIM0 to the ISR_OUT input (fit a jumper on a "
                   "board; always present in the simulation twin).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def selftest(obj, wire, as_json):
    """Check the rig itself: loopback delays and frequencies must read exactly."""
    from ..procedures.selftest import run_selftest
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
