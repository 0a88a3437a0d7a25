# SPDX-License-Identifier: BSD-2-Clause
"""A TCP proxy that damages the rig's link on purpose, for the fault tests.

It sits between the host (a ``socket://`` URL for :class:`rtrig.host.rig.link.RigLink`)
and the simulation twin. Host → rig bytes pass unchanged. Rig → host bytes are cut
into packets at SLIP ``END`` and each stream packet (EVENT, LATENCY, TRUTH) is
passed, dropped or damaged as the plan says; register responses pass too, unless
``corrupt_responses`` is set (then each gets a bit flipped). Decisions depend only
on the stream packet's index and the seed, never on timing, so a run is repeatable. Host → rig requests pass
unchanged unless ``corrupt_requests`` is set: then the next that many requests each
get a bit flipped (the rig drops them and counts them in ``RX_ERRORS``).
``flip_rates = (responses, requests)`` flips a bit in that fraction of each at random
(drawn from a second generator, so the stream plan stays repeatable).
Every fault is logged with the packet it hit, so a test knows exactly what was lost.

Loopback addresses only; the proxy serves one client and stops itself after
``lifetime`` seconds at the latest.
"""

import random
import select
import socket
import threading
import time

from rtrig.protocol import SLIP_END, SLIP_ESC, SLIP_ESC_END, SLIP_ESC_ESC, PacketType

__all__ = ["FaultProxy", "FAULTS", "LOSSES", "unslip"]

#: What the proxy can do to one stream packet.
FAULTS = ("drop", "flip", "dup", "stall", "zero_head", "zero_tail", "zero_between",
          "esc_between")
#: Faults after which the packet's content does not reach the host.
LOSSES = ("drop", "flip", "zero_head", "zero_tail")
_STREAM = {PacketType.EVENT, PacketType.LATENCY, PacketType.TRUTH}
_RESPONSE = {PacketType.WRITE_ACK, PacketType.READ_DATA}
_END, _ESC = bytes((SLIP_END,)), bytes((SLIP_ESC,))


def unslip(piece):
    """The body of a SLIP-escaped packet (without its delimiters)."""
    out, esc = bytearray(), False
    for b in piece:
        if esc:
            out.append({SLIP_ESC_END: SLIP_END, SLIP_ESC_ESC: SLIP_ESC}.get(b, b))
            esc = False
        elif b == SLIP_ESC:
            esc = True
        else:
            out.append(b)
    return bytes(out)


