"""Host side of the rig link: register access and stream decoding over pyserial.

One code path for a real serial port (``/dev/ttyUSB1``) and for the simulation twin
(``socket://127.0.0.1:PORT``): the link sees bytes, nothing else.
"""

import time

import numpy as np
import serial

from ..protocol import RIG_ID, PacketType, Reg, SlipDecoder, frame
from .errors import LinkError, NotARigError

__all__ = ["RigLink", "WIRE_LATENCY", "WIRE_EVENT", "WIRE_TRUTH", "decode_latency",
           "decode_events", "decode_truth"]

#: Wire layouts of the stream payloads (packed, little-endian; see rtrig.protocol).
WIRE_LATENCY = np.dtype({
    "names": ["pulse", "t_lo", "t_hi", "chan", "latency", "completion"],
    "formats": ["<u4", "<u4", "<u2", "u1", "<u4", "<u4"],
    "offsets": [0, 4, 8, 10, 11, 15], "itemsize": 19})
WIRE_EVENT = np.dtype({
    "names": ["t_lo", "t_hi", "code"], "formats": ["<u4", "<u2", "u1"],
    "offsets": [0, 4, 6], "itemsize": 7})
WIRE_TRUTH = np.dtype({
    "names": ["pulse", "chan", "latency", "completion"],
    "formats": ["<u4", "u1", "<u4", "<u4"], "offsets": [0, 4, 5, 9], "itemsize": 13})


def decode_latency(raw: bytes):
    from ..protocol import LATENCY_DTYPE
    w = np.frombuffer(raw, dtype=WIRE_LATENCY)
    out = np.empty(len(w), dtype=LATENCY_DTYPE)
    out["pulse"] = w["pulse"]
    out["stim_t"] = w["t_lo"].astype(np.uint64) | (w["t_hi"].astype(np.uint64) << 32)
    out["channel"] = w["chan"] & 0x0F
    out["flags"] = w["chan"] & 0xF0
    out["latency"] = w["latency"]
    out["completion"] = w["completion"]
    return out


def decode_events(raw: bytes):
    from ..protocol import EVENT_DTYPE
    w = np.frombuffer(raw, dtype=WIRE_EVENT)
    out = np.empty(len(w), dtype=EVENT_DTYPE)
    out["t"] = w["t_lo"].astype(np.uint64) | (w["t_hi"].astype(np.uint64) << 32)
    out["input"] = w["code"] & 0x0F
    out["rising"] = w["code"] >> 7
    return out


def decode_truth(raw: bytes):
    from ..protocol import TRUTH_DTYPE
    w = np.frombuffer(raw, dtype=WIRE_TRUTH)
    out = np.empty(len(w), dtype=TRUTH_DTYPE)
    out["pulse"] = w["pulse"]
    out["channel"] = w["chan"] & 0x0F
    out["flags"] = w["chan"] & 0xF0
    out["latency"] = w["latency"]
    out["completion"] = w["completion"]
    return out


_STREAMS = {PacketType.LATENCY: 19, PacketType.EVENT: 7, PacketType.TRUTH: 13}


