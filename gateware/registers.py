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
    ``strobe[name]`` pulse for one cycle when written.

    Members
    -------
    addr : In(16)
    w_en : In(1)
        Write ``w_data`` to ``addr`` this cycle.
    w_data : In(32)
    r_en : In(1)
        A read of ``addr`` happens this cycle; ``r_data`` holds the value from the
        next cycle on. ``read_strobe[name]`` pulses with it (read side effects).
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
        for r in registers:
            if r.access is Access.RW:
                self.rw[r.name] = Signal(32, init=r.reset, name=f"reg_{r.name.lower()}")
            elif r.access is Access.RO:
                self.ro[r.name] = Signal(32, init=r.reset, name=f"reg_{r.name.lower()}")
            else:
                self.strobe[r.name] = Signal(name=f"stb_{r.name.lower()}")
            self.read_strobe[r.name] = Signal(name=f"rd_{r.name.lower()}")

    def elaborate(self, platform):
        m = Module()
        with m.Switch(self.addr):
            for r in self.registers:
                with m.Case(r.addr):
                    with m.If(self.r_en):
                        m.d.comb += self.read_strobe[r.name].eq(1)
                        if r.name in self.rw:
                            m.d.sync += self.r_data.eq(self.rw[r.name])
                        elif r.name in self.ro:
                            m.d.sync += self.r_data.eq(self.ro[r.name])
                        else:
                            m.d.sync += self.r_data.eq(0)
                    with m.If(self.w_en):
                        if r.name in self.rw:
                            m.d.sync += self.rw[r.name].eq(self.w_data)
                        elif r.name in self.strobe:
                            m.d.comb += self.strobe[r.name].eq(1)
            with m.Default():
                with m.If(self.r_en):
                    m.d.sync += self.r_data.eq(0xDEADBEEF)
        return m
