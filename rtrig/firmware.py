# SPDX-License-Identifier: BSD-2-Clause
"""The project's own target firmware, as the rig's builds and twins use it.

The reference SoC (a board's ``soc`` target, the SoC twin) runs a raw RAM image; by
default the project's ``rt_test`` program, built here from ``firmware/`` with its
Makefile. Boards and the twin both take the image from :func:`default_firmware`, so
neither needs the other to find it.
"""

import shutil
import subprocess
from pathlib import Path

from .errors import ToolchainError

__all__ = ["FIRMWARE_DIR", "DEFAULT_IMAGE", "SUITE_IMAGE", "default_firmware"]

#: The firmware tree of a checkout (absent in an installed package).
FIRMWARE_DIR = Path(__file__).resolve().parents[1] / "firmware"
#: The default image, relative to :data:`FIRMWARE_DIR`.
DEFAULT_IMAGE = "build/rtrig-soc/rt_test.bin"
#: The kernel suite's image (``rtrig suite``, docs/suite.md).
SUITE_IMAGE = "build/rtrig-soc/suite.bin"


def default_firmware(firmware_dir=None, image=DEFAULT_IMAGE):
    """The SoC's default firmware image, ``firmware/build/rtrig-soc/rt_test.bin`` (or
    ``image``), built with the firmware Makefile when it is missing or older than its
    sources. Raises :class:`ToolchainError` when it can be neither found nor built."""
    fw = Path(firmware_dir or FIRMWARE_DIR)
    if not (fw / "Makefile").exists():
        raise ToolchainError("no firmware tree to build the SoC image from",
                             hint="give the image with --firmware PATH")
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        if (fw / image).exists():
            return fw / image
        raise ToolchainError("the SoC firmware is not built and riscv64-unknown-elf-gcc "
                             "is missing", hint="run `make -C firmware toolchains all`")
    proc = subprocess.run(["make", "-C", str(fw), "-s", image], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"building the SoC firmware failed:\n{proc.stderr[-2000:]}")
    return fw / image
