# SPDX-License-Identifier: BSD-2-Clause
"""The stimulus feature: the interrupt pulses the rig drives into the target, and LOAD_EN."""

from amaranth import Cat, Module, Signal
from amaranth.lib.wiring import In, Out

from ..feature import Feature
from ..run_arm import RunArm
from ..stimulus_generator import StimulusGenerator
from ..stimulus_generator_lean import LeanStimulusGenerator

__all__ = ["Stimulus"]


class Stimulus(Feature):
    """The stimulus feature: STIM0/STIM1 and LOAD_EN, set through their registers.

    Parameters
    ----------
    step : int
        Ticks per clock cycle: the tick settings are used in clock cycles (divided by
        ``step``, rounded down); ``STIM_COUNT`` and ``STIM_SEED`` are not times.
    bursts : bool
        Bursts (``STIM_BURST``, ``STIM_GAP``):
        :class:`~rtrig.gateware.stimulus_generator.StimulusGenerator`. Without,
        :class:`~rtrig.gateware.stimulus_generator_lean.LeanStimulusGenerator` (fewer
        cells; the same pulse trains cycle for cycle and the same signature, but no
        bursts: ``STIM_BURST`` and ``STIM_GAP`` are then not built in).
    restart : bool
        The rig has an internal target (model or SoC) to restart for an armed run:
        ``STIM_LEAD`` and the hold are built in. Without, an armed run's first STIM0
        rise is at ``RUN_AT`` itself, ``RESTART`` is ignored and ``STIM_LEAD`` is not
        built in (it reads 0).
    armed : bool
        Armed runs (``RUN_AT``, ``STIM_STATUS.ARMED``; ``CAPS.ARMED``). Without (a rig
        with no internal target, where cells are short: the iCEBreaker's), ``AT`` is
        ignored and ``RUN_AT_LO``, ``RUN_AT_HI`` and ``STIM_LEAD`` are not built in.

    A run starts at once when ``STIM_CTRL`` is written with ``RUN``, or, with ``AT``
    too, at rig time ``RUN_AT`` (:class:`~rtrig.gateware.run_arm.RunArm`): its first
    STIM0 rise ``STIM_LEAD`` ticks later, the internal target held in reset until then
    with ``RESTART``.

    Members
    -------
    now : In(48)
        The timebase, ticks (``RUN_AT`` is compared with it).
    hold : Out(1)
        An armed run with ``RESTART`` waits: keep the internal target in reset.
    stim0, stim1, load_en : Out(1)
        The rig → target outputs (``sync`` domain, registered).
    running : Out(1)
        The generator's ``running``.
    start : Out(1)
        One-cycle pulse: the run starts (the generator's ``start``; it is ignored
        while running): ``STIM_CTRL`` written with ``RUN`` set and ``AT`` clear, or an
        armed run's time come.
    regs : Out(Signature)
        ``STIM_CTRL`` .. ``STIM_STATUS``, ``RUN_AT_LO``, ``RUN_AT_HI``, ``STIM_LEAD``,
        ``LOAD_EN``; ``STIM_BURST``, ``STIM_GAP`` (with ``bursts``).
    """

    def __init__(self, step=4, bursts=True, restart=True, armed=True):
        if restart and not armed:
            raise ValueError("a rig that restarts its target arms its runs")
        self.step = step
        self.restart = restart
        self.armed = armed
        self.shift = step.bit_length() - 1
        self.bursts = bursts
        super().__init__(
            {"now": In(48), "hold": Out(1), "stim0": Out(1), "stim1": Out(1),
             "load_en": Out(1), "running": Out(1), "start": Out(1)},
            registers=("STIM_CTRL", "STIM_PERIOD", "STIM_HIGH", "STIM_COUNT", "STIM_JITTER",
                       "STIM1_OFFSET", "STIM_SEED", "STIM_PULSES", "STIM_STATUS")
            + (("RUN_AT_LO", "RUN_AT_HI") if armed else ())
            + (("STIM_LEAD",) if restart else ()) + ("LOAD_EN",)
            + (("STIM_BURST", "STIM_GAP") if bursts else ()),
            write_strobes=("STIM_CTRL",))

    def elaborate(self, platform):
        m = Module()
        regs, shift = self.regs, self.shift
        if self.bursts:
            m.submodules.gen = gen = StimulusGenerator()
        else:
            m.submodules.gen = gen = LeanStimulusGenerator()
        if self.armed:
            start, stop, armed = self._arm(m, gen)
        else:
            # AT ignored: a run starts when its write lands.
            start, stop, armed = Signal(), Signal(), 0
            wrote, value = regs.STIM_CTRL_wrote, regs.w_value
            m.d.sync += [start.eq(wrote & value[0]), stop.eq(wrote & ~value[0])]
        m.d.comb += [
            gen.period.eq(regs.STIM_PERIOD >> shift),
            gen.high.eq(regs.STIM_HIGH >> shift),
            gen.count.eq(regs.STIM_COUNT),
            gen.jitter.eq(regs.STIM_JITTER >> shift),
            gen.offset.eq(regs.STIM1_OFFSET >> shift),
            gen.seed.eq(regs.STIM_SEED),
            gen.stim1_en.eq(regs.STIM_CTRL[1]),
            gen.start.eq(start),
            gen.stop.eq(stop),
            regs.STIM_PULSES.eq(gen.pulses),
            regs.STIM_STATUS.eq(Cat(gen.running, armed)),
            self.stim0.eq(gen.stim0),
            self.stim1.eq(gen.stim1),
            self.running.eq(gen.running),
            self.start.eq(start),
            self.load_en.eq(regs.LOAD_EN[0]),
        ]
        if self.bursts:
            m.d.comb += [gen.burst.eq(regs.STIM_BURST), gen.gap.eq(regs.STIM_GAP >> shift)]
        return m

    def _arm(self, m, gen):
        """The armed start (:class:`~rtrig.gateware.run_arm.RunArm`): (start, stop,
        armed)."""
        regs = self.regs
        m.submodules.arm = arm = RunArm(self.step, restart=self.restart)
        # Start/arm/stop registered once more (off the write decode's path).
        now_start, stop = Signal(), Signal()
        wrote, value = regs.STIM_CTRL_wrote, regs.w_value
        m.d.sync += [now_start.eq(wrote & value[0] & ~value[2]),
                     arm.arm.eq(wrote & value[0] & value[2]),
                     arm.restart.eq(value[3]),
                     stop.eq(wrote & ~value[0])]
        start = Signal()
        m.d.comb += [
            arm.now.eq(self.now),
            arm.at.eq(Cat(regs.RUN_AT_LO, regs.RUN_AT_HI)),
            *([arm.lead.eq(regs.STIM_LEAD)] if self.restart else []),
            arm.stop.eq(stop),
            arm.running.eq(gen.running),
            start.eq(now_start | arm.start),
            self.hold.eq(arm.hold),
        ]
        return start, stop, arm.armed
