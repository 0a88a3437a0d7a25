# SPDX-License-Identifier: BSD-2-Clause
"""The targets feature: what drives the rig inputs (register ``TARGET_SEL``).

The external pins (a real target), the loopback target, the model target and the
reference SoC; the internal ones answer the rig's own stimulus, so a capture can be
checked against known latencies without a board wired to the rig.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream
from amaranth.lib.wiring import In, Out

from ...protocol import MODEL_PARAM_REGS, N_INPUTS, PacketType, Target
from ...records import TRUTH
from ..feature import Feature, packet_from_fifo
from ..link import TxPacket
from ..loopback import LoopbackDelayLine

__all__ = ["Targets", "TruthWireRecord", "LOOP_LINE_DEPTH", "SOC_OUTPUTS", "held_levels"]

#: Clock cycles of the loopback delay line (four iCE40 block RAMs).
LOOP_LINE_DEPTH = 8192
#: The TRUTH record as it leaves the rig (:data:`rtrig.records.TRUTH`, 13 bytes).
TruthWireRecord = TRUTH.struct()
#: SoC debug outputs passed to the top level (``soc_<name>``), with their widths.
SOC_OUTPUTS = {"console_valid": 1, "console_data": 8, "exit_valid": 1, "exit_code": 32,
               "trace_valid": 1, "trace_data": 32, "gpio_out": N_INPUTS}


class Targets(Feature):
    """Selects what drives the capture: the pins or an internal target.

    The internal targets change at clock edges (phase 0 of a cycle); they are delayed
    by ``pin_latency`` cycles, as the external pins are outside the rig, so every target
    reaches the capture with the same latency.

    Parameters
    ----------
    step : int
        Ticks per clock cycle; the loopback and model settings (ticks) are used in
        clock cycles (divided by ``step``); the model's truth times are scaled back.
    pin_latency : int
        Cycles of registers in front of ``ext_inputs`` outside the rig.
    with_model : bool
        Build the model target (registers ``MODEL_*``, the TRUTH stream).
    truth_depth : int
        Depth of the truth record FIFO.
    with_soc : bool
        Build the reference SoC (its own clock domain ``soc``, docs/soc.md).
    soc_firmware : bytes or str
        The SoC's RAM image.
    clk_freq : int
        ``with_soc``: the rig's clock (``sync``), whose rising edges meet the SoC's once
        per frame; the SoC's GPIO outputs reach the capture as a level per tick
        (:class:`~rtrig.gateware.soc_sampler.SoCSampler`, one ``sync`` cycle late,
        so ``pin_latency`` - 1 more cycles behind it), each edge timed to the tick.
        Each level of each output lasts at least as many SoC cycles as a rig cycle
        takes (:func:`held_levels`: two, 40 ns, at 50 and 30 MHz), so no bit changes
        twice in a rig cycle; a level the SoC changes sooner is held until then, the
        other outputs not delayed.

    Members
    -------
    stim0, stim1, load_en : In(1)
        The rig's outputs, which the internal targets answer (``sync``; STIM1 reaches
        the SoC's second interrupt line only).
    hold : In(1)
        An armed run restarts the target (``sync``): the selected internal target, the
        model or the SoC, is held in reset while it is high, and so starts from the
        same state at the same time before every armed run's first pulse. The model's
        reset is registered (one cycle); the SoC's passes a two-flip-flop synchroniser
        into its domain (``soc``), whose clock's edges meet the rig's at fixed points,
        so it too is let go at the same SoC cycle of every run armed on a frame.
    ext_inputs : In(6)
        The input pins (first sample of a cycle), asynchronous.
    ext_later : In(ArrayLayout(6, step - 1))
        ``step`` > 1: the later samples of the pins.
    pins : Out(6)
        What the capture sees: the selected target's outputs.
    pins_later : Out(ArrayLayout(6, max(step - 1, 1)))
        Their later samples (an internal target holds its level through a cycle).
    truth : Out(stream.Signature(TxPacket))
        ``with_model``: TRUTH packets (13-byte payloads) while ``STREAM_EN`` bit 2 is set.
    soc_* : Out
        ``with_soc``: the SoC's debug outputs (domain ``soc``), see :data:`SOC_OUTPUTS`.
    regs : Out(Signature)
        ``TARGET_SEL``, ``LOOP_DELAY``; with the model ``MODEL_CTRL`` .. ``MODEL_SEED``,
        ``TRUTH_OVERFLOW``; it reads ``STREAM_EN``.
    """

    def __init__(self, *, step=1, pin_latency=0, with_model=True, truth_depth=512, with_soc=False, soc_firmware=b"",
                 clk_freq=None):
        self.step = step
        self.shift = step.bit_length() - 1
        self.pin_latency = pin_latency
        self.with_model = with_model
        self.truth_depth = truth_depth
        self.with_soc = with_soc
        self.soc_firmware = soc_firmware
        self.clk_freq = clk_freq
        if with_soc and (pin_latency < 1 or clk_freq is None):
            raise ValueError("the SoC target needs the rig's clock and pin_latency >= 1")
        members = {
            "stim0": In(1), "stim1": In(1), "load_en": In(1), "hold": In(1),
            "ext_inputs": In(N_INPUTS),
            "pins": Out(N_INPUTS),
            "pins_later": Out(data.ArrayLayout(N_INPUTS, max(step - 1, 1))),
        }
        if step > 1:
            members["ext_later"] = In(data.ArrayLayout(N_INPUTS, step - 1))
        registers, uses = ["TARGET_SEL", "LOOP_DELAY"], []
        if with_model:
            members["truth"] = Out(stream.Signature(TxPacket))
            registers += ["MODEL_CTRL", *MODEL_PARAM_REGS.values(), "TRUTH_OVERFLOW"]
            uses = ["STREAM_EN"]
        if with_soc:
            members.update({f"soc_{name}": Out(width) for name, width in SOC_OUTPUTS.items()})
        super().__init__(members, registers=registers, uses=uses)

    def elaborate(self, platform):
        m = Module()
        regs, shift = self.regs, self.shift
        # The loopback target: a block-RAM delay line of LOOP_LINE_DEPTH cycles.
        m.submodules.loopback = loop = LoopbackDelayLine(LOOP_LINE_DEPTH)
        m.d.comb += [loop.stim.eq(self.stim0), loop.delay.eq(regs.LOOP_DELAY >> shift)]

        internal = Signal(N_INPUTS)
        sel = regs.TARGET_SEL
        soc_out = self._soc(m) if self.with_soc else None
        with m.Switch(sel):
            with m.Case(Target.LOOPBACK):
                m.d.comb += internal.eq(loop.out)
            if self.with_model:
                model = self._model(m)
                with m.Case(Target.MODEL):
                    m.d.comb += internal.eq(Cat(model.isr_out, model.app_out,
                                                model.heartbeat))
        internal_d = delayed(m, internal, self.pin_latency, "internal")
        # The internal targets hold their level through a cycle; the SoC has one per tick.
        later = [internal_d] * (self.step - 1)
        first = internal_d
        if self.with_soc:
            soc_d = delayed(m, soc_out, self.pin_latency - 1, "soc_samples")
            is_soc = Signal()
            m.d.comb += is_soc.eq(sel == Target.SOC)
            first = Mux(is_soc, soc_d[0], internal_d)
            later = [Mux(is_soc, soc_d[j + 1], internal_d) for j in range(self.step - 1)]
        is_ext = Signal()
        internal_sel = (Target.LOOPBACK, *((Target.MODEL,) if self.with_model else ()),
                        *((Target.SOC,) if self.with_soc else ()))
        m.d.comb += [
            is_ext.eq(~sel.matches(*internal_sel)),
            self.pins.eq(Mux(is_ext, self.ext_inputs, first)),
        ]
        for j in range(self.step - 1):
            m.d.comb += self.pins_later[j].eq(Mux(is_ext, self.ext_later[j], later[j]))

        return m

    def _model(self, m):
        from ..model import ModelTarget
        regs, shift = self.regs, self.shift
        m.submodules.model = model = ModelTarget()
        for port, reg in MODEL_PARAM_REGS.items():
            value = getattr(regs, reg)
            m.d.comb += getattr(model, port).eq(value if port == "seed" else value >> shift)
        # Registered: the reset fans out over the whole model.
        model_reset = Signal(init=1)
        m.d.sync += model_reset.eq(regs.MODEL_CTRL[0] | (regs.TARGET_SEL != Target.MODEL)
                                   | self.hold)
        m.d.comb += [
            model.irq.eq(self.stim0),
            model.load_en.eq(self.load_en),
            model.reset.eq(model_reset),
            model.app_enable.eq(regs.MODEL_CTRL[1]),
            regs.TRUTH_OVERFLOW.eq(model.truth_overflow),
        ]
        # The truth records, times scaled from clock cycles to ticks.
        m.submodules.truth_fifo = truth_fifo = fifo.SyncFIFOBuffered(
            width=TRUTH.payload_len * 8, depth=self.truth_depth + 1)
        src, on = model.truth, regs.STREAM_EN[2]
        rec = Signal(TruthWireRecord)
        m.d.comb += [
            rec.pulse.eq(src.payload.pulse), rec.channel.eq(src.payload.channel),
            rec.missed.eq(src.payload.missed),
            rec.latency.eq((src.payload.latency << shift)[:32]),
            rec.completion.eq((src.payload.completion << shift)[:32]),
            truth_fifo.w_data.eq(rec),
            truth_fifo.w_en.eq(src.valid & on),
            src.ready.eq(truth_fifo.w_rdy | ~on),
        ]
        packet_from_fifo(m, self.truth, PacketType.TRUTH, TRUTH, truth_fifo)
        return model

    def _soc(self, m):
        # The SoC runs in its own clock domain "soc" (50 MHz; the board or the simulation
        # harness supplies it), free-running like a real board: TARGET_SEL only routes its
        # pins. STIM0 → IRQ and LOAD_EN → GPIO input 0 are synchronised inside the SoC; its
        # GPIO outputs come as the levels at each tick of a cycle (returned, one cycle
        # late), delayed ``pin_latency`` cycles in all like the board's input buffers.
        from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, ResetSignal
        from amaranth.lib.cdc import FFSynchronizer

        from ..soc import SOC_CLK_HZ, SoC
        from ..soc_sampler import SoCSampler
        # An armed run's restart (hold), for the SoC only when it is the target.
        hold_sync, hold_soc = Signal(), Signal()
        m.d.sync += hold_sync.eq(self.hold & (self.regs.TARGET_SEL == Target.SOC))
        m.submodules.soc_hold = FFSynchronizer(hold_sync, hold_soc, o_domain="soc")
        # The SoC runs in "soc_run": the "soc" clock, reset by the board's reset or the
        # hold (the CPU is an Instance that takes its domain's reset signal, which a
        # ResetInserter would not reach).
        m.domains.soc_run = run = ClockDomain("soc_run", local=True)
        m.d.comb += [run.clk.eq(ClockSignal("soc")),
                     run.rst.eq(ResetSignal("soc") | hold_soc)]
        m.submodules.soc = soc = DomainRenamer("soc_run")(SoC(self.soc_firmware))
        m.d.comb += [soc.irq.eq(Cat(self.stim0, self.stim1)), soc.gpio_in.eq(self.load_en)]
        for name in SOC_OUTPUTS:
            m.d.comb += getattr(self, f"soc_{name}").eq(getattr(soc, name))
        m.submodules.soc_sampler = sampler = SoCSampler(
            N_INPUTS, step=self.step, sync_hz=self.clk_freq, soc_hz=SOC_CLK_HZ)
        # Each level lasts longer than a rig cycle: at most one edge of a bit per cycle,
        # which is all the capture takes (two are a glitch, dropped).
        hold = -(-SOC_CLK_HZ // self.clk_freq)
        m.d.comb += sampler.gpio.eq(held_levels(m, soc.gpio_out, hold))
        return sampler.samples


def delayed(m, value, cycles, name):
    """``value`` behind ``cycles`` registers of ``sync``."""
    for k in range(cycles):
        d = Signal.like(value, name=f"{name}_d{k}")
        m.d.sync += d.eq(value)
        value = d
    return value


def held_levels(m, out, hold, domain="soc"):
    """``out`` (signals of ``domain``) with every level of each bit shown for at least
    ``hold`` cycles of ``domain``: a bit's change comes through at once when its level
    shown has lasted that long, else when it has."""
    if hold <= 1:
        return out
    shown = Signal.like(out, name="soc_gpio_shown")
    for i in range(len(out)):
        held = Signal(name=f"soc_gpio_held{i}")
        age = Signal(range(hold), init=hold - 1, name=f"soc_gpio_age{i}")
        m.d.comb += shown[i].eq(Mux(age == hold - 1, out[i], held))
        m.d[domain] += held.eq(shown[i])
        with m.If(shown[i] != held):
            m.d[domain] += age.eq(0)
        with m.Elif(age != hold - 1):
            m.d[domain] += age.eq(age + 1)
    return shown
