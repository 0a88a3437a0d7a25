# SPDX-License-Identifier: BSD-2-Clause
"""Writing a benchmark's figures into docs/performance.md (``--write``)."""

import re
from pathlib import Path

PERFORMANCE_MD = Path(__file__).resolve().parents[1] / "docs" / "performance.md"


def write_section(text, path=PERFORMANCE_MD):
    """Replace the section of ``path`` headed like ``text``'s first line (``## …``) with
    ``text``, up to the next ``## `` heading; append it when there is none."""
    heading = text.splitlines()[0]
    old = path.read_text() if path.exists() else "# Performance\n"
    body = text.rstrip("\n") + "\n"
    pat = re.compile(re.escape(heading) + r"\n.*?(?=\n## |\Z)", re.S)
    new = pat.sub(lambda m: body, old, count=1) if pat.search(old) else \
        old.rstrip("\n") + "\n\n" + body
    path.write_text(new)
