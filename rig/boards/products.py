# SPDX-License-Identifier: BSD-2-Clause
"""What a build makes and where: the board and target it builds (checked by
:func:`resolve_target`), its folder and top level's name, and its :class:`BuildResult`.

A target other than the rig (``rtrig.boards.board.BUILD_TARGETS``) builds into
``build/boards/<board>-<target>/`` (:func:`build_name`).
"""

from dataclasses import asdict, dataclass, field

from rtrig.errors import UsageError

from . import BOARDS, get_board
from .board import BUILD_TARGETS

__all__ = ["BuildResult", "build_name", "resolve_target"]


@dataclass
class BuildResult:
    board: str
    device: str
    build_dir: str
    bitstream: str
    clk_hz: int                 #: ``sync`` (the tick); the SoC's clock for ``soc-alone``
    tick_ns: float              #: None for ``soc-alone``
    seconds: float
    clocks: list = field(default_factory=list)
    resources: dict = field(default_factory=dict)
    target: str = "rig"
    #: Clock domain → frequency made by the PLL (Hz).
    domains: dict = field(default_factory=dict)
    #: The SoC's RAM image (SoC targets): path and SHA-256.
    firmware: dict = field(default_factory=dict)
    #: nextpnr seed of this bitstream, and the seeds tried before it missed timing.
    seed: int = 1
    seeds_missed: list = field(default_factory=list)
    #: Taken from the build cache (no tool ran); the entry's key (empty: not cached).
    cached: bool = False
    cache_key: str = ""
    #: The variant whose place and route this bitstream is (``Board.same_die_as``).
    pnr_from: str = ""
    #: SHA-256 of the design files (netlist, constraints, synthesis script) with the
    #: top's name taken out: equal for variants that differ only in the device.
    design_sha256: str = ""
    #: Host link baud rate built in (0: not recorded).
    baud: int = 0

    def summary_lines(self):
        what = "" if self.target == "rig" else f", target {self.target}"
        lines = [f"{self.board} ({self.device}{what}): {self.bitstream}"]
        for c in self.clocks:
            lines.append(f"  clock {c.net}: Fmax {c.achieved_mhz:.1f} MHz, constraint "
                         f"{c.constraint_mhz:.1f} MHz, margin {c.margin_pct:+.1f} %")
        r = self.resources
        lines.append("  " + ", ".join(
            f"{k} {v['used']}/{v['available']}" for k, v in r.items()))
        clocks = ", ".join(f"{d} {f / 1e6:g} MHz" for d, f in self.domains.items())
        if self.firmware:
            lines.append(f"  firmware {self.firmware['path']}")
        tick = f"tick {self.tick_ns:.2f} ns; " if self.target != "soc-alone" else ""
        link = f"host link {self.baud / 1e6:g} Mbaud; " if self.baud else ""
        lines.append(f"  {clocks}; {tick}{link}build {self.seconds:.0f} s")
        if self.seeds_missed:
            lines.append(f"  nextpnr seed {self.seed} (seeds {', '.join(map(str, self.seeds_missed))} "
                         f"missed timing)")
        if self.pnr_from:
            lines.append(f"  placed and routed as {self.pnr_from} (the same die), packed "
                         f"for {self.device}")
        if self.cached:
            lines.append(f"  from the build cache ({self.cache_key})")
        return lines

    def to_json(self):
        d = asdict(self)
        for c, cd in zip(self.clocks, d["clocks"], strict=True):
            cd["margin_pct"] = round(c.margin_pct, 2)
        return d

def build_name(board_name, target="rig"):
    """Folder (under ``build/boards/``) of a board's target: ``ulx3s``, ``ulx3s-soc``."""
    return board_name if target == "rig" else f"{board_name}-{target}"


def _top_name(board_name, target="rig"):
    return "rtrig_" + build_name(board_name, target).replace("-", "_")


def resolve_target(name, target="rig"):
    """The :class:`Board` called ``name``, checked to build ``target``; a
    :class:`UsageError` for an unknown board or a target the board does not build."""
    try:
        board = get_board(name)
    except KeyError:
        raise UsageError(f"unknown board {name!r}",
                         hint="boards: " + ", ".join(BOARDS)) from None
    _check_target(board, target)
    return board


def _check_target(board, target):
    if target not in BUILD_TARGETS:
        raise UsageError(f"unknown target {target!r}", hint="targets: " + ", ".join(BUILD_TARGETS))
    if target not in board.targets:
        with_it = [b.name for b in BOARDS.values() if target in b.targets]
        raise UsageError(f"{board.name} does not build target {target!r}",
                         hint=f"{board.name} builds: {', '.join(board.targets)}; "
                              f"{target} is built for: {', '.join(with_it) or 'no board'}")
