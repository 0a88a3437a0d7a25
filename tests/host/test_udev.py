# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig udev``: a rule per board USB device, each of known keys only, and
``--install`` refused in one line without root or the rules folder."""

import re
import shutil
import subprocess

import pytest

from rtrig.host.cli import udev as udev_mod
from rtrig.host.cli.main import main
from rtrig.host.rig.ports import USB_LINKS, USB_PROGRAMMERS

#: The keys a rule may hold, and the operator each takes.
KEYS = {"SUBSYSTEM": "==", "ATTRS{idVendor}": "==", "ATTRS{idProduct}": "==",
        "TAG": "+=", "MODE": "=", "GROUP": "=", "ENV{ID_MM_DEVICE_IGNORE}": "="}
PAIR = re.compile(r'^([A-Z_]+(?:\{[A-Za-z_]+\})?)(==|\+=|=)"([^"]*)"$')


def parse(text):
    """The rules of ``text``: a dict of KEY → (operator, value) per rule line."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        rule = {}
        for pair in line.split(", "):
            m = PAIR.match(pair)
            assert m, f"not a KEY==\"v\" pair: {pair!r} in {line!r}"
            key, op, value = m.groups()
            assert key in KEYS and KEYS[key] == op, pair
            assert key not in rule, line
            rule[key] = (op, value)
        assert rule.keys() == KEYS.keys(), line
        out.append(rule)
    return out


def test_every_board_device_has_one_rule(capsys):
    main(["udev"])
    rules = parse(capsys.readouterr().out)
    have = {(r["SUBSYSTEM"][1], r["ATTRS{idVendor}"][1], r["ATTRS{idProduct}"][1])
            for r in rules}
    assert len(have) == len(rules)
    want = {("tty", f"{d.vid:04x}", f"{d.pid:04x}") for d in USB_LINKS} | \
        {("usb", f"{d.vid:04x}", f"{d.pid:04x}") for d in USB_PROGRAMMERS}
    assert have == want
    assert ("tty", "0403", "6015") in have and ("usb", "1209", "5af0") in have
    for r in rules:
        assert r["TAG"] == ("+=", "uaccess") and r["MODE"] == ("=", "0660")
        assert r["GROUP"] == ("=", "plugdev")
        assert r["ENV{ID_MM_DEVICE_IGNORE}"] == ("=", "1")


def test_the_parser_rejects_a_bad_rule():
    with pytest.raises(AssertionError):
        parse('SUBSYSTEM=="tty",ATTRS{idVendor}=="0403"')
    with pytest.raises(AssertionError):
        parse('SUBSYSTEM=="tty", NAME="x"')


def test_udevadm_verifies_the_rules(tmp_path):
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        pytest.skip("udevadm is not installed")
    if subprocess.run([udevadm, "verify", "--help"], capture_output=True).returncode != 0:
        pytest.skip("this udevadm has no verify")
    path = tmp_path / "70-rtrig.rules"
    path.write_text(udev_mod.rules())
    r = subprocess.run([udevadm, "verify", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def one_error(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err.splitlines()
    assert e.value.code != 0 and len(err) == 1, err
    return err[0]


def test_install_needs_root(monkeypatch, capsys):
    monkeypatch.setattr(udev_mod.os, "geteuid", lambda: 1000)
    assert "needs root" in one_error(["udev", "--install"], capsys)


def test_install_needs_the_rules_folder(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(udev_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(udev_mod, "RULES_PATH", tmp_path / "nowhere" / "70-rtrig.rules")
    assert "does not exist" in one_error(["udev", "--install"], capsys)


def test_install_writes_the_rules_and_reloads_udev(monkeypatch, tmp_path, capsys):
    path = tmp_path / "70-rtrig.rules"
    ran = []
    monkeypatch.setattr(udev_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(udev_mod, "RULES_PATH", path)
    monkeypatch.setattr(udev_mod.shutil, "which", lambda tool: f"/sbin/{tool}")
    monkeypatch.setattr(udev_mod.subprocess, "run",
                        lambda cmd: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    main(["udev", "--install"])
    assert path.read_text() == udev_mod.rules()
    assert ran == [["/sbin/udevadm", "control", "--reload-rules"],
                   ["/sbin/udevadm", "trigger"]]
    # without udevadm: written, nothing run
    ran.clear()
    monkeypatch.setattr(udev_mod.shutil, "which", lambda tool: None)
    main(["udev", "--install"])
    assert ran == [] and "udevadm not found" in capsys.readouterr().out
