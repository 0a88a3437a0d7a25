# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig info``: which rig answers, and what its gateware can do."""

import json

import click

from .options import CONTEXT, rig_options

__all__ = ["info"]


@click.command(context_settings=CONTEXT)
@rig_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def info(obj, as_json):
    """Identify the rig: board, gateware version and hash, tick rate, link speed."""
    from ...protocol import Caps, Target, latency_channels
    with obj.rig(measure=False) as rig:
        d = rig.describe()
        d["stim_step"] = rig.stim_step
        d["tick_ns"] = 1e9 / d["tick_hz"]
        d["targets"] = [t.name.lower() for t in Target if d["caps"] & (1 << t)]
        d["features"] = [c.name.lower() for c in Caps if d["caps"] & c]
        d["latency_channels"] = latency_channels(d["caps"])
        d["build_hash"] = f"{d['build_hash']:08x}"
        d["board_name"] = board_name(d["board"])
        d["loopback_max_ticks"] = rig.loopback_max_ticks
        d["gateware"] = rig.gateware
        del d["caps"]
    if as_json:
        click.echo(json.dumps(d, indent=2))
        return
    click.echo(f"rig        {'simulation twin' if d['simulation'] else d['port']}")
    click.echo(f"board      {d['board_name']} (code {d['board']})")
    click.echo(f"gateware   protocol v{d['version']}, build {d['build_hash']}")
    g = d["gateware"]
    if g is not None and g["match"] is not None:
        click.echo("           " + (g["detail"] if g["match"] else
                                    f"not this rtrig's ({g['detail']}): run `{g['fix']}`"))
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
    top = d["loopback_max_ticks"]
    click.echo(f"targets    {', '.join(d['targets'])}"
               + (f" (loopback delay at most {top * d['tick_ns'] / 1000:.6g} µs)"
                  if top is not None and "loopback" in d["targets"] else ""))
    n = d["latency_channels"]
    click.echo(f"channels   {n} latency channels (isr, app"
               + (f" and {n - 2} interval channels)" if n > 2 else ")"))
    names = {"intervals": "interval channels (any edge to any edge)", "burst": "bursts",
             "armed": "armed runs (RUN_AT)"}
    have = [names[f] for f in names if f in d["features"]]
    lack = [names[f] for f in names if f not in d["features"]]
    click.echo("features   " + (", ".join(have) or "—")
               + (f" (not in this build: {', '.join(lack)})" if lack else ""))


def board_name(code):
    """The board's name from the code in its ``BOARD`` register."""
    if code == 0:
        return "simulation twin"
    try:
        from ...boards import BOARDS
        names = [n for n, b in BOARDS.items() if b.code == code]
    except Exception:
        names = []
    return names[0] if names else "unknown board"
