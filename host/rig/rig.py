# SPDX-License-Identifier: BSD-2-Clause
"""The host's one interface to a rig: typed operations over the one link.

:func:`~rtrig.host.rig.connect.open_rig` gives a :class:`Rig` on a serial port or on
the simulation twin.
Every procedure (capture, statistics capture, sweep steps, the suite, selftest) is a
short sequence of the operations here — set up (:meth:`Rig.prepare`), run, take
records, wait, read counters — so none of them writes registers in its own order, and
the waits that decide when a run's figures are final exist once. Channels come as a
:class:`~rtrig.channels.ChannelPlan`, resolved once by the procedure's settings.

The register-level detail (addresses, widths) stays in :mod:`rtrig.protocol`; the
bytes on the wire in :class:`~rtrig.host.rig.link.RigLink`, which :attr:`Rig.link` still
exposes for tests and tools that speak registers directly (no module of the host
outside ``host/rig/`` does: ``tests/test_architecture.py``).
"""

import functools
import time

from ...errors import LinkError, UsageError
from ...protocol import (
    LAT_EDGES_RESET,
    MODEL_PARAM_REGS,
    REGISTER_BY_ADDR,
    RIG_ID,
    Caps,
    PacketType,
    Reg,
    StimCtrl,
    StimStatus,
    StreamEnable,
    Target,
    latency_channels,
)
from ...units import format_s
from .counters import CounterReads
from .decode import decode_events, decode_latency, decode_truth
from .statistics import StatisticsReads

__all__ = ["Rig", "register_max", "TARGETS", "MODEL_REGS", "DRAIN_TICKS", "ARM_MIN_S",
           "SOC_LEAD_S", "ARM_ALIGN_TICKS"]

#: Target names on the command line → the TARGET_SEL value.
TARGETS = {"external": Target.EXTERNAL, "loopback": Target.LOOPBACK, "model": Target.MODEL,
           "soc": Target.SOC}
#: Model target parameters (``ModelParams`` fields, in ticks) → their registers (the
#: one mapping, :data:`rtrig.protocol.MODEL_PARAM_REGS`).
MODEL_REGS = {name: Reg[reg] for name, reg in MODEL_PARAM_REGS.items()}

#: Rig ticks waited beyond the response timeout after the last pulse before a run's
#: records and counters are taken as final (the matcher, merger and statistics
#: pipelines are a few cycles deep; 333 µs at 30 MHz leaves room for any of them).
DRAIN_TICKS = 10_000
#: An armed run (:meth:`Rig.run`) starts at least this long after the host read the
#: rig's clock, and at least 16 of the link's round trips then measured: time for the
#: writes that arm it to land. A run armed too late is armed again, twice as far ahead.
ARM_MIN_S = 200e-6
#: How long the reference SoC is let run from its restart before the first pulse: its
#: start-up (stack, .bss, threads, the console's "ready") takes ~0.3 ms, and its first
#: two ticks run from cold caches (the first took 4.0 µs masked, docs/kernel.md); the
#: pulses then meet a kernel as warm as one that had run for long.
SOC_LEAD_S = 3e-3
#: Armed runs start on a multiple of this many ticks: three 30 MHz cycles, the period
#: at which the rig's and the SoC's 50 MHz clock edges meet, so a restarted SoC leaves
#: reset at the same point of its own clock on every run.
ARM_ALIGN_TICKS = 12
#: Seconds between polls of the rig while waiting on its clock or its stimulus: one or
#: two register reads (~1 ms on the simulation twin, ~0.2 ms on a 3 Mbaud rig), so
#: polling this often costs the link little and ends a short run soon after its end.
POLL_S = 0.02


def register_max(reg):
    """The largest value register ``reg`` holds (its width in
    :data:`rtrig.protocol.REGISTERS`): the limit of every setting written to it."""
    return (1 << REGISTER_BY_ADDR[int(reg)].width) - 1


