# SPDX-License-Identifier: BSD-2-Clause
"""Board support: every board elaborates; real builds meet timing; the check catches misses.

The build tests run the YoWASP toolchain (`make fpga-tools`) and skip with a
stated reason when it is not installed. Set RTRIG_BOARD_BUILDS=0 to skip them on
purpose (e.g. for a quick local run). The board builds use the build cache
(``rtrig.boards.cache``; `RTRIG_BUILD_CACHE`, default ~/.cache/rtrig/boards): an
unchanged build is a cache hit. `make test-boards` runs them with the cache off
(RTRIG_BUILD_CACHE=off), every build for real.
"""

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.lib import io
from click.testing import CliRunner

from rtrig.boards import BOARDS, DEFAULT_BOARDS, BoardTop, get_board
from rtrig.boards import build as build_mod
from rtrig.boards import toolchain as toolchain_mod
from rtrig.boards.board import RIG_INPUTS, RIG_OUTPUTS
from rtrig.boards.build import build, stand_in_for
from rtrig.boards.clocking import ecp5_pll_config, ice40_pll_config
from rtrig.boards.flash import flash_command
from rtrig.boards.products import build_name
from rtrig.boards.timing import TimingError, check_timing
from rtrig.boards.toolchain import tools_missing
from rtrig.errors import UsageError

#: One variant per board: the others differ only in the device (their logic is
#: elaborated for its digest in tests/boards/test_netlist.py).
ONE_VARIANT_EACH = [n for n in DEFAULT_BOARDS if not get_board(n).same_die_as
                    and n.split("-")[0] == n]


@pytest.mark.parametrize("name", ONE_VARIANT_EACH)
def test_board_elaborates(name):
    board = get_board(name)
    plan = board.platform().prepare(BoardTop(board), name="top")
    constraints = plan.files.get("top.lpf") or plan.files.get("top.pcf")
    text = constraints if isinstance(constraints, str) else constraints.decode()
    for pin in RIG_OUTPUTS + RIG_INPUTS:
        assert f"rig_0__{pin}__io" in text


def test_icebreaker_inputs_are_ddr_sampled_at_twice_the_clock():
    # The iCEBreaker's top puts every rig input through a DDR buffer (the iCE40's
    # PIN_INPUT_DDR I/O cell) clocked by the PLL's 48 MHz port; the rig runs on its
    # half-rate port and reports quarter-clock ticks.
    board = get_board("icebreaker")
    plan = board.platform().prepare(BoardTop(board), name="top")
    il = plan.files["top.il"]
    il = il if isinstance(il, str) else il.decode()
    ddr_ios = [line for line in il.splitlines() if "SB_IO" in line]
    assert len(ddr_ios) >= len(RIG_INPUTS)
    assert "SB_PLL40_2F_PAD" in il and '"GENCLK_HALF"' in il
    assert il.count("INPUT_CLK") >= len(RIG_INPUTS)
    rig = board.rig()
    rig._MustUse__silence = True    # its parameters only; the top above elaborated one
    assert rig.step == 4 and rig.pin_latency == 2
    assert not (rig.intervals or rig.bursts or rig.read_pipeline) and rig.lat_channels == 2
    assert board.tick_step == rig.step
    from rtrig.boards.build import _domains
    assert _domains(board, "rig") == {"sync": 24_000_000, "fast": 48_000_000}


def test_sim_board_choices_are_the_boards():
    from rtrig.host.cli import cli
    option = next(p for p in cli.params if p.name == "sim_board")
    assert list(option.type.choices) == list(BOARDS)


@pytest.mark.parametrize("name", list(BOARDS))
def test_rig_pins_are_distinct_header_pins(name):
    board = get_board(name)
    platform = board.platform()
    rig = platform.lookup("rig", 0)
    pins = [p for sub in rig.ios for p in sub.ios[0].names]
    assert len(pins) == len(RIG_OUTPUTS) + len(RIG_INPUTS) == len(set(pins))
    uart = platform.lookup(*board.uart)
    uart_pins = {p for sub in uart.ios if hasattr(sub, "ios") for p in sub.ios[0].names}
    assert not uart_pins & set(pins)


