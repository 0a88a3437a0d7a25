# SPDX-License-Identifier: BSD-2-Clause
"""The register file, generated from the register map in :mod:`rtrig.protocol`."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..protocol import REGISTERS, Access

__all__ = ["RegisterFile"]


class RegisterFile(wiring.Component):
    """32-bit registers at 16-bit addresses, from :data:`rtrig.protocol.REGISTERS`.

    ``rw[name]`` are the read/write registers (reset to their map value; ``width``
    bits, the others read 0);
    ``ro[name]`` are inputs the design drives (unassigned ones read their map value);
    ``strobe[name]`` pulse for one cycle when written. A write lands one cycle after
    ``w_en`` (the address decode is registered): ``rw[name]`` changes and
    ``strobe[name]`` and ``wrote[name]`` pulse then, with the written value on
    ``w_value``.

    All ports are in the ``sync`` domain.

    Members
    -------
    addr : In(16)
    w_en : In(1)
        Write ``w_data`` to ``addr`` this cycle.
    w_data : In(32)
    r_en : In(1)
        A read of ``addr`` happens this cycle (the value is the register's value in
        this cycle); ``r_data`` holds it from the second cycle on (the read mux is
        registered in two levels: 16 registers, then the group of 16; with
        ``read_pipeline=False`` in one, from the next cycle on). The address
        decode is registered: ``addr`` must be held from the cycle before ``r_en`` and
        ``w_en``.
        ``read_strobe[name]`` pulses with ``r_en`` (read side effects).
    r_data : Out(32)
    """

    addr: In(16)
    w_en: In(1)
    w_data: In(32)
    r_en: In(1)
    r_data: Out(32)

    def __init__(self, registers=REGISTERS, absent=(), read_pipeline=True):
        super().__init__()
        self.read_pipeline = read_pipeline
        self.registers = registers
        #: Registers of blocks not built in: they read their map value, writes are
        #: ignored (no flip-flops).
        self.absent = frozenset(absent)
        self.rw, self.ro, self.strobe, self.read_strobe = {}, {}, {}, {}
        self.wrote = {}
        #: The value of the write landing this cycle (``w_data`` one cycle late).
        self.w_value = Signal(32)
        for r in registers:
            if r.access is Access.RW:
                self.rw[r.name] = Signal(r.width, init=r.reset, name=f"reg_{r.name.lower()}")
            elif r.access is Access.RO:
                self.ro[r.name] = Signal(32, init=r.reset, name=f"reg_{r.name.lower()}")
            else:
                self.strobe[r.name] = Signal(name=f"stb_{r.name.lower()}")
            if r.access is not Access.RO and r.name not in self.absent:
                self.wrote[r.name] = Signal(name=f"wr_{r.name.lower()}")
            self.read_strobe[r.name] = Signal(name=f"rd_{r.name.lower()}")

    def elaborate(self, platform):
        m = Module()
        # Address decode, registered: sel[name] is ``addr == address`` one cycle late.
        # Writes use it in the cycle after w_en; reads need addr held one cycle before
        # r_en (the command unit does both).
        sel = {}
        for r in self.registers:
            sel[r.name] = Signal(name=f"sel_{r.name.lower()}")
            m.d.sync += sel[r.name].eq(self.addr == r.addr)
        # No register at ``addr``: from the registered decode, in the r_en cycle.
        unknown = Signal()
        m.d.comb += unknown.eq(~_or_all(list(sel.values())))
        for r in self.registers:
            m.d.comb += self.read_strobe[r.name].eq(self.r_en & sel[r.name])

        # Writes land one cycle after w_en.
        w_en_q = Signal()
        m.d.sync += [w_en_q.eq(self.w_en), self.w_value.eq(self.w_data)]
        for r in self.registers:
            if r.name not in self.wrote:
                continue
            m.d.comb += self.wrote[r.name].eq(w_en_q & sel[r.name])
            with m.If(self.wrote[r.name]):
                if r.name in self.rw:
                    m.d.sync += self.rw[r.name].eq(self.w_value[:r.width])
                else:
                    m.d.comb += self.strobe[r.name].eq(1)

        # Read mux as AND-OR with the one-hot decode. Level 1 (in the r_en cycle): one
        # register per group of 16 addresses; level 2 (the next cycle): their OR.
        groups = {}
        for r in self.registers:
            if r.name in self.rw or r.name in self.ro:
                groups.setdefault(r.addr >> 4, []).append(r)
        pending, unknown_q = Signal(), Signal()
        m.d.sync += pending.eq(self.r_en)
        level1 = []
        for g, regs in sorted(groups.items()):
            v = Signal(32, name=f"rd_group{g}")
            level1.append(v)
            terms = [sel[r.name].replicate(32) & (self.rw.get(r.name) if r.name in self.rw
                                                  else self.ro[r.name]) for r in regs]
            # Loaded every cycle (no enable: ``r_en`` would fan out to every bit); level
            # 2 takes the value of the ``r_en`` cycle one cycle later.
            if self.read_pipeline:
                m.d.sync += v.eq(_or_all(terms))
            else:
                m.d.comb += v.eq(_or_all(terms))
        if self.read_pipeline:
            m.d.sync += unknown_q.eq(unknown)
            with m.If(pending):
                m.d.sync += self.r_data.eq(Mux(unknown_q, 0xDEADBEEF, _or_all(level1)))
        else:
            # One level, loaded in the r_en cycle (fewer flip-flops; slower).
            with m.If(self.r_en):
                m.d.sync += self.r_data.eq(Mux(unknown, 0xDEADBEEF, _or_all(level1)))
        return m


def _or_all(values):
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out
