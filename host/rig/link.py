# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the rig link: register access and stream decoding over pyserial.

One code path for a real serial port (``/dev/ttyUSB1``) and for the simulation twin
(``socket://127.0.0.1:PORT``): the link sees bytes, nothing else.
"""

import collections
import time

import numpy as np
import serial

from ...errors import LinkError, NotARigError
from ...framing import SlipDecoder, frame
from ...protocol import RIG_ID, ChanFlags, PacketType, Reg
from ...records import EVENT, EVENT_DTYPE, LATENCY, LATENCY_DTYPE, RECORDS, TRUTH, TRUTH_DTYPE

__all__ = ["RigLink", "LossCounter", "LINK_COUNTERS", "WIRE_LATENCY", "WIRE_EVENT",
           "WIRE_TRUTH", "decode_latency", "decode_events", "decode_truth"]

#: Every loss counter a capture reports (``final["link"]``), in the order shown:
#: key → (``link`` for the host link, ``rig`` for the rig's FIFOs; label; what a
#: nonzero count means). The CLI summary, its warnings and the report use this table.
LINK_COUNTERS = {
    "crc_errors": ("link", "CRC errors",
                   "packets damaged on the link: check the cable, its ground and the baud rate"),
    "lost_packets": ("link", "lost packets",
                     "rig packets whose content never arrived: dropped, damaged or malformed"),
    "lost_records": ("link", "lost latency records",
                     "of the lost packets: their pulses are missing from the capture"),
    "setup_lost": ("link", "packets lost before the CLEAR",
                   "responses lost in the set-up exchanges before the run's CLEAR (since "
                   "the link opened or the previous run's counters): retried, they carried "
                   "nothing of the capture; with lost packets, every packet the link lost"),
    "bad_payloads": ("link", "bad payloads",
                     "packets with a good CRC but a wrong length or type: their content is lost"),
    "duplicates": ("link", "duplicate packets", "packets that arrived twice: the copies were dropped"),
    "rx_errors": ("link", "rig RX errors",
                  "host → rig packets the rig rejected (RX_ERRORS): the link is noisy"),
    "overflows": ("rig", "FIFO overflows", "records the rig dropped because a FIFO was full"),
    "lat_overflow": ("rig", "latency record overflows",
                     "latency records dropped by the rig (LAT_OVERFLOW): lower the rate, record "
                     "fewer channels or use --mode statistics"),
    "evt_overflow": ("rig", "raw event overflows",
                     "raw events dropped by the rig (EVT_OVERFLOW): lower the rate or record "
                     "without --raw"),
    "truth_overflow": ("rig", "truth record overflows",
                       "model truth records dropped by the rig (TRUTH_OVERFLOW)"),
    "stat_drops": ("rig", "statistics drops",
                   "records the on-chip statistics did not accumulate (STAT_DROPS)"),
    "unended": ("rig", "pulses never ended",
                "pulses whose response, or interval end, had not completed when the "
                "capture stopped: the rig records a pulse at its completion, so these "
                "have no record (docs/protocol.md)"),
}

#: Wire layouts of the stream payloads (packed, little-endian), derived from the
#: records' one declaration in :mod:`rtrig.records`.
WIRE_LATENCY = LATENCY.wire_dtype()
WIRE_EVENT = EVENT.wire_dtype()
WIRE_TRUTH = TRUTH.wire_dtype()
#: Bits of the channel byte that are flags (:class:`rtrig.protocol.ChanFlags`).
_FLAG_BITS = 0xFF & ~ChanFlags.CHANNEL_MASK


def decode_latency(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_LATENCY)
    out = np.empty(len(w), dtype=LATENCY_DTYPE)
    out["pulse"] = LATENCY.unpack(w, "pulse")
    out["stim_t"] = LATENCY.unpack(w, "stim_t")
    out["channel"] = LATENCY.unpack(w, "channel")
    out["flags"] = LATENCY.byte(w, "channel") & _FLAG_BITS
    out["latency"] = LATENCY.unpack(w, "latency")
    out["completion"] = LATENCY.unpack(w, "completion")
    return out


def decode_events(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_EVENT)
    out = np.empty(len(w), dtype=EVENT_DTYPE)
    out["t"] = EVENT.unpack(w, "t")
    out["input"] = EVENT.unpack(w, "input")
    out["rising"] = EVENT.unpack(w, "rising")
    return out


def decode_truth(raw: bytes):
    w = np.frombuffer(raw, dtype=WIRE_TRUTH)
    out = np.empty(len(w), dtype=TRUTH_DTYPE)
    out["pulse"] = TRUTH.unpack(w, "pulse")
    out["channel"] = TRUTH.unpack(w, "channel")
    out["flags"] = TRUTH.byte(w, "channel") & _FLAG_BITS
    out["latency"] = TRUTH.unpack(w, "latency")
    out["completion"] = TRUTH.unpack(w, "completion")
    return out


#: Payload bytes of each stream packet type.
_STREAMS = {PacketType[name]: record.payload_len for name, record in RECORDS.items()}
#: Offset of the LATENCY payload's channel byte (the loss counter reads it raw).
_CHAN_BYTE = WIRE_LATENCY.fields["channel"][1]


def payload_bytes(stream):
    """Payload bytes of one record of ``stream`` (``"LATENCY"``, ``"EVENT"``, ``"TRUTH"``)."""
    return _STREAMS[PacketType[stream]]
_U32 = 0xFFFF_FFFF


class LossCounter:
    """Counts the rig → host packets that did not arrive, from what the packets carry.

    A gap in the 8-bit sequence numbers gives the number of packets lost there only
    modulo 256; a latency record's 32-bit pulse index gives the number of records of
    its channel missing since that channel's previous record exactly, whatever the
    gap. ``missing_records`` counts latency records missing by pulse index: lost on the
    link, and also any the rig's full FIFO dropped (only its ``LAT_OVERFLOW`` register
    tells those apart). Each missing record is matched with a packet of a sequence gap
    in its channel's window; when the gaps there hold fewer packets than are missing,
    one of them was longer by whole multiples of 256. The packets of the gaps that no
    record claims (responses, events, truth records) are ``lost_other``: exact for any
    gap that also lost latency records, modulo 256 for a gap of other packets alone.
    docs/protocol.md, "Sequence numbers and loss accounting".

    A packet received with a good CRC but an unusable payload counts like a lost one
    (its content is lost). Records of one channel may arrive out of pulse order by a
    few places (the rig's round-robin merger): a late record is taken back out of the
    missing ones; a record seen before is a duplicate and is dropped.
    """

    #: Pulses a record may arrive late and still be taken as not lost.
    LATE = 64
    #: Sequence gaps kept for matching with records (older ones stay counted as other).
    KEEP = 4096

    def __init__(self):
        self.clear()

    def clear(self, from_pulse_0=False):
        """Zero the counters. ``from_pulse_0``: the next records start a pulse train at
        pulse index 0 (after the rig's CLEAR), so records missing before the first one
        of a channel are counted too."""
        self.missing_records = 0
        self.duplicates = 0
        # Unclaimed packets of the gaps: seen in sequence numbers, or ([2]) implied by
        # records missing beyond them (a gap longer by multiples of 256).
        self._room = [0, 0, 0]
        self._pos = 0             # packets received (with a good CRC) since clear
        # [position of the packet after the gap, seen, implied, implied at first]
        self._gaps = collections.deque()
        self._chan = {}           # channel -> [next pulse, position, {late pulse: claim}]
        self._origin = 0 if from_pulse_0 else None
        #: Latency records received per channel (duplicates not counted).
        self.received = collections.Counter()

    @property
    def lost_other(self):
        """Packets lost in gaps that no missing latency record accounts for."""
        return self._room[1] + self._room[2]

    @property
    def lost_other_seen(self):
        """:attr:`lost_other` without the packets of gaps found longer than their
        sequence numbers said: the figure to use when the rig dropped records itself
        (a record missing for that reason also makes a gap look longer)."""
        return self._room[1]

    @property
    def lost_packets(self):
        return self.missing_records + self.lost_other

    def is_duplicate(self, chan, pulse):
        """Has a record of ``chan`` for ``pulse`` already arrived?"""
        c = self._chan.get(chan)
        if c is None or (pulse - c[0]) & _U32 < 1 << 31:
            return False
        return pulse not in c[2]

    def packet(self, gap, bad=False):
        """One packet received, ``gap`` packets (modulo 256) after the previous one;
        ``bad``: its payload is unusable (counted like a lost packet)."""
        self._pos += 1
        if gap or bad:
            self._add([self._pos, gap + bad, 0, 0], 1, gap + bad)

    def record(self, chan, pulse):
        """A latency record of ``chan`` for ``pulse`` arrived (after :meth:`packet`)."""
        self.received[chan] += 1
        c = self._chan.get(chan)
        if c is None:
            if self._origin is None:        # no known start: this record is the first
                self._chan[chan] = [(pulse + 1) & _U32, self._pos, {}]
                return
            c = self._chan[chan] = [0, self._origin, {}]
        if pulse in c[2]:                   # late, not lost: give its packet back
            gap, kind = c[2].pop(pulse)
            self.missing_records -= 1
            gap[kind] += 1
            self._room[kind] += 1
            if kind == 2 and gap[2] == gap[3]:
                # nothing left claims the packets this gap was found longer by: it was not
                self._room[2] -= gap[2]
                gap[2] = gap[3] = 0
            return
        self._missing(c, pulse)
        c[0], c[1] = (pulse + 1) & _U32, self._pos
        for p in [p for p in c[2] if (pulse - p) & _U32 > self.LATE]:
            del c[2][p]

    def end(self, channels, pulses):
        """The pulse train is over: ``pulses`` pulses, a record each on ``channels``.
        Counts the records missing after the last one received of each channel."""
        for chan in channels:
            c = self._chan.get(chan)
            if c is None:
                if self._origin is None:
                    continue
                c = self._chan[chan] = [0, self._origin, {}]
            if (pulses - c[0]) & _U32 < 1 << 31:
                self._missing(c, pulses)
                c[0], c[1] = pulses & _U32, self._pos

    def tail(self, channels, pulses):
        """Records of ``channels`` that :meth:`end` would count missing after the last
        one received of each, for a train of ``pulses`` pulses."""
        n = 0
        for chan in channels:
            c = self._chan.get(chan)
            if c is None:
                n += pulses if self._origin is not None else 0
            elif (pulses - c[0]) & _U32 < 1 << 31:
                n += (pulses - c[0]) & _U32
        return n

    def _add(self, gap, kind, n):
        self._gaps.append(gap)
        self._room[kind] += n
        while len(self._gaps) > self.KEEP or (self._gaps and not any(self._gaps[0][1:3])):
            self._gaps.popleft()

    def _missing(self, c, pulse):
        """Records ``c[0]`` .. ``pulse - 1`` of a channel are missing: claim packets of
        the gaps since its previous record, in order, those seen before those implied."""
        n = (pulse - c[0]) & _U32
        if not n:
            return
        self.missing_records += n
        window = []
        for gap in reversed(self._gaps):
            if gap[0] <= c[1]:
                break
            window.append(gap)
        window.reverse()
        total = sum(g[1] + g[2] for g in window)
        if total < n:
            # The gaps hold fewer packets than are missing: the last one was longer, by
            # whole multiples of 256 (packets of other kinds in it are then counted too).
            extra = (n - total + 255) // 256 * 256
            if window and window[-1][0] == self._pos:
                window[-1][2] += extra
                window[-1][3] += extra
                self._room[2] += extra
            else:
                window.append([self._pos, 0, extra, extra])
                self._add(window[-1], 2, extra)
        left, claims = n, []
        for gap in window:
            for kind in (1, 2):
                take = min(gap[kind], left)
                gap[kind] -= take
                self._room[kind] -= take
                left -= take
                claims += [(gap, kind)] * min(take, self.LATE)
        for i, claim in enumerate(claims[-self.LATE:]):
            c[2][(pulse - min(n, self.LATE) + i) & _U32] = claim


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
            raise self._lost(f"link to {self.url} lost: {e}") from e
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

    def _lost(self, what, reason=None):
        """The error of a broken link: a twin's exit when it has exited (``reason``,
        else asked), the cable and power of a serial rig otherwise."""
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
                raise self._lost(f"cannot write to {self.url}: {e}") from e
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

