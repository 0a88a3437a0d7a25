# SPDX-License-Identifier: BSD-2-Clause
"""Model target: a CPU-like device under test emulated in gateware.

One CPU runs, in priority order: interrupt work (the ISR of the ``irq`` pin and the
kernel tick), then two equal-priority threads (APP, woken by the ISR through an
auto-reset event, and LOAD, round-robin with a quantum). Its true per-pulse latencies
are known and streamed out, so simulation tests can compare the rig's measurements
with the truth sample by sample. The exact tick-level semantics are in
``docs/model.md``; ``rtrig.host.model.reference`` reproduces them cycle for cycle.
"""

from types import SimpleNamespace

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


class _State:
    """The model's registers (``sync``), beside the parameters and the truth records'
    holding slots."""

    def __init__(self):
        self.irq_prev = Signal()
        self.now = Signal(32)          # cycles since reset
        self.npulse = Signal(32)       # index of the next irq edge
        self.pend = Signal()           # interrupt pending latch
        self.pend_pulse = Signal(32)
        self.pend_t0 = Signal(32)
        self.tcnt = Signal(32)         # kernel tick down-counter, fires at 0
        self.tz = Signal()             # tcnt == 0
        self.tick_pend = Signal()
        self.x = Signal(32)            # xorshift32 state
        # isr_entry + jitter drawn from the current x (one cycle behind x):
        # isr_entry + (x * (isr_jitter + 1)) >> 32.
        self.entry = Signal(34)
        self.advanced = Signal()       # x took a new value at the end of the last cycle
        self.kind = Signal(2)          # interrupt-level activity
        self.r = Signal(32)            # its remaining ticks, counting the current one
        # "counter == 1" is kept as a flag next to each counter (set with every load), so
        # no 32-bit compare sits on the decision paths.
        self.r_is1, self.app_r_is1, self.q_is1, self.h_is1 = (
            Signal(name=n) for n in ("r_is1", "app_r_is1", "q_is1", "h_is1"))
        self.isr_pulse = Signal(32)
        self.isr_t0 = Signal(32)
        self.isr_lat = Signal(32)
        self.app_phase = Signal(2)
        self.app_r = Signal(32)
        self.app_pulse = Signal(32)
        self.app_t0 = Signal(32)
        self.app_lat = Signal(32)
        self.ev = Signal()             # auto-reset APP event (one queued job)
        self.ev_pulse = Signal(32)
        self.ev_t0 = Signal(32)
        self.turn_load = Signal(init=1)  # LOAD holds the thread-level CPU for its quantum
        self.q = Signal(32)            # LOAD quantum left
        self.h = Signal(32)            # LOAD work left to the next heartbeat toggle
        self.hb = Signal()


