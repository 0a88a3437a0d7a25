"""Stimulus → response matching: one latency record per pulse and channel."""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .timebase import TIME_WIDTH

__all__ = ["LatencyRecord", "LatencyMatcher"]


class LatencyRecord(data.Struct):
    """Wire layout of a LATENCY packet payload (19 bytes, little-endian fields).

    ``latency`` is response rise minus stimulus rise, ``completion`` response fall
    minus stimulus rise, in ticks; both 0 when ``missed``.
    """
    pulse: 32
    stim_t: TIME_WIDTH
    channel: 4
    _pad: 2
    incomplete: 1
    missed: 1
    latency: 32
    completion: 32


_IDLE, _WAIT_RISE, _WAIT_FALL = 0, 1, 2


class LatencyMatcher(wiring.Component):
    """Matches stimulus pulses with one response channel.

    All inputs are the aligned edge strobes of :class:`EdgeDetector` (so one cycle
    carries edges with one pin time ``t``). Per stimulus pulse the first response
    rising edge after it gives ``latency``; the following falling edge gives
    ``completion``. A pulse whose response has not risen when the next pulse arrives
    (or ``timeout`` ticks have passed, if nonzero) is ``missed``; the timeout bounds the
    wait for the rise only (a completion may be longer than a stimulus period). Edges with equal
    time are ordered: response fall (belongs to the older pulse), stimulus, response
    rise (belongs to the newer pulse). A response still high when the next pulse
    arrives keeps its pulse; the new pulse waits behind it.

    Members
    -------
    channel : int
        Channel number written into the records.
    enable, clear : In(1)
    stim_rise, in_rise, in_fall : In(1)
    t : In(48)
        Pin time of this cycle's edges.
    pulse : In(32)
        Index of the stimulus pulse whose rising edge is flagged this cycle.
    timeout : In(32)
    rec_a_valid, rec_b_valid : Out(1)
        One-cycle strobes; up to two records can complete in one cycle.
    rec_a, rec_b : Out(LatencyRecord)
    """

    def __init__(self, channel):
        self.channel = channel
        super().__init__({
            "enable": In(1), "clear": In(1),
            "stim_rise": In(1), "in_rise": In(1), "in_fall": In(1),
            "t": In(TIME_WIDTH), "pulse": In(32), "timeout": In(32),
            "rec_a_valid": Out(1), "rec_a": Out(LatencyRecord),
            "rec_b_valid": Out(1), "rec_b": Out(LatencyRecord),
        })

    def elaborate(self, platform):
        m = Module()
        st = Signal(2)
        cur_p, cur_t, lat = Signal(32), Signal(TIME_WIDTH), Signal(32)
        nxt_v, nxt_p, nxt_t = Signal(), Signal(32), Signal(TIME_WIDTH)

        stim = Signal()
        m.d.comb += stim.eq(self.stim_rise & self.enable)
        elapsed = Signal(TIME_WIDTH)
        m.d.comb += elapsed.eq(self.t - cur_t)
        timed_out = Signal()
        m.d.comb += timed_out.eq((self.timeout != 0) & (elapsed >= self.timeout))

        for rec in (self.rec_a, self.rec_b):
            m.d.comb += rec.channel.eq(self.channel)

        # Step 1: the response falls (or the window times out).
        s1, p1, t1, n1v = Signal(2), Signal(32), Signal(TIME_WIDTH), Signal()
        m.d.comb += [s1.eq(st), p1.eq(cur_p), t1.eq(cur_t), n1v.eq(nxt_v)]

        def take_next():
            with m.If(nxt_v):
                m.d.comb += [s1.eq(_WAIT_RISE), p1.eq(nxt_p), t1.eq(nxt_t), n1v.eq(0)]
            with m.Else():
                m.d.comb += s1.eq(_IDLE)

        a = self.rec_a
        m.d.comb += [a.pulse.eq(cur_p), a.stim_t.eq(cur_t)]
        with m.If((st == _WAIT_FALL) & self.in_fall):
            m.d.comb += [self.rec_a_valid.eq(1), a.latency.eq(lat), a.completion.eq(elapsed)]
            take_next()
        with m.Elif(timed_out & ~stim & (st == _WAIT_RISE)):
            m.d.comb += [self.rec_a_valid.eq(1), a.missed.eq(1)]
            take_next()

        # Step 2: a stimulus pulse arrives.
        s2, p2, t2 = Signal(2), Signal(32), Signal(TIME_WIDTH)
        n2v, n2p, n2t = Signal(), Signal(32), Signal(TIME_WIDTH)
        m.d.comb += [s2.eq(s1), p2.eq(p1), t2.eq(t1), n2v.eq(n1v), n2p.eq(nxt_p), n2t.eq(nxt_t)]
        b = self.rec_b
        m.d.comb += b.missed.eq(1)
        with m.If(stim):
            with m.Switch(s1):
                with m.Case(_WAIT_RISE):
                    m.d.comb += [self.rec_b_valid.eq(1), b.pulse.eq(p1), b.stim_t.eq(t1)]
                    m.d.comb += [p2.eq(self.pulse), t2.eq(self.t)]
                with m.Case(_WAIT_FALL):
                    with m.If(n1v):
                        m.d.comb += [self.rec_b_valid.eq(1), b.pulse.eq(nxt_p), b.stim_t.eq(nxt_t)]
                    m.d.comb += [n2v.eq(1), n2p.eq(self.pulse), n2t.eq(self.t)]
                with m.Default():
                    m.d.comb += [s2.eq(_WAIT_RISE), p2.eq(self.pulse), t2.eq(self.t)]

        # Step 3: the response rises.
        s3 = Signal(2)
        m.d.comb += s3.eq(s2)
        with m.If((s2 == _WAIT_RISE) & self.in_rise):
            m.d.comb += s3.eq(_WAIT_FALL)
            m.d.sync += lat.eq(self.t - t2)

        m.d.sync += [st.eq(s3), cur_p.eq(p2), cur_t.eq(t2),
                     nxt_v.eq(n2v), nxt_p.eq(n2p), nxt_t.eq(n2t)]
        with m.If(self.clear | ~self.enable):
            m.d.sync += [st.eq(_IDLE), nxt_v.eq(0)]
        return m
