# SPDX-License-Identifier: BSD-2-Clause
"""Finding a rig by its USB identity: the boards' host-link chips (:data:`USB_LINKS`),
their programmers' USB devices (:data:`USB_PROGRAMMERS`), and ``--port auto`` /
``--port serial:XYZ`` (:func:`resolve_port`) over pyserial's
``serial.tools.list_ports.comports()``.

The table is the one place the project names each board's USB devices
(docs/boards.md, "Permissions and udev"): the udev rules (``rtrig udev``), ``rtrig
doctor`` and the port search read it.
"""

import re
from dataclasses import dataclass

from ...errors import LinkError, UsageError

__all__ = ["UsbDevice", "USB_LINKS", "USB_PROGRAMMERS", "comports", "port_board",
           "rig_ports", "resolve_port", "looked_for", "AUTO", "SERIAL_PREFIX"]

#: ``--port`` values that search by USB identity.
AUTO = "auto"
SERIAL_PREFIX = "serial:"


@dataclass(frozen=True)
class UsbDevice:
    """A USB device of a board: ``boards`` (the board families it serves, by the
    prefix of their names), its chip, ``vid``:``pid``, and the USB interface of the
    rig's link (None: the device's only serial port)."""
    boards: tuple
    chip: str
    vid: int
    pid: int
    interface: int = None
    note: str = ""

    @property
    def vid_pid(self):
        return f"{self.vid:04x}:{self.pid:04x}"

    def label(self):
        """``ULX3S (FT231X 0403:6015)``: the boards and the chip, for messages."""
        where = f", channel {'AB'[self.interface]}" if self.interface is not None else ""
        return f"{'/'.join(self.boards)} ({self.chip} {self.vid_pid}{where})"


#: The rig's host link, per board: a serial port (udev subsystem ``tty``).
USB_LINKS = (
    # ULX3S: the on-board FT231X (US1), which also programs the FPGA.
    UsbDevice(("ulx3s",), "FT231X", 0x0403, 0x6015, note="on-board, US1"),
    # iCEBreaker: channel B of the on-board FT2232H (channel A is the flash programmer).
    UsbDevice(("icebreaker",), "FT2232H", 0x0403, 0x6010, interface=1,
              note="on-board, channel B"),
    # OrangeCrab: no USB-serial chip on the board; a 3.3 V FT232H adapter on its
    # Feather UART pins (an FT2232H adapter, channel B, looks like an iCEBreaker).
    UsbDevice(("orangecrab",), "FT232H", 0x0403, 0x6014, note="external adapter"),
)

#: The programmers' USB devices (udev subsystem ``usb``): what openFPGALoader and
#: iceprog open through libusb.
USB_PROGRAMMERS = (
    UsbDevice(("ulx3s",), "FT231X", 0x0403, 0x6015, note="openFPGALoader -b ulx3s"),
    UsbDevice(("icebreaker",), "FT2232H", 0x0403, 0x6010, interface=0, note="iceprog"),
    UsbDevice(("orangecrab",), "DFU bootloader", 0x1209, 0x5af0,
              note="openFPGALoader -b orangeCrab"),
)


def comports():
    """The serial ports pyserial sees (``serial.tools.list_ports.comports()``)."""
    from serial.tools import list_ports
    return list(list_ports.comports())


def _interface(port):
    """The USB interface number of ``port`` (from its location, ``1-2:1.1`` on Linux),
    or None where pyserial does not say."""
    m = re.search(r":\d+\.(\d+)$", getattr(port, "location", None) or "")
    return int(m.group(1)) if m else None


def port_board(port, ports=None):
    """The :class:`UsbDevice` of :data:`USB_LINKS` that ``port`` is (a ListPortInfo),
    or None. A link on one interface of a two-port chip is told by the port's USB
    interface, or, where pyserial gives none, by its place among the ports of the same
    chip (same serial number, by device name) in ``ports``."""
    for link in USB_LINKS:
        if (port.vid, port.pid) != (link.vid, link.pid):
            continue
        if link.interface is None:
            return link
        iface = _interface(port)
        if iface is None and ports is not None:
            same = sorted((p.device for p in ports if (p.vid, p.pid) == (port.vid, port.pid)
                           and p.serial_number == port.serial_number))
            iface = same.index(port.device) if port.device in same else None
        if iface == link.interface:
            return link
    return None


def rig_ports(ports=None):
    """``[(port, UsbDevice)]``: the ports that are a board's rig link."""
    ports = comports() if ports is None else ports
    return [(p, link) for p in ports if (link := port_board(p, ports)) is not None]


def looked_for():
    """What the search looks for, in words (the boards and their VID:PIDs)."""
    return ", ".join(link.label() for link in USB_LINKS)


def _line(port, link):
    what = link.label() if link is not None else f"{port.vid or 0:04x}:{port.pid or 0:04x}"
    return f"  {port.device}  {what}  serial {port.serial_number or '(none)'}"


def resolve_port(port, ports=None):
    """The device of ``port``: ``auto`` finds the one rig link among the serial ports,
    ``serial:XYZ`` the port of the chip with serial number XYZ; anything else is
    returned as it is. ``ports``: the ports to search (default :func:`comports`)."""
    if port != AUTO and not str(port).startswith(SERIAL_PREFIX):
        return port
    ports = comports() if ports is None else ports
    if port == AUTO:
        found = rig_ports(ports)
        if not found:
            raise LinkError(f"no rig found: looked for {looked_for()}",
                            hint="is the board plugged in? --port PORT names its port, --sim "
                                 "runs the simulation twin; `rtrig doctor` lists the ports")
        if len(found) > 1:
            lines = "\n".join(_line(p, link) for p, link in found)
            raise UsageError(f"{len(found)} rigs found, pick one with --port serial:SERIAL:\n"
                             f"{lines}")
        return found[0][0].device
    want = port[len(SERIAL_PREFIX):]
    if not want:
        raise UsageError("--port serial: needs a serial number (--port serial:XYZ)")
    same = [p for p in ports if (p.serial_number or "") == want]
    links = [p for p, _ in rig_ports(ports) if p in same]
    found = links if len(same) > 1 and links else same
    if not found:
        raise LinkError(f"no serial port with serial number {want!r}",
                        hint="`rtrig doctor` lists the ports and their serial numbers")
    if len(found) > 1:
        lines = "\n".join(_line(p, port_board(p, ports)) for p in found)
        raise UsageError(f"{len(found)} ports with serial number {want!r}, give the "
                         f"device with --port:\n{lines}")
    return found[0].device
