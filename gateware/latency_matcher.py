# SPDX-License-Identifier: BSD-2-Clause
"""Stimulus → response matching: one latency record per pulse and channel."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..records import LATENCY
from .timebase import TIME_WIDTH

__all__ = ["LatencyRecord", "LatencyMatcher", "matcher_signature"]


#: The LATENCY record, declared in :data:`rtrig.records.LATENCY` (19 bytes on the
#: wire): ``latency`` is response rise minus stimulus rise, ``completion`` response
#: fall minus stimulus rise, in ticks; both 0 when ``missed``.
LatencyRecord = LATENCY.struct()




def matcher_signature(start_phase=False):
    """The signature of every latency matcher (this one and
    :class:`~rtrig.gateware.latency_matcher_lean.LeanLatencyMatcher`): a rig picks
    either by configuration and connects them alike. ``in_phase`` is used by the lean
    matcher's multi-sample capture only; ``stim_phase`` (with ``start_phase``) by a
    lean matcher whose start edges come at any sample of a cycle."""
    members = {
        "enable": In(1), "clear": In(1),
        "stim_rise": In(1), "in_rise": In(1), "in_fall": In(1), "in_phase": In(2),
        "t": In(TIME_WIDTH), "pulse": In(32), "timeout": In(32),
        "rec_a_valid": Out(1), "rec_a": Out(LatencyRecord),
        "rec_b_valid": Out(1), "rec_b": Out(LatencyRecord),
    }
    if start_phase:
        members["stim_phase"] = In(2)
    return wiring.Signature(members)


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

    All ports are in the ``sync`` domain.

    Parameters
    ----------
    channel : int
        Channel number written into the records.
    out_reg : bool
        Register the records (default). Without, ``rec_a``/``rec_b`` come
        combinationally from the data part and the registered decisions (about 300
        flip-flops fewer; for a consumer that registers them, such as the
        :class:`~rtrig.gateware.merge.RecordMerger`).

    Members
    -------
    enable, clear : In(1)
    stim_rise, in_rise, in_fall : In(1)
    t : In(48)
        Pin time of this cycle's edges.
    pulse : In(32)
        Index of the stimulus pulse whose rising edge is flagged this cycle.
    timeout : In(32)
    in_phase : In(2)
        Not used (one sample per cycle): the signature is :func:`matcher_signature`.
    rec_a_valid, rec_b_valid : Out(1)
        One-cycle strobes; up to two records can complete in one cycle. A record
        appears three cycles after the edge that completes it (two with
        ``out_reg=False``; its figures are pin times and differences of pin times, so
        the delay changes none of them).
    rec_a, rec_b : Out(LatencyRecord)
        Valid with their strobes only (a consumer takes them in that cycle).

    ``t`` must advance by one per cycle (the :class:`EdgeDetector`'s does): the elapsed
    times ``t - stim_t`` are kept as counters rather than computed by 48-bit
    subtractions. A pulse keeps the ``timeout`` set when it arrived (the host writes it
    while stopped).

    Structure (for timing at 100 MHz): the inputs are registered; a narrow control
    part (state, queued flag, timeout flag) decides each cycle what happens; its
    decisions are registered and applied one cycle later to the wide data part
    (pulse indices, times, elapsed-time counters, latency), so the decisions' large
    fan-out starts at flip-flops. The timeout flag, which needs the data part's
    current elapsed time, computes it from the lagging registers and the pending
    decisions.
    """

    def __init__(self, channel, out_reg=True):
        self.channel = channel
        self.out_reg = out_reg
        super().__init__(matcher_signature())

    def elaborate(self, platform):
        m = Module()

        # ---- input register (edge strobes, their time and pulse index move together)
        stim, in_rise, in_fall = Signal(), Signal(), Signal()
        t_in, pulse_in = Signal(TIME_WIDTH), Signal(32)
        m.d.sync += [stim.eq(self.stim_rise & self.enable), in_rise.eq(self.in_rise),
                     in_fall.eq(self.in_fall), t_in.eq(self.t), pulse_in.eq(self.pulse)]

        # Timeout thresholds, registered: "1 >= timeout", "2 >= timeout", timeout - 4.
        t_nz, t_le1, t_le2, t_m4 = Signal(), Signal(), Signal(), Signal(signed(34))
        m.d.sync += [t_nz.eq(self.timeout != 0), t_le1.eq(self.timeout <= 1),
                     t_le2.eq(self.timeout <= 2), t_m4.eq(self.timeout - 4)]

        ctl = self._control(m, stim, in_rise, in_fall, t_nz)
        q = self._decisions(m, ctl, pulse_in, t_in)
        data = self._data(m, q, t_m4)
        self._timeout_flag(m, ctl, q, data, t_le1, t_le2)
        self._records(m, q, data)
        return m

    def _control(self, m, stim, in_rise, in_fall, t_nz):
        """The control part: state, queued flag, timeout flag (``to_cur`` is
        ``el_cur >= timeout``), and this cycle's decisions."""
        st, nxt_v, to_cur = Signal(2), Signal(), Signal()
        is_idle, is_wr, is_wf = Signal(), Signal(), Signal()
        m.d.comb += [is_idle.eq(st == _IDLE), is_wr.eq(st == _WAIT_RISE),
                     is_wf.eq(st == _WAIT_FALL)]

        # Step 1: the response falls (or the window times out); a queued pulse, if
        # any, becomes the current one (``take``).
        fall_done, to_done, step1, take = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            fall_done.eq(is_wf & in_fall),
            to_done.eq(t_nz & to_cur & ~stim & is_wr),
            step1.eq(fall_done | to_done),
            take.eq(step1 & nxt_v),
        ]
        s1_wr, s1_wf, s1_idle = Signal(), Signal(), Signal()
        m.d.comb += [
            s1_wr.eq(take | (~step1 & is_wr)),
            s1_wf.eq(~step1 & is_wf),
            s1_idle.eq((step1 & ~nxt_v) | (~step1 & is_idle)),
        ]
        # Step 2: a stimulus pulse arrives. Waiting for a rise: the old pulse is missed
        # and the new one replaces it; waiting for a fall: the new one is queued (a
        # queued one already there is missed); idle: the new one becomes current.
        new_cur, new_nxt, b_valid, s2_wr = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            new_cur.eq(stim & ~s1_wf),
            new_nxt.eq(stim & s1_wf),
            b_valid.eq(stim & (s1_wr | (s1_wf & nxt_v))),
            s2_wr.eq(s1_wr | (stim & s1_idle)),
        ]
        # Step 3: the response rises; latency = t - (current pulse's time).
        rise_ok = Signal()
        m.d.comb += rise_ok.eq(s2_wr & in_rise)

        with m.If(self.clear | ~self.enable):
            m.d.sync += [st.eq(_IDLE), nxt_v.eq(0)]
        with m.Else():
            with m.If(rise_ok | s1_wf):
                m.d.sync += st.eq(_WAIT_FALL)
            with m.Elif(s2_wr):
                m.d.sync += st.eq(_WAIT_RISE)
            with m.Else():
                m.d.sync += st.eq(_IDLE)
            m.d.sync += nxt_v.eq((nxt_v & ~step1) | new_nxt)
        return SimpleNamespace(to_cur=to_cur, new_cur=new_cur, new_nxt=new_nxt, take=take,
                               rise_ok=rise_ok, step1=step1, fall_done=fall_done,
                               b_valid=b_valid, s1_wf=s1_wf)

    def _decisions(self, m, ctl, pulse_in, t_in):
        """The control part's decisions, registered for the data part."""
        q_new_cur, q_take, q_new_nxt, q_rise = Signal(), Signal(), Signal(), Signal()
        q_a, q_fall_done, q_b, q_b_nxt = Signal(), Signal(), Signal(), Signal()
        q_pulse, q_t = Signal(32), Signal(TIME_WIDTH)
        m.d.sync += [
            q_new_cur.eq(ctl.new_cur), q_take.eq(ctl.take), q_new_nxt.eq(ctl.new_nxt),
            q_rise.eq(ctl.rise_ok),
            q_a.eq(ctl.step1), q_fall_done.eq(ctl.fall_done),
            q_b.eq(ctl.b_valid), q_b_nxt.eq(ctl.take | ctl.s1_wf),
            q_pulse.eq(pulse_in), q_t.eq(t_in),
        ]
        return SimpleNamespace(new_cur=q_new_cur, take=q_take, new_nxt=q_new_nxt, rise=q_rise,
                               a=q_a, fall_done=q_fall_done, b=q_b, b_nxt=q_b_nxt,
                               pulse=q_pulse, t=q_t)

    def _data(self, m, q, t_m4):
        """The data part, one cycle behind the control part: the current and the next
        pulse (index, time, elapsed-time and time-left counters) and the latency."""
        # el_cur = t - cur_t and el_nxt = t - nxt_t as counters, 32 bits plus a sticky
        # overflow bit (only the low 32 bits and "at least 2**32" are ever used).
        cur_p, cur_t, lat = Signal(32), Signal(TIME_WIDTH), Signal(32)
        nxt_p, nxt_t = Signal(32), Signal(TIME_WIDTH)
        el_cur, el_nxt = Signal(33), Signal(33)
        inc_cur, inc_nxt = Signal(33), Signal(33)
        for el, inc in ((el_cur, inc_cur), (el_nxt, inc_nxt)):
            s = Signal(33)
            m.d.comb += [s.eq(el[:32] + 1), inc.eq(Cat(s[:32], s[32] | el[32]))]
        # Beside each el, rem = timeout - 3 - el, counting down and held once negative:
        # "el + 2 >= timeout" is its sign bit (no compare on the timeout path). A
        # pulse's timeout is the one set when it arrived.
        rem_cur, rem_nxt = Signal(signed(34)), Signal(signed(34))
        dec_cur, dec_nxt = Signal(signed(34)), Signal(signed(34))
        m.d.comb += [dec_cur.eq(Mux(rem_cur[33], rem_cur, rem_cur - 1)),
                     dec_nxt.eq(Mux(rem_nxt[33], rem_nxt, rem_nxt - 1))]
        with m.If(q.new_cur):
            m.d.sync += [cur_p.eq(q.pulse), cur_t.eq(q.t), el_cur.eq(1), rem_cur.eq(t_m4)]
        with m.Elif(q.take):
            m.d.sync += [cur_p.eq(nxt_p), cur_t.eq(nxt_t), el_cur.eq(inc_nxt),
                         rem_cur.eq(dec_nxt)]
        with m.Else():
            m.d.sync += [el_cur.eq(inc_cur), rem_cur.eq(dec_cur)]
        with m.If(q.rise):
            with m.If(q.new_cur):
                m.d.sync += lat.eq(0)
            with m.Elif(q.take):
                m.d.sync += lat.eq(el_nxt[:32])
            with m.Else():
                m.d.sync += lat.eq(el_cur[:32])
        with m.If(q.new_nxt):
            m.d.sync += [nxt_p.eq(q.pulse), nxt_t.eq(q.t), el_nxt.eq(1), rem_nxt.eq(t_m4)]
        with m.Else():
            m.d.sync += [el_nxt.eq(inc_nxt), rem_nxt.eq(dec_nxt)]
        return SimpleNamespace(cur_p=cur_p, cur_t=cur_t, lat=lat, nxt_p=nxt_p, nxt_t=nxt_t,
                               el_cur=el_cur, rem_cur=rem_cur, rem_nxt=rem_nxt)

    def _timeout_flag(self, m, ctl, q, data, t_le1, t_le2):
        """The timeout flag of the next cycle. The control part's "current" el values
        are the data part's after the pending decisions: el + 1 for a kept pulse, 1
        for a new one; so "current el + 1 >= timeout" is "lagging el + 2 >= timeout"
        or "2 >= timeout"."""
        gx_cur, gx_nxt, ge_cur, ge_nxt = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            gx_cur.eq(data.rem_cur[33]),
            gx_nxt.eq(data.rem_nxt[33]),
            ge_cur.eq(Mux(q.new_cur, t_le2, Mux(q.take, gx_nxt, gx_cur))),
            ge_nxt.eq(Mux(q.new_nxt, t_le2, gx_nxt)),
        ]
        m.d.sync += ctl.to_cur.eq(Mux(ctl.new_cur, t_le1, Mux(ctl.take, ge_nxt, ge_cur)))

    def _records(self, m, q, data):
        """The records, from the data part and the registered decisions."""
        a, b = Signal(LatencyRecord), Signal(LatencyRecord)
        m.d.comb += [
            a.channel.eq(self.channel), b.channel.eq(self.channel),
            a.pulse.eq(data.cur_p), a.stim_t.eq(data.cur_t),
            a.missed.eq(~q.fall_done),
            a.latency.eq(Mux(q.fall_done, data.lat, 0)),
            a.completion.eq(Mux(q.fall_done, data.el_cur[:32], 0)),
            b.missed.eq(1),
            b.pulse.eq(Mux(q.b_nxt, data.nxt_p, data.cur_p)),
            b.stim_t.eq(Mux(q.b_nxt, data.nxt_t, data.cur_t)),
        ]
        out = m.d.sync if self.out_reg else m.d.comb
        out += [self.rec_a_valid.eq(q.a), self.rec_a.eq(a),
                self.rec_b_valid.eq(q.b), self.rec_b.eq(b)]
