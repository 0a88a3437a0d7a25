"""Model target: a CPU-like device under test emulated in gateware.

One CPU runs, in priority order: interrupt work (the ISR of the ``irq`` pin and the
kernel tick), then two equal-priority threads (APP, woken by the ISR through an
auto-reset event, and LOAD, round-robin with a quantum). Its true per-pulse latencies
are known and streamed out, so simulation tests can compare the rig's measurements
with the truth sample by sample. The exact tick-level semantics are in
``docs/model.md``; ``rtrig.host.model_ref`` reproduces them cycle for cycle.
"""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["TruthRecord", "TruthChannel", "ModelTarget", "PARAM_SETTLE"]

#: Cycles the parameters (and ``seed``) must be stable before ``reset`` is released.
PARAM_SETTLE = 4


class TruthChannel:
    """Values of :attr:`TruthRecord.channel`."""

    ISR = 0
    APP = 1


class TruthRecord(data.Struct):
    """The true outcome of one stimulus pulse on one response channel.

    ``latency`` / ``completion`` are ticks from the irq rising edge to the response
    pin's rising / falling edge (both 0 when ``missed``).
    """

    pulse: unsigned(32)
    channel: unsigned(2)
    missed: unsigned(1)
    latency: unsigned(32)
    completion: unsigned(32)


# interrupt-level activity (register ``kind``)
_NONE, _ISR_ENTRY, _ISR_SERVICE, _TICK = 0, 1, 2, 3
# APP thread phase
_APP_IDLE, _APP_WAKE, _APP_SERVICE = 0, 1, 2


def _xorshift32(x):
    a = x ^ (x << 13)[:32]
    b = a ^ (a >> 17)
    return b ^ (b << 5)[:32]


