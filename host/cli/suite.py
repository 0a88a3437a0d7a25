# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig suite``: the kernel suite (operations, thread switches, priority inversion)
timed by the rig, iteration by iteration."""

import json
import tempfile
from pathlib import Path

import click

from ...errors import UsageError
from ...units import format_ns
from .history import recording
from .options import (
    CONTEXT,
    capture_path,
    counter_lines,
    measurement_options,
    rig_options,
    warn_counters,
)

__all__ = ["suite"]

_COLUMNS = (("count", "count"), ("cold", "cold_ns"), ("min", "min_ns"), ("mean", "mean_ns"),
            ("p50", "p50_ns"), ("p99", "p99_ns"), ("p99.99", "p9999_ns"), ("max", "max_ns"))


def print_table(res):
    """One row per test; ``*`` marks a percentile with fewer than 10 samples beyond it."""
    w = max((len(n) for n in res.tests), default=4) + 1
    click.echo(f"{'test':{w}}" + "".join(f"{h:>10}" for h, _ in _COLUMNS) + "  self-timed")
    for name, t in res.tests.items():
        cells = []
        for _, key in _COLUMNS:
            v = t.get(key)
            cell = str(v) if key == "count" else format_ns(v)
            if key.removesuffix("_ns") in t.get("weak", ()):
                cell += "*"
            cells.append(cell)
        st = t.get("self_timed")
        agree = "—" if st is None else (
            f"agree (±{st['max_diff_cycles']:g} cycles)" if st["agree"]
            else f"DIFFER by {st['max_diff_cycles']:g} cycles")
        click.echo(f"{name:{w}}" + "".join(f"{c:>10}" for c in cells) + f"  {agree}")
    if any(t.get("weak") for t in res.tests.values()):
        click.echo("* fewer than 10 iterations lie beyond this percentile: too few to claim it")
    for line in counter_lines(res.link):
        click.echo(line)
    click.echo(f"capture: {res.path} ({res.final['status']})")


@click.command("suite", context_settings=CONTEXT)
@recording
@rig_options
@measurement_options("suite")
@click.option("--firmware", type=click.Path(exists=True, dir_okay=False), default=None,
              help="--sim --target soc: the suite image [default: firmware's suite.bin].")
@click.option("--console", type=click.Path(dir_okay=False), default=None,
              help="--sim --target soc: write the SoC's console to FILE and keep it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Capture file [default: captures/suite-DATE.rtrig].")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def suite(obj, target, tests, iterations, load, firmware, console, output, as_json, quiet):
    """Run the kernel suite on the target and time every iteration from outside."""
    from ...firmware import SUITE_IMAGE, default_firmware
    from ..procedures.suite import patch_config, run_suite, select_tests, wait_ready
    soc_twin = target == "soc" and obj.sim
    if not soc_twin and not tests:
        # No TRACE words from a real target: the windows can only be named by the
        # user's list, in the firmware's order (docs/suite.md).
        raise UsageError("without --sim --target soc the suite needs --tests: a real target "
                         "writes no TRACE words to name its tests",
                         hint="list the tests in the order the firmware runs them, e.g. "
                              "--tests sem_wake,yield (docs/suite.md)")
    chosen = select_tests(tests, keep_order=not soc_twin)
    if not soc_twin and iterations != 1000:
        raise UsageError("--iterations applies to --sim --target soc only",
                         hint="a firmware of your own sets its own iteration count")
    path = capture_path(output, "suite")
    with tempfile.TemporaryDirectory(prefix="rtrig-suite-") as tmp:
        if soc_twin:
            image = Path(firmware) if firmware else default_firmware(image=SUITE_IMAGE)
            patched = Path(tmp) / "suite.bin"
            patched.write_bytes(patch_config(image.read_bytes(), iterations, chosen,
                                             pause_cycles=_pause_cycles(obj)))
            firmware = str(patched)
        obj.use_target(target, firmware, console)
        with obj.rig() as rig:
            trace = rig.sim.trace if soc_twin and rig.sim is not None else None
            if trace is not None:
                wait_ready(rig)
            res = run_suite(rig, path, chosen, iterations, target, load, trace=trace,
                            progress=not quiet)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        print_table(res)
    suite = res.final["suite"]
    if not soc_twin:
        click.echo("note: the MARKER2 windows are named by the order of --tests (no TRACE "
                   "words)", err=True)
    for name, what in suite["mismatch"].items():
        click.echo(f"warning: {name}: {what}", err=True)
    if suite.get("window_error"):
        click.echo(f"warning: {suite['window_error']}", err=True)
    if res.final.get("trace_error"):
        click.echo(f"warning: the target's own counts are not used: {res.final['trace_error']}",
                   err=True)
    warn_counters(res.link)
    return res


def _pause_cycles(obj):
    """The SoC twin's pause after each iteration: long enough for its link (the fast
    link of the simulated board's clock, or the board's line with ``--sim-link line``)
    to carry every marker edge."""
    from ...gateware.soc import SOC_CLK_HZ
    from ..procedures.suite import pause_cycles
    from ..sim.builder import link_baud, sim_board
    board = sim_board(obj.sim_board)
    return pause_cycles(link_baud(obj.sim_link, board.clk_freq, board.baud), SOC_CLK_HZ)

