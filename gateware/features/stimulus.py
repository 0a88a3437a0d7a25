# SPDX-License-Identifier: BSD-2-Clause
"""The stimulus feature: the interrupt pulses the rig drives into the target, and LOAD_EN."""

from amaranth import Module, Signal
from amaranth.lib.wiring import Out

from ..feature import Feature
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

    Members
    -------
    stim0, stim1, load_en : Out(1)
        The rig → target outputs (``sync`` domain, registered).
    running : Out(1)
        The generator's ``running``.
    start : Out(1)
        One-cycle pulse: ``STIM_CTRL`` written with ``RUN`` set (the generator's
        ``start``; it is ignored while running).
    regs : Out(Signature)
        ``STIM_CTRL`` .. ``STIM_STATUS``, ``LOAD_EN``; ``STIM_BURST``, ``STIM_GAP``
        (with ``bursts``).
    """

    def __init__(self, step=4, bursts=True):
        self.shift = step.bit_length() - 1
        self.bursts = bursts
        super().__init__(
            {"stim0": Out(1), "stim1": Out(1), "load_en": Out(1), "running": Out(1),
             "start": Out(1)},
            registers=("STIM_CTRL", "STIM_PERIOD", "STIM_HIGH", "STIM_COUNT", "STIM_JITTER",
                       "STIM1_OFFSET", "STIM_SEED", "STIM_PULSES", "STIM_STATUS", "LOAD_EN")
            + (("STIM_BURST", "STIM_GAP") if bursts else ()),
            write_strobes=("STIM_CTRL",))

    def elaborate(self, platform):
        m = Module()
        regs, shift = self.regs, self.shift
        if self.bursts:
            m.submodules.gen = gen = StimulusGenerator()
        else:
            m.submodules.gen = gen = LeanStimulusGenerator()
        # Start/stop registered once more (off the write decode's path).
        start, stop = Signal(), Signal()
        m.d.sync += [start.eq(regs.STIM_CTRL_wrote & regs.w_value[0]),
                     stop.eq(regs.STIM_CTRL_wrote & ~regs.w_value[0])]
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
            regs.STIM_STATUS.eq(gen.running),
            self.stim0.eq(gen.stim0),
            self.stim1.eq(gen.stim1),
            self.running.eq(gen.running),
            self.start.eq(start),
            self.load_en.eq(regs.LOAD_EN[0]),
        ]
        if self.bursts:
            m.d.comb += [gen.burst.eq(regs.STIM_BURST), gen.gap.eq(regs.STIM_GAP >> shift)]
        return m
