# SPDX-License-Identifier: BSD-2-Clause
"""The documented register table and the register map agree."""

from pathlib import Path

from rtrig.protocol import REGISTERS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_register_is_documented():
    text = (DOCS / "protocol.md").read_text()
    missing = [r.name for r in REGISTERS if f"| 0x{r.addr:03x} | {r.name} |" not in text]
    assert not missing, f"docs/protocol.md lacks {missing}"


def test_readme_starts_with_the_two_commands():
    lines = (DOCS.parent / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1: lines.index("```sh") + 3]
    assert block[0].startswith("make demo") and block[1].startswith("make test")


def test_own_firmware_example_is_the_one_built():
    # docs/own-firmware.md shows the example's files verbatim.
    text = (DOCS / "own-firmware.md").read_text()
    example = DOCS.parent / "firmware" / "examples" / "own"
    for name in ("hello.c", "link.ld"):
        assert (example / name).read_text() in text, f"{name} differs from the page"
