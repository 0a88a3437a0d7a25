# SPDX-License-Identifier: BSD-2-Clause
"""Programming a board with a built bitstream (``rtrig flash``).

The command comes from the board (:attr:`Board.programmer`: ``openFPGALoader`` for the
ECP5 boards, ``iceprog`` for the iCEBreaker) and names the bitstream of the target's
build folder (:func:`rtrig.boards.products.build_name`).
"""

import shutil
import subprocess
from pathlib import Path

from rtrig.errors import ToolchainError, UsageError

from . import get_board
from .products import _top_name, build_name, resolve_target
from .toolchain import project_root

__all__ = ["bitstream_path", "flash_command", "flash"]


def bitstream_path(name, build_root=None, target="rig"):
    """The bitstream of board ``name``'s ``target`` under ``build_root`` (default: the
    project's ``build/``)."""
    board = get_board(name)
    build_root = Path(build_root) if build_root else project_root() / "build"
    return (build_root / "boards" / build_name(board.name, target)
            / f"{_top_name(board.name, target)}.{board.bitstream_ext}")


def flash_command(name, build_root=None, target="rig"):
    """The command that programs board ``name`` with its built bitstream of ``target``."""
    board = get_board(name)
    return board.programmer(bitstream_path(name, build_root, target))


def flash(name, *, build_root=None, dry_run=False, echo=print, target="rig"):
    """Program board ``name`` with its ``target`` bitstream. With ``dry_run`` (or when
    the tool is missing) only the exact command is shown; a missing tool is a
    :class:`ToolchainError`."""
    resolve_target(name, target)
    cmd = flash_command(name, build_root, target)
    bit = Path(cmd[-1])
    if not bit.exists():
        again = name if target == "rig" else f"{name} --target {target}"
        raise UsageError(f"no bitstream for {build_name(name, target)}: {bit}",
                         hint=f"run `rtrig build {again}` first")
    line = " ".join(cmd)
    if dry_run:
        echo(line)
        return cmd
    if shutil.which(cmd[0]) is None:
        raise ToolchainError(f"{cmd[0]} not found; to program the board run: {line}",
                             hint=f"install {cmd[0]} (Debian: apt-get install "
                                  f"{'fpga-icestorm' if cmd[0] == 'iceprog' else 'openfpgaloader'})")
    echo(line)
    if subprocess.run(cmd).returncode != 0:
        raise ToolchainError(f"{cmd[0]} failed", hint="is the board connected (and, for the "
                             "OrangeCrab, in its DFU bootloader)?")
    return cmd
