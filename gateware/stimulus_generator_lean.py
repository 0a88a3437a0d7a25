# SPDX-License-Identifier: BSD-2-Clause
"""Stimulus generator for small FPGAs: the pulse generator, built for area."""

from types import SimpleNamespace

from amaranth import Cat, Module, Signal

from .stimulus_generator import LFSR_TAPS, StimulusGenerator

__all__ = ["LeanStimulusGenerator"]

# Signals kept through synthesis: ABC maps for depth and, left free, merges the compares
# into the logic around them and duplicates parts of them (about 15% more LUTs here).
KEEP = {"keep": 1}


def _equal(m, a, b, name):
    """``a == b`` built as one LUT4 per two bit pairs and an AND of those."""
    width = max(len(a), len(b))
    a, b = a.as_unsigned(), b.as_unsigned()
    pairs = []
    for i in range(0, width, 2):
        pair = Signal(name=f"{name}_{i}", attrs=KEEP)
        m.d.comb += pair.eq(a[i:i + 2] == b[i:i + 2])
        pairs.append(pair)
    eq = Signal(name=name, attrs=KEEP)
    m.d.comb += eq.eq(Cat(*pairs).all())
    return eq


class LeanStimulusGenerator(StimulusGenerator):
    """Generates STIM0/STIM1 pulse trains in few logic cells, in the ``sync`` domain.

    The pulse trains are those of
    :class:`~rtrig.gateware.stimulus_generator.StimulusGenerator`, cycle for cycle: pulse ``k`` of STIM0 rises ``period + r_k`` ticks after pulse
    ``k-1`` and stays high ``high`` ticks; STIM1, when enabled at the rising edge of
    STIM0, rises ``offset`` ticks later (with it for ``offset = 0``) and stays high
    ``high`` ticks. With ``start`` high in cycle ``c`` the first STIM0 pulse is high
    from cycle ``c + 2``. The extra delays ``r_k`` are the same draws from the same
    LFSR, stepped in the same cycles: rejection sampling of ``0..jitter`` on the 32-bit
    Galois LFSR seeded by ``seed`` at ``start``; a draw begins after each rising edge
    and the value in hand at the next rising edge is used (for the first period of a
    train 0: ``start`` sets it, so no run inherits the last one's draw).

    Where :class:`StimulusGenerator` runs four down-counters and registers the settings
    derived from its inputs, this block keeps one up-counter of the position within
    the current period (``period`` ticks, then the ``r_k`` extra ones) and compares it
    with the settings as they are: equality compares and one addition
    (``offset + high``) instead of counters and registered copies.

    Differences from :class:`StimulusGenerator`, none of which the rig's host can see
    (it changes settings only while stopped, its registers reset to 0, and it keeps
    ``period + jitter`` far below 2^32):

    * ``period``, ``count`` and ``offset + high`` are used through registers (a change
      takes effect one cycle later, as there), ``high`` and ``offset`` alone at once;
      the jitter mask settles over 32 cycles after ``jitter`` changes; the settings of the period in progress are not
      latched: changed while running, they move the edges of the current period (a
      ``period`` set below the position already reached lets the counter run to
      2^32).
    * After reset, before any ``start``, the draw in hand is ``2**32 - 1`` instead of
      0 (no rise uses it: ``start`` sets it to 0 in both).
    * ``period + r_k`` up to ``2**33 - 2`` is counted in full; ``StimulusGenerator``
      agrees up to ``2**32 + 1`` (beyond, its 33-bit down-counter starts negative).
    * Outside the preconditions below the outputs differ (e.g. with
      ``offset + high >= period`` STIM1 does not fall).

    Members: those of :class:`~rtrig.gateware.stimulus_generator.StimulusGenerator` (its
    signature, inherited).
    """

    def elaborate(self, platform):
        m = Module()
        j = self._jitter(m)
        rn_next, r_valid = j.rn_next, j.r_valid

        # ``pos`` counts the cycles since the rising edge (phase P, ``period`` cycles),
        # then since the end of phase P (phase J, ``r`` cycles, skipped for ``r = 0``).
        # ``wrap`` (registered) marks the cycle after the last one: the next rising edge
        # is due. Two equality compares and a phase bit cost less than an adder and a
        # compare with ``period + r``.
        pos = Signal(32)
        pos_inc = Signal(32, attrs=KEEP)
        m.d.comb += pos_inc.eq(pos + 1)
        in_j = Signal()
        rn_cur = Signal(32)         # ~r of the current period
        r_m1 = Signal(32, init=(1 << 32) - 2)   # r - 1 of the current period
        r_zero = Signal(attrs=KEEP)
        m.d.comb += r_zero.eq(rn_cur.all())
        # The compares look at ``pos`` against settings minus one, held in registers
        # (the settings change only while stopped), not at ``pos + 1``: an increment's
        # carry chain and then a compare do not fit in a 48 MHz cycle on an iCE40.
        period_m1 = Signal(32)
        m.d.sync += period_m1.eq(self.period - 1)
        at_period = _equal(m, pos, period_m1, "at_period")
        at_r = _equal(m, pos, r_m1, "at_r")
        p_end = ~in_j & at_period
        j_end = in_j & at_r
        wrap = Signal()
        m.d.sync += [pos.eq(pos_inc), wrap.eq(j_end | (p_end & r_zero))]
        with m.If(p_end | j_end):
            m.d.sync += [pos.eq(0), in_j.eq(p_end & ~r_zero)]

        issuing = Signal()          # may still issue rising edges
        s1_pending = Signal()       # STIM1 waits for its rising edge (offset > 0)
        rise = Signal()
        m.d.comb += rise.eq(issuing & wrap)

        # Events by position in phase P (in phase J they find both outputs low).
        s1_end = Signal(33, attrs=KEEP)
        m.d.sync += s1_end.eq(self.offset + self.high)
        at_high = _equal(m, pos, self.high, "at_high")
        at_offset = _equal(m, pos, self.offset, "at_offset")
        at_s1_end = _equal(m, pos, s1_end[:32], "at_s1_end")
        pulses_inc = Signal(33, attrs=KEEP)
        m.d.comb += pulses_inc.eq(self.pulses + 1)
        # This rise is the last one: ``count`` reached (never for ``count = 0``, whose
        # ``count - 1`` is 2**33 - 1 in 33 bits).
        count_m1 = Signal(33)
        m.d.sync += count_m1.eq(self.count - 1)
        last = _equal(m, self.pulses, count_m1, "last")

        with m.If(~r_valid):
            m.d.sync += j.lfsr.eq(j.lfsr_next)
            with m.If(j.accept[32]):
                m.d.sync += [rn_next.eq(j.ncand), r_valid.eq(1)]

        with m.If(at_high):
            m.d.sync += self.stim0.eq(0)

        with m.If(self.start & ~self.running):
            m.d.sync += [
                issuing.eq(1),
                pos.eq(0),
                in_j.eq(0),
                wrap.eq(1),
                self.pulses.eq(0),
                j.lfsr.eq(self.seed),
                rn_next.eq(~0),     # the first period's draw: 0, as StimulusGenerator's
                r_valid.eq(0),
                self.running.eq(1),
            ]
        with m.Elif(rise):
            m.d.sync += [
                self.stim0.eq(1),
                rn_cur.eq(rn_next),
                r_m1.eq(~rn_next - 1),
                r_valid.eq(0),
                self.pulses.eq(pulses_inc),
            ]
            with m.If(self.stop | last):
                m.d.sync += issuing.eq(0)
        with m.Elif(self.stop):
            m.d.sync += issuing.eq(0)

        self._stim1(m, rise, s1_pending, at_offset, at_s1_end)

        # Done when no more edges will be issued and both outputs are low and idle.
        with m.If(self.running & ~issuing & ~self.stim0 & ~self.stim1 & ~s1_pending
                  & ~self.start):
            m.d.sync += self.running.eq(0)
        return m

    def _stim1(self, m, rise, s1_pending, at_offset, at_s1_end):
        """STIM1, by position in phase P: it rises at ``offset`` (``pos == offset`` in
        the rising edge's own cycle means offset 0) and falls at ``offset + high``."""
        with m.If(rise):
            m.d.sync += s1_pending.eq(self.stim1_en & ~at_offset)
        with m.Elif(at_offset):
            m.d.sync += s1_pending.eq(0)
        with m.If(at_offset & (s1_pending | (rise & self.stim1_en))):
            m.d.sync += self.stim1.eq(1)
        with m.Elif(at_s1_end):
            m.d.sync += self.stim1.eq(0)

    def _jitter(self, m):
        """The jitter draw's signals: the LFSR, its next state, a candidate (inverted)
        and its accept test, and the draw in hand (``rn_next``, valid with ``r_valid``).

        The next extra delay is drawn ahead of time by rejection sampling, as in
        StimulusGenerator (same LFSR, same accept test, same cycles). The draw is kept
        inverted: the accept test ``cand <= jitter`` is then the carry out of ``jitter +
        ~cand + 1``, a bare carry chain fed by the LUTs that form ``~cand``.
        """
        lfsr = Signal(32, init=1)
        lfsr_next = Signal(32)
        m.d.comb += lfsr_next.eq(Cat(lfsr[1:], 0) ^ (LFSR_TAPS * lfsr[0]))
        # All ones up to the top set bit of ``jitter``, built over up to 32 cycles: each
        # cycle ``mask = jitter | mask >> 1`` (settles 32 cycles after ``jitter``
        # changes; the host writes it long before a start). One LUT per bit: the
        # prefix OR in one cycle is a 31-LUT chain (34 ns on an iCE40).
        mask = Signal(32)
        m.d.sync += mask.eq(self.jitter | (mask >> 1))
        ncand = Signal(32)
        accept = Signal(33)
        m.d.comb += [ncand.eq(~(lfsr_next & mask)),
                     accept.eq(self.jitter + ncand + 1)]
        rn_next = Signal(32)        # ~r of the next period (iCE40 flip-flops start at 0)
        r_valid = Signal()
        return SimpleNamespace(lfsr=lfsr, lfsr_next=lfsr_next, ncand=ncand, accept=accept,
                               rn_next=rn_next, r_valid=r_valid)
