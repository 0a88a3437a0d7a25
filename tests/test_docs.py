# SPDX-License-Identifier: BSD-2-Clause
"""The docs agree with the code: the register table, the README's commands, the
examples shown, and every document the code and the docs cite is in the repository."""

import re
import subprocess
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


def test_every_reference_is_to_a_document_of_the_repository():
    # Code and docs cite docs/… pages; design notes kept outside the repository are
    # unreadable to a user, so a citation of one is refused wherever it appears.
    root = DOCS.parent
    # (the names are put together here, so that this file does not cite them itself)
    notes = ("DESIGN", "STYLE", "METHOD", "DEVELOPERS")
    outside = re.compile("|".join([notes[0] + " §", *(re.escape(n + ".md") for n in notes),
                                   re.escape("../" + "shared/")]))
    tracked = [root / p for p in subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()]
    bad = [f"{p.relative_to(root)}:{n}" for p in tracked if p != Path(__file__)
           and p.suffix in (".py", ".md", ".c", ".h", ".cpp", ".v", ".mk", "") and p.is_file()
           for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
           if outside.search(line)]
    assert not bad, f"references to documents not in the repository: {bad}"

    # and every docs/….md a source names exists
    named = {m for p in tracked if p.suffix in (".py", ".c", ".h", ".cpp") and p.is_file()
             for m in re.findall(r"docs/([\w-]+\.md)", p.read_text(errors="replace"))}
    assert not [n for n in named if not (DOCS / n).exists()], named
