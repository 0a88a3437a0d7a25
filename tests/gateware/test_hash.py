# SPDX-License-Identifier: BSD-2-Clause
"""The gateware hash (register BUILD_HASH) covers the gateware sources, the protocol
and the records, found through the imported modules, and never skips a file."""

import shutil

import pytest

from rtrig import protocol, records
from rtrig.gateware import top


def test_hash_follows_the_imported_protocol_and_records(tmp_path, monkeypatch):
    before = top.gateware_hash()
    for module in (protocol, records):
        copy = tmp_path / module.__name__.rsplit(".", 1)[1] / "x.py"
        copy.parent.mkdir()
        shutil.copy(module.__file__, copy)
        with copy.open("a") as f:
            f.write("\n# edited\n")
        with monkeypatch.context() as mp:
            mp.setattr(module, "__file__", str(copy))
            assert top.gateware_hash() != before, module.__name__
    assert top.gateware_hash() == before


def test_a_missing_source_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "__file__", str(tmp_path / "records.py"))
    with pytest.raises(FileNotFoundError):
        top.gateware_hash()


def _text(rig):
    """The RTLIL of ``rig`` (a GatewareTop whose ``logic_hash`` was taken: the
    conversion reuses it rather than converting its bare copy again)."""
    from amaranth.back import rtlil

    from rtrig.gateware.identity import logic_text
    return logic_text(rtlil.convert(rig, name="top"))


RIGS = [{}, {"intervals": False, "bursts": False, "read_pipeline": False, "lat_channels": 2}]


@pytest.mark.parametrize("rig", RIGS, ids=["ecp5", "icebreaker"])
def test_the_build_hash_is_the_logic_not_the_sources(monkeypatch, rig):
    """BUILD_HASH comes from the rig's logic: new sources (another source hash) that
    build the same hardware give the same register value and the same RTLIL, apart
    from source locations; a change to the hardware changes the value."""
    before = top.GatewareTop(**rig)
    h = before.logic_hash()
    text = _text(before)
    monkeypatch.setattr(top, "gateware_hash", lambda: "f" * 64)
    after = top.GatewareTop(**rig)
    assert after.logic_hash() == h
    assert _text(after) == text
    assert f"32'{h:032b}" in text                   # the value is in the netlist
    other = top.GatewareTop(**{**rig, "fifo_depth": 256})
    assert other.logic_hash() != h
    other._MustUse__silence = True                  # only its hash was taken


def test_logic_text_drops_source_locations_only():
    from rtrig.gateware.identity import logic_digest, logic_text
    rtlil = ('module \\top\n  attribute \\src "/a/x.py:12"\n  wire width 4 \\a\n'
             '  attribute \\keep 1\n  wire \\b\nend\n')
    assert logic_text(rtlil) == ('module \\top\n  wire width 4 \\a\n  attribute \\keep 1\n'
                                 '  wire \\b\nend\n')
    assert logic_digest(rtlil.replace("x.py:12", "y.py:99")) == logic_digest(rtlil)
    assert logic_digest(rtlil.replace("width 4", "width 5")) != logic_digest(rtlil)


def test_the_build_hash_is_the_same_in_every_process():
    """A rig converted alone gets the clock domains it uses as ports in the order of a
    Python set, which changes with PYTHONHASHSEED; the hash defines them in a fixed
    order, so every process finds the same value (here: the SoC rig's two domains)."""
    import subprocess
    import sys
    code = ("from rtrig.gateware.top import GatewareTop\n"
            "r = GatewareTop(with_soc=True, pin_latency=1, soc_firmware=b'\\x13\\x00\\x00\\x00')\n"
            "print(r.logic_hash())\nr._MustUse__silence = True\n")
    env = dict(__import__("os").environ)
    got = set()
    for seed in ("1", "2", "3", "4", "5"):
        out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONHASHSEED": seed},
                             capture_output=True, text=True, check=True, cwd="/")
        got.add(out.stdout.strip())
    assert len(got) == 1, got
