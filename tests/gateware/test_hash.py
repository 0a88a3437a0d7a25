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