def test_pll_dividers_are_exact():
    c = ecp5_pll_config(25_000_000, 100_000_000)
    assert 25e6 * c["clkfb_div"] / c["clki_div"] == 100e6
    assert 400e6 <= c["f_vco"] <= 800e6
    c = ecp5_pll_config(48_000_000, 100_000_000)
    assert 48e6 * c["clkfb_div"] / c["clki_div"] == 100e6
    c = ice40_pll_config(12_000_000, 48_000_000)
    assert 12e6 * (c["divf"] + 1) / (c["divr"] + 1) / 2 ** c["divq"] == 48e6
    with pytest.raises(ValueError):
        ice40_pll_config(12_000_000, 50_000_000)


def test_tick_rates_divide_the_link_baud():
    # A UART divisor off by more than ~2 % breaks the 3 Mbaud link.
    for b in BOARDS.values():
        div = b.clk_freq // b.baud
        assert abs(b.clk_freq / div / b.baud - 1) < 0.02, b.name


def _report(achieved, constraint=100.0):
    return {"fmax": {"$glbnet$clk": {"achieved": achieved, "constraint": constraint}},
            "utilization": {}}


def test_check_timing_passes_and_fails():
    (c,) = check_timing(_report(112.3))
    assert c.ok and c.margin_pct == pytest.approx(12.3)
    with pytest.raises(TimingError, match="reaches 87.0 MHz, needs 100.0 MHz"):
        check_timing(_report(87.0), board="x")
    with pytest.raises(TimingError, match="needs 400.0 MHz"):
        check_timing(_report(112.3), require_hz=400e6)
    with pytest.raises(TimingError, match="no clock"):
        check_timing({"fmax": {}})


def test_unknown_board_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        build("no-such-board", build_root=tmp_path)


def test_faster_links_are_offered_where_the_board_has_them(tmp_path):
    # A rate the board's USB-serial chip does not make is refused before any build.
    with pytest.raises(UsageError, match="cannot run at 1.2e\\+07 baud") as e:
        build("icebreaker", build_root=tmp_path, baud=12_000_000)
    assert e.value.hint == "this board's link: 3M, 6M"
    with pytest.raises(UsageError):
        build("ulx3s", build_root=tmp_path, baud=6_000_000)      # FT231X: 3 Mbaud
    for b in BOARDS.values():
        for rate in (b.baud, *b.link_bauds):
            div = b.clk_freq // rate
            assert div >= 4 and abs(b.clk_freq / div / rate - 1) < 0.02, (b.name, rate)
    assert get_board("icebreaker").clk_freq // 6_000_000 == 4


def test_cli_lists_boards(boards_cli):
    out = CliRunner().invoke(boards_cli, ["build", "--list"])
    assert out.exit_code == 0
    for name in BOARDS:
        assert name in out.output
    # The tick, not the clock period: a quarter of the iCEBreaker's 24 MHz clock.
    ice = next(ln for ln in out.output.splitlines() if ln.startswith("icebreaker "))
    assert "24 MHz, tick 10.42 ns" in ice


def test_flash_without_bitstream_says_build_first(tmp_path, boards_cli):
    out = CliRunner().invoke(boards_cli, ["flash", "icebreaker", "--build-root", str(tmp_path)])
    assert isinstance(out.exception, UsageError)
    assert "rtrig build icebreaker" in out.exception.hint


def test_flash_dry_run_prints_the_command(tmp_path, boards_cli):
    bit = flash_command("ulx3s", tmp_path)[-1]
    os.makedirs(os.path.dirname(bit))
    open(bit, "wb").close()
    out = CliRunner().invoke(boards_cli, ["flash", "ulx3s", "--dry-run", "--build-root",
                                      str(tmp_path)])
    assert out.exit_code == 0
    assert out.output.strip() == f"openFPGALoader -b ulx3s {bit}"


