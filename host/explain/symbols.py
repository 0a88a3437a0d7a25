# SPDX-License-Identifier: BSD-2-Clause
"""The firmware's functions and lines, from its ELF through the toolchain's ``nm`` and
``addr2line`` (binutils: ``riscv64-unknown-elf-`` by default, ``$RV_CROSS`` to change)."""

import bisect
import os
import shutil
import subprocess
from pathlib import Path

from ...errors import ToolchainError, UsageError

__all__ = ["Symbols"]


def _tool(name):
    exe = os.environ.get("RV_CROSS", "riscv64-unknown-elf-") + name
    if shutil.which(exe) is None:
        raise ToolchainError(f"{exe} is not installed (it reads the firmware's ELF)",
                             hint="apt-get install binutils-riscv64-unknown-elf")
    return exe


def _run(args):
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"{args[0]}: {proc.stderr.strip().splitlines()[-1:] or 'failed'}")
    return proc.stdout


class Symbols:
    """The code symbols of an ELF: :meth:`function` of an address, the source file of a
    function (:attr:`files`), :meth:`lines` of addresses."""

    def __init__(self, elf):
        self.elf = Path(elf)
        if not self.elf.is_file():
            raise UsageError(f"no firmware ELF at {self.elf}")
        with open(self.elf, "rb") as f:
            if f.read(4) != b"\x7fELF":
                raise UsageError(f"{self.elf} is not an ELF file")
        out = _run([_tool("nm"), "-n", "-l", "--defined-only", str(self.elf)])
        self.addrs, self.names, self.files = [], [], {}
        for line in out.splitlines():
            head, _, where = line.partition("\t")
            parts = head.split()
            if len(parts) != 3 or parts[1] not in "tTwW":
                continue
            self.addrs.append(int(parts[0], 16))
            self.names.append(parts[2])
            if where:
                self.files[parts[2]] = where.rsplit(":", 1)[0]
        self._lines = {}

    def function(self, pc):
        """The function holding ``pc`` (the code symbol at or below it), or ``?``."""
        i = bisect.bisect_right(self.addrs, int(pc)) - 1
        return self.names[i] if i >= 0 else "?"

    def file_of(self, function):
        """The source file of ``function``, relative to the firmware tree when it is in it."""
        path = self.files.get(function, "")
        return path.split("/firmware/", 1)[-1] if path else ""

    def lines(self, pcs):
        """``{pc: "file:line"}`` for ``pcs`` (one addr2line call for all of them)."""
        todo = sorted({int(p) for p in pcs} - set(self._lines))
        if todo:
            out = _run([_tool("addr2line"), "-e", str(self.elf), *(hex(p) for p in todo)])
            for pc, where in zip(todo, out.splitlines()):
                where = where.split(" (discriminator")[0]
                self._lines[pc] = where.split("/firmware/", 1)[-1]
        return {int(p): self._lines[int(p)] for p in pcs}
