"""Capture procedure: configure the rig, run a pulse train, record every answer.

:func:`open_rig` gives a :class:`RigSession` on a serial port or on the simulation
twin; :func:`run_capture` runs one capture into a capture file and returns its
summary. Both are what the CLI calls; a notebook can call them directly.
"""

import contextlib
import datetime
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..capture import CaptureWriter, load
from ..protocol import GATEWARE_VERSION, PacketType, Reg, StimCtrl, StreamEnable, Target
from .analysis import capture_summary
from .errors import LinkError, UsageError
from .link import RigLink, decode_events, decode_latency, decode_truth

__all__ = ["CaptureSettings", "RigSession", "open_rig", "run_capture", "CaptureResult",
           "TARGETS", "CHANNELS"]

TARGETS = {"external": Target.EXTERNAL, "loopback": Target.LOOPBACK, "model": Target.MODEL,
           "soc": Target.SOC}
CHANNELS = {"isr": 0, "app": 1}
_MODEL_REGS = {
    "isr_entry": Reg.MODEL_ISR_ENTRY, "isr_jitter": Reg.MODEL_ISR_JITTER,
    "isr_service": Reg.MODEL_ISR_SERVICE, "app_wake": Reg.MODEL_APP_WAKE,
    "app_service": Reg.MODEL_APP_SERVICE, "load_quantum": Reg.MODEL_LOAD_QUANTUM,
    "heartbeat_work": Reg.MODEL_HB_WORK, "tick_period": Reg.MODEL_TICK_PERIOD,
    "tick_service": Reg.MODEL_TICK_SERVICE, "seed": Reg.MODEL_SEED,
}


#: Rig ticks waited beyond the response timeout after the last pulse before a run's
#: records and counters are taken as final (the matcher, merger and statistics
#: pipelines are a few cycles deep; 100 µs at 100 MHz leaves room for any of them).
DRAIN_TICKS = 10_000
#: Seconds between checks of the stimulus and the record counters while a capture runs
#: (one to three register reads: ~1 ms on the simulation twin, less on a rig).
_CHECK_S = 0.05
#: After the counters agree, the link must have been quiet this long (truth records,
#: which no counter counts, arrive by then) before the capture ends.
_QUIET_S = 0.1


def register_max(reg):
    """The largest value register ``reg`` holds (its width in
    :data:`rtrig.protocol.REGISTERS`): the limit of every setting written to it."""
    from ..protocol import REGISTER_BY_ADDR
    return (1 << REGISTER_BY_ADDR[int(reg)].width) - 1