# -- real builds -------------------------------------------------------------------

def _skip_reason():
    if os.environ.get("RTRIG_BOARD_BUILDS") == "0":
        return "RTRIG_BOARD_BUILDS=0"
    missing = tools_missing()
    if missing:
        return f"YoWASP FPGA tools not installed ({', '.join(missing)}); run `make fpga-tools`"
    return None


needs_tools = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def built():
    """Build results per board, built once per test process (in the project's build/,
    so the wasm cache and products are shared with `make bitstreams`).

    Under pytest-xdist each worker has its own dict; the on-disk build cache shares
    results between workers (a worker wanting a build another is running waits for
    it, then takes it from the cache). A variant with ``same_die_as`` takes its
    stand-in's result from this dict when this worker built it (with the cache off:
    `make test-boards`), else builds it (or finds it in the cache)."""
    results = {}

    def get(name, target="rig"):
        if (name, target) not in results:
            done = {n: r for (n, t), r in results.items()
                    if t == target and not isinstance(r, Exception)}
            try:
                results[name, target] = build(name, target=target,
                                              stand_in=stand_in_for(name, done))
            except TimingError as e:
                results[name, target] = e
        return results[name, target]
    return get


#: Builds (``build_name``: board, or board-target) known not to pass with the current
#: Rig, with what was measured (docs/performance.md, "FPGA boards"). Their build tests are skipped
#: rather than spending CI time on a known failure; `make bitstream BOARD=…` still
#: shows the failure. Remove an entry when the Rig gains the option that fixes it.
#: Boards whose build is known not to pass, with the measured reason (none now).
KNOWN_ISSUES = {}
BUILDABLE = [n for n in DEFAULT_BOARDS if n not in KNOWN_ISSUES]


def _die_group(name):
    """A variant and its stand-in (``same_die_as``) in one xdist group, so that
    `pytest -n 2 --dist loadgroup` builds their die once even without the cache."""
    board = get_board(name)
    group = board.same_die_as or next(
        (b.same_die_as for b in BOARDS.values() if b.same_die_as == name), None)
    marks = [pytest.mark.xdist_group(f"die-{group}")] if group else []
    return pytest.param(name, marks=marks)


#: The rig builds `make test` runs (``RTRIG_BOARD_MATRIX=family``): none. Both flows run
#: end to end in it on small designs (the iCE40 here, :class:`_CounterTop`; the ECP5 in
#: tests/boards/test_cache.py), the ECP5 and iCE40 rigs are synthesised as their
#: bitstreams are by tests/boards/test_netsim.py, and every board's placement and
#: timing is proven by `make test-boards` (``full``, the default), which every change to
#: the gateware's logic runs before it lands; ``placed.json`` holds `make test` to it
#: (tests/boards/test_netlist.py).
FAMILY_BOARDS = ()


def _matrix_skip(name):
    """Why ``name`` is not built in this run, or None."""
    matrix = os.environ.get("RTRIG_BOARD_MATRIX", "full")
    if matrix not in ("full", "family"):
        raise UsageError(f"RTRIG_BOARD_MATRIX must be full or family, not {matrix!r}")
    if matrix == "family" and name not in FAMILY_BOARDS:
        return (f"{name}: no rig is placed in this run (RTRIG_BOARD_MATRIX=family); "
                "`make test-boards` builds every board")
    return None


