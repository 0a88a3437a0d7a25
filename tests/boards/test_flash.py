# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig flash``: the exact programmer command of each board, built and run with
``subprocess`` monkeypatched (no board, no programmer needed), a missing tool's and a
missing board's error in one line, and the board names given to openFPGALoader
checked against its own list where it is installed (required in CI)."""

import os
import shutil
import subprocess

import pytest

from rtrig.boards import BOARDS
from rtrig.boards import flash as flash_mod
from rtrig.boards.flash import bitstream_path, flash, flash_command
from rtrig.host.cli.main import main

#: The programmer command of each board, but its bitstream.
COMMANDS = {
    "ulx3s": ["openFPGALoader", "-b", "ulx3s"],
    "ulx3s-45f": ["openFPGALoader", "-b", "ulx3s"],
    "ulx3s-25f": ["openFPGALoader", "-b", "ulx3s"],
    "ulx3s-12f": ["openFPGALoader", "-b", "ulx3s"],
    "orangecrab": ["openFPGALoader", "-b", "orangeCrab"],
    "orangecrab-85f": ["openFPGALoader", "-b", "orangeCrab"],
    "icebreaker": ["iceprog"],
}


def built(name, root, target="rig"):
    bit = bitstream_path(name, root, target)
    bit.parent.mkdir(parents=True, exist_ok=True)
    bit.write_bytes(b"bitstream")
    return bit


def test_every_board_has_its_command():
    assert COMMANDS.keys() == BOARDS.keys()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_flash_runs_the_boards_programmer(name, tmp_path, monkeypatch):
    bit = built(name, tmp_path)
    ran = []
    monkeypatch.setattr(flash_mod.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(flash_mod.subprocess, "run",
                        lambda cmd: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    said = []
    cmd = flash(name, build_root=tmp_path, echo=said.append)
    assert cmd == ran[0] == [*COMMANDS[name], str(bit)]
    assert said == [" ".join(cmd)] and len(ran) == 1
    assert bit.suffix == "." + BOARDS[name].bitstream_ext


def test_dry_run_runs_nothing(tmp_path, monkeypatch, capsys):
    built("icebreaker", tmp_path)
    monkeypatch.setattr(flash_mod.subprocess, "run", lambda cmd: pytest.fail("ran"))
    main(["flash", "icebreaker", "--dry-run", "--build-root", str(tmp_path)])
    assert capsys.readouterr().out.split() == flash_command("icebreaker", tmp_path)


def one_error(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err.splitlines()
    assert not any("Traceback" in x for x in err), err
    at = [i for i, x in enumerate(err) if x.startswith("error: ")]
    assert e.value.code != 0 and len(at) == 1, err
    err = err[at[0]:]                   # after the command, when it was run
    assert len(err) <= 2 and all(x.startswith("hint: ") for x in err[1:]), err
    return e.value.code, err


def test_a_missing_tool_is_one_line_with_the_command(tmp_path, monkeypatch, capsys):
    bit = built("orangecrab", tmp_path)
    monkeypatch.setattr(flash_mod.shutil, "which", lambda tool: None)
    monkeypatch.setattr(flash_mod.subprocess, "run", lambda cmd: pytest.fail("ran"))
    code, err = one_error(["flash", "orangecrab", "--build-root", str(tmp_path)], capsys)
    assert code == 7
    assert err[0] == f"error: openFPGALoader not found; to program the board run: " \
                     f"openFPGALoader -b orangeCrab {bit}"
    assert "apt-get install openfpgaloader" in err[1]
    built("icebreaker", tmp_path)
    _, err = one_error(["flash", "icebreaker", "--build-root", str(tmp_path)], capsys)
    assert "iceprog not found" in err[0] and "fpga-icestorm" in err[1]


def test_a_failing_programmer_is_one_line(tmp_path, monkeypatch, capsys):
    built("ulx3s", tmp_path)
    monkeypatch.setattr(flash_mod.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(flash_mod.subprocess, "run",
                        lambda cmd: subprocess.CompletedProcess(cmd, 1))
    code, err = one_error(["flash", "ulx3s", "--build-root", str(tmp_path)], capsys)
    assert code == 7 and err[0] == "error: openFPGALoader failed"


def test_an_unknown_board_or_no_bitstream_is_one_line(tmp_path, capsys):
    code, err = one_error(["flash", "nosuch"], capsys)
    assert code == 2 and err[0] == "error: unknown board 'nosuch'"
    code, err = one_error(["flash", "icebreaker", "--build-root", str(tmp_path)], capsys)
    assert code == 2 and err[0].startswith("error: no bitstream for icebreaker: ")
    assert "rtrig build icebreaker" in err[1]


def test_openfpgaloader_knows_the_board_names():
    tool = shutil.which("openFPGALoader")
    if tool is None:
        reason = "openFPGALoader is not installed (make system-deps)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must check the board names: {reason}")
        pytest.skip(reason)
    r = subprocess.run([tool, "--list-boards"], capture_output=True, text=True, timeout=60)
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    given = {c[2] for c in COMMANDS.values() if c[0] == "openFPGALoader"}
    assert given and given <= listed, f"not in openFPGALoader --list-boards: {given - listed}"