@dataclass
class CaptureSettings:
    """What to measure. Times in seconds, frequencies in Hz.

    ``count`` pulses (or ``duration`` s) at ``freq`` with ``duty`` high fraction and up
    to ``jitter`` s of uniform extra delay per period; ``channels`` are the response
    channels recorded (``isr``, ``app``); ``target`` says what drives the rig inputs.
    ``timeout`` bounds the wait for a response rise (default: the longest period,
    i.e. "before the next stimulus").
    """
    freq: float
    count: int | None = 1000
    duration: float | None = None
    duty: float = 0.5
    jitter: float = 0.0
    channels: tuple = ("isr",)
    target: str = "external"
    delay: float = 0.0
    model: dict | None = None      # ModelParams fields (ticks) for target "model"
    preset: str | None = None
    load: bool = False
    timeout: float | None = None
    raw_events: bool = False
    truth: bool = False
    stim1_offset: float | None = None   # STIM1 follows STIM0 by this much (None: off)
    description: str = ""
    extra: dict = field(default_factory=dict)

    def ticks(self, tick_hz, step=1):
        """Validate against the rig's tick rate; returns register values. ``step``
        (register ``STIM_STEP``): the stimulus and loopback settings are rounded to
        multiples of it (2 or 4 on a rig with DDR input capture). Every value must fit
        its register (:func:`register_max`): none is left to wrap."""
        from .units import format_s

        def limit(what, value, ticks, reg, hint=None):
            top = register_max(reg)
            if ticks > top:
                raise UsageError(f"{what} {value} is more than the rig holds: at most "
                                 f"{format_s(top / tick_hz)} ({top} ticks, register "
                                 f"{reg.name})", hint=hint)

        if not (self.freq > 0 and math.isfinite(self.freq)):
            raise UsageError(f"frequency must be positive, got {self.freq:g} Hz",
                             hint="e.g. --freq 10k")
        if not 0 < self.duty < 1:
            raise UsageError(f"duty cycle must be between 0 and 1 (exclusive), got {self.duty:g}")
        if self.count is not None and self.count <= 0:
            raise UsageError(f"pulse count must be at least 1, got {self.count}")
        if self.count is not None and self.count > register_max(Reg.STIM_COUNT):
            raise UsageError(f"pulse count {self.count} is more than the rig counts: at most "
                             f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)",
                             hint="split the measurement into several captures")
        if self.duration is not None and not (self.duration > 0 and
                                              math.isfinite(self.duration)):
            raise UsageError(f"duration must be positive, got {self.duration:g} s")
        if not (self.jitter >= 0 and self.delay >= 0):
            raise UsageError("jitter and delay cannot be negative")
        if self.timeout is not None and not self.timeout >= 0:
            raise UsageError(f"response timeout cannot be negative, got {format_s(self.timeout)}",
                             hint="e.g. --timeout 100us (default: until the next stimulus)")
        for name, v in (("jitter", self.jitter), ("delay", self.delay),
                        ("timeout", self.timeout), ("STIM1 offset", self.stim1_offset)):
            if v is not None and not math.isfinite(v):
                raise UsageError(f"{name} must be a finite duration, got {v:g} s")
        if self.target not in TARGETS:
            raise UsageError(f"unknown target '{self.target}'",
                             hint=f"choose one of: {', '.join(TARGETS)}")
        if not self.channels:
            raise UsageError("no response channel given", hint="channels are: isr, app")
        for ch in self.channels:
            if ch not in CHANNELS:
                raise UsageError(f"unknown channel '{ch}'", hint="channels are: isr, app")
        for name, reg in _MODEL_REGS.items():
            v = (self.model or {}).get(name)
            if v is not None and not 0 <= v <= register_max(reg):
                raise UsageError(f"model {name} {v} ticks is outside what the rig holds: "
                                 f"0..{register_max(reg)} (register {reg.name})")

        def whole(ticks):
            return ticks // step * step

        period = whole(round(tick_hz / self.freq))
        if period < 4 * step:
            raise UsageError(f"{self.freq:g} Hz is too fast for a {tick_hz / 1e6:g} MHz rig "
                             f"(period {period} ticks; at least {4 * step})")
        if period >= 2**31:
            raise UsageError(f"{self.freq:g} Hz is too slow (period over 2^31 ticks)")
        high = min(max(step, whole(round(period * self.duty))), period - step)
        count = self.count
        if count is None:
            count = max(1, round((self.duration or 1.0) * self.freq))
            if count > register_max(Reg.STIM_COUNT):
                raise UsageError(f"{format_s(self.duration)} at {self.freq:g} Hz is {count} "
                                 f"pulses, more than the rig counts: at most "
                                 f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)",
                                 hint="split the measurement into several captures")
        jitter = whole(round(self.jitter * tick_hz))
        limit("jitter", format_s(self.jitter), jitter, Reg.STIM_JITTER)
        # The stimulus counts each period plus its jitter in one 32-bit counter, and the
        # default response window is that long.
        limit("period plus jitter", format_s((period + jitter) / tick_hz), period + jitter,
              Reg.STIM_PERIOD, hint="lower --jitter")
        timeout = round(self.timeout * tick_hz) if self.timeout else period + jitter
        if timeout == 0:
            raise UsageError(f"response timeout {format_s(self.timeout)} is shorter than one "
                             f"tick ({format_s(1 / tick_hz)})",
                             hint="give 0 for the default: until the next stimulus")
        limit("response timeout", format_s(timeout / tick_hz), timeout, Reg.LAT_TIMEOUT)
        delay = whole(round(self.delay * tick_hz))
        limit("loopback delay", format_s(self.delay), delay, Reg.LOOP_DELAY)
        offset = None
        if self.stim1_offset is not None:
            offset = whole(round(self.stim1_offset * tick_hz))
            if offset < 0 or offset + high >= period:
                raise UsageError("STIM1 offset plus the high time must fit in one period",
                                 hint=f"offset < {(period - high) / tick_hz * 1e6:g} µs "
                                      "at this frequency and duty cycle")
        return {"period": period, "high": high, "count": count, "jitter": jitter,
                "timeout": timeout, "delay": delay, "stim1_offset": offset}