@needs_tools
@pytest.mark.parametrize("name", [_die_group(n) for n in DEFAULT_BOARDS])
def test_board_build_meets_timing(built, name):
    if name in KNOWN_ISSUES:
        pytest.skip(f"{name}: {KNOWN_ISSUES[name]}")
    if _matrix_skip(name):
        pytest.skip(_matrix_skip(name))
    result = built(name)
    if isinstance(result, TimingError):
        pytest.fail(str(result))
    board = get_board(name)
    assert os.path.getsize(result.bitstream) > 0
    # The rig's clock, plus (on ECP5) the PLL output that times the lock synchroniser
    # of the gated clock, and (iCEBreaker) the input registers' ``fast`` clock: every
    # one is constrained at its domain's rate and met, and every domain is timed.
    assert result.clocks and result.domains["sync"] == board.clk_freq
    rates = [f / 1e6 for f in result.domains.values()]
    for clk in result.clocks:
        assert any(clk.constraint_mhz == pytest.approx(f, rel=1e-3) for f in rates)
        assert clk.achieved_mhz >= clk.constraint_mhz
        if "iCE40" not in board.platform.device:
            # Margin, not a seed hunt: every ECP5 build closes on nextpnr's first seed
            # at least 10 % above each of its clocks (docs/performance.md).
            assert result.seed == 1 and clk.margin_pct >= 10.0, \
                f"{name}: {clk.net} at {clk.achieved_mhz:.2f} MHz on seed {result.seed}"
    for f in rates:
        assert any(c.constraint_mhz == pytest.approx(f, rel=1e-3) for c in result.clocks)
    summary = json.loads(Path(result.build_dir, "summary.json").read_text())
    assert summary["board"] == name
    if board.same_die_as:
        # Placed and routed as its stand-in; the bitstream carries its own IDCODE.
        assert result.pnr_from == board.same_die_as and summary["pnr_from"] == board.same_die_as
        assert result.device.startswith(board.platform.device)
        assert _IDCODES[board.platform.device] in Path(result.bitstream).read_bytes()


#: ECP5 IDCODEs as ecppack writes them (prjtrellis devices.json).
_IDCODES = {"LFE5U-12F": bytes.fromhex("21111043"), "LFE5U-25F": bytes.fromhex("41111043")}


class _CounterTop(Elaboratable):
    """The iCEBreaker's clocking with a small counter in each of its domains instead of
    the Rig: a real build in seconds, to test the timing check end to end."""

    def __init__(self, board):
        self.board = board

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.domains.fast = ClockDomain("fast", reset_less=True)
        m.submodules.clocking = self.board.clocking(platform)
        count, fast_count = Signal(24), Signal(24)
        m.d.sync += count.eq(count + 1)
        m.d.fast += fast_count.eq(fast_count + 1)
        pins = platform.request("rig", 0, dir="-")
        m.submodules.out = buf = io.Buffer("o", pins.stim0)
        m.submodules.out1 = buf1 = io.Buffer("o", pins.stim1)
        m.d.comb += [buf.o.eq(count[-1]), buf1.o.eq(fast_count[-1])]
        return m


@needs_tools
def test_impossible_constraint_fails(tmp_path):
    """The fresh report fails a clock it cannot reach (``check_timing``), and so does
    ``build(require_hz=…)``: that check runs on the report whether the build placed and
    routed or took it from the cache, so the second build is the first's cache entry
    (one place and route, not two)."""
    board = dataclasses.replace(get_board("icebreaker"), name="counter")
    cache = tmp_path / "cache"
    result = build("counter", board=board, top=_CounterTop(board), build_root=tmp_path,
                   cache=cache)
    assert not result.cached
    sync, fast = sorted(result.clocks, key=lambda c: c.constraint_mhz)
    assert sync.constraint_mhz == pytest.approx(board.clk_freq / 1e6, rel=1e-3) and sync.ok
    assert fast.constraint_mhz == pytest.approx(2 * board.clk_freq / 1e6, rel=1e-3) and fast.ok
    report = os.path.join(result.build_dir, "rtrig_counter.report.json")
    with pytest.raises(TimingError, match="needs 400.0 MHz"):
        check_timing(report, require_hz=400e6, board="counter")
    with pytest.raises(TimingError, match="needs 400.0 MHz"):
        build("counter", board=board, top=_CounterTop(board), build_root=tmp_path,
              require_hz=400e6, cache=cache)


