# SPDX-License-Identifier: BSD-2-Clause
"""The host link feature: the UART, packet framing, register commands and the
arbiter that shares the link among the rig's packet streams (docs/protocol.md)."""

from amaranth import Module, Signal
from amaranth.lib import fifo, stream
from amaranth.lib.wiring import In, Out, connect, flipped

from ..feature import Feature
from ..link import CommandUnit, PacketRx, PacketTx, StreamRoundRobin, TxPacket
from ..uart import UARTRx, UARTTx

__all__ = ["HostLink"]


class HostLink(Feature):
    """Host → rig commands onto the register bus; rig → host responses and streams.

    Received bytes queue in a FIFO in block RAM (512 bytes; an iCE40 has no
    distributed RAM), :class:`~rtrig.gateware.link.PacketRx` checks the packets,
    :class:`~rtrig.gateware.link.CommandUnit` performs them on the register bus and
    answers (the command held on its stream until done); a round robin arbiter, with
    no register behind it, gives the transmitter to the responses and the
    ``n_streams`` packet streams in turn. One counter takes the errors of both receive
    stages.

    Parameters
    ----------
    divisor : int
        ``sync`` cycles per UART bit.
    n_streams : int
        Packet streams besides the command responses (``s0`` .. ``s{n-1}``, served in
        that order after the responses).

    Members
    -------
    uart_rx : In(1)
        Host → rig line (idle high), asynchronous (the UART receiver synchronises it).
    uart_tx : Out(1)
        Rig → host line (idle high).
    clear : In(1)
        Zero the error counters.
    addr, w_data : Out(16), Out(32)
    w_en, r_en : Out(1)
    r_data : In(32)
        The register bus (:class:`~rtrig.gateware.registers.RegisterFile`'s).
    s0 .. s{n-1} : In(stream.Signature(TxPacket))
        The packet streams (``sync``).
    regs : Out(Signature)
        ``STREAM_EN`` (read by the stream features), ``RX_ERRORS``.
    """

    def __init__(self, divisor, n_streams):
        self.divisor = divisor
        self.n_streams = n_streams
        super().__init__({
            "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1), "clear": In(1),
            "addr": Out(16), "w_en": Out(1), "w_data": Out(32), "r_en": Out(1),
            "r_data": In(32),
            **{f"s{k}": In(stream.Signature(TxPacket)) for k in range(n_streams)},
        }, registers=("STREAM_EN", "RX_ERRORS"))

    def elaborate(self, platform):
        m = Module()
        clear = self.clear
        rx_errors = Signal(32)
        m.submodules.rx = rx = UARTRx(self.divisor)
        m.submodules.rx_fifo = rx_fifo = fifo.SyncFIFOBuffered(width=8, depth=513)
        m.submodules.prx = prx = PacketRx()
        m.submodules.cmdu = cmdu = CommandUnit()
        m.d.comb += [
            rx.rx.eq(self.uart_rx),
            rx.clear.eq(clear),
            rx_fifo.w_data.eq(rx.data.payload),
            rx_fifo.w_en.eq(rx.data.valid),
            rx.data.ready.eq(rx_fifo.w_rdy),
            prx.bytes_in.payload.eq(rx_fifo.r_data),
            prx.bytes_in.valid.eq(rx_fifo.r_rdy),
            rx_fifo.r_en.eq(prx.bytes_in.ready),
            prx.clear.eq(clear),
            self.regs.RX_ERRORS.eq(rx_errors),
            self.addr.eq(cmdu.addr),
            self.w_en.eq(cmdu.w_en),
            self.w_data.eq(cmdu.w_data),
            self.r_en.eq(cmdu.r_en),
            cmdu.r_data.eq(self.r_data),
        ]
        connect(m, prx.cmd, cmdu.cmd)
        # One counter for both kinds (the blocks' own counters are unused).
        with m.If(clear):
            m.d.sync += rx_errors.eq(0)
        with m.Else():
            m.d.sync += rx_errors.eq(rx_errors + prx.error + rx.error)

        sources = [cmdu.resp] + [flipped(getattr(self, f"s{k}")) for k in range(self.n_streams)]
        m.submodules.arb = arb = StreamRoundRobin(TxPacket, len(sources))
        for k, s in enumerate(sources):
            connect(m, s, getattr(arb, f"i{k}"))
        m.submodules.ptx = ptx = PacketTx()
        m.submodules.tx = tx = UARTTx(self.divisor)
        connect(m, arb.out, ptx.pkt)
        connect(m, ptx.bytes_out, tx.data)
        m.d.comb += self.uart_tx.eq(tx.tx)
        return m
