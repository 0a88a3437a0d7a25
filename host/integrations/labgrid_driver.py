# SPDX-License-Identifier: BSD-2-Clause
"""labgrid driver for an rtrig rig (optional extra ``rtrig[labgrid]``, docs/farm.md).

``RtrigDriver`` binds to the serial port a labgrid place has for the rig (a local
``SerialPort`` or an exported ``NetworkSerialPort``) and offers the calls of the
pytest fixture (:class:`rtrig.host.api.RigAPI`): ``capture``, ``sweep`` and
``info``. Activating it opens the rig and checks its gateware; deactivating it
closes the link. In a labgrid environment file::

    imports:
      - rtrig.host.integrations.labgrid_driver
    targets:
      main:
        resources:
          RemotePlace:
            name: rig-1
        drivers:
          RtrigDriver:
            dut: external

With ``pytest --lg-env env.yaml`` the ``rtrig`` fixture takes its rig from this
driver (:mod:`rtrig.host.integrations.pytest_plugin`).
"""

import contextlib
from pathlib import Path

import attr
from labgrid.driver.common import Driver
from labgrid.factory import target_factory
from labgrid.resource import SerialPort
from labgrid.step import step
from labgrid.util.proxy import proxymanager

from ..api import TARGETS, RigAPI
from ..procedures.options import options

__all__ = ["RtrigDriver", "port_url"]

#: capture's options: the defaults of the two its step log names.
_CAPTURE = options("capture")


def port_url(port):
    """The pyserial URL (or device) and baud rate of a labgrid serial resource."""
    if isinstance(port, SerialPort):
        return port.port, port.speed
    host, tcp = proxymanager.get_host_and_port(port)
    if port.protocol == "raw":
        return f"socket://{host}:{tcp}", port.speed
    if port.protocol == "rfc2217":
        return f"rfc2217://{host}:{tcp}?ign_set_control", port.speed
    raise ValueError(f"RtrigDriver: unknown protocol '{port.protocol}' of {port}")


@target_factory.reg_driver
@attr.s(eq=False)
class RtrigDriver(Driver):
    """An rtrig rig on the place's serial port.

    Args:
        dut (str): what drives the rig's inputs by default: ``external`` (the device
            under test wired to the rig), ``loopback``, ``model`` or ``soc``.
        captures (str): folder for capture files a call names none for.
    """
    bindings = {"port": {"SerialPort", "NetworkSerialPort"}}

    dut = attr.ib(default="external", validator=attr.validators.in_(TARGETS))
    captures = attr.ib(default="captures", converter=Path)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._stack = None
        self._api = None

    def on_activate(self):
        from ..rig.connect import open_rig
        url, speed = port_url(self.port)
        stack = contextlib.ExitStack()
        try:
            session = stack.enter_context(open_rig(url, baudrate=speed,
                                                   log=lambda msg: self.logger.info(msg)))
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        self._api = RigAPI(session, self.captures, self.dut)

    def on_deactivate(self):
        stack, self._stack, self._api = self._stack, None, None
        if stack is not None:
            stack.close()

    @property
    @Driver.check_active
    def info(self):
        """The rig's identity (board, gateware, tick rate, port)."""
        return self._api.info

    @Driver.check_active
    @step(args=["freq", "count"], result=False)
    def capture(self, freq=_CAPTURE["freq"].default, count=_CAPTURE["count"].default,
                **kwargs):
        """:meth:`rtrig.host.api.RigAPI.capture` on this place's rig."""
        self._api.captures = Path(self.captures)
        return self._api.capture(freq, count, **kwargs)

    @Driver.check_active
    @step(args=["f_from", "f_to"], result=False)
    def sweep(self, f_from, f_to, **kwargs):
        """:meth:`rtrig.host.api.RigAPI.sweep` on this place's rig."""
        self._api.captures = Path(self.captures)
        return self._api.sweep(f_from, f_to, **kwargs)
