# SPDX-License-Identifier: BSD-2-Clause
"""The simulation twin on a pseudo-terminal, as a board's serial port is.

:class:`PtyBridge` connects to a running twin's ``socket://`` URL and copies bytes
both ways between that socket and the master of a new pseudo-terminal
(:func:`os.openpty`), in a thread of the host process. The host opens the
pseudo-terminal's slave device (:attr:`PtyBridge.device`, e.g. ``/dev/pts/3``) with
pyserial's serial-port class, the one a board's USB serial port gets, so the whole
serial path (termios, the port's reads and writes, a port that goes away) is the
board's. :meth:`PtyBridge.unplug` closes the master: the rig is unplugged, and the
host's next read or write of the port fails as on a board whose cable was pulled.

``open_rig(sim=True)`` uses it when ``RTRIG_SIM_SERIAL=pty`` (docs/architecture.md).
"""

import os
import select
import socket
import threading
import tty
from urllib.parse import urlparse

from ...errors import SimulationError, UsageError

__all__ = ["PtyBridge", "SIM_SERIAL", "sim_serial"]

#: How the host reaches the twin: ``socket`` (pyserial's socket:// URL, the default)
#: or ``pty`` (a pseudo-terminal, :class:`PtyBridge`).
SIM_SERIAL = ("socket", "pty")


def sim_serial(value=None):
    """The twin's link kind: ``value``, else ``RTRIG_SIM_SERIAL``, else ``socket``."""
    value = value or os.environ.get("RTRIG_SIM_SERIAL") or "socket"
    if value not in SIM_SERIAL:
        raise UsageError(f"RTRIG_SIM_SERIAL must be {' or '.join(SIM_SERIAL)}, not '{value}'")
    return value


class PtyBridge:
    """A pseudo-terminal whose master is bridged to a twin's socket.

    ``unplug_after``: close the master once that many bytes from the rig have been
    passed on (a cable pulled mid-run, for tests); None: never by itself."""

    def __init__(self, url, unplug_after=None):
        u = urlparse(url)
        if u.scheme != "socket" or not u.hostname or not u.port:
            raise SimulationError(f"cannot bridge {url} to a pseudo-terminal: not socket://")
        self.address = (u.hostname, u.port)
        self.unplug_after = unplug_after
        self.device = None
        #: Bytes passed from the rig to the host, and from the host to the rig.
        self.to_host = self.to_rig = 0
        self._sock = self._master = self._slave = None
        self._thread = None
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = None, None

    def start(self):
        try:
            self._sock = socket.create_connection(self.address, timeout=5)
        except OSError as e:
            raise SimulationError(f"cannot reach the twin at {self.address}: {e}") from e
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.setblocking(False)
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)          # bytes, no line discipline (pyserial does so too)
        os.set_blocking(self._master, False)
        self.device = os.ttyname(self._slave)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._copy, name="rtrig-pty-bridge",
                                        daemon=True)
        self._thread.start()
        return self

    def _copy(self):
        sock, master = self._sock, self._master
        to_master = bytearray()
        while True:
            want_w = [master] if to_master else []
            try:
                r, w, _ = select.select([sock, master, self._wake_r], want_w, [], 1.0)
            except (OSError, ValueError):
                return
            if self._wake_r in r:
                return
            try:
                if sock in r:
                    data = sock.recv(65536)
                    if not data:                 # the twin has gone
                        self._close_pty()
                        return
                    if self.unplug_after is not None:
                        data = data[:max(self.unplug_after - self.to_host, 0)]
                    to_master += data
                if master in w or (to_master and not want_w):
                    n = os.write(master, to_master)
                    self.to_host += n
                    del to_master[:n]
                if master in r:
                    data = os.read(master, 65536)
                    self.to_rig += len(data)
                    sock.sendall(data)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close_pty()
                return
            if self.unplug_after is not None and self.to_host >= self.unplug_after \
                    and not to_master:
                self._close_pty()
                return

    def unplug(self):
        """Close the pseudo-terminal's master: the host's port goes, as a board's does
        when its cable is pulled. The slave's reads and writes fail from then on."""
        self._stop_thread()
        self._close_pty()

    def _stop_thread(self):
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _close_pty(self):
        with self._lock:
            for name in ("_master", "_slave"):
                fd = getattr(self, name)
                if fd is not None:
                    setattr(self, name, None)
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def close(self):
        """Unplug, stop the thread and close the twin's socket."""
        self.unplug()
        for name in ("_sock",):
            s = getattr(self, name)
            if s is not None:
                setattr(self, name, None)
                s.close()
        for name in ("_wake_r", "_wake_w"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False
