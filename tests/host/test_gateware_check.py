# SPDX-License-Identifier: BSD-2-Clause
"""A rig whose gateware is not this rtrig's build: refused for measurements in one line
naming the command that fixes it, measured with ``--accept-gateware``, and recorded in
the capture's ``META`` either way."""

import pytest

from rtrig.boards import get_board
from rtrig.capture import load
from rtrig.errors import LinkError
from rtrig.host.cli.main import main
from rtrig.host.rig import connect as connect_mod
from rtrig.host.rig import gateware
from rtrig.host.rig.run import rig_meta
from rtrig.protocol import GATEWARE_VERSION

EXPECTED = 0x12345678


def identity(build_hash, board=1):
    return {"version": GATEWARE_VERSION, "build_hash": build_hash, "tick_hz": 120_000_000,
            "baud": 3_000_000, "n_inputs": 6, "board": board, "caps": 3, "in_delay": 2,
            "stim_step": 4}


class FakeLink:
    """A board on a serial device that answers its identity and nothing else."""
    info = identity(0xDEADBEEF)

    def __init__(self, url, baudrate=None, **kw):
        self.url = url

    def identify(self):
        return dict(self.info)

    def close(self):
        pass

    def __getattr__(self, name):
        raise LinkError("the fake link answers nothing else")


@pytest.fixture
def expected(monkeypatch):
    monkeypatch.setattr(gateware, "expected_hash", lambda board, baud=None: EXPECTED)


def test_a_rig_of_another_build_is_a_mismatch(expected):
    g = gateware.check_gateware(identity(0xDEADBEEF))
    assert g["match"] is False and g["expected_hash"] == f"{EXPECTED:08x}"
    assert g["rig_hash"] == "deadbeef"
    assert g["fix"] == "rtrig build ulx3s && rtrig flash ulx3s"
    assert gateware.check_gateware(identity(EXPECTED))["match"] is True
    faster = {**identity(0xDEADBEEF, board=3), "baud": 6_000_000}
    assert gateware.check_gateware(faster)["fix"] == \
        "rtrig build icebreaker --baud 6M && rtrig flash icebreaker"
    assert gateware.check_gateware(identity(1, board=0))["match"] is None


@pytest.mark.parametrize("command", [["capture", "--target", "loopback", "--count", "3"],
                                     ["selftest"], ["sweep", "--target", "external", "--from", "10k", "--to", "20k"],
                                     ["suite", "--target", "external", "--tests", "sem_wake"]])
def test_measurements_are_refused_in_one_line(command, expected, monkeypatch, capsys):
    monkeypatch.setattr(connect_mod, "RigLink", FakeLink)
    with pytest.raises(SystemExit) as e:
        main(["--port", "/dev/ttyFAKE0", *command])
    err = capsys.readouterr().err.splitlines()
    assert e.value.code == 2
    assert len(err) == 1, err
    assert "rtrig build ulx3s && rtrig flash ulx3s" in err[0]
    assert "--accept-gateware" in err[0]


def test_accept_gateware_lets_the_measurement_start(expected, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(connect_mod, "RigLink", FakeLink)
    for args in (["--accept-gateware", "--port", "/dev/ttyFAKE0", "selftest"],
                 ["--port", "/dev/ttyFAKE0", "selftest", "--accept-gateware"]):
        with pytest.raises(SystemExit) as e:
            main(args)
        err = capsys.readouterr().err
        assert e.value.code == LinkError.exit_code        # past the check, at the link
        assert "answers nothing else" in err and "rtrig flash" not in err


def test_info_is_not_refused_and_names_the_fix(expected, monkeypatch, capsys):
    monkeypatch.setattr(connect_mod, "RigLink", FakeLink)
    from rtrig.host.rig.rig import Rig
    monkeypatch.setattr(Rig, "describe", lambda self: {**self.info, "simulation": False,
                                                        "port": self.port})
    monkeypatch.setattr(Rig, "loopback_max_ticks", 0, raising=False)
    monkeypatch.setattr(Rig, "stim_step", 4, raising=False)
    try:
        main(["--port", "/dev/ttyFAKE0", "info"])
    except SystemExit as e:
        assert not e.code, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "rtrig build ulx3s && rtrig flash ulx3s" in out


def test_the_meta_records_the_comparison(expected):
    from types import SimpleNamespace
    rig = SimpleNamespace(info=identity(0xDEADBEEF), sim=None, tick_hz=120e6,
                          gateware=gateware.check_gateware(identity(0xDEADBEEF)))
    meta = rig_meta(rig)
    assert meta["gateware"]["match"] is False
    assert meta["gateware"]["expected_hash"] == f"{EXPECTED:08x}"


def test_the_expected_hash_is_this_rtrigs_build_once_per_process():
    board = get_board("icebreaker")
    h = gateware.expected_hash(board)
    rig = board.rig()
    assert h == rig.logic_hash()
    rig._MustUse__silence = True                # only its hash is taken
    assert gateware._HASHES[gateware._key(board, board.baud)] == h
    assert gateware.check_gateware(identity(h, board=3))["match"] is True


def test_an_accepted_capture_records_the_mismatch(expected, monkeypatch, tmp_path, capsys):
    from rtrig.host.sim import SimRig
    # the twin on its socket (one connection each), taken for a board on a serial device
    monkeypatch.setattr(connect_mod, "is_device", lambda port: True)
    path = tmp_path / "c.rtrig"
    args = ["capture", "--target", "loopback", "--freq", "10k", "--count", "20", "-q",
            "-o", str(path)]
    with SimRig() as twin:
        with pytest.raises(SystemExit) as e:
            main(["--port", twin.url, *args])
    assert e.value.code == 2 and not path.exists()
    assert "rtrig flash" in capsys.readouterr().err
    with SimRig() as twin:
        try:
            main(["--port", twin.url, *args, "--accept-gateware"])
        except SystemExit as e:
            assert not e.code, capsys.readouterr().err
    g = load(path).meta["gateware"]
    assert g["match"] is False and g["expected_hash"] == f"{EXPECTED:08x}"


def test_the_twins_capture_records_its_own_build(tmp_path):
    from rtrig.host.cli.main import main as run
    path = tmp_path / "t.rtrig"
    try:
        run(["--sim", "capture", "--target", "loopback", "--freq", "10k", "--count", "5",
             "-q", "-o", str(path)])
    except SystemExit as e:
        assert not e.code
    g = load(path).meta["gateware"]
    assert g["match"] is True and g["expected_hash"] == g["rig_hash"]
