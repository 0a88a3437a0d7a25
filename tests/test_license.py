# SPDX-License-Identifier: BSD-2-Clause
"""Every source file names its license in its first lines, and the license is there."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "SPDX-License-Identifier: BSD-2-Clause"
SOURCE_SUFFIXES = {".py", ".c", ".h", ".S", ".cpp", ".ld", ".mk", ".toml", ".sh"}
SOURCE_NAMES = {"Makefile", "run", ".clang-format"}


def source_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        paths = [ROOT / p for p in out]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in ROOT.rglob("*") if ".venv" not in p.parts and "build" not in p.parts]
    return [p for p in paths if p.is_file()
            and (p.suffix in SOURCE_SUFFIXES or p.name in SOURCE_NAMES)]


def test_every_source_file_has_its_spdx_line():
    files = source_files()
    assert len(files) > 100
    missing = [str(p.relative_to(ROOT)) for p in files
               if TAG not in "\n".join(p.read_text(errors="replace").splitlines()[:3])]
    assert missing == []


def test_license_file_matches_the_tag():
    text = (ROOT / "LICENSE").read_text()
    assert "BSD 2-Clause License" in text
    assert "Redistributions in binary form" in text
    assert 'license = "BSD-2-Clause"' in (ROOT / "pyproject.toml").read_text()