class ModelTarget(wiring.Component):
    """A CPU-like DUT emulator with run-time parameters, in the ``sync`` domain.

    All durations are unsigned tick counts (1 tick = one ``sync`` cycle, 10 ns at
    100 MHz), held constant while the model runs; assert ``reset`` after changing
    them, and release it no sooner than :data:`PARAM_SETTLE` cycles after the last
    change (the parameters pass through registers and the jitter multiplier is
    pipelined; the behaviour after reset is unchanged). A duration of 0 behaves as 1, except ``isr_jitter`` (0 = no jitter) and
    ``tick_period`` (0 = no kernel tick). Sums such as ``isr_entry + isr_jitter`` must
    fit in 32 bits.

    Members
    -------
    irq : In(1)
        Interrupt request (STIM0). A rising edge (``irq`` high in a cycle, low in the
        previous one) requests the ISR. Sampled without synchroniser: drive it from a
        register of the same domain.
    load_en : In(1)
        LOAD thread runnable.
    isr_out, app_out, heartbeat : Out(1)
        Response pins, registered. ``isr_out`` is high while the ISR services,
        ``app_out`` while APP services, ``heartbeat`` toggles every
        ``heartbeat_work`` ticks of CPU given to LOAD.
    isr_entry, isr_jitter, isr_service : In(32)
        ISR entry time, added uniform jitter range 0..``isr_jitter``, service time.
    app_wake, app_service : In(32)
        APP CPU time from getting the CPU to raising ``app_out``; service time.
    load_quantum, heartbeat_work : In(32)
        LOAD round-robin quantum (CPU ticks); LOAD work per heartbeat toggle.
    tick_period, tick_service : In(32)
        Kernel tick period (0 = none) and its CPU cost.
    app_enable : In(1)
        The ISR signals the APP event (else APP never runs and no APP records).
    seed : In(32)
        Jitter generator seed (xorshift32), loaded by ``reset``; nonzero.
    reset : In(1)
        Synchronous soft reset of all model state; cycle 0 is the first cycle after
        the one in which ``reset`` is high.
    truth : Out(stream.Signature(TruthRecord))
        One ISR record per irq pulse and, with ``app_enable``, one APP record per
        pulse. Records wait in one holding slot per source (irq loss, ISR end, APP
        end); the model never stalls.
    truth_overflow : Out(32)
        Records dropped because their holding slot was still occupied (the consumer
        held ``ready`` low); counted one cycle after the drop.
    """

    irq: In(1)
    load_en: In(1)
    isr_out: Out(1)
    app_out: Out(1)
    heartbeat: Out(1)

    isr_entry: In(32)
    isr_jitter: In(32)
    isr_service: In(32)
    app_wake: In(32)
    app_service: In(32)
    load_quantum: In(32)
    heartbeat_work: In(32)
    tick_period: In(32)
    tick_service: In(32)
    app_enable: In(1)
    seed: In(32)
    reset: In(1)

    truth: Out(stream.Signature(TruthRecord))
    truth_overflow: Out(32)

    def elaborate(self, platform):
        m = Module()

        # Parameters are constant while the model runs: registered, with the derived
        # values the decisions need, so no parameter compare sits on a decision path.
        def at_least_1(name, value):
            s = Signal(32, name=name)
            m.d.sync += s.eq(Mux(value == 0, 1, value))
            return s

        isr_service = at_least_1("eff_isr_service", self.isr_service)
        app_wake = at_least_1("eff_app_wake", self.app_wake)
        app_service = at_least_1("eff_app_service", self.app_service)
        quantum = at_least_1("eff_quantum", self.load_quantum)
        hb_work = at_least_1("eff_hb_work", self.heartbeat_work)
        at_least_1("eff_tick_service", self.tick_service)
        ts_is1, ts_m1 = Signal(), Signal(32)
        # "counter == 1" is kept as a flag next to each counter (set with every load), so
        # no 32-bit compare sits on the decision paths; these are the flags' load values.
        svc_is1, wake_is1, asvc_is1, quantum_is1, hb_is1, ts_is2 = (
            Signal(name=n) for n in ("svc_is1", "wake_is1", "asvc_is1", "quantum_is1",
                                     "hb_is1", "ts_is2"))
        m.d.sync += [svc_is1.eq(self.isr_service <= 1), wake_is1.eq(self.app_wake <= 1),
                     asvc_is1.eq(self.app_service <= 1), quantum_is1.eq(self.load_quantum <= 1),
                     hb_is1.eq(self.heartbeat_work <= 1), ts_is2.eq(self.tick_service == 2)]
        tp_nz, tp_z, tp_is1, tp_m1 = Signal(), Signal(), Signal(), Signal(32)
        j1, ie = Signal(33), Signal(32)
        m.d.sync += [
            ts_is1.eq(self.tick_service <= 1), ts_m1.eq(self.tick_service - 1),
            tp_nz.eq(self.tick_period != 0), tp_z.eq(self.tick_period == 0),
            tp_is1.eq(self.tick_period == 1), tp_m1.eq(self.tick_period - 1),
            j1.eq(self.isr_jitter + 1), ie.eq(self.isr_entry),
        ]

        # --- state ---------------------------------------------------------------
        irq_prev = Signal()
        now = Signal(32)          # cycles since reset
        npulse = Signal(32)       # index of the next irq edge
        pend = Signal()           # interrupt pending latch
        pend_pulse = Signal(32)
        pend_t0 = Signal(32)
        tcnt = Signal(32)         # kernel tick down-counter, fires at 0
        tz = Signal()             # tcnt == 0
        tick_pend = Signal()
        x = Signal(32)            # xorshift32 state
        # isr_entry + jitter drawn from the current x (one cycle behind x):
        # isr_entry + (x * (isr_jitter + 1)) >> 32.
        entry = Signal(34)
        kind = Signal(2)          # interrupt-level activity
        r = Signal(32)            # its remaining ticks, counting the current one
        r_is1, app_r_is1, q_is1, h_is1 = (Signal(name=n) for n in
                                          ("r_is1", "app_r_is1", "q_is1", "h_is1"))
        isr_pulse = Signal(32)
        isr_t0 = Signal(32)
        isr_lat = Signal(32)
        app_phase = Signal(2)
        app_r = Signal(32)
        app_pulse = Signal(32)
        app_t0 = Signal(32)
        app_lat = Signal(32)
        ev = Signal()             # auto-reset APP event (one queued job)
        ev_pulse = Signal(32)
        ev_t0 = Signal(32)
        turn_load = Signal(init=1)  # LOAD holds the thread-level CPU for its quantum
        q = Signal(32)            # LOAD quantum left
        h = Signal(32)            # LOAD work left to the next heartbeat toggle
        hb = Signal()

        m.d.comb += [
            self.isr_out.eq(kind == _ISR_SERVICE),
            self.app_out.eq(app_phase == _APP_SERVICE),
            self.heartbeat.eq(hb),
        ]

        # --- truth record holding slots and output arbiter -------------------------
        a_isr, a_app, a_pulse = Signal(), Signal(), Signal(32)            # lost pulse
        b_isr, b_app = Signal(), Signal()                                 # ISR end
        b_pulse, b_lat, b_comp = Signal(32), Signal(32), Signal(32)
        c_app, c_pulse, c_lat, c_comp = Signal(), Signal(32), Signal(32), Signal(32)

        sel = Signal(3)  # 0 a_isr, 1 a_app, 2 b_isr, 3 b_app, 4 c_app
        payload = self.truth.payload
        with m.If(a_isr):
            m.d.comb += [sel.eq(0), payload.pulse.eq(a_pulse), payload.missed.eq(1),
                         payload.channel.eq(TruthChannel.ISR)]
        with m.Elif(a_app):
            m.d.comb += [sel.eq(1), payload.pulse.eq(a_pulse), payload.missed.eq(1),
                         payload.channel.eq(TruthChannel.APP)]
        with m.Elif(b_isr):
            m.d.comb += [sel.eq(2), payload.pulse.eq(b_pulse), payload.latency.eq(b_lat),
                         payload.completion.eq(b_comp), payload.channel.eq(TruthChannel.ISR)]
        with m.Elif(b_app):
            m.d.comb += [sel.eq(3), payload.pulse.eq(b_pulse), payload.missed.eq(1),
                         payload.channel.eq(TruthChannel.APP)]
        with m.Else():
            m.d.comb += [sel.eq(4), payload.pulse.eq(c_pulse), payload.latency.eq(c_lat),
                         payload.completion.eq(c_comp), payload.channel.eq(TruthChannel.APP)]
        m.d.comb += self.truth.valid.eq(a_isr | a_app | b_isr | b_app | c_app)
        xfer = Signal()
        m.d.comb += xfer.eq(self.truth.valid & self.truth.ready)
        # flags still set after this cycle's transfer
        a_isr_k = a_isr & ~(xfer & (sel == 0))
        a_app_k = a_app & ~(xfer & (sel == 1))
        b_isr_k = b_isr & ~(xfer & (sel == 2))
        b_app_k = b_app & ~(xfer & (sel == 3))
        c_app_k = c_app & ~(xfer & (sel == 4))
        a_free = ~(a_isr_k | a_app_k)
        b_free = ~(b_isr_k | b_app_k)
        c_free = ~c_app_k

        # --- combinational decisions for the current cycle ---------------------------
        edge = Signal()
        fire = Signal()
        free = Signal()
        take_irq = Signal()
        take_tick = Signal()
        thread = Signal()
        load_runs = Signal()
        app_runs = Signal()
        m.d.comb += [
            edge.eq(self.irq & ~irq_prev),
            fire.eq(tp_nz & tz),
            free.eq(kind == _NONE),
            take_irq.eq(free & (pend | edge)),
            take_tick.eq(free & ~pend & ~edge & (tick_pend | fire)),
            thread.eq(free & ~pend & ~edge & ~tick_pend & ~fire),
            load_runs.eq(thread & self.load_en & turn_load),
            app_runs.eq(thread & (app_phase != _APP_IDLE) & ~load_runs),
        ]

        taken_pulse = Signal(32)
        taken_t0 = Signal(32)
        m.d.comb += [
            taken_pulse.eq(Mux(pend, pend_pulse, npulse)),
            taken_t0.eq(Mux(pend, pend_t0, now)),
        ]
        # The jitter multiply, pipelined and computed ahead: x changes only when an
        # interrupt is taken (never in two consecutive cycles) or at reset, so the next
        # x, xorshift(x), is known a cycle before x takes it. Stage A: four partial
        # products; stage B: the middle sum and isr_entry added to the high product;
        # then one adder gives isr_entry + jitter. One pipeline follows the next x,
        # one the seed (for reset).
        def entry_pipe(name, v):
            pll, phl = Signal(32, name=f"{name}_ll"), Signal(32, name=f"{name}_hl")
            plh, phh = Signal(33, name=f"{name}_lh"), Signal(33, name=f"{name}_hh")
            m.d.sync += [pll.eq(v[:16] * j1[:16]), plh.eq(v[:16] * j1[16:]),
                         phl.eq(v[16:] * j1[:16]), phh.eq(v[16:] * j1[16:])]
            lo, mid, hi = (Signal(32, name=f"{name}_lo"), Signal(34, name=f"{name}_mid"),
                           Signal(34, name=f"{name}_hi"))
            m.d.sync += [lo.eq(pll), mid.eq(plh + phl), hi.eq(phh + ie)]
            total = Signal(34, name=f"{name}_entry")
            m.d.comb += total.eq((Cat(lo, hi) + (mid << 16))[32:])
            return total

        # x_nx == xorshift(x) always: a register that steps with x.
        x_nx, seed_nx = Signal(32), Signal(32)
        m.d.sync += seed_nx.eq(_xorshift32(self.seed))
        x_next = Signal(32)
        m.d.comb += x_next.eq(Mux(self.reset, seed_nx, x_nx))
        entry_x = entry_pipe("jx", x_next)
        entry_seed = entry_pipe("js", self.seed)
        advanced = Signal()       # x took a new value at the end of the last cycle
        now1 = Signal(32)
        m.d.comb += now1.eq(now + 1)

        # new truth records due at the end of this cycle
        lost = Signal()        # an irq edge hit a set pending latch
        isr_end = Signal()     # last ISR service tick
        ev_lost = Signal()     # ... and the APP event was already set
        app_end = Signal()     # last APP service tick
        m.d.comb += [
            lost.eq(edge & pend & ~take_irq),
            isr_end.eq((kind == _ISR_SERVICE) & r_is1),
            ev_lost.eq(isr_end & self.app_enable & (app_phase != _APP_IDLE) & ev),
            app_end.eq(app_runs & (app_phase == _APP_SERVICE) & app_r_is1),
        ]

        overflow_inc = Signal(3)
        overflow_q = Signal(3)    # registered before the count: it shows a cycle late
        m.d.comb += overflow_inc.eq(
            Mux(lost & ~a_free, 1 + self.app_enable, 0)
            + Mux(isr_end & ~b_free, 1 + ev_lost, 0)
            + Mux(app_end & ~c_free, 1, 0))

        m.d.sync += irq_prev.eq(self.irq)

        with m.If(self.reset):
            m.d.sync += [
                now.eq(0), npulse.eq(0), pend.eq(0), tick_pend.eq(0),
                tcnt.eq(self.tick_period), tz.eq(tp_z),
                x.eq(self.seed), x_nx.eq(seed_nx),
                entry.eq(entry_seed), advanced.eq(0),
                kind.eq(_NONE), app_phase.eq(_APP_IDLE), ev.eq(0),
                turn_load.eq(1), q.eq(quantum), h.eq(hb_work), hb.eq(0),
                q_is1.eq(quantum_is1), h_is1.eq(hb_is1),
                a_isr.eq(0), a_app.eq(0), b_isr.eq(0), b_app.eq(0), c_app.eq(0),
                self.truth_overflow.eq(0), overflow_q.eq(0),
            ]
        with m.Else():
            m.d.sync += [
                now.eq(now1),
                advanced.eq(take_irq),
                overflow_q.eq(overflow_inc),
                self.truth_overflow.eq(self.truth_overflow + overflow_q),
                a_isr.eq(a_isr_k), a_app.eq(a_app_k),
                b_isr.eq(b_isr_k), b_app.eq(b_app_k), c_app.eq(c_app_k),
            ]
            with m.If(edge):
                m.d.sync += npulse.eq(npulse + 1)

            # kernel tick timer
            with m.If(advanced):
                m.d.sync += entry.eq(entry_x)

            with m.If(fire):
                m.d.sync += [tcnt.eq(tp_m1), tz.eq(tp_is1)]
            with m.Else():
                m.d.sync += [tcnt.eq(tcnt - 1), tz.eq(tcnt == 1)]

            # pending latch and taking the interrupt
            with m.If(take_irq):
                m.d.sync += [
                    isr_pulse.eq(taken_pulse),
                    isr_t0.eq(taken_t0),
                    pend.eq(pend & edge),
                    x.eq(x_nx), x_nx.eq(_xorshift32(x_nx)),
                ]
                with m.If(pend & edge):
                    m.d.sync += [pend_pulse.eq(npulse), pend_t0.eq(now)]
                with m.If(entry <= 1):
                    m.d.sync += [kind.eq(_ISR_SERVICE), r.eq(isr_service), r_is1.eq(svc_is1),
                                 isr_lat.eq(now1 - taken_t0)]
                with m.Else():
                    m.d.sync += [kind.eq(_ISR_ENTRY), r.eq(entry - 1), r_is1.eq(entry == 2)]
            with m.Elif(edge & ~pend):
                m.d.sync += [pend.eq(1), pend_pulse.eq(npulse), pend_t0.eq(now)]

            with m.If(take_tick):
                m.d.sync += tick_pend.eq(tick_pend & fire)
                with m.If(ts_is1):
                    m.d.sync += kind.eq(_NONE)
                with m.Else():
                    m.d.sync += [kind.eq(_TICK), r.eq(ts_m1), r_is1.eq(ts_is2)]
            with m.Elif(fire):
                m.d.sync += tick_pend.eq(1)

            # interrupt work in progress (runs to completion, never nested)
            with m.If(~free):
                with m.If(r_is1):
                    with m.Switch(kind):
                        with m.Case(_ISR_ENTRY):
                            m.d.sync += [kind.eq(_ISR_SERVICE), r.eq(isr_service),
                                         r_is1.eq(svc_is1),
                                         isr_lat.eq(now1 - isr_t0)]
                        with m.Case(_ISR_SERVICE):
                            m.d.sync += kind.eq(_NONE)
                            with m.If(self.app_enable):
                                with m.If(app_phase == _APP_IDLE):
                                    m.d.sync += [app_phase.eq(_APP_WAKE), app_r.eq(app_wake),
                                                 app_r_is1.eq(wake_is1),
                                                 app_pulse.eq(isr_pulse), app_t0.eq(isr_t0)]
                                with m.Elif(~ev):
                                    m.d.sync += [ev.eq(1), ev_pulse.eq(isr_pulse),
                                                 ev_t0.eq(isr_t0)]
                        with m.Case(_TICK):
                            m.d.sync += kind.eq(_NONE)
                with m.Else():
                    m.d.sync += [r.eq(r - 1), r_is1.eq(r == 2)]

            # LOAD thread
            with m.If(load_runs):
                with m.If(h_is1):
                    m.d.sync += [h.eq(hb_work), h_is1.eq(hb_is1), hb.eq(~hb)]
                with m.Else():
                    m.d.sync += [h.eq(h - 1), h_is1.eq(h == 2)]
                with m.If(q_is1):
                    m.d.sync += [q.eq(quantum), q_is1.eq(quantum_is1),
                                 turn_load.eq(app_phase == _APP_IDLE)]
                with m.Else():
                    m.d.sync += [q.eq(q - 1), q_is1.eq(q == 2)]

            # APP thread
            with m.If(app_runs):
                with m.If(app_r_is1):
                    with m.If(app_phase == _APP_WAKE):
                        m.d.sync += [app_phase.eq(_APP_SERVICE), app_r.eq(app_service),
                                     app_r_is1.eq(asvc_is1),
                                     app_lat.eq(now1 - app_t0)]
                    with m.Else():
                        # job done: LOAD gets a fresh quantum; a queued event
                        # starts the next job, which waits for that quantum.
                        m.d.sync += [turn_load.eq(1), q.eq(quantum), q_is1.eq(quantum_is1)]
                        with m.If(ev):
                            m.d.sync += [ev.eq(0), app_phase.eq(_APP_WAKE), app_r.eq(app_wake),
                                         app_r_is1.eq(wake_is1),
                                         app_pulse.eq(ev_pulse), app_t0.eq(ev_t0)]
                        with m.Else():
                            m.d.sync += app_phase.eq(_APP_IDLE)
                with m.Else():
                    m.d.sync += [app_r.eq(app_r - 1), app_r_is1.eq(app_r == 2)]

            # truth records (after the slot clears above, so these win)
            with m.If(lost & a_free):
                m.d.sync += [a_isr.eq(1), a_app.eq(self.app_enable), a_pulse.eq(npulse)]
            with m.If(isr_end & b_free):
                m.d.sync += [b_isr.eq(1), b_app.eq(ev_lost), b_pulse.eq(isr_pulse),
                             b_lat.eq(isr_lat), b_comp.eq(now1 - isr_t0)]
            with m.If(app_end & c_free):
                m.d.sync += [c_app.eq(1), c_pulse.eq(app_pulse), c_lat.eq(app_lat),
                             c_comp.eq(now1 - app_t0)]

        return m

