# SPDX-License-Identifier: BSD-2-Clause
"""The pulse generator behind the stimulus feature: STIM0/STIM1 pulse trains with jitter."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["LFSR_TAPS", "StimulusGenerator", "lfsr32_next"]

#: Galois LFSR x^32 + x^22 + x^2 + x + 1 (maximal length), shifted right.
LFSR_TAPS = 0x80200003


def lfsr32_next(state):
    """One step of the jitter LFSR (Python reference of the gateware)."""
    lsb = state & 1
    state >>= 1
    if lsb:
        state ^= LFSR_TAPS
    return state


class StimulusGenerator(wiring.Component):
    """Generates STIM0/STIM1 pulse trains, in the ``sync`` domain.

    Pulse ``k`` of STIM0 rises ``period + r_k`` ticks after pulse ``k-1`` (``r_k`` is
    drawn uniformly from ``0..jitter`` by rejection sampling on a 32-bit LFSR seeded
    at ``start``; ``r_1`` is 0, every start alike, whatever ran before) and stays
    high ``high`` ticks. STIM1, when enabled, rises ``offset`` ticks after STIM0 and
    stays high ``high`` ticks. Outputs are registered: with ``start`` high in cycle
    ``c``, the first STIM0 pulse is high from cycle ``c + 2``.

    Bursts: with ``burst`` = k > 0, every k-th pulse (the last of a burst) is followed
    by ``gap + r`` ticks instead of ``period + r``, so the train is k pulses at
    ``period``, a gap, k more, ... The choice is made ahead of each rise through
    registers, so ``burst`` must be set two cycles before ``start`` (the host writes it
    long before) and ``period`` and ``gap`` must be at least 4 cycles (the host
    checks). The lean generator has the same members but no bursts (it ignores
    ``burst`` and ``gap``).

    Members
    -------
    period, high, count, jitter, offset, seed : In(32)
        Settings in ticks (``count`` in pulses, 0 = until ``stop``). Sampled while
        running through registers (``period - 1``, the jitter mask, ...), so a change
        takes effect one cycle later; the host changes them only while stopped. Needs ``1 <= high < period``
        and ``offset + high < period`` (the host checks).
    burst, gap : In(32)
        Pulses per burst (0: no bursts) and the rise-to-rise time after a burst's last
        pulse, ticks (the same conditions as ``period``).
    stim1_en : In(1)
    start : In(1)
        Pulse: begin a pulse train (ignored while running).
    stop : In(1)
        Pulse: issue no further rising edge; a pulse in progress completes.
    stim0, stim1 : Out(1)
        The outputs (registered).
    running : Out(1)
        High from ``start`` until the last pulse of both outputs has fallen.
    pulses : Out(32)
        STIM0 rising edges since the last ``start``.
    """

    period: In(32)
    high: In(32)
    count: In(32)
    jitter: In(32)
    offset: In(32)
    seed: In(32)
    burst: In(32)
    gap: In(32)
    stim1_en: In(1)
    start: In(1)
    stop: In(1)
    stim0: Out(1)
    stim1: Out(1)
    running: Out(1)
    pulses: Out(32)

    def elaborate(self, platform):
        m = Module()

        # The counters run down to -1 and are tested by their sign bit (bit 32), not by
        # a 32-bit compare with zero: each decision is one LUT from its flip-flops.
        issuing = Signal()        # may still issue rising edges
        to_rise = Signal(33)      # ticks until the next STIM0 rising edge, minus one
        hcnt0 = Signal(33)
        hcnt1 = Signal(33)
        o_pending = Signal()
        ocnt = Signal(33)

        # Jitter: draw the next extra delay ahead of time by rejection sampling.
        lfsr = Signal(32, init=1)
        mask = Signal(32)
        smear = self.jitter
        for s in (1, 2, 4, 8, 16):
            smear = smear | (smear >> s)
        m.d.sync += mask.eq(smear)

        # Settings derived once per cycle, off the pulse logic's paths (33 bits: a
        # setting of 1 gives -1).
        period_m2, high_m2, offset_m2 = (Signal(33, name=n) for n in
                                         ("period_m2", "high_m2", "offset_m2"))
        count_m1 = Signal(32)
        offset_z, count_nz = Signal(), Signal()
        m.d.sync += [period_m2.eq(self.period - 2), high_m2.eq(self.high - 2),
                     offset_m2.eq(self.offset - 2), count_m1.eq(self.count - 1),
                     offset_z.eq(self.offset == 0), count_nz.eq(self.count != 0)]
        lfsr_next = Signal(32)
        m.d.comb += lfsr_next.eq(Cat(lfsr[1:], 0) ^ (LFSR_TAPS * lfsr[0]))
        r_next = Signal(32)
        r_valid = Signal()
        cand = Signal(32)
        m.d.comb += cand.eq(lfsr_next & mask)
        with m.If(~r_valid):
            m.d.sync += lfsr.eq(lfsr_next)
            with m.If(cand <= self.jitter):
                m.d.sync += [r_next.eq(cand), r_valid.eq(1)]

        rise = Signal()
        m.d.comb += rise.eq(issuing & to_rise[32])
        sel_gap, gap_m2 = self._bursts(m, rise)
        last = Signal()           # this rise is the last one (count reached)
        m.d.comb += last.eq(count_nz & (self.pulses == count_m1))

        with m.If(self.start & ~self.running):
            m.d.sync += [
                issuing.eq(1),
                to_rise.eq(-1),
                self.pulses.eq(0),
                lfsr.eq(self.seed),
                # The first period's draw, taken at the first rise (the next cycle,
                # before any draw from the seed): 0, not what the last run left.
                r_next.eq(0),
                r_valid.eq(0),
                self.running.eq(1),
            ]
        with m.Elif(rise):
            m.d.sync += [
                self.stim0.eq(1),
                hcnt0.eq(high_m2),
                to_rise.eq(Mux(sel_gap, gap_m2, period_m2) + r_next),
                r_valid.eq(0),
                self.pulses.eq(self.pulses + 1),
            ]
            with m.If(self.stop | last):
                m.d.sync += issuing.eq(0)
            with m.If(self.stim1_en):
                with m.If(offset_z):
                    m.d.sync += [self.stim1.eq(1), hcnt1.eq(high_m2)]
                with m.Else():
                    m.d.sync += [o_pending.eq(1), ocnt.eq(offset_m2)]
        with m.Else():
            with m.If(issuing & ~to_rise[32]):
                m.d.sync += to_rise.eq(to_rise - 1)
            with m.If(self.stop):
                m.d.sync += issuing.eq(0)

        self._pulse_widths(m, rise, hcnt0, hcnt1, o_pending, ocnt, high_m2, offset_z)

        # Done when no more edges will be issued and both outputs are low and idle.
        with m.If(self.running & ~issuing & ~self.stim0 & ~self.stim1 & ~o_pending
                  & ~(self.start)):
            m.d.sync += self.running.eq(0)
        return m

    def _bursts(self, m, rise):
        """Bursts: whether the next period is the gap (``sel_gap``: this rise ends a
        burst), decided ahead from the pulses issued in this burst, through registers;
        and ``gap - 2``."""
        in_burst, burst_m1, burst_nz = Signal(32), Signal(32), Signal()
        gap_m2, sel_gap = Signal(33), Signal()
        m.d.sync += [burst_m1.eq(self.burst - 1), burst_nz.eq(self.burst != 0),
                     gap_m2.eq(self.gap - 2),
                     sel_gap.eq(burst_nz & (in_burst == burst_m1))]
        with m.If(~self.running):
            m.d.sync += in_burst.eq(0)
        with m.Elif(rise):
            m.d.sync += in_burst.eq(Mux(sel_gap, 0, in_burst + 1))
        return sel_gap, gap_m2

    def _pulse_widths(self, m, rise, hcnt0, hcnt1, o_pending, ocnt, high_m2, offset_z):
        """The falling edges of STIM0 and STIM1 (``hcnt0``, ``hcnt1``: high time left)
        and STIM1's delayed rising edge (``ocnt``: offset left while ``o_pending``), on
        the counters a rise of STIM0 loads."""
        with m.If(self.stim0 & ~rise):
            with m.If(hcnt0[32]):
                m.d.sync += self.stim0.eq(0)
            with m.Else():
                m.d.sync += hcnt0.eq(hcnt0 - 1)

        with m.If(o_pending & ~rise):
            with m.If(ocnt[32]):
                m.d.sync += [o_pending.eq(0), self.stim1.eq(1), hcnt1.eq(high_m2)]
            with m.Else():
                m.d.sync += ocnt.eq(ocnt - 1)
        with m.If(self.stim1 & ~(o_pending & ocnt[32]) & ~(rise & self.stim1_en & offset_z)):
            with m.If(hcnt1[32]):
                m.d.sync += self.stim1.eq(0)
            with m.Else():
                m.d.sync += hcnt1.eq(hcnt1 - 1)