class Rig(StatisticsReads, CounterReads):
    """An open rig: ``link`` (a :class:`~rtrig.host.rig.link.RigLink`), ``info``
    (identity registers), ``sim`` (the running simulation twin, or None), ``port``.

    Its on-chip statistics' reads are :class:`~rtrig.host.rig.statistics.StatisticsReads`,
    its counters' :class:`~rtrig.host.rig.counters.CounterReads`."""

    def __init__(self, link, info, sim=None, port=None):
        self.link = link
        self.info = info
        self.sim = sim
        self.port = port
        #: The rig's gateware against this rtrig's build (the ``META`` entry
        #: ``gateware``, :func:`rtrig.host.rig.gateware.check_gateware`), or None.
        self.gateware = None
        #: Restart the target at the next run (set by :meth:`configure_target`).
        self._restart = False
        self._lead = 0
        #: The last armed run: ``{"at": ticks, "lead": ticks, "restart": bool}`` (or
        #: None: started at once, by a rig that cannot arm).
        self.last_start = None

    # identity --------------------------------------------------------------------
    @property
    def tick_hz(self):
        return self.info["tick_hz"]

    @property
    def stim_step(self):
        """Ticks per stimulus step (``STIM_STEP``: 2 or 4 with DDR input capture; a
        rig built before the register existed answers its unknown-address value: 1)."""
        step = self.info.get("stim_step", 1)
        return step if step in (1, 2, 4) else 1

    @functools.cached_property
    def loopback_max_ticks(self):
        """The longest delay this rig's loopback target makes, in ticks, or None when it
        has no fixed limit (:func:`rtrig.boards.loopback_limit_cycles`: a board's rig
        delays STIM0 through a delay line of so many clock cycles, and each clock cycle
        is ``stim_step`` ticks)."""
        from ...boards import loopback_limit_cycles
        cycles = loopback_limit_cycles(self.info.get("board", 0))
        return None if cycles is None else cycles * self.stim_step

    def describe(self):
        return {**self.info, "port": self.port if not self.sim else "sim",
                "simulation": self.sim is not None}

    def check_link(self, reads=4):
        """Read ``ID`` and the timebase ``reads`` times (``rtrig doctor``): a wrong ``ID``
        or an unanswered read is a :class:`LinkError`. Returns the reads made."""
        for _ in range(reads):
            self.time()
            if (ident := self.link.read1(Reg.ID)) != RIG_ID:
                raise LinkError(f"ID read back as 0x{ident:08x}")
        return 2 * reads

    def has_target(self, target):
        return bool(self.link.read1(Reg.CAPS) & (1 << TARGETS[target]))

    def has_caps(self, caps):
        """Whether the gateware has every :class:`~rtrig.protocol.Caps` bit of ``caps``."""
        return self.info["caps"] & caps == caps

    @property
    def latency_channels(self):
        """The latency channels of this rig's gateware (``CAPS``; ``isr`` and ``app``
        are channels 0 and 1, interval channels take the others)."""
        return latency_channels(self.info["caps"])

    def has_statistics(self):
        """Does this rig's gateware keep on-chip statistics (``STAT_INFO`` ≠ 0)?"""
        return self.link.read1(Reg.STAT_INFO) != 0

    # setting up a run ------------------------------------------------------------
    def prepare(self, settings, regs, plan, statistics=False, drop_streams=False,
                **more):
        """Set the rig up for one run, from any state, the stimulus left stopped: stop
        everything (:meth:`stop`), select and set the target (:meth:`configure_target`),
        program the pulse train of ``regs`` (:meth:`CaptureSettings.ticks`) and the
        channels of ``plan`` (a :class:`~rtrig.channels.ChannelPlan`) with any further
        registers ``more`` (:meth:`configure_stimulus`), and zero the counters
        (:meth:`clear`). ``statistics``: also stop the on-chip accumulation first;
        ``drop_streams``: drop any record left over from an earlier run."""
        self.stop(statistics=statistics)
        self.last_start = None
        self.configure_target(settings, regs)
        self.configure_stimulus(regs, plan, **more)
        self.clear(drop_streams=drop_streams)

    def stop(self, statistics=False):
        """Stop the stimulus and the record streams (and with ``statistics`` the
        on-chip accumulation): the state every configuration starts from."""
        self.link.write(Reg.STIM_CTRL, 0)
        self.link.write(Reg.STREAM_EN, 0)
        if statistics:
            self.link.write(Reg.STAT_CTRL, 0)

    def configure_target(self, settings, regs):
        """Select ``settings.target`` and set its parameters and LOAD_EN (the
        stimulus must be stopped)."""
        link = self.link
        if not self.has_target(settings.target):
            raise UsageError(f"target '{settings.target}' is not built into this rig's gateware")
        target = TARGETS[settings.target]
        top = self.loopback_max_ticks
        if settings.target == "loopback" and top is not None and regs["delay"] > top:
            ns = 1e9 / self.tick_hz
            raise UsageError(
                f"loopback delay {format_s(regs['delay'] / self.tick_hz)} is longer than "
                f"this rig's loopback makes: at most {top * ns / 1000:.6g} µs ({top} ticks)",
                hint="its delay line holds that long; a longer delay would answer nothing")
        link.write(Reg.TARGET_SEL, target)
        link.write(Reg.LOOP_DELAY, regs["delay"])
        if target == Target.MODEL:
            link.write(Reg.MODEL_CTRL, 1)       # hold the model in reset while setting it
            params = settings.model or {}
            for name, reg in MODEL_REGS.items():
                if name in params:
                    link.write(reg, int(params[name]))
            app = bool(params.get("app", True))
            link.write(Reg.MODEL_CTRL, 0b10 if app else 0b00)
        link.write(Reg.LOAD_EN, 1 if settings.load else 0)
        # The model and the SoC start anew with the next run, so a run's records are a
        # function of its settings, not of when the host's writes landed.
        self._restart = target in (Target.MODEL, Target.SOC)
        self._lead = round(SOC_LEAD_S * self.tick_hz) if target == Target.SOC else 0

    def configure_stimulus(self, regs, plan, **more):
        """Program the pulse train of ``regs`` (:meth:`CaptureSettings.ticks`; bursts
        with ``burst``/``gap``), the latency channels of ``plan`` (a
        :class:`~rtrig.channels.ChannelPlan`: their matchers and edges) and any further
        registers ``more``. A rig without interval channels or bursts (``CAPS``)
        refuses them in one line; one with them gets them written every time (the
        defaults when not asked for), so no run inherits another's."""
        mask = plan.mask
        edges = plan.lat_edges
        burst = regs.get("burst") or 0
        if mask >> self.latency_channels:
            raise UsageError(f"{len(plan)} channels asked for ({', '.join(plan.names)}), this "
                             f"rig's gateware has {self.latency_channels} latency channels",
                             hint="isr and app take channels 0 and 1, an interval any other")
        if edges != LAT_EDGES_RESET and not self.has_caps(Caps.INTERVALS):
            raise UsageError("this rig's gateware has no interval channels (the "
                             "iCEBreaker's build): it times stimulus → isr/app only")
        if burst and not self.has_caps(Caps.BURST):
            raise UsageError("this rig's gateware has no burst stimulus (the iCEBreaker's "
                             "build)")
        if self.has_caps(Caps.INTERVALS):
            more.setdefault("LAT_EDGES", edges)
        if self.has_caps(Caps.BURST):
            more.setdefault("STIM_BURST", burst)
            more.setdefault("STIM_GAP", regs.get("gap") or 0)
        self.link.configure(
            STIM_PERIOD=regs["period"], STIM_HIGH=regs["high"], STIM_COUNT=regs["count"],
            STIM_JITTER=regs["jitter"], STIM_SEED=1, LAT_CH_EN=mask,
            STIM1_OFFSET=regs.get("stim1_offset") or 0, LAT_TIMEOUT=regs["timeout"],
            **more)

    def clear(self, drop_streams=False):
        """Zero the rig's counters, statistics and pulse index (and so the host's link
        counters, :meth:`RigLink.write`); with ``drop_streams`` also drop any record
        left over from an earlier run."""
        link = self.link
        link.write(Reg.CLEAR, 1)
        if drop_streams:
            link.poll()
            for t in PacketType.LATENCY, PacketType.EVENT, PacketType.TRUTH:
                link.take(t)
            link.clear_counters(from_pulse_0=True)

    def enable_streams(self, raw_events=False, truth=False):
        """Send latency records (and raw edge events, model truth) as they happen."""
        streams = StreamEnable.LATENCY
        if raw_events:
            streams |= StreamEnable.EVENTS
        if truth:
            streams |= StreamEnable.TRUTH
        self.link.write(Reg.STREAM_EN, streams)

    def disable_streams(self):
        """Stop sending records (those already sent still arrive)."""
        self.link.write(Reg.STREAM_EN, 0)

    def record_edges(self, edge_en):
        """Which input edges raw events are recorded for from now (``EDGE_EN``,
        docs/protocol.md); 0 ends them."""
        self.link.write(Reg.EDGE_EN, edge_en)

    def start_statistics(self):
        """Start accumulating on-chip statistics once the histogram clear is done."""
        self.link.write(Reg.STAT_CTRL, 1)
        for _ in range(100):
            if not self.link.read1(Reg.STAT_STATUS) & 1:
                return
        raise LinkError("the statistics histogram clear never finished")

    def stop_statistics(self):
        """Freeze the on-chip statistics (``STAT_CTRL`` = 0; the matchers stop with
        them): what is read from now is one consistent snapshot."""
        self.link.write(Reg.STAT_CTRL, 0)

    # running ---------------------------------------------------------------------
    def run(self, stim1=False):
        """Start the pulse train (with STIM1 at its offset); returns :attr:`last_start`.

        The run is armed to start at a rig time chosen ahead (at least
        :data:`ARM_MIN_S` on, on a multiple of :data:`ARM_ALIGN_TICKS`), not when the
        write lands: the first run after :meth:`configure_target` chose the model or
        the SoC restarts it (held in reset until that time; the SoC's first pulse
        :data:`SOC_LEAD_S` later), so the run's records depend on its settings alone,
        however fast the host is (docs/protocol.md, "Armed runs"). Returns once the
        run has started. A rig without armed runs (``CAPS.ARMED``: the iCEBreaker's,
        which has no internal target) starts it when the write lands and returns
        None."""
        if not self.has_caps(Caps.ARMED):
            self._restart = False
            self.link.write(Reg.STIM_CTRL, StimCtrl.RUN | (StimCtrl.STIM1_EN if stim1 else 0))
            self.last_start = None
            return None
        ctrl = StimCtrl.RUN | StimCtrl.AT | (StimCtrl.STIM1_EN if stim1 else 0)
        restart, self._restart = self._restart, False
        lead = self._lead if restart else 0
        ctrl |= StimCtrl.RESTART if restart else 0
        margin = None
        for _ in range(8):
            t0 = self.link.time()
            t1 = self.link.time()
            margin = max(round(ARM_MIN_S * self.tick_hz), 16 * (t1 - t0), 2 * (margin or 0))
            at = -(-(t1 + margin) // ARM_ALIGN_TICKS) * ARM_ALIGN_TICKS
            self.link.configure(RUN_AT_LO=at & 0xFFFFFFFF, RUN_AT_HI=at >> 32,
                                STIM_LEAD=lead)
            self.link.write(Reg.STIM_CTRL, ctrl)
            self.wait_until(at + lead + 4 * self.stim_step)
            if not self.link.read1(Reg.STIM_STATUS) & StimStatus.ARMED:
                self.last_start = {"at": at, "lead": lead, "restart": restart}
                return self.last_start
            self.link.write(Reg.STIM_CTRL, 0)    # armed too late: it never starts
        raise LinkError("the rig's clock passed every start time the host armed",
                        hint="is the host so slow that the rig runs far ahead of it?")

    def halt(self):
        """Stop the pulse train (the pulses issued so far keep their windows)."""
        self.link.write(Reg.STIM_CTRL, 0)

    def running(self):
        """Is the pulse train still running?"""
        return bool(self.link.read1(Reg.STIM_STATUS) & 1)

    def pulses_issued(self):
        return self.link.read1(Reg.STIM_PULSES)

    def time(self):
        """The rig's timebase now (ticks)."""
        return self.link.time()

    @property
    def link_bytes(self):
        """Bytes the host has received from and sent to the rig since the link opened,
        framing included: ``(received, sent)``."""
        return self.link.bytes_in, self.link.bytes_out

    def wait_until(self, t_rig):
        """Wait until the rig's clock reaches ``t_rig`` ticks (the twin may run slower
        than real time, so waits are on the rig's clock, not the host's)."""
        while self.link.time() < t_rig:
            time.sleep(POLL_S)

    def wait_windows_closed(self, regs):
        """Wait until every response window of the pulses issued so far has closed and
        the rig's pipelines have drained: from now, the response timeout plus
        :data:`DRAIN_TICKS`."""
        self.wait_until(self.link.time() + regs["timeout"] + DRAIN_TICKS)

    # records ---------------------------------------------------------------------
    def receive(self, wait=0.0):
        """Take in what the rig has sent, waiting up to ``wait`` s for the first byte;
        True if anything arrived."""
        return self.link.poll(wait=wait)

    def latency_pending(self):
        """Latency records received and not yet taken."""
        return self.link.pending(PacketType.LATENCY)

    def take_latency(self):
        """The latency records received since the last take
        (:data:`rtrig.records.LATENCY_DTYPE`)."""
        return decode_latency(self.link.take(PacketType.LATENCY))

    def take_events(self):
        """The raw edge events received since the last take
        (:data:`rtrig.records.EVENT_DTYPE`)."""
        return decode_events(self.link.take(PacketType.EVENT))

    def take_truth(self):
        """The model's truth records received since the last take
        (:data:`rtrig.records.TRUTH_DTYPE`)."""
        return decode_truth(self.link.take(PacketType.TRUTH))

    def all_records_in(self, latency, events=None):
        """Has every record the rig produced reached the host or been counted lost?
        ``latency``, ``events``: the records taken so far (``events`` None: raw events
        are not recorded). The latency records missing by pulse index count as in,
        less those the rig's full FIFO dropped itself; raw events carry no index, so
        the packets lost in gaps that no record claims count as events."""
        link = self.link
        lat = latency + link.pending(PacketType.LATENCY)
        if link.missing_records:
            lat += max(link.missing_records - link.read1(Reg.LAT_OVERFLOW), 0)
        if lat < link.read1(Reg.LAT_RECORDS):
            return False
        if events is not None:
            ev = events + link.pending(PacketType.EVENT) + link.loss.lost_other
            if ev < link.read1(Reg.EVT_RECORDS):
                return False
        return True

    def latency_records(self):
        """Latency records the rig produced since the last clear (``LAT_RECORDS``;
        of an interval channel, one per start edge)."""
        return self.link.read1(Reg.LAT_RECORDS)
