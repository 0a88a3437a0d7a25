# SPDX-License-Identifier: BSD-2-Clause
"""Build, check and flash the rig's bitstreams with the pip (YoWASP) toolchain.

``build(name)`` elaborates the board top, lets Amaranth write the build script
(``do_build=False``, so no programmer tool is required) and runs it with the YoWASP
tools named through Amaranth's tool variables (``YOSYS``, ``NEXTPNR_ECP5``, ...).
nextpnr runs with ``--timing-allow-fail`` and writes a JSON report; :func:`check_timing`
then compares the achieved Fmax of every clock with its constraint and fails with a
one-line message on a miss (docs/architecture.md, "Builds and toolchains"). An
unchanged build comes from the build cache (``$RTRIG_BUILD_CACHE``, default
``~/.cache/rtrig/boards``; see :func:`build`), and a variant on another's die
(``Board.same_die_as``: the ULX3S 12F) is packed from that variant's place and route.

Command line (used by ``rig/boards/boards.mk``)::

    rtrig build ulx3s            # one board
    rtrig build --all            # every board of DEFAULT_BOARDS
    rtrig build ulx3s --target soc [--firmware IMAGE.bin]
    rtrig build ulx3s --target soc-alone [--firmware IMAGE.bin]
    rtrig build ulx3s --no-cache  # build even if the cache has it

``--target`` picks what is built (``rtrig.boards.board.BUILD_TARGETS``): the rig (default),
the rig with the reference SoC, or the SoC alone; products of a target other than
``rig`` go to ``build/boards/<board>-<target>/``.

The parts: :mod:`.toolchain` (the YoWASP tools and running them), :mod:`.timing` (the
nextpnr report), :mod:`.cache` (the build cache), :mod:`.products` (names, folders and
the :class:`BuildResult`), :mod:`.flash` (programming a board); this module is the
build's flow.
"""

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

from rtrig.errors import ToolchainError, UsageError

# The toolchain is called through its module, so that tests can stand in for the tools.
from . import BOARDS, board_top, toolchain
from .cache import (
    _cache_load,
    _cache_store,
    _locked,
    _products,
    _write_atomic,
    _write_summary,
    cache_inputs,
    cache_key,
    cache_root,
)
from .products import BuildResult, _check_target, _top_name, build_name, resolve_target
from .timing import TimingError, _report_clocks, check_timing, parse_utilisation

__all__ = ["build", "stand_in_for"]


def _domains(board, target):
    from .soc import SOC_CLK_HZ
    if target == "rig":
        # Four samples per clock: the input registers run at twice ``sync``.
        return {"sync": board.clk_freq, "fast": 2 * board.clk_freq}
    if target == "soc":
        return {"sync": board.clk_freq, "soc": SOC_CLK_HZ}
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
    build_root = Path(build_root) if build_root else toolchain.project_root() / "build"
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


def _plan(board, platform, top, top_name, target="rig"):
    seeds = board.seeds_for(target)
    return platform.build(
        top, name=top_name, do_build=False,
        # The seed comes from the environment, so a retry reruns the same script line.
        nextpnr_opts=f"--timing-allow-fail --report {top_name}.report.json "
                     f"{board.nextpnr_opts_for(target)} --seed ${{{toolchain._SEED_VAR}:-{seeds[0]}}}",
        **({"script_after_read": board.yosys_after_read} if board.yosys_after_read else {}),
    )


def _new_result(board, platform, target, out_dir, top_name, fw_info):
    family = toolchain._family(platform)
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


def _build_board(board, top, target, fw_info, build_root, check, cache):
    """Place and route ``top`` on ``board`` (or take it from the cache): the result,
    with the clocks of the report unchecked, and the nextpnr report."""
    out_dir = (build_root / "boards" / build_name(board.name, target)).resolve()
    platform = board.platform()
    family = toolchain._family(platform)
    top_name = _top_name(board.name, target)
    seeds = board.seeds_for(target)
    plan = _plan(board, platform, top, top_name, target)
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
        missing = toolchain.tools_missing(family)
        if missing:
            raise ToolchainError(f"FPGA tools not installed: {', '.join(missing)}",
                                 hint="run `make fpga-tools` (pip-installs the pinned "
                                      "YoWASP tools)")
        t0 = time.monotonic()
        cache_dir = toolchain._wasm_cache_dir()
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
        returncode = toolchain._run(["sh", f"{plan.script}.sh"], out_dir,
                                    toolchain.tool_env(cache_dir), log_path, board.pnr_timeout)
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
            toolchain._place_and_route(out_dir, plan.script, cache_dir, seed, log_path, board)
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
    if toolchain._family(platform) != "ecp5" or toolchain._family(base_platform) != "ecp5":
        raise ValueError(f"{board.name}: same_die_as is implemented for ECP5 parts only")
    own_top, fw_info = _prepare_top(board, top, target, firmware)
    base_name, top_name = _top_name(base_board.name, target), _top_name(board.name, target)
    out_dir = (build_root / "boards" / build_name(board.name, target)).resolve()
    plan = _plan(board, platform, own_top, top_name, target)
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
        missing = toolchain.tools_missing("ecp5")
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
        env = toolchain.tool_env(toolchain._wasm_cache_dir())
        returncode = toolchain._run(["sh", pack.name], out_dir, env, log_path, board.pnr_timeout)
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


def _timing_met(report, board_name, domains):
    try:
        check_timing(report, board=board_name, domains=domains)
    except TimingError:
        return False
    return True


def stand_in_for(name, done):
    """The result in ``done`` (board name → :class:`BuildResult`, built in this
    process) that stands for board ``name`` (:attr:`Board.same_die_as`), or None."""
    board = BOARDS.get(name.lower())
    return done.get(board.same_die_as) if board is not None and board.same_die_as else None
