"""Stimulus → response matching: one latency record per pulse and channel."""

from amaranth import Module, Mux, Signal
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
        One-cycle strobes; up to two records can complete in one cycle. The inputs
        (edge strobes, ``t``, ``pulse``, ``enable``) and the records are registered:
        a record appears two cycles after the edge that completes it (its figures are
        pin times and differences of pin times, so the delay changes none of them).
    rec_a, rec_b : Out(LatencyRecord)

    ``t`` must advance by one per cycle (the :class:`EdgeDetector`'s does): the elapsed
    times ``t - stim_t`` are kept as counters rather than computed by 48-bit
    subtractions, and the timeout compare is registered one cycle ahead. ``timeout``
    takes effect two cycles after it changes (the host writes it while stopped).
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
        # el_cur = t - cur_t and el_nxt = t - nxt_t (mod 2**48), kept as counters.
        el_cur, el_nxt = Signal(TIME_WIDTH), Signal(TIME_WIDTH)
        inc_cur, inc_nxt = Signal(TIME_WIDTH), Signal(TIME_WIDTH)
        m.d.comb += [inc_cur.eq(el_cur + 1), inc_nxt.eq(el_nxt + 1)]

        # Timeout, registered one cycle ahead: to_cur == (el_cur >= timeout).
        t_nz, t_le1, t_m1 = Signal(), Signal(), Signal(32)
        m.d.sync += [t_nz.eq(self.timeout != 0), t_le1.eq(self.timeout <= 1),
                     t_m1.eq(self.timeout - 1)]
        ge_cur, ge_nxt = Signal(), Signal()     # el + 1 >= timeout (for timeout >= 1)
        m.d.comb += [ge_cur.eq((el_cur[32:] != 0) | (el_cur[:32] >= t_m1)),
                     ge_nxt.eq((el_nxt[32:] != 0) | (el_nxt[:32] >= t_m1))]
        to_cur = Signal()

        # Input register (the edge strobes, their time and pulse index move together).
        stim, in_rise, in_fall = Signal(), Signal(), Signal()
        t_in, pulse_in = Signal(TIME_WIDTH), Signal(32)
        m.d.sync += [stim.eq(self.stim_rise & self.enable), in_rise.eq(self.in_rise),
                     in_fall.eq(self.in_fall), t_in.eq(self.t), pulse_in.eq(self.pulse)]
        timed_out = Signal()
        m.d.comb += timed_out.eq(t_nz & to_cur)

        rec_a_valid, rec_b_valid = Signal(), Signal()
        a, b = Signal(LatencyRecord), Signal(LatencyRecord)
        m.d.sync += [self.rec_a_valid.eq(rec_a_valid), self.rec_a.eq(a),
                     self.rec_b_valid.eq(rec_b_valid), self.rec_b.eq(b)]
        for rec in (a, b):
            m.d.comb += rec.channel.eq(self.channel)

        # The three steps of a cycle (below) written out as flat conditions, so the
        # next state is a few LUT levels from the registers.
        is_idle, is_wr, is_wf = Signal(), Signal(), Signal()
        m.d.comb += [is_idle.eq(st == _IDLE), is_wr.eq(st == _WAIT_RISE),
                     is_wf.eq(st == _WAIT_FALL)]

        # Step 1: the response falls (or the window times out); a queued pulse, if
        # any, becomes the current one (``take``).
        fall_done, to_done, step1, take = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            fall_done.eq(is_wf & in_fall),
            to_done.eq(timed_out & ~stim & is_wr),
            step1.eq(fall_done | to_done),
            take.eq(step1 & nxt_v),
        ]
        s1_wr, s1_wf, s1_idle, n1v = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            s1_wr.eq(take | (~step1 & is_wr)),
            s1_wf.eq(~step1 & is_wf),
            s1_idle.eq((step1 & ~nxt_v) | (~step1 & is_idle)),
            n1v.eq(nxt_v & ~step1),
        ]
        m.d.comb += [
            rec_a_valid.eq(step1),
            a.pulse.eq(cur_p), a.stim_t.eq(cur_t),
            a.missed.eq(~fall_done),
            a.latency.eq(Mux(fall_done, lat, 0)),
            a.completion.eq(Mux(fall_done, el_cur[:32], 0)),
        ]

        # Step 2: a stimulus pulse arrives. Waiting for a rise: the old pulse is missed
        # and the new one replaces it; waiting for a fall: the new one is queued (a
        # queued one already there is missed); idle: the new one becomes current.
        new_cur, new_nxt = Signal(), Signal()
        m.d.comb += [new_cur.eq(stim & ~s1_wf), new_nxt.eq(stim & s1_wf)]
        m.d.comb += [
            rec_b_valid.eq(stim & (s1_wr | (s1_wf & nxt_v))),
            b.missed.eq(1),
            b.pulse.eq(Mux(take | s1_wf, nxt_p, cur_p)),
            b.stim_t.eq(Mux(take | s1_wf, nxt_t, cur_t)),
        ]
        s2_wr = Signal()
        m.d.comb += s2_wr.eq(s1_wr | (stim & s1_idle))

        # Step 3: the response rises; latency = t - (current pulse's time).
        rise_ok = Signal()
        m.d.comb += rise_ok.eq(s2_wr & in_rise)

        # Next state.
        with m.If(rise_ok | s1_wf):
            m.d.sync += st.eq(_WAIT_FALL)
        with m.Elif(s2_wr):
            m.d.sync += st.eq(_WAIT_RISE)
        with m.Else():
            m.d.sync += st.eq(_IDLE)
        with m.If(new_cur):
            m.d.sync += [cur_p.eq(pulse_in), cur_t.eq(t_in), el_cur.eq(1), to_cur.eq(t_le1)]
        with m.Elif(take):
            m.d.sync += [cur_p.eq(nxt_p), cur_t.eq(nxt_t), el_cur.eq(inc_nxt),
                         to_cur.eq(ge_nxt)]
        with m.Else():
            m.d.sync += [el_cur.eq(inc_cur), to_cur.eq(ge_cur)]
        with m.If(rise_ok):
            with m.If(new_cur):
                m.d.sync += lat.eq(0)
            with m.Elif(take):
                m.d.sync += lat.eq(el_nxt)
            with m.Else():
                m.d.sync += lat.eq(el_cur)
        m.d.sync += nxt_v.eq(n1v | new_nxt)
        with m.If(new_nxt):
            m.d.sync += [nxt_p.eq(pulse_in), nxt_t.eq(t_in), el_nxt.eq(1)]
        with m.Else():
            m.d.sync += el_nxt.eq(inc_nxt)
        with m.If(self.clear | ~self.enable):
            m.d.sync += [st.eq(_IDLE), nxt_v.eq(0)]
        return m