class RigLink:
    """Register access and stream collection over one pyserial port.

    Stream payloads accumulate in ``streams[PacketType]`` (raw bytes, one fixed-size
    record each) until :meth:`take` removes them. ``crc_errors`` counts packets dropped
    for framing or CRC; ``lost_packets`` counts gaps in the rig's sequence numbers.
    """

    def __init__(self, url, baudrate=3_000_000, timeout=2.0, retries=2):
        self.url = url
        self.timeout = timeout
        self.retries = retries
        try:
            self.port = serial.serial_for_url(url, baudrate=baudrate, timeout=0.05)
        except (serial.SerialException, ValueError, OSError) as e:
            raise LinkError(f"cannot open {url}: {e}",
                            hint="check the port name and permissions, or use --sim") from e
        self.decoder = SlipDecoder()
        self.streams = {t: bytearray() for t in _STREAMS}
        self.lost_packets = 0
        self.bad_payloads = 0
        self._rx_seq = None
        self._tx_seq = 0
        self._responses = {}
        self.bytes_in = 0
        self.bytes_out = 0

    @property
    def crc_errors(self):
        return self.decoder.crc_errors

    def close(self):
        try:
            self.port.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Receiving -----------------------------------------------------------------
    def poll(self, wait=0.0):
        """Read what has arrived, waiting up to ``wait`` s for the first byte.

        Returns True if anything arrived."""
        try:
            if self.port.timeout != wait:
                self.port.timeout = wait
            data = self.port.read(1) if wait > 0 else b""
            n = self.port.in_waiting
            if n:
                data += self.port.read(n)
        except (serial.SerialException, OSError) as e:
            raise LinkError(f"link to {self.url} lost: {e}",
                            hint="check the cable and the rig's power") from e
        if data:
            self.bytes_in += len(data)
            for ptype, seq, payload in self.decoder.feed(data):
                self._dispatch(ptype, seq, payload)
        return bool(data)

    def _dispatch(self, ptype, seq, payload):
        if self._rx_seq is not None:
            self.lost_packets += (seq - self._rx_seq) & 0xFF
        self._rx_seq = (seq + 1) & 0xFF
        if ptype in _STREAMS:
            if len(payload) != _STREAMS[ptype]:
                self.bad_payloads += 1
                return
            self.streams[ptype] += payload
        elif ptype in (PacketType.WRITE_ACK, PacketType.READ_DATA) and len(payload) == 7:
            req = payload[0]
            addr = int.from_bytes(payload[1:3], "little")
            value = int.from_bytes(payload[3:7], "little")
            self._responses.setdefault(req, []).append((ptype, addr, value))
        else:
            self.bad_payloads += 1

    def take(self, ptype):
        """Remove and return the raw bytes received so far for a stream type."""
        buf = self.streams[ptype]
        raw = bytes(buf)
        buf.clear()
        return raw

    # Register access -------------------------------------------------------------
    def _request(self, ptype, payload, expect):
        for _attempt in range(self.retries + 1):
            seq = self._tx_seq
            self._tx_seq = (self._tx_seq + 1) & 0xFF
            self._responses.pop(seq, None)
            try:
                packet = frame(ptype, seq, payload)
                self.port.write(packet)
                self.bytes_out += len(packet)
            except (serial.SerialException, OSError) as e:
                raise LinkError(f"cannot write to {self.url}: {e}") from e
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                self.poll(wait=0.05)
                got = self._responses.get(seq, [])
                if len(got) >= expect:
                    del self._responses[seq]
                    return got
        raise LinkError(f"no answer from the rig on {self.url}",
                        hint="is a rig connected and powered? is the baud rate right?")

    def read(self, reg, count=1):
        """Read register ``reg`` ``count`` times; returns a list of values."""
        addr = int(reg)
        resp = self._request(PacketType.READ, addr.to_bytes(2, "little") +
                             count.to_bytes(2, "little"), count)
        return [v for (_, a, v) in resp if a == addr]

    def read1(self, reg):
        return self.read(reg, 1)[0]

    def write(self, reg, value):
        addr = int(reg)
        value = int(value) & 0xFFFFFFFF
        self._request(PacketType.WRITE, addr.to_bytes(2, "little") +
                      value.to_bytes(4, "little"), 1)

    def configure(self, **regs):
        for name, value in regs.items():
            self.write(Reg[name], value)

    def time(self):
        """The rig's timebase now (ticks)."""
        lo = self.read1(Reg.TIME_LO)
        hi = self.read1(Reg.TIME_HI)
        return lo | (hi << 32)

    def identify(self):
        """Check that a rig answers; returns its identity registers as a dict."""
        timeout, retries = self.timeout, self.retries
        self.timeout, self.retries = 1.0, 1      # a rig answers in microseconds
        try:
            ident = self.read1(Reg.ID)
        except LinkError as e:
            raise NotARigError(f"nothing on {self.url} answers the rig protocol",
                               hint="is this the rig's port (not the target's console)?") from e
        finally:
            self.timeout, self.retries = timeout, retries
        if ident != RIG_ID:
            raise NotARigError(f"the device on {self.url} is not an rtrig rig "
                               f"(ID 0x{ident:08x})")
        names = ["VERSION", "BUILD_HASH", "TICK_HZ", "BAUD", "N_INPUTS", "BOARD", "CAPS",
                 "IN_DELAY", "STIM_STEP"]
        return {n.lower(): self.read1(Reg[n]) for n in names}