class FaultProxy:
    """Proxy to ``upstream`` (``socket://127.0.0.1:PORT``), damaging rig → host traffic.

    ``plan``: ``{stream packet index: fault}`` (see :data:`FAULTS`, or ``"pass"``:
    none); ``rates``:
    ``{fault: probability}`` for the other stream packets, drawn from a generator
    seeded with ``seed``. ``log`` lists ``(index, fault, body)`` of every fault, in
    order (``index`` None for a damaged response).
    """

    def __init__(self, upstream, plan=None, rates=None, seed=1, stall_s=0.03,
                 lifetime=120.0):
        host, _, port = upstream.removeprefix("socket://").rpartition(":")
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError(f"the fault proxy only reaches loopback addresses, not {host}")
        self.upstream = (host, int(port))
        self.plan = dict(plan or {})
        self.rates = dict(rates or {})
        self.rng = random.Random(seed)
        self.stall_s = stall_s
        self.deadline = time.monotonic() + lifetime
        self.corrupt_responses = False
        self.corrupt_requests = 0
        self.flip_rates = (0.0, 0.0)
        self._rng_exchanges = random.Random(seed + 1)
        self.log = []
        self.stream_packets = 0
        self.url = None
        self._stop = threading.Event()
        self._threads = []
        self._socks = []

    @staticmethod
    def run(start, n, fault="drop"):
        """A plan entry: ``fault`` on ``n`` consecutive stream packets from ``start``."""
        return {k: fault for k in range(start, start + n)}

    def losses(self):
        """Bodies of the stream packets whose content the host cannot have received."""
        return [body for k, fault, body in self.log if k is not None and fault in LOSSES]

    def count(self, *faults):
        return sum(1 for k, f, _ in self.log if k is not None and f in faults)

    # Running ------------------------------------------------------------------------
    def start(self):
        self._listen = socket.create_server(("127.0.0.1", 0))
        self._socks.append(self._listen)
        self.url = f"socket://127.0.0.1:{self._listen.getsockname()[1]}"
        t = threading.Thread(target=self._serve, name="faultproxy", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        for s in self._socks:
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _alive(self):
        return not self._stop.is_set() and time.monotonic() < self.deadline

    def _serve(self):
        try:
            self._listen.settimeout(0.1)
            while self._alive():
                try:
                    host, _ = self._listen.accept()
                    break
                except socket.timeout:
                    continue
            else:
                return
            self._socks.append(host)
            rig = socket.create_connection(self.upstream, timeout=5)
            self._socks.append(rig)
            for s in (host, rig):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            up = threading.Thread(target=self._pump, args=(host, rig, self._damage_request),
                                  daemon=True)
            up.start()
            self._threads.append(up)
            self._pump(rig, host, self._damage)
        except OSError:
            pass
        finally:
            self._stop.set()           # one side gone: end both
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass

    def _pump(self, src, dst, damage):
        """Copy ``src`` to ``dst`` (through ``damage``, packet by packet) until either
        side closes, the proxy is stopped or its lifetime is over."""
        buf = bytearray()
        try:
            while self._alive():
                ready, _, _ = select.select([src], [], [], 0.05)
                if not ready:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                if damage is None:
                    dst.sendall(data)
                    continue
                buf += data
                cut = buf.rfind(_END)
                if cut < 0:
                    continue
                pieces, buf = bytes(buf[:cut]).split(_END), buf[cut + 1:]
                out = bytearray()
                for piece in pieces:
                    if piece:
                        damage(piece, out, dst)
                dst.sendall(out)
        except (OSError, ValueError):
            pass
        finally:
            self._stop.set()

    # Damage ---------------------------------------------------------------------------
    def _damage_request(self, piece, out, dst):
        """Append what the rig gets for one host request to ``out``."""
        if self.corrupt_requests > 0 or self._rng_exchanges.random() < self.flip_rates[1]:
            self.corrupt_requests = max(self.corrupt_requests - 1, 0)
            self.log.append((None, "flip_request", unslip(piece)))
            piece = self._flip(piece)
        out += _END + piece + _END

    def _damage(self, piece, out, dst):
        """Append what the host gets for one rig packet to ``out`` (sending what is
        already there first if the packet is stalled)."""
        body = unslip(piece)
        whole = _END + piece + _END
        if body and body[0] in _RESPONSE and (
                self.corrupt_responses or self._rng_exchanges.random() < self.flip_rates[0]):
            out += _END + self._flip(piece) + _END
            self.log.append((None, "flip", body))
            return
        if not body or body[0] not in _STREAM:
            out += whole
            return
        k = self.stream_packets
        self.stream_packets += 1
        draw = self.rng.random()           # one draw per packet, planned or not
        fault = self.plan.get(k)
        if fault == "pass":                # planned: left alone
            fault = None
        elif fault is None:
            for name, p in self.rates.items():
                if draw < p:
                    fault = name
                    break
                draw -= p
        if fault is not None:
            self.log.append((k, fault, body))
        if fault == "drop":
            return
        if fault == "flip":
            out += _END + self._flip(piece) + _END
        elif fault == "dup":
            out += whole + whole
        elif fault == "stall":
            dst.sendall(out)
            out.clear()
            time.sleep(self.stall_s)
            out += whole
        elif fault == "zero_head":
            out += _END + b"\x00" + piece + _END
        elif fault == "zero_tail":
            out += _END + piece + b"\x00" + _END
        elif fault == "zero_between":
            out += _END + b"\x00" + whole
        elif fault == "esc_between":
            out += _END + _ESC + whole
        else:
            out += whole

    def _flip(self, piece):
        """``piece`` with one bit flipped, never into a delimiter (that would split the
        packet in two: two bad packets for one)."""
        damaged = bytearray(piece)
        while True:
            i, bit = self.rng.randrange(len(piece)), 1 << self.rng.randrange(8)
            if piece[i] ^ bit != SLIP_END:
                damaged[i] ^= bit
                return bytes(damaged)
