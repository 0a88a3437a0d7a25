# SPDX-License-Identifier: BSD-2-Clause
"""UART transmitter and receiver (8N1) for the host link."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import cdc, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UARTTx", "UARTRx"]


class UARTTx(wiring.Component):
    """8N1 transmitter.

    All ports are in the ``sync`` domain.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (``clk_freq // baud``).

    Members
    -------
    data : In(stream.Signature(8))
        Bytes to send.
    tx : Out(1)
        Line output, idle high.
    """

    def __init__(self, divisor):
        assert divisor >= 2
        self.divisor = divisor
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        shreg = Signal(10, init=0x3FF)
        bits = Signal(range(11))
        timer = Signal(range(self.divisor))
        m.d.comb += self.tx.eq(shreg[0])
        # A one-byte holding register beside the shift register: ``ready`` is a
        # flip-flop (the sender's wide logic hangs off it). An idle transmitter takes
        # a byte straight into the shift register; a busy one parks the next byte in
        # the holding register, from which it starts as soon as the stop bit is out.
        hold_v, hold = Signal(), Signal(8)
        m.d.comb += self.data.ready.eq(~hold_v)
        with m.If(bits == 0):
            with m.If(hold_v | self.data.valid):
                m.d.sync += [
                    shreg.eq(Cat(0, Mux(hold_v, hold, self.data.payload), 1)),
                    bits.eq(10),
                    timer.eq(self.divisor - 1),
                    hold_v.eq(0),
                ]
        with m.Else():
            with m.If(self.data.valid & ~hold_v):
                m.d.sync += [hold.eq(self.data.payload), hold_v.eq(1)]
            with m.If(timer == 0):
                m.d.sync += [
                    shreg.eq(Cat(shreg[1:], 1)),
                    bits.eq(bits - 1),
                    timer.eq(self.divisor - 1),
                ]
            with m.Else():
                m.d.sync += timer.eq(timer - 1)
        return m


class UARTRx(wiring.Component):
    """8N1 receiver sampling each bit at its middle.

    Members
    -------
    rx : In(1)
        Line input (asynchronous; synchronised here).
    data : Out(stream.Signature(8))
        Received bytes. The receiver cannot wait: a byte not taken at once is dropped
        and counted in ``errors``, as is a byte with a bad stop bit.
    errors : Out(32)
    error : Out(1)
        Strobe: ``errors`` counts one more in the next cycle.
    clear : In(1)
    """

    def __init__(self, divisor):
        assert divisor >= 4
        self.divisor = divisor
        super().__init__({
            "rx": In(1), "data": Out(stream.Signature(8)),
            "errors": Out(32), "error": Out(1), "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.sync_ff = cdc.FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(self.divisor * 3 // 2 + 1))
        shreg = Signal(8)
        bits = Signal(range(10))
        err = Signal()

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    # Sample the first data bit 1.5 bit times after the start edge.
                    m.d.sync += [timer.eq(self.divisor * 3 // 2 - 1), bits.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shreg.eq(Cat(shreg[1:], rx)), bits.eq(bits + 1),
                                 timer.eq(self.divisor - 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("STOP"):
                with m.If(timer == 0):
                    with m.If(rx):
                        m.d.comb += self.data.valid.eq(1)
                        with m.If(~self.data.ready):
                            m.d.comb += err.eq(1)
                    with m.Else():
                        m.d.comb += err.eq(1)
                    m.next = "WAIT_IDLE"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("WAIT_IDLE"):
                with m.If(rx):
                    m.next = "IDLE"
        m.d.comb += [self.data.payload.eq(shreg), self.error.eq(err)]
        with m.If(self.clear):
            m.d.sync += self.errors.eq(0)
        with m.Elif(err):
            m.d.sync += self.errors.eq(self.errors + 1)
        return m
