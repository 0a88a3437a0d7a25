# SPDX-License-Identifier: BSD-2-Clause
"""``--port auto`` and ``--port serial:XYZ``: the rig found by its USB identity among
the ports pyserial lists (``serial.tools.list_ports.comports``, monkeypatched here with
ListPortInfo-like objects)."""

from types import SimpleNamespace

import pytest

from rtrig.errors import LinkError, UsageError
from rtrig.host.cli.main import main
from rtrig.host.rig import ports as ports_mod
from rtrig.host.rig.ports import USB_LINKS, port_board, resolve_port


def port(device, vid, pid, serial, location=None):
    return SimpleNamespace(device=device, vid=vid, pid=pid, serial_number=serial,
                           location=location, description="", hwid="")


ULX3S = port("/dev/ttyUSB0", 0x0403, 0x6015, "D00123", "1-1:1.0")
ICE_A = port("/dev/ttyUSB1", 0x0403, 0x6010, "IB42", "1-2:1.0")
ICE_B = port("/dev/ttyUSB2", 0x0403, 0x6010, "IB42", "1-2:1.1")
CRAB = port("/dev/ttyUSB3", 0x0403, 0x6014, "FT9", "1-3:1.0")
OTHER = port("/dev/ttyACM0", 0x2341, 0x0043, "ARD1", "1-4:1.0")


@pytest.fixture
def listed(monkeypatch):
    """Make pyserial list the given ports."""
    def use(*ports):
        import serial.tools.list_ports
        monkeypatch.setattr(serial.tools.list_ports, "comports", lambda *a, **k: list(ports))
    return use


def test_one_board_is_found_by_vid_pid(listed):
    listed(OTHER, ULX3S)
    assert resolve_port("auto") == "/dev/ttyUSB0"


def test_the_icebreaker_is_its_ftdi_chips_second_port(listed):
    listed(ICE_A, ICE_B, OTHER)
    assert resolve_port("auto") == "/dev/ttyUSB2"
    # without a location, the second port of the chip by device name
    a, b = (SimpleNamespace(**{**vars(p), "location": None}) for p in (ICE_A, ICE_B))
    assert port_board(a, [a, b]) is None
    assert port_board(b, [a, b]).boards == ("icebreaker",)


def test_an_orangecrab_adapter_is_found(listed):
    listed(CRAB)
    assert resolve_port("auto") == "/dev/ttyUSB3"


def test_several_boards_are_listed_with_their_serial_numbers(listed):
    listed(ULX3S, ICE_A, ICE_B)
    with pytest.raises(UsageError) as e:
        resolve_port("auto")
    text = str(e.value)
    assert "--port serial:" in text
    lines = text.splitlines()[1:]
    assert len(lines) == 2
    assert "/dev/ttyUSB0" in lines[0] and "D00123" in lines[0]
    assert "/dev/ttyUSB2" in lines[1] and "IB42" in lines[1]


def test_serial_picks_by_serial_number(listed):
    listed(ULX3S, ICE_A, ICE_B)
    assert resolve_port("serial:D00123") == "/dev/ttyUSB0"
    assert resolve_port("serial:IB42") == "/dev/ttyUSB2"     # the link of the two
    with pytest.raises(LinkError, match="'NOPE'"):
        resolve_port("serial:NOPE")


def test_no_rig_names_what_was_looked_for(listed):
    listed(OTHER)
    with pytest.raises(LinkError) as e:
        resolve_port("auto")
    for link in USB_LINKS:
        assert link.vid_pid in str(e.value)
    assert "ulx3s" in str(e.value) and "icebreaker" in str(e.value)


def test_a_plain_port_is_left_alone(listed):
    listed()
    assert resolve_port("/dev/ttyUSB7") == "/dev/ttyUSB7"
    assert resolve_port("socket://localhost:1") == "socket://localhost:1"


def test_the_cli_opens_the_port_found(listed, monkeypatch, capsys):
    import contextlib

    from rtrig.host.rig import connect
    opened = []

    @contextlib.contextmanager
    def fake_connect(port, **kw):
        opened.append(port)
        raise LinkError("stop here")
        yield

    monkeypatch.setattr(connect, "connect", fake_connect)
    listed(ULX3S)
    with pytest.raises(SystemExit) as e:
        main(["--port", "auto", "info"])
    assert e.value.code == 3 and opened == ["/dev/ttyUSB0"]

    # Neither --port nor --sim: the same search.
    opened.clear()
    monkeypatch.delenv("RTRIG_PORT", raising=False)
    with pytest.raises(SystemExit) as e:
        main(["info"])
    assert e.value.code == 3 and opened == ["/dev/ttyUSB0"]

    listed()
    with pytest.raises(SystemExit) as e:
        main(["--port", "auto", "info"])
    err = capsys.readouterr().err
    assert e.value.code != 0
    assert err.splitlines()[-2].startswith("error: no rig found: looked for ")
    assert "Traceback" not in err


def test_the_table_is_read_by_comports(monkeypatch):
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda *a, **k: [ULX3S])
    assert ports_mod.comports() == [ULX3S]
