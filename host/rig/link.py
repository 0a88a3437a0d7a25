# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the rig link: register access and stream decoding over pyserial.

One code path for a real serial port (``/dev/ttyUSB1``) and for the simulation twin
(``socket://127.0.0.1:PORT``): the link sees bytes, nothing else.
"""

import errno
import time

import serial

from ...errors import LinkError, NotARigError, RigUnplugged, check_stop
from ...framing import SlipDecoder, frame
from ...protocol import RIG_ID, ChanFlags, PacketType, Reg
from .decode import _CHAN_BYTE, _STREAMS
from .loss import LossCounter

__all__ = ["RigLink"]

#: The errors of a serial device that has gone (a USB serial port unplugged, a
#: pseudo-terminal whose master closed), by errno and in pyserial's words.
_GONE_ERRNOS = (errno.EIO, errno.ENXIO, errno.ENODEV)
_GONE_WORDS = ("Input/output error", "No such device", "device disconnected")


def _port_gone(exc):
    """Does ``exc`` (from a serial port's read or write) say the device has gone?"""
    while exc is not None:
        if getattr(exc, "errno", None) in _GONE_ERRNOS or \
                any(w in str(exc) for w in _GONE_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


#: The most bytes one poll takes in (a read that returns what has arrived, at once):
#: 64 KiB, 87 ms of the twin's 7.5 Mbaud link.
_READ_CHUNK = 65536


class RigLink:
    """Register access and stream collection over one pyserial port.

    Stream payloads accumulate in ``streams[PacketType]`` (raw bytes, one fixed-size
    record each) until :meth:`take` removes them. Host-side loss counters, zeroed
    together with the rig's own by a write of 1 to ``CLEAR`` (:meth:`counters`):
    ``crc_errors`` packets dropped for framing or CRC; ``lost_packets`` rig packets
    whose content did not arrive (:class:`LossCounter`: exact for latency records,
    whatever the gap), of which ``missing_records`` latency records; ``bad_payloads``
    packets with a good CRC but a wrong length or type; ``duplicates`` packets that
    arrived twice (dropped).
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
        self.loss = LossCounter()
        self.bad_payloads = 0
        #: Packets lost before the last CLEAR, since the link opened or the losses
        #: a run last reported (:meth:`reported`): the set-up's, which the counters
        #: the CLEAR zeroes would otherwise drop.
        self.setup_lost = 0
        self._reported = 0
        #: For a simulation twin: a call that says why it is gone (or None while it
        #: runs); a broken link then names that, not a cable.
        self.twin_exit = None
        self._crc_base = 0
        self._last = None
        self._rx_seq = None
        self._tx_seq = 0
        self._responses = {}
        self.bytes_in = 0
        self.bytes_out = 0

    @property
    def crc_errors(self):
        return self.decoder.crc_errors - self._crc_base

    @property
    def lost_packets(self):
        return self.loss.lost_packets

    @property
    def missing_records(self):
        return self.loss.missing_records

    def received_of(self, channel):
        """Latency records of matcher ``channel`` received since the last clear."""
        return self.loss.received[channel]

    @property
    def duplicates(self):
        return self.loss.duplicates

    def counters(self):
        """The host's link counters since the last CLEAR (or since the link opened)."""
        return {"crc_errors": self.crc_errors, "lost_packets": self.lost_packets,
                "missing_records": self.missing_records, "bad_payloads": self.bad_payloads,
                "duplicates": self.duplicates}

    def clear_counters(self, from_pulse_0=False):
        """Zero the host's link counters (:meth:`LossCounter.clear`)."""
        self._crc_base = self.decoder.crc_errors
        self.bad_payloads = 0
        self.loss.clear(from_pulse_0)

    def close(self):
        # pyserial's socket:// transport closes its socket only when the shutdown before
        # it succeeds, which it does not once the far end is gone (a twin that ended):
        # its socket is closed here first, so none is left for the garbage collector.
        sock = getattr(self.port, "_socket", None)
        try:
            if sock is not None:
                sock.close()
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

        Returns True if anything arrived. A stop signal whose :class:`Interrupted`
        was lost on its way (:func:`rtrig.errors.check_stop`) is raised here again."""
        check_stop()
        try:
            data = b""
            if wait > 0:
                if self.port.timeout != wait:
                    self.port.timeout = wait
                data = self.port.read(1)
            # Then everything else that has come, in one read that does not wait: a
            # socket:// port's in_waiting only says whether a byte is there (pyserial
            # tests the socket with select), so reading in_waiting bytes took the
            # twin's stream two bytes a poll.
            if self.port.timeout != 0:
                self.port.timeout = 0
            data += self.port.read(_READ_CHUNK)
        except (serial.SerialException, OSError) as e:
            raise self._lost(f"link to {self.url} lost: {e}", exc=e) from e
        if data:
            self.bytes_in += len(data)
            for ptype, seq, payload in self.decoder.feed(data):
                self._dispatch(ptype, seq, payload)
        return bool(data)

    def _dispatch(self, ptype, seq, payload):
        loss = self.loss
        if (ptype, seq, payload) == self._last:         # the same packet twice
            loss.duplicates += 1
            return
        record = ptype == PacketType.LATENCY and len(payload) == _STREAMS[ptype]
        gap = 0 if self._rx_seq is None else (seq - self._rx_seq) & 0xFF
        if record:
            chan = payload[_CHAN_BYTE] & ChanFlags.CHANNEL_MASK
            pulse = int.from_bytes(payload[:4], "little")
            if loss.is_duplicate(chan, pulse):
                loss.duplicates += 1
                if gap == 0:                # sent again as a new packet, not a copy
                    self._rx_seq = (seq + 1) & 0xFF
                    loss.packet(0)
                return
        self._last = (ptype, seq, payload)
        self._rx_seq = (seq + 1) & 0xFF
        if ptype in _STREAMS and len(payload) == _STREAMS[ptype]:
            loss.packet(gap)
            self.streams[ptype] += payload
            if record:
                loss.record(chan, pulse)
        elif ptype in (PacketType.WRITE_ACK, PacketType.READ_DATA) and len(payload) == 7:
            loss.packet(gap)
            req = payload[0]
            addr = int.from_bytes(payload[1:3], "little")
            value = int.from_bytes(payload[3:7], "little")
            self._responses.setdefault(req, []).append((ptype, addr, value))
        else:
            self.bad_payloads += 1
            loss.packet(gap, bad=True)

    def pending(self, ptype):
        """Records of stream ``ptype`` received and not yet taken."""
        return len(self.streams[ptype]) // _STREAMS[ptype]

    def take(self, ptype):
        """Remove and return the raw bytes received so far for a stream type."""
        buf = self.streams[ptype]
        raw = bytes(buf)
        buf.clear()
        return raw

    # Register access -------------------------------------------------------------
    def _request(self, ptype, payload, expect):
        crc0 = self.decoder.crc_errors
        got = self._exchange(ptype, payload, expect, self.retries + 1, self.timeout)
        if got is not None:
            return got
        tries = self.retries + 1
        corrupt = self.decoder.crc_errors - crc0
        if corrupt:
            # Something answered, damaged: a noisy link, not a missing rig.
            raise LinkError(
                f"no good answer from the rig on {self.url} in {tries} register "
                f"exchange{'s' if tries > 1 else ''}: {corrupt} packet"
                f"{'s' if corrupt > 1 else ''} arrived with CRC errors",
                hint="the link is noisy: check the cable (length, ground, connectors) and "
                     "the baud rate; or the rig's gateware speaks another protocol version")
        raise self._no_answer(tries)

    def _lost(self, what, reason=None, exc=None):
        """The error of a broken link: a serial port that has gone (``exc`` says so:
        :class:`RigUnplugged`), a twin's exit when it has exited (``reason``, else
        asked), the cable and power of a serial rig otherwise."""
        if exc is not None and "://" not in str(self.url) and _port_gone(exc):
            return RigUnplugged(f"rig unplugged: its serial port {self.url} went away "
                                f"({exc})",
                                hint="plug the rig back in and run again; a capture file "
                                     "keeps every record received until then")
        if self.twin_exit is None:
            return LinkError(what, hint="check the cable and the rig's power")
        reason = reason or self.twin_exit()
        if reason:
            return LinkError(f"the simulation twin {reason}; the link to it ({self.url}) "
                             "is gone",
                             hint="the twin ended unexpectedly; run again, and report it "
                                  "with --debug if it repeats")
        return LinkError(f"{what} (the simulation twin still runs)",
                         hint="run again with --debug and report the traceback")

    def _no_answer(self, tries):
        """The error for a request that got no answer at all in ``tries`` exchanges.
        The host cannot see requests damaged on their way to the rig; the rig counts
        them (``RX_ERRORS``), so a link that has seen the rig asks it once more."""
        answered, crc = self.decoder.packets, self.decoder.crc_errors
        what = (f"no answer from the rig on {self.url} in {tries} register exchange"
                f"{'s' if tries > 1 else ''}")
        reason = self.twin_exit(wait=0) if self.twin_exit is not None else None
        if reason:
            return self._lost(what, reason)
        noisy = "the link is noisy: check the cable (length, ground, connectors) and the baud rate"
        rx_errors = self._rx_errors_if_answering() if answered or crc else None
        crc_note = f"; {crc} packets from it arrived with CRC errors" if crc else ""
        if rx_errors is not None:
            return LinkError(f"{what}, but it answers again: it counts {rx_errors} damaged "
                             f"request{'s' if rx_errors != 1 else ''} (RX_ERRORS){crc_note}",
                             hint=noisy)
        if crc:
            return LinkError(f"{what}{crc_note} on this link", hint=noisy)
        if answered:
            return LinkError(f"{what}; it had sent {answered} good packets on this link",
                             hint="was it unplugged, reset or powered off? A noisy link "
                                  "loses requests too")
        return LinkError(what.replace(f" in {tries} register exchange"
                                      f"{'s' if tries > 1 else ''}", ""),
                         hint="is a rig connected and powered? is the baud rate right?")

    def _rx_errors_if_answering(self):
        """The rig's ``RX_ERRORS`` if it answers one of a few quick tries now, else
        None."""
        addr = int(Reg.RX_ERRORS).to_bytes(2, "little") + (1).to_bytes(2, "little")
        got = self._exchange(PacketType.READ, addr, 1, tries=5, timeout=0.3)
        return got[0][2] if got else None

    def _exchange(self, ptype, payload, expect, tries, timeout):
        """Send the request up to ``tries`` times, each with a new sequence number,
        waiting ``timeout`` s for its ``expect`` responses; those responses, or None."""
        for _attempt in range(tries):
            seq = self._tx_seq
            self._tx_seq = (self._tx_seq + 1) & 0xFF
            self._responses.pop(seq, None)
            try:
                packet = frame(ptype, seq, payload)
                self.port.write(packet)
                self.bytes_out += len(packet)
            except (serial.SerialException, OSError) as e:
                raise self._lost(f"cannot write to {self.url}: {e}", exc=e) from e
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                self.poll(wait=0.05)
                got = self._responses.get(seq, [])
                if len(got) >= expect:
                    del self._responses[seq]
                    return got
        return None

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
        if addr == Reg.CLEAR and value & 1:
            # The rig zeroed its counters and pulse index: so do the host's, keeping
            # the packets lost since the last report (the set-up's exchanges).
            self.setup_lost = max(self.loss.lost_packets - self._reported, 0)
            self._reported = 0
            self.clear_counters(from_pulse_0=True)

    def reported(self):
        """A run has reported the losses so far: the next CLEAR's :attr:`setup_lost`
        counts from here."""
        self._reported = self.loss.lost_packets

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
        crc0 = self.decoder.crc_errors
        try:
            ident = self.read1(Reg.ID)
        except LinkError as e:
            if self.decoder.crc_errors != crc0:
                raise                # damaged answers: say so (see _request)
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

