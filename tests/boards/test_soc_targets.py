# SPDX-License-Identifier: BSD-2-Clause
"""The reference SoC on a board: the ``soc`` and ``soc-alone`` targets elaborate, their
PLL is exact, their pins are where the docs say, and every entry point passes the
target on. Fast (no toolchain run); the full builds are in test_boards.py."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth import C, Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from click.testing import CliRunner

from rtrig.boards import BOARDS, board_top, get_board, ulx3s
from rtrig.boards import build as build_mod
from rtrig.boards.board import BUILD_TARGETS, RIG_INPUTS, RIG_OUTPUTS
from rtrig.boards.build import build
from rtrig.boards.clocking import ECP5PLL, ecp5_pll_config
from rtrig.boards.flash import flash_command
from rtrig.boards.soc import (
    CONSOLE_BAUD,
    SOC_CLK_HZ,
    SOC_DEBUG_OUTPUTS,
    SOC_TARGET_INPUTS,
    SOC_TARGET_OUTPUTS,
    Console,
    firmware_image,
)
from rtrig.boards.timing import TimingError, check_timing
from rtrig.errors import ToolchainError, UsageError
from rtrig.gateware.soc import RAM_BYTES
from rtrig.gateware.top import GatewareTop

ROOT = Path(__file__).resolve().parents[2]
NOP = b"\x13\x00\x00\x00"          # addi x0, x0, 0: a RAM image that needs no compiler


# -- clocking ------------------------------------------------------------------------

def test_pll_makes_100_and_50_mhz_exactly():
    c = ecp5_pll_config(25_000_000, 100_000_000, 50_000_000)
    assert 25_000_000 * c["clkfb_div"] / c["clki_div"] == 100_000_000
    assert 400e6 <= c["f_vco"] <= 800e6
    assert c["f_vco"] == 100_000_000 * c["clkop_div"]
    (div,) = c["clkos_divs"]
    assert c["f_vco"] / div == 50_000_000
    assert (c["clki_div"], c["clkfb_div"], c["clkop_div"], div) == (1, 4, 6, 12)
    # The SoC alone: 50 MHz on CLKOP.
    c = ecp5_pll_config(25_000_000, 50_000_000)
    assert 25_000_000 * c["clkfb_div"] / c["clki_div"] == 50_000_000


def test_pll_refuses_an_inexact_secondary_output():
    with pytest.raises(ValueError, match="exactly"):
        ecp5_pll_config(25_000_000, 100_000_000, 33_000_000)
    with pytest.raises(ValueError, match="three secondary"):
        ecp5_pll_config(25_000_000, 100_000_000, 50e6, 50e6, 50e6, 50e6)


def test_soc_clock_is_the_firmwares():
    text = (ROOT / "firmware/boards/rtrig-soc/soc_map.h").read_text()
    (hz,) = re.findall(r"#define SOC_CPU_HZ (\d+)u", text)
    assert int(hz) == SOC_CLK_HZ


@pytest.mark.parametrize("with_rig", [True, False])
def test_ulx3s_soc_clocking(with_rig):
    board = get_board("ulx3s")
    pll = board.soc_clocking(board.platform(), with_rig=with_rig)
    assert isinstance(pll, ECP5PLL)
    pll._MustUse__silence = True
    want = ({"sync": board.clk_freq, "fast": 2 * board.clk_freq, "soc": SOC_CLK_HZ}
            if with_rig else {"soc": SOC_CLK_HZ})
    assert pll.domains == want


# -- elaboration -----------------------------------------------------------------------

def _plan(target, firmware=NOP):
    board = get_board("ulx3s")
    return board.platform().prepare(board_top(board, target, firmware), name="top")


def _text(plan, name):
    f = plan.files[name]
    return f if isinstance(f, str) else f.decode()


@pytest.mark.parametrize("target", ["soc", "soc-alone"])
def test_soc_target_elaborates(target):
    plan = _plan(target)
    lpf = _text(plan, "top.lpf")
    il = _text(plan, "top.il")
    assert "read_verilog  VexRiscv_Full.v" in _text(plan, "top.ys")
    assert "module VexRiscv" in _text(plan, "VexRiscv_Full.v")
    assert "cell \\VexRiscv " in il
    # One PLL; with the rig its CLKOS2 makes the SoC's 50 MHz (VCO 600 MHz / 12).
    assert il.count("cell \\EHXPLLL ") == 1
    if target == "soc":
        # (the rig at 30 MHz beside the SoC: VCO 600 MHz / 20, its inputs' 60 MHz / 10)
        assert 'parameter \\CLKOS2_DIV 12' in il and 'parameter \\CLKOP_DIV 20' in il
        assert 'parameter \\CLKOS_DIV 10' in il
        names = [f"rig_0__{n}__io" for n in RIG_OUTPUTS + RIG_INPUTS]
        names += [f"soc_debug_0__{n}__io" for n in SOC_DEBUG_OUTPUTS]
        assert "soc_target_0" not in lpf
    else:
        assert "CLKOS_DIV" not in il and 'parameter \\CLKOP_DIV 12' in il
        names = [f"soc_target_0__{n}__io" for n in SOC_TARGET_INPUTS + SOC_TARGET_OUTPUTS]
        assert "rig_0__" not in lpf and "soc_debug_0" not in lpf
        assert 'LOCATE COMP "uart_0__tx__io" SITE "L4"' in lpf
    for n in names:
        assert f'LOCATE COMP "{n}"' in lpf


def test_only_boards_with_soc_clocking_offer_the_soc_targets():
    for b in BOARDS.values():
        assert b.targets[0] == "rig" and set(b.targets) <= set(BUILD_TARGETS)
        if len(b.targets) > 1:
            assert b.soc_clocking is not None
    assert get_board("ulx3s").targets == ("rig", "soc", "soc-alone")
    with pytest.raises(ValueError):
        board_top(get_board("orangecrab"), "soc", NOP)


class _FakeSoC(wiring.Component):
    """The SoC's ports with fixed GPIO outputs: the Amaranth simulator cannot run the
    VexRiscv instance, and the GatewareTop's wiring is what is tested here."""

    def __init__(self, image=b"", variant="Full"):
        super().__init__({
            "irq": In(1), "gpio_in": In(1), "gpio_out": Out(6),
            "console_valid": Out(1), "console_data": Out(8), "exit_valid": Out(1),
            "exit_code": Out(32), "trace_valid": Out(1), "trace_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.gpio_out.eq(Cat(self.irq, self.gpio_in, C(0b1011, 4)))
        return m


def test_soc_rig_hands_out_the_soc_gpio(monkeypatch):
    import rtrig.gateware.soc
    monkeypatch.setattr(rtrig.gateware.soc, "SoC", _FakeSoC)
    rig = GatewareTop(with_soc=True, with_model=False, with_stats=False, fifo_depth=16,
              pin_latency=1)
    sim = Simulator(rig)
    sim.add_clock(1e-8, domain="sync")
    sim.add_clock(2e-8, domain="soc")

    async def bench(ctx):
        await ctx.tick("soc").repeat(2)
        # IRQ is STIM0 and GPIO input 0 LOAD_EN, both low after reset.
        assert ctx.get(rig.soc_gpio_out) == 0b101100
    sim.add_testbench(bench)
    sim.run()


def test_console_sends_each_byte_8n1():
    divisor = 4
    dut = Console(divisor, depth=4)
    line = []

    async def bench(ctx):
        for byte in (0x52, 0xA5):          # written back to back: the FIFO holds them
            ctx.set(dut.valid, 1)
            ctx.set(dut.data, byte)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        for _ in range(30 * divisor):
            line.append(ctx.get(dut.tx))
            await ctx.tick()
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    sent, i = [], 0
    while len(sent) < 2:
        i = line.index(0, i)               # start bit
        bits = [line[i + divisor // 2 + k * divisor] for k in range(10)]
        assert bits[0] == 0 and bits[9] == 1
        sent.append(sum(b << k for k, b in enumerate(bits[1:9])))
        i += 10 * divisor
    assert sent == [0x52, 0xA5]
    assert line[i:] == [1] * len(line[i:])
    assert SOC_CLK_HZ // CONSOLE_BAUD == 434


# -- pins ------------------------------------------------------------------------------

def _balls():
    return get_board("ulx3s").platform().connectors["gpio", 0].mapping


def test_soc_alone_pins_mirror_the_rig():
    # A straight cable: each SoC pin sits on the header pin of the rig pin it meets,
    # and faces the other way.
    assert set(ulx3s.SOC_TARGET_PINS) == set(SOC_TARGET_INPUTS + SOC_TARGET_OUTPUTS)
    for name, pin in ulx3s.SOC_TARGET_PINS.items():
        assert pin == ulx3s.PINS[name]
    assert set(SOC_TARGET_INPUTS) <= set(RIG_OUTPUTS)
    assert SOC_TARGET_OUTPUTS == RIG_INPUTS


def test_soc_debug_pins_are_spare_header_pins():
    board = get_board("ulx3s")
    platform = board.platform()
    debug = list(ulx3s.SOC_DEBUG_PINS.values())
    assert len(debug) == len(set(debug)) == len(SOC_DEBUG_OUTPUTS)
    assert not set(debug) & set(ulx3s.PINS.values())
    used = set()
    for res in (platform.lookup(*board.uart), platform.lookup("esp32", 0)):
        used |= {p for sub in res.ios if hasattr(sub, "ios") for p in sub.ios[0].names}
    assert not {_balls()[p] for p in debug} & used


def _rows(path, heading):
    """Table rows (lists of stripped cells) of the section under ``heading``."""
    text = (ROOT / path).read_text()
    section = text[text.index(heading) + len(heading):]
    section = re.split(r"\n#+ ", section)[0]
    return [[c.strip() for c in ln.strip().strip("|").split("|")]
            for ln in section.splitlines() if ln.startswith("| ")]


def _doc_name(name):
    return {"irq": "IRQ", "stim0": "STIM0"}.get(name, name.upper())


def test_soc_debug_pins_are_documented():
    rows = {r[0]: r for r in _rows("docs/boards.md", "### SoC pins (`--target soc`)")}
    balls = _balls()
    for name, pin in ulx3s.SOC_DEBUG_PINS.items():
        # | SoC pin | what | label | FPGA ball | dir |
        assert rows[_doc_name(name)][2:] == [ulx3s.label(pin), balls[pin], "out"], name


def test_soc_alone_wiring_is_documented():
    rows = {r[0]: r for r in _rows("docs/wiring.md", "## ULX3S rig → ULX3S SoC target")}
    balls = _balls()
    for name, pin in ulx3s.SOC_TARGET_PINS.items():
        # | rig pin | rig board | wire | SoC target pin | target board | ball | dir |
        row = rows[_doc_name(name)]
        label = ulx3s.label(pin)
        direction = "in" if name in SOC_TARGET_INPUTS else "out"
        assert (row[1], row[4], row[5], row[6]) == (label, label, balls[pin], direction), row


# -- entry points ----------------------------------------------------------------------

def test_firmware_errors_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        firmware_image(tmp_path / "missing.bin")
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (RAM_BYTES + 4))
    with pytest.raises(UsageError, match="does not fit"):
        firmware_image(big)
    ok = tmp_path / "ok.bin"
    ok.write_bytes(NOP)
    assert firmware_image(ok) == NOP
    with pytest.raises(UsageError, match="not found"):
        build("ulx3s", target="soc", firmware=tmp_path / "missing.bin", build_root=tmp_path)
    with pytest.raises(UsageError, match="SoC targets only"):
        build("ulx3s", firmware=ok, build_root=tmp_path)


def test_default_firmware_failure_is_a_toolchain_error(monkeypatch, tmp_path):
    import rtrig.firmware
    monkeypatch.setattr(rtrig.firmware, "FIRMWARE_DIR", tmp_path)     # no Makefile there
    with pytest.raises(ToolchainError, match="no firmware tree"):
        firmware_image()


def test_unknown_or_unsupported_target_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown target"):
        build("ulx3s", target="nope", build_root=tmp_path)
    with pytest.raises(UsageError, match="does not build target 'soc'") as e:
        build("orangecrab", target="soc", build_root=tmp_path)
    assert "ulx3s" in e.value.hint


def test_flash_command_names_the_target_bitstream(tmp_path):
    bit = flash_command("ulx3s", tmp_path, "soc-alone")[-1]
    assert bit.endswith("boards/ulx3s-soc-alone/rtrig_ulx3s_soc_alone.bit")
    assert flash_command("ulx3s", tmp_path)[-1].endswith("boards/ulx3s/rtrig_ulx3s.bit")


def test_check_timing_wants_every_domain_constrained():
    report = {"fmax": {"$glbnet$clk": {"achieved": 120.0, "constraint": 100.0}}}
    (clk,) = check_timing(report, domains={"sync": 100e6})
    assert clk.ok
    with pytest.raises(TimingError, match="clock domain soc .50 MHz. has no timing constraint"):
        check_timing(report, domains={"sync": 100e6, "soc": 50e6})
    report["fmax"]["$glbnet$soc"] = {"achieved": 80.0, "constraint": 50.0}
    assert len(check_timing(report, domains={"sync": 100e6, "soc": 50e6})) == 2


@pytest.fixture
def calls(monkeypatch):
    """Replaces the build with a recorder of its arguments."""
    seen = []

    def fake_build(name, **kwargs):
        seen.append((name, kwargs))
        raise UsageError("recorded")
    monkeypatch.setattr(build_mod, "build", fake_build)
    return seen


@pytest.mark.parametrize("target", ["soc", "soc-alone"])
def test_cli_passes_the_target(calls, target, boards_cli):
    out = CliRunner().invoke(boards_cli, ["build", "ulx3s", "--target", target,
                                      "--firmware", "fw.bin"])
    assert isinstance(out.exception, UsageError)
    assert calls == [("ulx3s", {"build_root": None, "require_hz": None, "target": target,
                                "firmware": "fw.bin", "cache": None, "stand_in": None})]


def test_cli_no_cache_turns_the_cache_off(calls, boards_cli):
    CliRunner().invoke(boards_cli, ["build", "ulx3s", "--no-cache"])
    assert calls[-1][1]["cache"] is False
    CliRunner().invoke(boards_cli, ["build", "ulx3s"])
    assert calls[-1][1]["cache"] is None


def test_cli_refuses_a_target_the_board_lacks(calls, boards_cli):
    out = CliRunner().invoke(boards_cli, ["build", "icebreaker", "--target", "soc"])
    assert isinstance(out.exception, UsageError) and not calls
    out = CliRunner().invoke(boards_cli, ["build", "--all", "--target", "soc"])
    assert isinstance(out.exception, UsageError) and not calls


def test_cli_lists_targets(boards_cli):
    out = CliRunner().invoke(boards_cli, ["build", "--list"])
    assert "targets rig, soc, soc-alone" in out.output


def test_bad_target_is_one_line_without_traceback():
    for argv in (["-m", "rtrig", "build", "orangecrab", "--target", "soc"],
                 ["-c", "from rtrig.host.cli import main; main()", "build", "ulx3s",
                  "--target", "soc", "--firmware", "/nonexistent.bin"]):
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == UsageError.exit_code, proc.stderr
        assert "Traceback" not in proc.stderr
        assert len([ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]) == 1


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["soc", "soc-alone"])
def test_make_bitstream_passes_the_target(target):
    proc = subprocess.run(["make", "-n", "bitstream", "BOARD=ulx3s", f"TARGET={target}",
                           "FIRMWARE=fw.bin"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    cmd = " ".join(proc.stdout.replace("\\\n", " ").split())
    assert f"rtrig build ulx3s --target {target} --firmware fw.bin" in cmd
    proc = subprocess.run(["make", "-n", "bitstream", "BOARD=ulx3s"], capture_output=True,
                          text=True, cwd=ROOT)
    assert "rtrig build ulx3s --target rig" in proc.stdout