class ModelTarget(wiring.Component):
    """A CPU-like DUT emulator with run-time parameters, in the ``sync`` domain.

    All durations are unsigned tick counts (1 tick = one ``sync`` cycle: 33.33 ns at
    the ECP5 boards' 30 MHz; the rig's targets feature turns its ticks into cycles),
    held constant while the model runs; assert ``reset`` after changing
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
        p = self._parameters(m)
        s = _State()
        m.d.comb += [
            self.isr_out.eq(s.kind == _ISR_SERVICE),
            self.app_out.eq(s.app_phase == _APP_SERVICE),
            self.heartbeat.eq(s.hb),
        ]
        t = self._truth_slots(m)
        d = self._decisions(m, p, s)
        j = self._jitter(m, p)
        due = self._records_due(m, s, t, d)

        m.d.sync += s.irq_prev.eq(self.irq)

        with m.If(self.reset):
            m.d.sync += [
                s.now.eq(0), s.npulse.eq(0), s.pend.eq(0), s.tick_pend.eq(0),
                s.tcnt.eq(self.tick_period), s.tz.eq(p.tp_z),
                s.x.eq(self.seed), j.x_nx.eq(j.seed_nx),
                s.entry.eq(j.entry_seed), s.advanced.eq(0),
                s.kind.eq(_NONE), s.app_phase.eq(_APP_IDLE), s.ev.eq(0),
                s.turn_load.eq(1), s.q.eq(p.quantum), s.h.eq(p.hb_work), s.hb.eq(0),
                s.q_is1.eq(p.quantum_is1), s.h_is1.eq(p.hb_is1),
                t.a_isr.eq(0), t.a_app.eq(0), t.b_isr.eq(0), t.b_app.eq(0), t.c_app.eq(0),
                self.truth_overflow.eq(0), due.overflow_q.eq(0),
            ]
        with m.Else():
            m.d.sync += [
                s.now.eq(due.now1),
                s.advanced.eq(d.take_irq),
                due.overflow_q.eq(due.overflow_inc),
                self.truth_overflow.eq(self.truth_overflow + due.overflow_q),
                t.a_isr.eq(t.a_isr_k), t.a_app.eq(t.a_app_k),
                t.b_isr.eq(t.b_isr_k), t.b_app.eq(t.b_app_k), t.c_app.eq(t.c_app_k),
            ]
            with m.If(d.edge):
                m.d.sync += s.npulse.eq(s.npulse + 1)

            with m.If(s.advanced):         # the entry time drawn from the new x
                m.d.sync += s.entry.eq(j.entry_x)

            # kernel tick timer
            with m.If(d.fire):
                m.d.sync += [s.tcnt.eq(p.tp_m1), s.tz.eq(p.tp_is1)]
            with m.Else():
                m.d.sync += [s.tcnt.eq(s.tcnt - 1), s.tz.eq(s.tcnt == 1)]

            self._take_interrupts(m, p, s, d, j, due.now1)
            self._interrupt_work(m, p, s, d, due.now1)
            self._load_thread(m, p, s, d)
            self._app_thread(m, p, s, d, due.now1)

            # truth records (after the slot clears above, so these win)
            with m.If(due.lost & t.a_free):
                m.d.sync += [t.a_isr.eq(1), t.a_app.eq(self.app_enable), t.a_pulse.eq(s.npulse)]
            with m.If(due.isr_end & t.b_free):
                m.d.sync += [t.b_isr.eq(1), t.b_app.eq(due.ev_lost), t.b_pulse.eq(s.isr_pulse),
                             t.b_lat.eq(s.isr_lat), t.b_comp.eq(due.now1 - s.isr_t0)]
            with m.If(due.app_end & t.c_free):
                m.d.sync += [t.c_app.eq(1), t.c_pulse.eq(s.app_pulse), t.c_lat.eq(s.app_lat),
                             t.c_comp.eq(due.now1 - s.app_t0)]
        return m

    def _parameters(self, m):
        """The parameters, registered, with the derived values the decisions need, so
        no parameter compare sits on a decision path (they are constant while the model
        runs)."""
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
        # (A list: the two stay unnamed in the netlist; a name can move placement.)
        j1, ie = [Signal(33), Signal(32)]
        m.d.sync += [
            ts_is1.eq(self.tick_service <= 1), ts_m1.eq(self.tick_service - 1),
            tp_nz.eq(self.tick_period != 0), tp_z.eq(self.tick_period == 0),
            tp_is1.eq(self.tick_period == 1), tp_m1.eq(self.tick_period - 1),
            j1.eq(self.isr_jitter + 1), ie.eq(self.isr_entry),
        ]
        return SimpleNamespace(
            isr_service=isr_service, app_wake=app_wake, app_service=app_service,
            quantum=quantum, hb_work=hb_work, ts_is1=ts_is1, ts_m1=ts_m1, svc_is1=svc_is1,
            wake_is1=wake_is1, asvc_is1=asvc_is1, quantum_is1=quantum_is1, hb_is1=hb_is1,
            ts_is2=ts_is2, tp_nz=tp_nz, tp_z=tp_z, tp_is1=tp_is1, tp_m1=tp_m1, j1=j1, ie=ie)

    def _truth_slots(self, m):
        """The truth records' holding slots (a: a lost pulse, b: an ISR end, c: an APP
        end) and the output arbiter; with each slot's flags still set after this
        cycle's transfer (``*_k``) and whether it is free for a new record."""
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
        t = SimpleNamespace(
            a_isr=a_isr, a_app=a_app, a_pulse=a_pulse, b_isr=b_isr, b_app=b_app,
            b_pulse=b_pulse, b_lat=b_lat, b_comp=b_comp, c_app=c_app, c_pulse=c_pulse,
            c_lat=c_lat, c_comp=c_comp,
            # flags still set after this cycle's transfer
            a_isr_k=a_isr & ~(xfer & (sel == 0)),
            a_app_k=a_app & ~(xfer & (sel == 1)),
            b_isr_k=b_isr & ~(xfer & (sel == 2)),
            b_app_k=b_app & ~(xfer & (sel == 3)),
            c_app_k=c_app & ~(xfer & (sel == 4)))
        t.a_free = ~(t.a_isr_k | t.a_app_k)
        t.b_free = ~(t.b_isr_k | t.b_app_k)
        t.c_free = ~t.c_app_k
        return t

    def _decisions(self, m, p, s):
        """The combinational decisions for the current cycle: who has the CPU, and the
        pulse an interrupt taken now serves."""
        edge = Signal()
        fire = Signal()
        free = Signal()
        take_irq = Signal()
        take_tick = Signal()
        thread = Signal()
        load_runs = Signal()
        app_runs = Signal()
        m.d.comb += [
            edge.eq(self.irq & ~s.irq_prev),
            fire.eq(p.tp_nz & s.tz),
            free.eq(s.kind == _NONE),
            take_irq.eq(free & (s.pend | edge)),
            take_tick.eq(free & ~s.pend & ~edge & (s.tick_pend | fire)),
            thread.eq(free & ~s.pend & ~edge & ~s.tick_pend & ~fire),
            load_runs.eq(thread & self.load_en & s.turn_load),
            app_runs.eq(thread & (s.app_phase != _APP_IDLE) & ~load_runs),
        ]

        taken_pulse = Signal(32)
        taken_t0 = Signal(32)
        m.d.comb += [
            taken_pulse.eq(Mux(s.pend, s.pend_pulse, s.npulse)),
            taken_t0.eq(Mux(s.pend, s.pend_t0, s.now)),
        ]
        return SimpleNamespace(edge=edge, fire=fire, free=free, take_irq=take_irq,
                               take_tick=take_tick, load_runs=load_runs, app_runs=app_runs,
                               taken_pulse=taken_pulse, taken_t0=taken_t0)

    def _jitter(self, m, p):
        """The ISR entry time with its jitter: ``isr_entry + (x * (isr_jitter + 1)) >>
        32`` for the next ``x`` (``entry_x``) and for the seed (``entry_seed``, at
        reset), and ``x_nx``, the register that steps with ``x`` holding its next value.

        The multiply is pipelined and computed ahead: x changes only when an interrupt
        is taken (never in two consecutive cycles) or at reset, so the next x,
        xorshift(x), is known a cycle before x takes it. Stage A: four partial
        products; stage B: the middle sum and isr_entry added to the high product; then
        one adder gives isr_entry + jitter. One pipeline follows the next x, one the
        seed (for reset).
        """
        def entry_pipe(name, v):
            pll, phl = Signal(32, name=f"{name}_ll"), Signal(32, name=f"{name}_hl")
            plh, phh = Signal(33, name=f"{name}_lh"), Signal(33, name=f"{name}_hh")
            m.d.sync += [pll.eq(v[:16] * p.j1[:16]), plh.eq(v[:16] * p.j1[16:]),
                         phl.eq(v[16:] * p.j1[:16]), phh.eq(v[16:] * p.j1[16:])]
            lo, mid, hi = (Signal(32, name=f"{name}_lo"), Signal(34, name=f"{name}_mid"),
                           Signal(34, name=f"{name}_hi"))
            m.d.sync += [lo.eq(pll), mid.eq(plh + phl), hi.eq(phh + p.ie)]
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
        return SimpleNamespace(x_nx=x_nx, seed_nx=seed_nx, entry_x=entry_x,
                               entry_seed=entry_seed)

    def _records_due(self, m, s, t, d):
        """The truth records due at the end of this cycle, and the overflow count of
        those that find their slot taken."""
        now1 = Signal(32)
        m.d.comb += now1.eq(s.now + 1)

        lost = Signal()        # an irq edge hit a set pending latch
        isr_end = Signal()     # last ISR service tick
        ev_lost = Signal()     # ... and the APP event was already set
        app_end = Signal()     # last APP service tick
        m.d.comb += [
            lost.eq(d.edge & s.pend & ~d.take_irq),
            isr_end.eq((s.kind == _ISR_SERVICE) & s.r_is1),
            ev_lost.eq(isr_end & self.app_enable & (s.app_phase != _APP_IDLE) & s.ev),
            app_end.eq(d.app_runs & (s.app_phase == _APP_SERVICE) & s.app_r_is1),
        ]

        overflow_inc = Signal(3)
        overflow_q = Signal(3)    # registered before the count: it shows a cycle late
        m.d.comb += overflow_inc.eq(
            Mux(lost & ~t.a_free, 1 + self.app_enable, 0)
            + Mux(isr_end & ~t.b_free, 1 + ev_lost, 0)
            + Mux(app_end & ~t.c_free, 1, 0))
        return SimpleNamespace(now1=now1, lost=lost, isr_end=isr_end, ev_lost=ev_lost,
                               app_end=app_end, overflow_inc=overflow_inc,
                               overflow_q=overflow_q)

    def _take_interrupts(self, m, p, s, d, j, now1):
        """The pending latch, taking the interrupt, and taking the kernel tick."""
        with m.If(d.take_irq):
            m.d.sync += [
                s.isr_pulse.eq(d.taken_pulse),
                s.isr_t0.eq(d.taken_t0),
                s.pend.eq(s.pend & d.edge),
                s.x.eq(j.x_nx), j.x_nx.eq(_xorshift32(j.x_nx)),
            ]
            with m.If(s.pend & d.edge):
                m.d.sync += [s.pend_pulse.eq(s.npulse), s.pend_t0.eq(s.now)]
            with m.If(s.entry <= 1):
                m.d.sync += [s.kind.eq(_ISR_SERVICE), s.r.eq(p.isr_service),
                             s.r_is1.eq(p.svc_is1), s.isr_lat.eq(now1 - d.taken_t0)]
            with m.Else():
                m.d.sync += [s.kind.eq(_ISR_ENTRY), s.r.eq(s.entry - 1),
                             s.r_is1.eq(s.entry == 2)]
        with m.Elif(d.edge & ~s.pend):
            m.d.sync += [s.pend.eq(1), s.pend_pulse.eq(s.npulse), s.pend_t0.eq(s.now)]

        with m.If(d.take_tick):
            m.d.sync += s.tick_pend.eq(s.tick_pend & d.fire)
            with m.If(p.ts_is1):
                m.d.sync += s.kind.eq(_NONE)
            with m.Else():
                m.d.sync += [s.kind.eq(_TICK), s.r.eq(p.ts_m1), s.r_is1.eq(p.ts_is2)]
        with m.Elif(d.fire):
            m.d.sync += s.tick_pend.eq(1)

    def _interrupt_work(self, m, p, s, d, now1):
        """Interrupt work in progress (runs to completion, never nested); the ISR's end
        wakes APP or sets its event."""
        with m.If(~d.free):
            with m.If(s.r_is1):
                with m.Switch(s.kind):
                    with m.Case(_ISR_ENTRY):
                        m.d.sync += [s.kind.eq(_ISR_SERVICE), s.r.eq(p.isr_service),
                                     s.r_is1.eq(p.svc_is1),
                                     s.isr_lat.eq(now1 - s.isr_t0)]
                    with m.Case(_ISR_SERVICE):
                        m.d.sync += s.kind.eq(_NONE)
                        with m.If(self.app_enable):
                            with m.If(s.app_phase == _APP_IDLE):
                                m.d.sync += [s.app_phase.eq(_APP_WAKE), s.app_r.eq(p.app_wake),
                                             s.app_r_is1.eq(p.wake_is1),
                                             s.app_pulse.eq(s.isr_pulse),
                                             s.app_t0.eq(s.isr_t0)]
                            with m.Elif(~s.ev):
                                m.d.sync += [s.ev.eq(1), s.ev_pulse.eq(s.isr_pulse),
                                             s.ev_t0.eq(s.isr_t0)]
                    with m.Case(_TICK):
                        m.d.sync += s.kind.eq(_NONE)
            with m.Else():
                m.d.sync += [s.r.eq(s.r - 1), s.r_is1.eq(s.r == 2)]

    def _load_thread(self, m, p, s, d):
        """The LOAD thread: heartbeat work and its round-robin quantum."""
        with m.If(d.load_runs):
            with m.If(s.h_is1):
                m.d.sync += [s.h.eq(p.hb_work), s.h_is1.eq(p.hb_is1), s.hb.eq(~s.hb)]
            with m.Else():
                m.d.sync += [s.h.eq(s.h - 1), s.h_is1.eq(s.h == 2)]
            with m.If(s.q_is1):
                m.d.sync += [s.q.eq(p.quantum), s.q_is1.eq(p.quantum_is1),
                             s.turn_load.eq(s.app_phase == _APP_IDLE)]
            with m.Else():
                m.d.sync += [s.q.eq(s.q - 1), s.q_is1.eq(s.q == 2)]

    def _app_thread(self, m, p, s, d, now1):
        """The APP thread: wake-up, then service."""
        with m.If(d.app_runs):
            with m.If(s.app_r_is1):
                with m.If(s.app_phase == _APP_WAKE):
                    m.d.sync += [s.app_phase.eq(_APP_SERVICE), s.app_r.eq(p.app_service),
                                 s.app_r_is1.eq(p.asvc_is1),
                                 s.app_lat.eq(now1 - s.app_t0)]
                with m.Else():
                    # job done: LOAD gets a fresh quantum; a queued event
                    # starts the next job, which waits for that quantum.
                    m.d.sync += [s.turn_load.eq(1), s.q.eq(p.quantum), s.q_is1.eq(p.quantum_is1)]
                    with m.If(s.ev):
                        m.d.sync += [s.ev.eq(0), s.app_phase.eq(_APP_WAKE), s.app_r.eq(p.app_wake),
                                     s.app_r_is1.eq(p.wake_is1),
                                     s.app_pulse.eq(s.ev_pulse), s.app_t0.eq(s.ev_t0)]
                    with m.Else():
                        m.d.sync += s.app_phase.eq(_APP_IDLE)
            with m.Else():
                m.d.sync += [s.app_r.eq(s.app_r - 1), s.app_r_is1.eq(s.app_r == 2)]