@needs_tools
def test_missed_timing_is_retried_with_the_next_seed(tmp_path, monkeypatch):
    # The first seed's result is declared a miss: the build places and routes again
    # with the next seed (without synthesising again) and reports which seed made it.
    board = dataclasses.replace(get_board("icebreaker"), name="counter", seeds=(1, 7))
    calls = []

    def first_misses(report, board_name, domains):
        calls.append(board_name)
        return len(calls) > 1

    monkeypatch.setattr(build_mod, "_timing_met", first_misses)
    result = build("counter", board=board, top=_CounterTop(board), build_root=tmp_path,
                   cache=False)
    assert (result.seed, result.seeds_missed) == (7, [1])
    pnr = Path(result.build_dir, "build_rtrig_counter_pnr.sh").read_text()
    assert "YOSYS" not in pnr.split("NEXTPNR")[1]       # only place, route and pack again
    assert os.path.getsize(result.bitstream) > 0 and result.clocks[0].ok
    summary = json.loads(Path(result.build_dir, "summary.json").read_text())
    assert summary["seed"] == 7 and summary["seeds_missed"] == [1]


@needs_tools
def test_place_and_route_out_of_time_is_a_clear_failure(tmp_path, monkeypatch):
    # Seed 1 misses; the retry with seed 2 runs out of time (simulated: the runner
    # reports a timeout without running it). The build fails with one line naming both.
    board = dataclasses.replace(get_board("icebreaker"), name="counter", seeds=(1, 2),
                                pnr_timeout=123)
    real_run = toolchain_mod._run

    def run(cmd, cwd, env, log_path, timeout):
        assert timeout == 123
        return None if cmd[-1].endswith("_pnr.sh") else real_run(cmd, cwd, env, log_path,
                                                                   timeout)

    monkeypatch.setattr(build_mod, "_timing_met", lambda report, name, domains: False)
    monkeypatch.setattr(toolchain_mod, "_run", run)
    with pytest.raises(TimingError, match=r"did not finish within 123 s \(nextpnr seeds 1, 2"):
        build("counter", board=board, top=_CounterTop(board), build_root=tmp_path, cache=False)


def test_run_kills_a_step_that_runs_out_of_time(tmp_path):
    log = tmp_path / "log"
    t0 = time.monotonic()
    assert toolchain_mod._run(["sh", "-c", "sleep 30 & sleep 30"], tmp_path, None, log, 0.5) is None
    assert time.monotonic() - t0 < 10 and "killed after 0.5 s" in log.read_text()
    assert toolchain_mod._run(["sh", "-c", "exit 3"], tmp_path, None, log, 5) == 3


#: The SoC bitstreams (board, target): the rig with the SoC, and the SoC alone.
SOC_BUILDS = [("ulx3s", "soc"), ("ulx3s", "soc-alone")]


@needs_tools
@pytest.mark.parametrize("name,target", SOC_BUILDS)
def test_soc_build_meets_timing(built, name, target):
    key = build_name(name, target)
    if key in KNOWN_ISSUES:
        pytest.skip(f"{key}: {KNOWN_ISSUES[key]}")
    if _matrix_skip(key):
        pytest.skip(_matrix_skip(key))
    result = built(name, target)
    if isinstance(result, TimingError):
        pytest.fail(str(result))
    assert os.path.getsize(result.bitstream) > 0
    assert result.target == target
    # Every domain's frequency is a clock constraint in the report, and every clock
    # of the report meets its own.
    got = [c.constraint_mhz for c in result.clocks]
    for domain, hz in result.domains.items():
        assert any(c == pytest.approx(hz / 1e6, rel=1e-3) for c in got), domain
    # With margin on nextpnr's first seed, as the rig alone (test_board_build_meets_timing).
    assert result.seed == 1
    for c in result.clocks:
        assert c.margin_pct >= 10.0, f"{key}: {c.net} at {c.achieved_mhz:.2f} MHz"
    assert result.resources["PLL"]["used"] == 1
    summary = json.loads(Path(result.build_dir, "summary.json").read_text())
    assert summary["target"] == target and summary["firmware"]["bytes"] > 0
    board = get_board(name)
    assert summary["clk_hz"] == (board.clk_freq if target == "soc" else 50_000_000)