class RigSession:
    """An open rig: ``link`` (a :class:`RigLink`), ``info`` (identity registers),
    ``sim`` (the running simulation twin, or None)."""

    def __init__(self, link, info, sim=None, port=None):
        self.link = link
        self.info = info
        self.sim = sim
        self.port = port

    @property
    def tick_hz(self):
        return self.info["tick_hz"]

    @property
    def stim_step(self):
        """Ticks per stimulus step (``STIM_STEP``: 2 or 4 with DDR input capture; a
        rig built before the register existed answers its unknown-address value: 1)."""
        step = self.info.get("stim_step", 1)
        return step if step in (1, 2, 4) else 1

    def describe(self):
        return {**self.info, "port": self.port if not self.sim else "sim",
                "simulation": self.sim is not None}


@contextlib.contextmanager
def open_rig(port=None, sim=False, log=None, soc=False, firmware=None, board=None,
             sim_link="fast", baudrate=3_000_000):
    """Open a rig on ``port`` (a device or pyserial URL) or start the simulation twin.

    With ``sim``, ``soc=True`` starts the twin built with the reference SoC running
    ``firmware`` (a raw ``.bin``; default ``rt_test``), see docs/soc.md; ``board`` (a
    board name) the twin of that board's gateware; ``sim_link`` its host link:
    ``fast`` (default) or ``line`` (the board's own baud, :data:`rtrig.host.sim.LINKS`).
    ``baudrate``: the serial port's rate (a rig built with a faster link, ``rtrig build
    --baud``); a socket ignores it."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if not sim and not port:
        raise UsageError("no rig given", hint="use --port PORT (or RTRIG_PORT), or --sim")
    simrig = None
    try:
        if sim:
            from .sim import SimRig
            opts = {"soc": True, "firmware": firmware} if soc else {}
            opts["link"] = sim_link
            if board is not None:
                opts["board"] = board
            simrig = SimRig(log=log, **opts)
            simrig.start()
            port = simrig.url
        link = RigLink(port, baudrate=baudrate)
        try:
            info = link.identify()
            if info["version"] != GATEWARE_VERSION:
                raise LinkError(f"the rig's gateware speaks protocol {info['version']}, "
                                f"this rtrig speaks {GATEWARE_VERSION}",
                                hint="rebuild/flash the gateware or upgrade rtrig")
            yield RigSession(link, info, simrig, port)
        finally:
            link.close()
    finally:
        if simrig is not None:
            simrig.stop()


@dataclass
class CaptureResult:
    path: Path
    summary: dict
    link: dict
    meta: dict
    final: dict

    def to_json(self):
        return {"capture": str(self.path), "channels": self.summary, "link": self.link,
                "target": self.meta["target"], "stimulus": self.meta["stimulus"],
                "mode": self.meta["mode"], "status": self.final.get("status"),
                "tick_hz": self.meta["tick_hz"]}


class _Progress:
    """One status line on stderr, updated at most every 0.5 s."""

    def __init__(self, total, label, enabled):
        self.total, self.label, self.enabled = total, label, enabled
        self._last = 0.0
        self._shown = False

    def update(self, done, force=False):
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < 0.5):
            return
        self._last = now
        pct = 100.0 * done / self.total if self.total else 100.0
        print(f"\r{self.label}: {done}/{self.total} ({pct:.0f} %)", end="", file=sys.stderr,
              flush=True)
        self._shown = True

    def done(self):
        if self._shown:
            print(file=sys.stderr)
            self._shown = False


def configure_target(link, settings, regs):
    """Select the target and set its parameters (the stimulus must be stopped)."""
    target = TARGETS[settings.target]
    caps = link.read1(Reg.CAPS)
    if not caps & (1 << target):
        raise UsageError(f"target '{settings.target}' is not built into this rig's gateware")
    link.write(Reg.TARGET_SEL, target)
    link.write(Reg.LOOP_DELAY, regs["delay"])
    if target == Target.MODEL:
        link.write(Reg.MODEL_CTRL, 1)           # hold the model in reset while setting it
        params = settings.model or {}
        for name, reg in _MODEL_REGS.items():
            if name in params:
                link.write(reg, int(params[name]))
        app = bool(params.get("app", True))
        link.write(Reg.MODEL_CTRL, 0b10 if app else 0b00)
    link.write(Reg.LOAD_EN, 1 if settings.load else 0)


def run_capture(session, settings, path, progress=True, on_block=None):
    """Run one capture into ``path``; returns a :class:`CaptureResult`.

    Records are written in blocks as they arrive; on KeyboardInterrupt (or a link
    failure) the stimulus is stopped, everything received so far is written, the
    file is closed with status ``interrupted`` and the exception propagates.
    """
    link = session.link
    tick_hz = session.tick_hz
    regs = settings.ticks(tick_hz, session.stim_step)
    chan_mask = sum(1 << CHANNELS[c] for c in settings.channels)
    n_ch = len(settings.channels)
    count = regs["count"]

    link.write(Reg.STIM_CTRL, 0)
    link.write(Reg.STREAM_EN, 0)
    configure_target(link, settings, regs)
    streams = StreamEnable.LATENCY
    if settings.raw_events:
        streams |= StreamEnable.EVENTS
    if settings.truth:
        streams |= StreamEnable.TRUTH
    link.configure(
        STIM_PERIOD=regs["period"], STIM_HIGH=regs["high"], STIM_COUNT=count,
        STIM_JITTER=regs["jitter"], STIM_SEED=1, LAT_CH_EN=chan_mask,
        STIM1_OFFSET=regs["stim1_offset"] or 0,
        LAT_TIMEOUT=regs["timeout"],
        EDGE_EN=(0x3F | 0x3F << 8 | 1 << 16) if settings.raw_events else 0,
    )
    # Zero the rig's counters and drop anything left over from an earlier run; the
    # host's link counters start with them, the pulse index from 0 (RigLink.write).
    link.write(Reg.CLEAR, 1)
    link.poll()
    for t in PacketType.LATENCY, PacketType.EVENT, PacketType.TRUTH:
        link.take(t)
    link.clear_counters(from_pulse_0=True)
    link.write(Reg.STREAM_EN, streams)

    meta = capture_meta(session, settings, regs, "records")
    expected = count * n_ch
    bar = _Progress(expected, f"capture {settings.target} @ {settings.freq:g} Hz", progress)
    received = 0
    events_received = 0
    status = "complete"
    writer = CaptureWriter(path, meta)

    def flush(notify=True):
        nonlocal received, events_received
        lat = decode_latency(link.take(PacketType.LATENCY))
        received += len(lat)
        writer.array(b"LATR", lat)
        ev = decode_events(link.take(PacketType.EVENT))
        events_received += len(ev)
        writer.array(b"EVNT", ev)
        writer.array(b"TRTH", decode_truth(link.take(PacketType.TRUTH)))
        if notify and on_block is not None:
            on_block(received)

    try:
        link.write(Reg.STIM_CTRL, StimCtrl.RUN | (StimCtrl.STIM1_EN if regs["stim1_offset"]
                                                  is not None else 0))
        last_flush = time.monotonic()
        last_check = 0.0
        stim_done_at = None
        quiet_since = None
        while True:
            got = link.poll(wait=0.05)
            now = time.monotonic()
            if now - last_flush > 0.5 or len(link.streams[PacketType.LATENCY]) > 19 * 20000:
                flush()
                last_flush = now
            pending = len(link.streams[PacketType.LATENCY]) // 19
            bar.update(received + pending)
            if got:
                quiet_since = None
            else:
                quiet_since = quiet_since or now
            if now - last_check > _CHECK_S:
                last_check = now
                if stim_done_at is None and link.read1(Reg.STIM_STATUS) == 0:
                    stim_done_at = link.time()
                elif stim_done_at is not None:
                    # Every window has closed once the rig's clock has passed the last
                    # pulse by the timeout; then everything the rig produced must have
                    # arrived and the link gone quiet (the twin may run slower than
                    # real time, so "quiet" is judged after the counts agree).
                    if link.time() > stim_done_at + regs["timeout"] + DRAIN_TICKS:
                        if _drained(link, received, events_received, settings.raw_events):
                            if quiet_since is not None and now - quiet_since > _QUIET_S:
                                break
                        elif quiet_since is not None and now - quiet_since > 5.0:
                            break      # the rest is lost: counted below, not waited for
    except (KeyboardInterrupt, LinkError) as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "link lost"
        final = {"status": status, "records": received, "end_time": _now()}
        try:
            with contextlib.suppress(Exception):
                link.write(Reg.STIM_CTRL, 0)
                link.poll(wait=0.2)
            flush(notify=False)
            # The loss counters as far as they can be had: the rig's too while the link
            # answers, the host's own when it does not.
            final["link"] = {"crc_errors": link.crc_errors, "bad_payloads": link.bad_payloads,
                             "duplicates": link.duplicates}
            with contextlib.suppress(Exception):
                final["link"] = _counters(link, settings)[0]
        finally:
            writer.close(final=final)
            bar.done()
        raise
    finally:
        bar.done()
    flush()
    counters, pulses_issued = _counters(link, settings)
    heartbeat = link.read1(Reg.HB_COUNT)
    link.write(Reg.STREAM_EN, 0)
    if received < expected:
        status = "incomplete"
    final = {"status": status, "records": received, "expected_records": expected,
             "pulses_issued": pulses_issued, "heartbeat_edges": heartbeat,
             "link": counters, "end_time": _now()}
    writer.close(final=final)
    cap = load(path)
    return CaptureResult(Path(path), capture_summary(cap), counters, meta, final)


def _counters(link, settings):
    """Every loss counter of a records-mode capture (``final["link"]``, the keys of
    :data:`rtrig.host.link.LINK_COUNTERS`) and the pulses issued, from the rig's
    registers and the host's link.

    Latency records are counted exactly by their pulse index (every pulse gets one
    record per channel, so those missing after the last one received count too);
    those the rig's full FIFO dropped are its overflows, not link losses (and then a
    gap that looks longer than its sequence numbers say may be such drops)."""
    lat_ovf, evt_ovf = link.read1(Reg.LAT_OVERFLOW), link.read1(Reg.EVT_OVERFLOW)
    truth_ovf = link.read1(Reg.TRUTH_OVERFLOW)
    rx_errors = link.read1(Reg.RX_ERRORS)
    pulses_issued = link.read1(Reg.STIM_PULSES)
    link.loss.end([CHANNELS[c] for c in settings.channels], pulses_issued)
    lost_records = max(link.missing_records - lat_ovf, 0)
    other = link.loss.lost_other_seen if lat_ovf else link.loss.lost_other
    return {
        "crc_errors": link.crc_errors,
        "lost_packets": lost_records + other,
        "lost_records": lost_records,
        "bad_payloads": link.bad_payloads,
        "duplicates": link.duplicates,
        "overflows": lat_ovf + evt_ovf + truth_ovf,
        "lat_overflow": lat_ovf,
        "evt_overflow": evt_ovf,
        "truth_overflow": truth_ovf,
        "rx_errors": rx_errors,
    }, pulses_issued


def capture_meta(session, settings, regs, mode):
    """The ``META`` object of a capture (docs/capture-format.md)."""
    tick_hz = session.tick_hz
    return {
        "format": "rtrig-capture",
        "rtrig_version": __version__,
        "gateware_version": session.info["version"],
        "gateware_hash": f"{session.info['build_hash']:08x}",
        "board": session.info["board"],
        "simulation": session.sim is not None,
        "tick_hz": tick_hz,
        "in_delay_ticks": session.info["in_delay"],
        "calibration": {"in_delay_ticks_subtracted": session.info["in_delay"]},
        "target": {"kind": settings.target, "delay_ticks": regs["delay"],
                   "model": settings.model, "preset": settings.preset,
                   "description": settings.description},
        "stimulus": {"freq_hz": tick_hz / regs["period"], "requested_freq_hz": settings.freq,
                     "period_ticks": regs["period"], "high_ticks": regs["high"],
                     "count": regs["count"], "jitter_ticks": regs["jitter"]},
        "channels": list(settings.channels),
        "load": settings.load,
        "timeout_ticks": regs["timeout"],
        "mode": mode,
        "raw_events": False if mode == "statistics" else settings.raw_events,
        "start_time": _now(),
        **settings.extra,
    }


def _drained(link, received, events_received, raw_events):
    """Has every record the rig produced reached the host (or been counted lost)?"""
    lat = received + len(link.streams[PacketType.LATENCY]) // 19
    if link.missing_records:        # less the records the rig dropped itself
        lat += max(link.missing_records - link.read1(Reg.LAT_OVERFLOW), 0)
    if lat < link.read1(Reg.LAT_RECORDS):
        return False
    if raw_events:
        # events carry no index: the packets lost in gaps that no record claims
        ev = events_received + len(link.streams[PacketType.EVENT]) // 7 + link.loss.lost_other
        if ev < link.read1(Reg.EVT_RECORDS):
            return False
    return True


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()

