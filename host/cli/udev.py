# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig udev``: udev rules that let a user open the boards' USB devices.

One rule per USB device of :mod:`rtrig.host.rig.ports` (the rig links, subsystem
``tty``; the programmers, subsystem ``usb``): the logged-in user's access
(``uaccess``), group ``plugdev``, and ModemManager told to leave the port alone.
``--install`` writes them to :data:`RULES_PATH` and reloads udev.
"""

import os
import shutil
import subprocess
from pathlib import Path

import click

from .options import CONTEXT

__all__ = ["udev", "rules", "install", "RULES_PATH"]

#: Where ``--install`` writes the rules.
RULES_PATH = Path("/etc/udev/rules.d/70-rtrig.rules")
#: What every rule grants.
GRANT = 'TAG+="uaccess", MODE="0660", GROUP="plugdev", ENV{ID_MM_DEVICE_IGNORE}="1"'


def rules():
    """The rules file's text: a comment and a rule per USB device."""
    from ..rig.ports import USB_LINKS, USB_PROGRAMMERS
    lines = ["# rtrig: the rig boards' USB devices (written by `rtrig udev`).",
             "# The logged-in user and group plugdev may open them; ModemManager "
             "leaves them alone."]
    seen = set()
    for subsystem, devices, role in (("tty", USB_LINKS, "rig link"),
                                     ("usb", USB_PROGRAMMERS, "programmer")):
        for d in devices:
            if (subsystem, d.vid, d.pid) in seen:
                continue
            seen.add((subsystem, d.vid, d.pid))
            boards = "/".join(b for x in devices if (x.vid, x.pid) == (d.vid, d.pid)
                              for b in x.boards)
            lines.append(f"# {boards}: {d.chip} {d.vid_pid}, {role} ({d.note})")
            lines.append(f'SUBSYSTEM=="{subsystem}", ATTRS{{idVendor}}=="{d.vid:04x}", '
                         f'ATTRS{{idProduct}}=="{d.pid:04x}", {GRANT}')
    return "\n".join(lines) + "\n"


def install(path=None, echo=click.echo):
    """Write :func:`rules` to ``path`` (default :data:`RULES_PATH`) and reload udev
    (``udevadm control --reload-rules && udevadm trigger``) when udevadm exists."""
    from ...errors import ToolchainError, UsageError
    path = RULES_PATH if path is None else Path(path)
    if os.geteuid() != 0:
        raise UsageError(f"writing {path} needs root: run `sudo rtrig udev --install` "
                         f"(or `rtrig udev | sudo tee {path}`)")
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent} does not exist: is udev installed?")
    path.write_text(rules())
    echo(f"wrote {path}")
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        echo("udevadm not found: the rules apply when udev next starts")
        return
    for cmd in ([udevadm, "control", "--reload-rules"], [udevadm, "trigger"]):
        if subprocess.run(cmd).returncode != 0:
            raise ToolchainError(f"`{' '.join(cmd)}` failed",
                                 hint="plug the board in again to apply the rules")
    echo("udev rules reloaded: plug the board in again if it was connected")


@click.command("udev", context_settings=CONTEXT)
@click.option("--install", "do_install", is_flag=True,
              help=f"Write the rules to {RULES_PATH} (as root) and reload udev.")
def udev(do_install):
    """Print udev rules for every supported board's USB devices (the rig's serial port
    and the programmer): access for the logged-in user and group plugdev, and
    ModemManager kept off them."""
    if do_install:
        install()
    else:
        click.echo(rules(), nl=False)
