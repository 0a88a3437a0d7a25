# SPDX-License-Identifier: BSD-2-Clause
"""Opening a rig: :func:`open_rig` on a serial port or on the simulation twin,
:func:`connect` on a port already served, and the words for a twin that has gone
(:func:`twin_exit`)."""

import contextlib
import functools
import signal
import subprocess
import sys

from ...errors import LinkError
from ...protocol import GATEWARE_VERSION
from .gateware import check_gateware, twin_gateware
from .link import RigLink
from .rig import Rig

__all__ = ["open_rig", "connect", "twin_exit", "is_device"]


def is_device(port):
    """Whether ``port`` is a serial device (a board), not a pyserial URL
    (``socket://``, ``loop://``: a twin or a test); a board's gateware is compared
    with this rtrig's build (:func:`~rtrig.host.rig.gateware.check_gateware`)."""
    return "://" not in str(port)


def twin_exit(simrig, wait=1.0):
    """Why the simulation twin ``simrig`` is gone, in words (``exited with status 3``,
    ``was killed by signal SIGKILL``, with its last line on stderr if any), waiting up
    to ``wait`` s for it to end; None while it runs. A link to a twin that breaks
    names this instead of a cable (:attr:`RigLink.twin_exit`)."""
    p = simrig.proc
    if p is None:
        return None
    try:
        code = p.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        what = f"was killed by signal {name}"
    else:
        what = f"exited with status {code}"
    try:
        said = [x for x in (p.stderr.read() if p.stderr else "").splitlines() if x.strip()]
    except (OSError, ValueError):
        said = []
    return f"{what} ({said[-1].strip()})" if said else what


@contextlib.contextmanager
def open_rig(port=None, sim=False, log=None, soc=False, firmware=None, board=None,
             sim_link="fast", baudrate=3_000_000, console=None, sim_serial=None):
    """Open a rig on ``port`` (a device or pyserial URL; ``auto``, and with neither
    ``port`` nor ``sim``: the one board found by its USB identity, ``serial:XYZ`` the port of serial number XYZ,
    :func:`rtrig.host.rig.ports.resolve_port`) or start the simulation twin.

    With ``sim``, ``soc=True`` starts the twin built with the reference SoC running
    ``firmware`` (a raw ``.bin``; default ``rt_test``), see docs/soc.md, its console
    going to ``console`` (a path, kept; default a temporary file removed at the end,
    :attr:`SimRig.console`); ``board`` (a
    board name) the twin of that board's gateware (default: the ULX3S's,
    :data:`rtrig.host.sim.SIM_BOARD`); ``sim_link`` its host link:
    ``fast`` (default) or ``line`` (the board's own baud, :data:`rtrig.host.sim.LINKS`).
    ``baudrate``: the serial port's rate (a rig built with a faster link, ``rtrig build
    --baud``); a socket ignores it. ``sim_serial``: how the host reaches the twin,
    ``socket`` (its socket:// URL) or ``pty`` (a pseudo-terminal opened as a serial
    port, :class:`rtrig.host.sim.pty_link.PtyBridge`, on ``rig.sim.pty``); default
    ``RTRIG_SIM_SERIAL``, else ``socket``."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if not sim and not port:
        port = "auto"        # neither given: the one board found by its USB identity
    simrig = bridge = None
    try:
        if sim:
            from ..sim import SimRig, pty_link
            serial_kind = pty_link.sim_serial(sim_serial)
            opts = {"soc": True, "firmware": firmware, "console": console} if soc else {}
            opts["link"] = sim_link
            if board is not None:
                opts["board"] = board
            simrig = SimRig(log=log, **opts)
            simrig.start()
            port = simrig.url
            simrig.pty = None
            if serial_kind == "pty":
                bridge = simrig.pty = pty_link.PtyBridge(simrig.url).start()
                port = bridge.device
        else:
            from .ports import resolve_port
            port = resolve_port(port)
        with connect(port, baudrate=baudrate, simrig=simrig) as rig:
            yield rig
    finally:
        if bridge is not None:
            bridge.close()
        if simrig is not None:
            simrig.stop()


@contextlib.contextmanager
def connect(port, baudrate=3_000_000, simrig=None):
    """A :class:`Rig` on ``port`` (a device or pyserial URL), its gateware's protocol
    checked, and on a serial device its logic compared with this rtrig's build
    (:attr:`Rig.gateware`); ``simrig``: the simulation twin already serving ``port``, if it is one
    (:func:`open_rig` starts one; a tool that starts its own twin passes it here). The
    link is closed at the end, the twin left to its owner."""
    link = RigLink(port, baudrate=baudrate)
    if simrig is not None:
        link.twin_exit = functools.partial(twin_exit, simrig)
    try:
        info = link.identify()
        if info["version"] != GATEWARE_VERSION:
            raise LinkError(f"the rig's gateware speaks protocol {info['version']}, "
                            f"this rtrig speaks {GATEWARE_VERSION}",
                            hint="rebuild/flash the gateware or upgrade rtrig")
        rig = Rig(link, info, simrig, port)
        if simrig is not None:
            rig.gateware = twin_gateware(info)
        elif is_device(port):
            rig.gateware = check_gateware(info)
        yield rig
    finally:
        link.close()
