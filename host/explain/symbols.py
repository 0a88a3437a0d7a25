# SPDX-License-Identifier: BSD-2-Clause
"""The firmware's functions and lines, from its ELF through the toolchain's ``nm`` and
``addr2line`` (binutils: ``riscv64-unknown-elf-`` by default, ``$RV_CROSS`` to change),
and the RAM image it makes (``objcopy -O binary``, as firmware/Makefile makes the
``.bin``), to tell whether it is the firmware a capture ran."""

import bisect
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ...errors import ToolchainError, UsageError
from ...outputs import read_input

__all__ = ["Symbols", "image_sha256", "MAX_ELF_BYTES"]

#: The largest firmware ELF rtrig reads: the SoC's RAM is 64 KiB; its ELF with
#: symbols and line tables is about 85 KB.
MAX_ELF_BYTES = 64 << 20


def _tool(name):
    exe = os.environ.get("RV_CROSS", "riscv64-unknown-elf-") + name
    if shutil.which(exe) is None:
        raise ToolchainError(f"{exe} is not installed (it reads the firmware's ELF)",
                             hint="apt-get install binutils-riscv64-unknown-elf")
    return exe


def _run(args, elf, **kw):
    """Run a binutils tool on the ELF ``elf``; its last line of complaint, in one line,
    when it fails (a cut or foreign ELF)."""
    proc = subprocess.run(args, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        said = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        why = said[-1] if said else f"{Path(args[0]).name} failed ({proc.returncode})"
        raise UsageError(f"cannot read the firmware ELF {elf}: {why}",
                         hint="give the .elf the firmware was built as (firmware/build/…)")
    return proc.stdout


def _check_elf(elf):
    """Refuse what is not a regular file holding an ELF, before any tool reads it."""
    head = read_input(elf, MAX_ELF_BYTES, "a firmware ELF", count=4)
    if head != b"\x7fELF":
        raise UsageError(f"{elf} is not an ELF file")


def _limit_file_size(limit):
    def set_limit():
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


def image_sha256(elf):
    """The SHA-256 of the RAM image ``elf`` makes (its loadable contents, ``objcopy -O
    binary``: the ``.bin`` the SoC twin runs and a capture's ``soc_image_sha256``
    names). A :class:`UsageError` when the image would not fit the SoC's RAM."""
    from ...gateware.soc import RAM_BYTES
    elf = Path(elf)
    _check_elf(elf)
    with tempfile.TemporaryDirectory(prefix="rtrig-image-") as tmp:
        out = Path(tmp) / "image.bin"
        # bounded: an ELF whose sections lie far apart would make a file of gigabytes
        proc = subprocess.run([_tool("objcopy"), "-O", "binary", str(elf), str(out)],
                              capture_output=True, text=True,
                              preexec_fn=_limit_file_size(RAM_BYTES + 1))
        size = out.stat().st_size if out.exists() else 0
        if size > RAM_BYTES or proc.returncode == -signal.SIGXFSZ:
            raise UsageError(f"{elf} makes an image larger than the SoC's RAM "
                             f"({RAM_BYTES // 1024} KiB): not a SoC twin firmware")
        if proc.returncode != 0:
            said = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            raise UsageError(f"cannot read the firmware ELF {elf}: "
                             f"{said[-1] if said else 'objcopy failed'}")
        return hashlib.sha256(out.read_bytes()).hexdigest()


class Symbols:
    """The code symbols of an ELF: :meth:`function` of an address, the source file of a
    function (:attr:`files`), :meth:`lines` of addresses."""

    def __init__(self, elf):
        self.elf = Path(elf)
        if not self.elf.exists():
            raise UsageError(f"no firmware ELF at {self.elf}")
        _check_elf(self.elf)
        out = _run([_tool("nm"), "-n", "-l", "--defined-only", str(self.elf)], self.elf)
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
            out = _run([_tool("addr2line"), "-e", str(self.elf), *(hex(p) for p in todo)],
                       self.elf)
            for pc, where in zip(todo, out.splitlines()):
                where = where.split(" (discriminator")[0]
                self._lines[pc] = where.split("/firmware/", 1)[-1]
        return {int(p): self._lines[int(p)] for p in pcs}
