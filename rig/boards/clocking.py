# SPDX-License-Identifier: BSD-2-Clause
"""PLL instances for the rig's ``sync`` clock (and the SoC's ``soc`` clock) on Lattice
ECP5 and iCE40 parts.

The divider search follows the limits of the datasheets; a frequency the PLL
cannot make exactly is an error, because the tick rate is reported to the host as
an integer (register ``TICK_HZ``) and must be the true one.

No explicit constraint is put on the ``sync`` (or ``soc``) net: nextpnr derives each
PLL output's frequency from the board clock's constraint and the divider parameters
("Derived frequency constraint" in its log, for CLKOP and CLKOS alike), which is
exactly the frequency made; a name-based constraint would depend on how the net is
named after flattening.
"""

from amaranth import ClockDomain, ClockSignal, Const, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer

__all__ = ["ecp5_pll_config", "ice40_pll_config", "ECP5PLL", "ICE40PLL"]


def ecp5_pll_config(f_in, f_out, *f_secondary):
    """Dividers of an ECP5 ``EHXPLLL`` making ``f_out`` from ``f_in`` (Hz), exactly.

    Limits from Lattice FPGA-TN-02200 (ECP5 sysCLOCK PLL), table 10.1: PFD
    3.125–400 MHz, VCO 400–800 MHz, CLKI_DIV 1–128, CLKFB_DIV 1–80, CLKOP_DIV 1–128.
    Feedback is taken from CLKOP, so ``f_out = f_in * CLKFB_DIV / CLKI_DIV``.
    ``f_secondary`` are up to three more outputs (CLKOS, CLKOS2, CLKOS3), each the VCO
    divided by an integer 1–128; they must be exact too.
    Returns ``dict(clki_div, clkfb_div, clkop_div, f_vco, clkos_divs)``.
    """
    if len(f_secondary) > 3:
        raise ValueError("an EHXPLLL has three secondary outputs (CLKOS, CLKOS2, CLKOS3)")
    best = None
    for clki_div in range(1, 129):
        f_pfd = f_in / clki_div
        if f_pfd < 3.125e6:
            break
        if f_pfd > 400e6:
            continue
        for clkfb_div in range(1, 81):
            if f_in * clkfb_div != f_out * clki_div:
                continue
            for clkop_div in range(1, 129):
                f_vco = f_out * clkop_div
                if not 400e6 <= f_vco <= 800e6:
                    continue
                if any(f_vco % f or not 1 <= f_vco // f <= 128 for f in f_secondary):
                    continue
                cand = dict(clki_div=clki_div, clkfb_div=clkfb_div, clkop_div=clkop_div,
                            f_vco=f_vco, clkos_divs=tuple(int(f_vco // f) for f in f_secondary))
                # Prefer a VCO near the middle of its range.
                if best is None or abs(f_vco - 600e6) < abs(best["f_vco"] - 600e6):
                    best = cand
    if best is None:
        wanted = " and ".join(f"{f} Hz" for f in (f_out, *f_secondary))
        raise ValueError(f"ECP5 PLL cannot make exactly {wanted} from {f_in} Hz")
    return best


def ice40_pll_config(f_in, f_out):
    """Dividers of an iCE40 ``SB_PLL40_*`` (simple feedback) making ``f_out`` exactly.

    Limits from Lattice iCE40 sysCLOCK PLL design guide (FPGA-TN-02052), as used by
    icepll: PFD 10–133 MHz, VCO 533–1066 MHz, DIVR 0–15, DIVF 0–127, DIVQ 1–6;
    ``f_out = f_in * (DIVF + 1) / (DIVR + 1) / 2**DIVQ``.
    Returns ``dict(divr, divf, divq, filter_range)``.
    """
    for divr in range(16):
        f_pfd = f_in / (divr + 1)
        if not 10e6 <= f_pfd <= 133e6:
            continue
        for divq in range(1, 7):
            for divf in range(128):
                f_vco = f_pfd * (divf + 1)
                if not 533e6 <= f_vco <= 1066e6:
                    continue
                if f_in * (divf + 1) == f_out * (divr + 1) * 2 ** divq:
                    # FILTER_RANGE by PFD frequency, as icepll chooses it.
                    bounds = [17e6, 26e6, 44e6, 66e6, 101e6]
                    filter_range = sum(f_pfd >= b for b in bounds) + 1
                    return dict(divr=divr, divf=divf, divq=divq, filter_range=filter_range)
    raise ValueError(f"iCE40 PLL cannot make exactly {f_out} Hz from {f_in} Hz")


class ECP5PLL(Elaboratable):
    """Drives clock domains (defined by the caller) from a board clock pin through an
    ``EHXPLLL``.

    ``clk_pin`` is the board clock port (requested with ``dir="-"``). CLKOP (the
    feedback output) drives ``domain`` at ``f_out``; ``secondary`` maps up to three more
    domains to their frequencies, made on CLKOS, CLKOS2, CLKOS3 in that order, with
    their rising edges aligned to CLKOP's (every output's coarse phase is its divider
    − 1, as for CLKOP). Every domain is held in reset until the PLL locks, each
    through its own reset synchroniser (2 stages of that domain), except the domains
    named in ``gated``: their clock is stopped until the PLL locks (a ``DCCA`` clock
    buffer enabled by the lock signal, synchronised to CLKOP), so they start from
    their flip-flops' initial values and need no reset (define them with
    ``ClockDomain(reset_less=True)``). A reset reaches every flip-flop of its domain
    through general routing; on an 85F that route alone can exceed a fast
    clock's period.
    """

    def __init__(self, clk_pin, f_in, f_out, *, domain="sync", secondary=None, gated=()):
        self.clk_pin = clk_pin
        self.f_in = f_in
        self.f_out = f_out
        self.domain = domain
        self.secondary = dict(secondary or {})
        self.gated = frozenset(gated)
        self.config = ecp5_pll_config(f_in, f_out, *self.secondary.values())

    @property
    def domains(self):
        """Every domain driven, with its frequency in Hz."""
        return {self.domain: self.f_out, **self.secondary}

    def elaborate(self, platform):
        m = Module()
        c = self.config
        m.submodules.clk_buf = clk_buf = io.Buffer("i", self.clk_pin)
        locked = Signal()
        # The PLL's outputs; a gated domain's clock is its output through a DCCA.
        raw = {d: Signal(name=f"pll_{d}") for d in self.domains}
        outputs = {}
        ports = ("S", "S2", "S3")[:len(self.secondary)]
        for (domain, f), port, div in zip(self.secondary.items(), ports, c["clkos_divs"],
                                          strict=True):
            outputs.update({
                f"a_FREQUENCY_PIN_CLKO{port}": f"{f / 1e6:g}",
                f"p_CLKO{port}_ENABLE": "ENABLED", f"p_CLKO{port}_DIV": div,
                f"p_CLKO{port}_CPHASE": div - 1, f"p_CLKO{port}_FPHASE": 0,
                f"o_CLKO{port}": raw[domain],
            })
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{self.f_in / 1e6:g}",
            a_FREQUENCY_PIN_CLKOP=f"{self.f_out / 1e6:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=c["clki_div"], p_CLKFB_DIV=c["clkfb_div"],
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=c["clkop_div"],
            p_CLKOP_CPHASE=c["clkop_div"] - 1, p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="CLKOP",
            i_RST=Const(0), i_STDBY=Const(0),
            i_CLKI=clk_buf.i, o_CLKOP=raw[self.domain],
            i_CLKFB=raw[self.domain],
            i_PHASESEL0=Const(0), i_PHASESEL1=Const(0), i_PHASEDIR=Const(1),
            i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1), i_PLLWAKESYNC=Const(0),
            i_ENCLKOP=Const(0),
            o_LOCK=locked,
            **outputs,
        )
        if self.gated:
            # The lock signal, synchronised to the free-running CLKOP, enables the gated
            # clocks (a DCCA switches its output on and off without glitches).
            m.domains.pll_fb = ClockDomain("pll_fb", local=True, reset_less=True)
            m.d.comb += ClockSignal("pll_fb").eq(raw[self.domain])
            clk_en = Signal()
            m.submodules.lock_sync = FFSynchronizer(locked, clk_en, o_domain="pll_fb")
        for domain in self.domains:
            if domain in self.gated:
                m.submodules[f"gate_{domain}"] = Instance(
                    "DCCA", i_CLKI=raw[domain], i_CE=clk_en, o_CLKO=ClockSignal(domain))
            else:
                m.d.comb += ClockSignal(domain).eq(raw[domain])
                m.submodules[f"reset_sync_{domain}"] = ResetSynchronizer(~locked, domain=domain)
        return m


class ICE40PLL(Elaboratable):
    """Drives the ``sync`` domain (defined by the caller) through an ``SB_PLL40_PAD``.

    ``clk_pin`` is the board clock port (requested with ``dir="-"``); on the
    iCE40UP5K the PLL must be fed from its dedicated pad (pin 35 on the SG48).
    With ``fast`` (a domain name), an ``SB_PLL40_2F_PAD`` makes ``2 * f_out`` on port A
    for that domain (reset-less: define it with ``ClockDomain(reset_less=True)``) and
    ``f_out`` on port B (``GENCLK_HALF``, rising edges aligned with port A's) for
    ``sync``.
    """

    def __init__(self, clk_pin, f_in, f_out, fast=None):
        self.clk_pin = clk_pin
        self.f_in = f_in
        self.f_out = f_out
        self.fast = fast
        self.config = ice40_pll_config(f_in, 2 * f_out if fast else f_out)

    @property
    def domains(self):
        """Every domain driven, with its frequency in Hz."""
        return {"sync": self.f_out, **({self.fast: 2 * self.f_out} if self.fast else {})}

    def elaborate(self, platform):
        m = Module()
        c = self.config
        locked = Signal()
        common = dict(
            p_FEEDBACK_PATH="SIMPLE",
            p_DIVR=c["divr"], p_DIVF=c["divf"], p_DIVQ=c["divq"],
            p_FILTER_RANGE=c["filter_range"],
            i_PACKAGEPIN=self.clk_pin.io,
            i_RESETB=Const(1), i_BYPASS=Const(0),
            o_LOCK=locked,
        )
        if self.fast:
            m.submodules.pll = Instance(
                "SB_PLL40_2F_PAD",
                p_PLLOUT_SELECT_PORTA="GENCLK", p_PLLOUT_SELECT_PORTB="GENCLK_HALF",
                o_PLLOUTGLOBALA=ClockSignal(self.fast),
                o_PLLOUTGLOBALB=ClockSignal("sync"),
                **common,
            )
        else:
            m.submodules.pll = Instance(
                "SB_PLL40_PAD",
                p_PLLOUT_SELECT="GENCLK",
                o_PLLOUTGLOBAL=ClockSignal("sync"),
                **common,
            )
        m.submodules.reset_sync = ResetSynchronizer(~locked, domain="sync")
        return m
