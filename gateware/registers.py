"""The register file, generated from the register map in :mod:`rtrig.protocol`."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..protocol import REGISTERS, Access

__all__ = ["RegisterFile"]


class RegisterFile(wiring.Component):
    """32-bit registers at 16-bit addresses, from :data:`rtrig.protocol.REGISTERS`.

    ``rw[name]`` are the read/write registers (reset to their map value);
    ``ro[name]`` are inputs the design drives (unassigned ones read their map value);
    ``strobe[name]`` pulse for one cycle when written. A write lands one cycle after
    ``w_en`` (the address decode is registered): ``rw[name]`` changes and
    ``strobe[name]`` and ``wrote[name]`` pulse then, with the written value on
    ``w_value``.

    Members
    -------
    addr : In(16)
    w_en : In(1)
        Write ``w_data`` to ``addr`` this cycle.
    w_data : In(32)
    r_en : In(1)
        A read of ``addr`` happens this cycle (the value is the register's value in
        this cycle); ``r_data`` holds it from the second cycle on (the read mux is
        registered in two levels: 16 registers, then the group of 16).
        ``read_strobe[name]`` pulses with ``r_en`` (read side effects).
    r_data : Out(32)
    """

    addr: In(16)
    w_en: In(1)
    w_data: In(32)
    r_en: In(1)
    r_data: Out(32)

    def __init__(self, registers=REGISTERS):
        super().__init__()
        self.registers = registers
        self.rw, self.ro, self.strobe, self.read_strobe = {}, {}, {}, {}
        self.wrote = {}
        #: The value of the write landing this cycle (``w_data`` one cycle late).
        self.w_value = Signal(32)
        for r in registers:
            if r.access is Access.RW:
                self.rw[r.name] = Signal(32, init=r.reset, name=f"reg_{r.name.lower()}")
            elif r.access is Access.RO:
                self.ro[r.name] = Signal(32, init=r.reset, name=f"reg_{r.name.lower()}")
            else:
                self.strobe[r.name] = Signal(name=f"stb_{r.name.lower()}")
            if r.access is not Access.RO:
                self.wrote[r.name] = Signal(name=f"wr_{r.name.lower()}")
            self.read_strobe[r.name] = Signal(name=f"rd_{r.name.lower()}")

    def elaborate(self, platform):
        m = Module()
        with m.Switch(self.addr):
            for r in self.registers:
                with m.Case(r.addr):
                    with m.If(self.r_en):
                        m.d.comb += self.read_strobe[r.name].eq(1)

        # Writes: decode registered, the write lands one cycle after w_en.
        w_en_q = Signal()
        m.d.sync += [w_en_q.eq(self.w_en), self.w_value.eq(self.w_data)]
        for r in self.registers:
            if r.name not in self.wrote:
                continue
            hit = Signal(name=f"hit_{r.name.lower()}")
            m.d.sync += hit.eq(self.w_en & (self.addr == r.addr))
            m.d.comb += self.wrote[r.name].eq(w_en_q & hit)
            with m.If(self.wrote[r.name]):
                if r.name in self.rw:
                    m.d.sync += self.rw[r.name].eq(self.w_value)
                else:
                    m.d.comb += self.strobe[r.name].eq(1)

        # Read mux, level 1 (in the r_en cycle): one register per group of 16 addresses.
        groups = {}
        for r in self.registers:
            groups.setdefault(r.addr >> 4, []).append(r)
        group_q = Signal(len(self.addr) - 4)
        pending = Signal()
        m.d.sync += pending.eq(self.r_en)
        level1 = {}
        with m.If(self.r_en):
            m.d.sync += group_q.eq(self.addr[4:])
            for g, regs in groups.items():
                level1[g] = v = Signal(32, name=f"rd_group{g}")
                with m.Switch(self.addr[:4]):
                    for r in regs:
                        with m.Case(r.addr & 0xF):
                            if r.name in self.rw:
                                m.d.sync += v.eq(self.rw[r.name])
                            elif r.name in self.ro:
                                m.d.sync += v.eq(self.ro[r.name])
                            else:
                                m.d.sync += v.eq(0)
                    with m.Default():
                        m.d.sync += v.eq(0xDEADBEEF)
        # Level 2 (the next cycle): the group.
        with m.If(pending):
            with m.Switch(group_q):
                for g, v in level1.items():
                    with m.Case(g):
                        m.d.sync += self.r_data.eq(v)
                with m.Default():
                    m.d.sync += self.r_data.eq(0xDEADBEEF)
        return m
