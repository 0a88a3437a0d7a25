# SPDX-License-Identifier: BSD-2-Clause
"""Reading nextpnr's report: the achieved clock frequencies against their constraints,
and the resources used.

nextpnr runs with ``--timing-allow-fail`` and writes a JSON report (``--report``);
:func:`check_timing` compares the achieved Fmax of every clock with its constraint and
fails with a one-line :class:`TimingError` on a miss (docs/architecture.md, "Builds
and toolchains"), for a fresh build and a cached one alike.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from rtrig.errors import ToolchainError

__all__ = ["TimingError", "ClockTiming", "check_timing", "parse_utilisation"]


class TimingError(ToolchainError):
    """A clock domain misses its frequency constraint."""


@dataclass
class ClockTiming:
    net: str
    constraint_mhz: float
    achieved_mhz: float

    @property
    def margin_pct(self):
        return 100.0 * (self.achieved_mhz / self.constraint_mhz - 1.0)

    @property
    def ok(self):
        return self.achieved_mhz >= self.constraint_mhz


def check_timing(report, *, require_hz=None, board="board", domains=None):
    """Clock results of a nextpnr ``--report`` JSON (a path or a dict).

    Raises :class:`TimingError` when any clock's achieved Fmax is below its
    constraint, or below ``require_hz`` when given (which replaces the constraint
    in the check). ``domains`` (clock domain → Hz) are the frequencies the design
    makes: each must be the constraint of some clock in the report, so that no domain
    is left unconstrained (nextpnr derives PLL outputs' constraints from the board
    clock's; one it could not derive would be missing here).
    Returns a list of :class:`ClockTiming`.
    """
    if not isinstance(report, dict):
        report = json.loads(Path(report).read_text())
    clocks = []
    for net, v in sorted(report.get("fmax", {}).items()):
        constraint = v["constraint"] if require_hz is None else require_hz / 1e6
        clocks.append(ClockTiming(net, float(constraint), float(v["achieved"])))
    if not clocks:
        raise TimingError(f"{board}: nextpnr reported no clock (no frequency constraint?)")
    derived = [float(v["constraint"]) for v in report["fmax"].values()]
    for domain, hz in (domains or {}).items():
        if not any(abs(c / (hz / 1e6) - 1) < 1e-3 for c in derived):
            raise TimingError(
                f"{board}: clock domain {domain} ({hz / 1e6:g} MHz) has no timing constraint "
                f"in the nextpnr report (constraints: "
                f"{', '.join(f'{c:.1f} MHz' for c in derived)})",
                hint="is the domain driven by a PLL output nextpnr derives a constraint for?")
    for c in clocks:
        if not c.ok:
            raise TimingError(
                f"{board}: timing not met: clock {c.net} reaches {c.achieved_mhz:.1f} MHz, "
                f"needs {c.constraint_mhz:.1f} MHz ({c.margin_pct:+.1f} %)",
                hint="see docs/boards.md (timing) for what to change; "
                     "the nextpnr log is in the build folder")
    return clocks


# nextpnr utilisation cell types → (LUT, FF, BRAM) columns
_UTIL_KEYS = {
    "ecp5": {"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "BRAM": ("DP16KD",),
             "IO": ("TRELLIS_IO",), "PLL": ("EHXPLLL",)},
    "ice40": {"LC": ("ICESTORM_LC",), "BRAM": ("ICESTORM_RAM",), "IO": ("SB_IO",),
              "PLL": ("ICESTORM_PLL",)},
}


def parse_utilisation(report, family, yosys_log=None):
    """Resource use from the nextpnr report (an iCE40 logic cell, LC, is one LUT4 + one FF)."""
    util = report.get("utilization", {})
    out = {}
    for col, keys in _UTIL_KEYS[family].items():
        for k in keys:
            if k in util:
                out[col] = {"used": util[k]["used"], "available": util[k]["available"]}
    return out


def _report_clocks(report):
    return [ClockTiming(net, float(v["constraint"]), float(v["achieved"]))
            for net, v in sorted(report.get("fmax", {}).items())]
