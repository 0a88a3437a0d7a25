# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig build`` and ``rtrig flash``: FPGA bitstreams for the rig's boards.

Thin wrappers over :mod:`rtrig.boards.build` and :mod:`rtrig.boards.flash`.
"""

import json

import click

from .options import CONTEXT, FREQUENCY

__all__ = ["build_cmd", "flash_cmd"]

_TARGET_HELP = ("What to build: rig (default), soc (the rig with the reference SoC built "
                "in), soc-alone (the SoC alone, a target for a second board's rig).")


@click.command("build", context_settings=CONTEXT)
@click.argument("board", required=False)
@click.option("--all", "all_boards", is_flag=True, help="Build every board variant.")
@click.option("--list", "list_boards", is_flag=True, help="List the boards and exit.")
@click.option("--require-mhz", type=float, default=None,
              help="Fail unless every clock reaches this Fmax (default: its constraint).")
@click.option("--build-root", type=click.Path(file_okay=False), default=None,
              help="Build folder (default: the project's build/); products go to "
                   "BUILD_ROOT/boards/BOARD/.")
@click.option("--target", default="rig", show_default=True, metavar="TARGET",
              help=_TARGET_HELP)
@click.option("--firmware", type=click.Path(dir_okay=False), default=None,
              help="SoC RAM image (raw .bin) for --target soc/soc-alone (default: "
                   "firmware/build/rtrig-soc/rt_test.bin, as for the simulated SoC).")
@click.option("--baud", type=FREQUENCY, default=None, metavar="RATE",
              help="Host link rate: the board's default (3M) or a faster one its "
                   "USB-serial chip makes (`--list` shows them; e.g. 6M on the iCEBreaker). "
                   "Give the same --baud to rtrig then.")
@click.option("--no-cache", is_flag=True,
              help="Build even when the build cache holds this build's result "
                   "(also: RTRIG_BUILD_CACHE=off).")
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON.")
def build_cmd(board, all_boards, list_boards, require_mhz, build_root, target, firmware,
              baud, no_cache, as_json):
    """Build, timing-check and summarise the bitstream of BOARD.

    Uses the pip YoWASP tools (`make fpga-tools`); checks the Fmax nextpnr reports
    for every clock against its constraint and fails on a miss. A build whose inputs
    are unchanged is taken from the build cache (docs/boards.md, "Build cache").
    """
    from rtrig.boards import BOARDS, DEFAULT_BOARDS
    from rtrig.boards.build import build, stand_in_for
    from rtrig.boards.products import resolve_target

    from ...errors import UsageError

    if list_boards:
        for b in BOARDS.values():
            links = ", ".join(f"{r / 1e6:g}M" for r in (b.baud, *b.link_bauds))
            click.echo(f"{b.name:16} {b.title:28} {b.clk_freq / 1e6:g} MHz, "
                       f"tick {b.tick_ns:.2f} ns; link {links} baud; targets "
                       f"{', '.join(b.targets)}")
        return
    if all_boards:
        if target != "rig":
            raise UsageError("--all builds the rig of every board; name a board for --target")
        names = list(DEFAULT_BOARDS)
    elif board:
        names = [board]
    else:
        raise UsageError("name a board or give --all", hint="boards: " + ", ".join(BOARDS))
    for n in names:
        resolve_target(n, target)
    if build_root is not None:
        from ...outputs import check_output_dir
        check_output_dir(build_root)     # before minutes of elaboration and synthesis
    require_hz = None if require_mhz is None else require_mhz * 1e6
    results = []
    done = {}
    for n in names:
        what = n if target == "rig" else f"{n} (target {target})"
        click.echo(f"building {what} ...", err=True)
        r = build(n, build_root=build_root, require_hz=require_hz, target=target,
                  firmware=firmware, cache=False if no_cache else None,
                  **({"baud": baud} if baud is not None else {}),
                  stand_in=stand_in_for(n, done))
        done[r.board] = r
        results.append(r)
        if not as_json:
            click.echo("\n".join(r.summary_lines()))
    if as_json:
        click.echo(json.dumps([r.to_json() for r in results], indent=2))


@click.command("flash", context_settings=CONTEXT)
@click.argument("board")
@click.option("--dry-run", is_flag=True, help="Print the programming command only.")
@click.option("--build-root", type=click.Path(file_okay=False), default=None,
              help="Build folder the bitstream was built in.")
@click.option("--target", default="rig", show_default=True, metavar="TARGET",
              help="Which of the board's bitstreams: rig, soc or soc-alone.")
def flash_cmd(board, dry_run, build_root, target):
    """Program BOARD with its built bitstream (openFPGALoader; iceprog for the iCEBreaker)."""
    from rtrig.boards.flash import flash
    flash(board, build_root=build_root, dry_run=dry_run, target=target,
          echo=lambda line: click.echo(line, err=not dry_run))
