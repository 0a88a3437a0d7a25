# SPDX-License-Identifier: BSD-2-Clause
"""Stimulus → response matching: one latency record per pulse and channel, in few
logic cells."""

from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, signed
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
    """The signature of a :class:`LatencyMatcher`: ``in_phase`` is the response edge's
    sample in its cycle; ``stim_phase`` (with ``start_phase``) the start edge's, for a
    matcher whose start edges come at any sample of a cycle."""
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


# State: bit 1 "the response has risen, waiting for its fall", bit 0 "a pulse waits for
# a rise" (the current one in _WAIT_RISE, a queued one in _WAIT_FALL_Q).
_IDLE, _WAIT_RISE, _WAIT_FALL, _WAIT_FALL_Q = 0b00, 0b01, 0b10, 0b11


def _late_any(v, near, lo):
    """Time-left counter ``v`` says late whatever the phase (held there: the counter
    stops)."""
    return v[33] & ~near if lo else v[33]


class LatencyMatcher(wiring.Component):
    """Matches stimulus pulses with one response channel, in few logic cells.

    Per stimulus pulse the first response rising edge after it gives ``latency``, the following falling edge ``completion``. A pulse whose response
    has not risen when the next pulse arrives (or after ``timeout`` ticks, if nonzero)
    is ``missed``; the timeout bounds the wait for the rise only. Edges in one cycle are
    ordered: response fall (belongs to the older pulse), stimulus, response rise
    (belongs to the newer pulse). A response still high when the next pulse arrives
    keeps its pulse; the new pulse waits behind it, and a pulse already waiting there
    is missed. ``clear`` or a low ``enable`` drop the pulses held (without records);
    the edges of that cycle are matched from the empty state.

    Timeout: the pulse is missed if its response rises ``timeout`` or more ticks after
    it (a rise at ``timeout - 1`` ticks still counts). The missed record is emitted in the first cycle
    after the pulse's own whose time ``t`` (or ``t + in_phase`` of a response edge in
    that cycle) is ``timeout`` or more ticks after the pulse, unless a stimulus in that
    cycle replaces the pulse (then it is missed through ``rec_b``, same contents).

    Parameters
    ----------
    channel : int
        Channel number written into the records.
    step : int
        Ticks per cycle: 1 (``t`` advances by one per cycle), 2 (DDR-sampled response:
        ticks are half clock periods, ``t`` is even and advances by two per cycle) or 4
        (the response sampled four times per clock: ``t`` is a multiple of 4 and
        advances by four per cycle). With 2 and 4, ``in_phase`` tells at which of the
        cycle's ticks a response edge happened.
    start_phase : bool
        ``step`` 2 or 4 only: the start edges (``stim_rise``) come at any tick of a
        cycle too, at ``t + stim_phase`` (an interval channel's start on a target pin).
        Held times then keep their low bits, and edges in one cycle are taken in the
        order of their ticks where it matters: a response rise at an earlier tick than
        the cycle's start edge belongs to the pulse before it (or to none), one at the
        same or a later tick to the new pulse, with latency ``in_phase - stim_phase``.
        The timeout counts from the start edge's own tick.

    Members
    -------
    enable, clear : In(1)
    stim_rise : In(1)
        A stimulus pulse rose at time ``t`` (always phase 0 with ``step`` 2 or 4,
        unless ``start_phase``).
    stim_phase : In(2)
        ``start_phase`` only: the start edge of this cycle happened at
        ``t + stim_phase``.
    in_rise, in_fall : In(1)
        The response rose / fell at time ``t + in_phase``; never both in one cycle (as
        from :class:`~rtrig.gateware.features.capture.EdgeDetector`).
    in_phase : In(2)
        The response edge of this cycle happened at ``t + in_phase`` (0 to
        ``step - 1``): ignored with ``step=1``, bit 0 only with ``step=2``, both bits
        with ``step=4``. Read only in cycles with a response edge. A fall at any phase
        in the cycle of a stimulus at ``t`` still belongs to the older pulse (an
        approximation: the stimulus is taken as coming after it); a rise at phase ``p``
        belongs to the new pulse, with latency ``p``.
    t : In(48)
        Time of this cycle, in ticks (``sync`` domain).
    pulse : In(32)
        Index of the stimulus pulse whose rising edge is flagged this cycle.
    timeout : In(32)
        In ticks; 0: none. A pulse keeps the timeout set when it arrived; whether there
        is one is read every cycle: change it
        only while ``enable`` is low.
    rec_a_valid, rec_b_valid : Out(1)
        One-cycle strobes, combinational: high in the same cycle as the edge (or the
        time) that completes the record, zero cycles after it. ``rec_a``: the current
        pulse completed (response fell) or timed out; ``rec_b``: a pulse missed
        because a stimulus replaced or displaced it. Both can be high in one cycle.
    rec_a, rec_b : Out(LatencyRecord)
        Combinational from the inputs and the held pulses; valid with their strobes
        only (a consumer registers them in that cycle, as the
        :class:`~rtrig.gateware.merge.RecordMerger` does).

    Structure (for area on an iCE40 at 48 MHz): no input register and no decision
    pipeline; the edges of a cycle are matched in that cycle. Only the state, the
    current pulse (index, time), the last stimulus pulse (index, time; the queued
    pulse when there is one) and the latency are held, with a down-counter of the time
    left before each held pulse is late. Elapsed times are one subtraction
    ``t + in_phase - cur_t`` (its low bits are the latency and the completion);
    lateness is a sign bit (a compare after the subtraction would be two carry chains
    in a row, too slow for 48 MHz on an iCE40). ``t`` must advance by ``step`` per
    cycle. A missed pulse is always the last stimulus
    pulse or the current one, so each record field has a single source.
    """

    def __init__(self, channel, step=1, start_phase=False):
        if step not in (1, 2, 4):
            raise ValueError(f"step must be 1, 2 or 4, not {step!r}")
        if start_phase and step == 1:
            raise ValueError("start phases need more than one sample per cycle (step 2 or 4)")
        self.channel = channel
        self.step = step
        self.start_phase = start_phase
        super().__init__(matcher_signature(start_phase))

    def elaborate(self, platform):
        m = Module()
        # Every stimulus time is a multiple of ``step``: the low ``lo`` bits of a held
        # time are not stored (``start_phase``: they are, ``hold`` bits in all).
        lo = self.step.bit_length() - 1
        hold = TIME_WIDTH if self.start_phase else TIME_WIDTH - lo

        stim = Signal()
        ph = Signal(lo)                 # the phase of this cycle's response edge, or 0
        m.d.comb += stim.eq(self.stim_rise & self.enable)
        if lo:
            m.d.comb += ph.eq(Mux(self.in_rise | self.in_fall, self.in_phase[:lo], 0))
        ps = None                       # the phase of this cycle's start edge
        start_t = self.t[lo:]           # the time held for a start edge of this cycle
        if self.start_phase:
            ps = Signal(lo)
            m.d.comb += ps.eq(Mux(self.stim_rise, self.stim_phase[:lo], 0))
            start_t = Cat(ps, self.t[lo:])

        # ---- held pulses: the current one, the last stimulus pulse, the latency.
        # Invariant: waiting for a rise, the current pulse is the last stimulus pulse;
        # waiting for a fall with a queued pulse, the queued one is.
        # The current pulse's time is held inverted: ``t - cur_t`` is then an addition
        # (``t + ~cur_t + 1``), whose carry chain needs no inverter per bit; the
        # inversion moves to the record (and into the consumer's holding register).
        cur_p, cur_tn = Signal(32), Signal(hold)
        nxt_p, nxt_t = Signal(32), Signal(hold)
        lat = Signal(32)

        # Elapsed ticks from the current pulse to this cycle's response edge (to ``t``
        # without one). Both times are multiples of ``step`` apart from the phase
        # (``start_phase``: a full-width subtraction).
        el = Signal(TIME_WIDTH)
        if self.start_phase:
            m.d.comb += el.eq(Cat(ph, self.t[lo:]) + cur_tn + 1)
        else:
            m.d.comb += el.eq(Cat(ph, self.t[lo:] + cur_tn + 1))

        left = self._time_left(m, lo, ph, ps)
        st, d = self._control(m, stim, left, ph, ps)

        with m.If(stim):
            m.d.sync += [nxt_p.eq(self.pulse), nxt_t.eq(start_t)]
        with m.If(d.new_cur):
            m.d.sync += [cur_p.eq(self.pulse), cur_tn.eq(~start_t)]
        with m.Elif(d.take):
            m.d.sync += [cur_p.eq(nxt_p), cur_tn.eq(~nxt_t)]
        self._count_time_left(m, lo, stim, d, left)
        # ``lat`` is 0 while the current pulse has not risen, so a missed record needs
        # no gating. A pulse arriving with its rise: latency is the edge's phase (less
        # the start's). A rise before this cycle's start edge: the current pulse's.
        with m.If(d.new_cur | d.take):
            m.d.sync += lat.eq(Mux(d.rise_ok, ph if ps is None else (ph - ps)[:lo], 0))
        with m.Elif(d.rise_ok if ps is None else d.rise_ok | d.early):
            m.d.sync += lat.eq(el[:32])

        # ---- records (fields valid with their strobes only, so the raw state is used).
        def stim_time(held):
            return Cat(Const(0, lo), held) if lo and not self.start_phase else held

        a, b = Signal(LatencyRecord), Signal(LatencyRecord)
        m.d.comb += [
            a.channel.eq(self.channel), b.channel.eq(self.channel),
            a.pulse.eq(cur_p), a.stim_t.eq(stim_time(~cur_tn)),
            a.missed.eq(~st[1]),
            a.latency.eq(lat),
            a.completion.eq(Mux(st[1], el[:32], 0)),
            b.pulse.eq(nxt_p), b.stim_t.eq(stim_time(nxt_t)),
            b.missed.eq(1),
            self.rec_a_valid.eq(d.fall_done | d.to_done), self.rec_a.eq(a),
            self.rec_b_valid.eq(d.b_valid), self.rec_b.eq(b),
        ]
        return m

    def _time_left(self, m, lo, ph, ps=None):
        """The time left before each held pulse is late, and whether a rise now is.

        For the current and the last stimulus pulse, a down-counter ``v = (pulse time +
        timeout) - t - step``, loaded with ``timeout - 2 * step`` one cycle after the
        pulse's stimulus and held once the pulse is late. A rise at ``t + ph`` is late
        when ``v + step <= ph``: always for ``v <= -step`` (:func:`_late_any`), never
        for ``v >= 0``, and in between (``near``: ``-step < v < 0``, a flip-flop
        computed a cycle ahead; never with step 1) when ``ph >= v mod step`` (the low
        bits of ``v``, which the counting keeps). So "late" comes from flip-flops, not
        from a compare after a subtraction (two carry chains in a row do not fit in a
        48 MHz cycle on an iCE40). :meth:`_count_time_left` counts them.

        With start phases (``ps``, the start edge's phase) the pulse time is ``t + ps``:
        the counters are loaded with ``timeout - 2 * step + ps``.
        """
        v_cur, v_nxt = Signal(signed(34)), Signal(signed(34))
        near_cur, near_nxt = Signal(), Signal()
        t_m = Signal(signed(34))
        tps = self.timeout              # the timeout from the start of the cycle
        if ps is not None:
            tps = Signal(33)
            m.d.comb += tps.eq(self.timeout + ps)
        m.d.comb += t_m.eq(tps - 2 * self.step)

        # A counter loaded with ``timeout - 2 * step``: step < timeout < 2 * step.
        fresh_near = 0
        if lo:
            fresh_near = (tps[lo + 1:] == 0) & tps[lo] & (tps[:lo] != 0)

        t_hi_zero, t_nz, late, late_new = (Signal() for _ in range(4))
        t_small = Signal(lo)            # the timeout if below ``step``, else 0
        if lo:
            late_edge = _late_any(v_cur, near_cur, lo) | (near_cur & (ph >= v_cur[:lo]))
        else:
            late_edge = v_cur[33]
        # The timeout's flags registered (it changes only while stopped): a 31-bit zero
        # test is four LUT levels, too many in front of the matching.
        m.d.comb += t_hi_zero.eq(self.timeout[lo:] == 0)
        m.d.sync += t_nz.eq(~t_hi_zero | (self.timeout[:lo] != 0))
        if lo:
            m.d.sync += t_small.eq(Mux(t_hi_zero, self.timeout[:lo], 0))
        m.d.comb += [
            # A rise now would be at least ``timeout`` ticks after the current pulse.
            late.eq(t_nz & late_edge),
            # The same for a pulse arriving in this cycle (a rise ``in_phase`` after it:
            # only a timeout below ``step`` can be reached).
            late_new.eq(0 if not lo else
                        (t_small != 0) & (ph >= t_small) if ps is None else
                        (t_small != 0) & (ph >= ps) & ((ph - ps)[:lo] >= t_small)),
        ]
        return SimpleNamespace(v_cur=v_cur, v_nxt=v_nxt, near_cur=near_cur,
                               near_nxt=near_nxt, t_m=t_m, fresh_near=fresh_near,
                               late=late, late_new=late_new)

    def _count_time_left(self, m, lo, stim, d, left):
        """Steps the time-left counters of :meth:`_time_left` (``d``: the decisions of
        :meth:`_control`)."""
        step = self.step

        def dec(v, near):
            return Mux(_late_any(v, near, lo), v, v - step)

        def near_after_dec(v):
            # 0 < v < step (a held counter is negative).
            return (v[lo:] == 0) & (v[:lo] != 0) if lo else 0

        v_cur, v_nxt, near_cur, near_nxt = left.v_cur, left.v_nxt, left.near_cur, left.near_nxt
        with m.If(d.new_cur):
            m.d.sync += [v_cur.eq(left.t_m), near_cur.eq(left.fresh_near)]
        with m.Elif(d.take):
            m.d.sync += [v_cur.eq(dec(v_nxt, near_nxt)), near_cur.eq(near_after_dec(v_nxt))]
        with m.Else():
            m.d.sync += [v_cur.eq(dec(v_cur, near_cur)), near_cur.eq(near_after_dec(v_cur))]
        with m.If(stim):
            m.d.sync += [v_nxt.eq(left.t_m), near_nxt.eq(left.fresh_near)]
        with m.Else():
            m.d.sync += [v_nxt.eq(dec(v_nxt, near_nxt)), near_nxt.eq(near_after_dec(v_nxt))]

    def _control(self, m, stim, left, ph=None, ps=None):
        """The state as seen by this cycle's edges (empty after a clear), its next value,
        and this cycle's decisions. With start phases (``ps``), a rise at an earlier
        phase than this cycle's start edge comes before it (``early``: the current
        pulse's rise, when it waits for one and is not late)."""
        st = Signal(2)
        is_wr, is_wf, queued = Signal(), Signal(), Signal()
        m.d.comb += [
            is_wr.eq((st == _WAIT_RISE) & self.enable & ~self.clear),
            is_wf.eq(st[1] & self.enable & ~self.clear),
            queued.eq((st == _WAIT_FALL_Q) & self.enable & ~self.clear),
        ]
        # Step 1: the response falls (or the wait for the rise times out); a queued
        # pulse becomes the current one (``take``).
        fall_done, to_done, take = Signal(), Signal(), Signal()
        m.d.comb += [
            fall_done.eq(is_wf & self.in_fall),
            to_done.eq(is_wr & ~stim & left.late),
            take.eq(queued & self.in_fall),
        ]
        s1_wr, s1_wf, s1_q = Signal(), Signal(), Signal()
        before = early = 0
        if ps is not None:
            # A rise before the start edge: it belongs to the current pulse (or none).
            before, early = Signal(), Signal()
            m.d.comb += [before.eq(stim & self.in_rise & (ph < ps)),
                         early.eq(before & is_wr & ~left.late)]
        if ps is None:
            m.d.comb += [
                s1_wr.eq(take | (is_wr & ~to_done)),
                s1_wf.eq(is_wf & ~self.in_fall),
            ]
        else:
            m.d.comb += [
                s1_wr.eq(take | (is_wr & ~to_done & ~early)),
                s1_wf.eq((is_wf & ~self.in_fall) | early),
            ]
        m.d.comb += s1_q.eq(queued & ~self.in_fall)
        # Step 2: a stimulus pulse arrives. Waiting for a rise: the waiting pulse is
        # missed, the new one replaces it; waiting for a fall: the new one is queued (a
        # queued one already there is missed); idle: the new one becomes current.
        new_cur, b_valid, s2_wr = Signal(), Signal(), Signal()
        m.d.comb += [
            new_cur.eq(stim & ~s1_wf),
            b_valid.eq(stim & (s1_wr | s1_q)),
            s2_wr.eq(s1_wr | new_cur),
        ]
        # Step 3: the response rises; latency = rise time - current pulse's time.
        rise_ok = Signal()
        rise = self.in_rise if ps is None else self.in_rise & ~before
        m.d.comb += rise_ok.eq(s2_wr & rise & ~(new_cur & left.late_new))

        with m.If(rise_ok | s1_wf):
            m.d.sync += st.eq(Cat(s1_q | (s1_wf & stim), 1))
        with m.Elif(s2_wr):
            m.d.sync += st.eq(_WAIT_RISE)
        with m.Else():
            m.d.sync += st.eq(_IDLE)
        return st, SimpleNamespace(fall_done=fall_done, to_done=to_done, take=take,
                                   new_cur=new_cur, b_valid=b_valid, rise_ok=rise_ok,
                                   early=early)
