# SPDX-License-Identifier: BSD-2-Clause
"""Simulation tests of the on-chip statistics (exact counts, extrema, sums and bins)."""

import os
import random

import pytest
from amaranth.sim import Simulator

from rtrig.gateware.stat_accumulators import (
    PIPELINE_DEPTH,
    STAT_WORDS,
    ChannelStats,
    HeartbeatWindows,
    StatAccumulators,
    StatFlags,
)

MASK32 = 0xFFFF_FFFF


def _vcd(sim, name):
    path = os.environ.get("RTRIG_VCD")
    if path:
        return sim.write_vcd(os.path.join(path, f"{name}.vcd"))
    import contextlib
    return contextlib.nullcontext()


def rec(latency, completion=None, *, missed=False):
    """A record as the matcher gives it (missed records carry zeros)."""
    if missed:
        return (True, 0, 0)
    return (False, latency, latency + 10 if completion is None else completion)


def reference(cycles, shift, offset, n_bins):
    """What ChannelStats must hold after ``cycles`` (a list of (rec_a, rec_b), each a
    record or None), modelling the one-entry stash of the input stage."""
    out = {"answered": 0, "missed": 0, "lat_min": MASK32, "lat_max": 0, "lat_sum": 0,
           "lat_sumsq": 0, "comp_min": MASK32, "comp_max": 0, "comp_sum": 0,
           "underflow": 0, "overflow": 0, "drops": 0, "incomplete": 0, "flags": 0}
    bins = [0] * n_bins
    taken = []
    stash = None
    for a, b in list(cycles) + [(None, None)] * 2:
        answered = []
        for r in (a, b):
            if r is None:
                continue
            if r[0]:
                out["missed"] += 1
            else:
                answered.append(r)
        if stash is not None:
            taken.append(stash)
            stash = answered[0] if answered else None
            out["drops"] += max(0, len(answered) - 1)
        elif answered:
            taken.append(answered[0])
            stash = answered[1] if len(answered) > 1 else None
    for _, lat, comp in taken:
        out["answered"] += 1
        out["lat_min"] = min(out["lat_min"], lat)
        out["lat_max"] = max(out["lat_max"], lat)
        out["lat_sum"] += lat
        out["lat_sumsq"] += lat * lat
        out["comp_min"] = min(out["comp_min"], comp)
        out["comp_max"] = max(out["comp_max"], comp)
        out["comp_sum"] += comp
        if lat < offset:
            out["underflow"] += 1
        elif (lat - offset) >> shift >= n_bins:
            out["overflow"] += 1
        else:
            bins[(lat - offset) >> shift] += 1
    return out, bins


def _set_rec(ctx, port, valid, r):
    ctx.set(valid, r is not None)
    if r is not None:
        missed, lat, comp = r
        ctx.set(port.missed, missed)
        ctx.set(port.latency, lat)
        ctx.set(port.completion, comp)


def run_channel(cycles, *, shift=0, offset=0, n_bins=16, enable=None, extra=None):
    """Clear a ChannelStats, wait for the sweep, feed ``cycles``, read everything back.

    Returns (figures, bins, busy_cycles)."""
    dut = ChannelStats(n_bins=n_bins)
    got = {}

    async def bench(ctx):
        ctx.set(dut.bin_shift, shift)
        ctx.set(dut.bin_offset, offset)
        ctx.set(dut.enable, 1)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        busy = 0
        while ctx.get(dut.busy):
            busy += 1
            await ctx.tick()
        got["busy"] = busy
        for k, (a, b) in enumerate(cycles):
            if enable is not None:
                ctx.set(dut.enable, enable(k))
            _set_rec(ctx, dut.rec_a, dut.rec_a_valid, a)
            _set_rec(ctx, dut.rec_b, dut.rec_b_valid, b)
            if extra is not None:
                await extra(ctx, dut, k)
            await ctx.tick()
        ctx.set(dut.rec_a_valid, 0)
        ctx.set(dut.rec_b_valid, 0)
        await ctx.tick().repeat(PIPELINE_DEPTH)
        ctx.set(dut.enable, 0)
        for name in STAT_WORDS:
            # A reserved word has no port (it reads 0 through the window).
            got[name] = ctx.get(getattr(dut, name)) if hasattr(dut, name) else 0
        # The same figures through the word window (two cycles behind word_sel).
        words = []
        for i in range(32):
            ctx.set(dut.word_sel, i)
            await ctx.tick().repeat(2)
            words.append(ctx.get(dut.word))
        got["words"] = words
        bins = []
        for i in range(n_bins):
            ctx.set(dut.hist_addr, i)
            await ctx.tick().repeat(2)
            bins.append(ctx.get(dut.hist_data))
        got["bins"] = bins

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    with _vcd(sim, "stats"):
        sim.run()
    words = got.pop("words")
    for name, (first, n) in STAT_WORDS.items():
        value = sum(words[first + i] << (32 * i) for i in range(n))
        assert value == got[name], f"word window disagrees on {name}"
    assert all(w == 0 for w in words[max(f + n for f, n in STAT_WORDS.values()):])
    return got, got.pop("bins"), got.pop("busy")


def check(cycles, **kw):
    got, bins, busy = run_channel(cycles, **kw)
    exp, exp_bins = reference(cycles, kw.get("shift", 0), kw.get("offset", 0),
                              kw.get("n_bins", 16))
    assert got == exp
    assert bins == exp_bins
    assert sum(bins) + got["underflow"] + got["overflow"] == got["answered"]
    return got, bins, busy


def test_known_sequence():
    cycles = [(None, None)] * 3
    for lat in (5, 7, 5, 12, 3):
        cycles += [(rec(lat), None), (None, None), (None, None)]
    cycles += [(rec(0, missed=True), None), (None, None)]
    got, bins, busy = check(cycles, shift=1, offset=2)
    assert busy == 16                      # one bin per cycle
    assert got["answered"] == 5 and got["missed"] == 1
    assert (got["lat_min"], got["lat_max"], got["lat_sum"]) == (3, 12, 32)
    assert got["lat_sumsq"] == 25 + 49 + 25 + 144 + 9
    assert (got["comp_min"], got["comp_max"], got["comp_sum"]) == (13, 22, 82)
    # bins of 2 ticks from 2: 3 → 0, 5 → 1 (twice), 7 → 2, 12 → 5
    assert bins[:6] == [1, 2, 1, 0, 0, 1] and sum(bins) == 5


def test_back_to_back_same_bin():
    # Every cycle a record, all to one bin: each read sees the previous write.
    cycles = [(rec(9), None)] * 20
    got, bins, _ = check(cycles, n_bins=16)
    assert bins[9] == 20 and got["answered"] == 20


def test_back_to_back_patterns():
    # a b a b, a a b b, a b c a: forwarding and the write two cycles back.
    lats = [1, 2, 1, 2, 1, 1, 2, 2, 3, 4, 5, 3, 3, 0, 15, 0, 15, 15]
    check([(rec(v), None) for v in lats])


def test_two_records_per_cycle():
    # The matcher's common case: an answer and a miss in the same cycle.
    cycles = [(rec(4), rec(0, missed=True)), (rec(4), rec(0, missed=True)),
              (rec(6), None), (None, rec(0, missed=True))]
    got, bins, _ = check(cycles)
    assert got["answered"] == 3 and got["missed"] == 3 and got["drops"] == 0
    assert bins[4] == 2 and bins[6] == 1


def test_two_answers_per_cycle_stash_and_drops():
    # Two answers in one cycle: the second waits in the stash. Two such cycles in a
    # row overflow it: exactly one record dropped and counted.
    cycles = [(rec(1), rec(2)), (None, None), (rec(3), rec(4)), (rec(5), rec(6)),
              (rec(7), None), (None, rec(8)), (None, None), (None, None)]
    got, bins, _ = check(cycles)
    assert got["drops"] == 1
    assert got["answered"] == 7                  # 8 offered, 1 dropped
    assert got["answered"] + got["missed"] + got["drops"] == 8


def test_out_of_range_is_counted():
    # offset 100, bins of 4 ticks, 16 bins: in range 100..163.
    lats = [0, 99, 100, 103, 104, 163, 164, 1000, MASK32, 99, 164]
    got, bins, _ = check([(rec(v, completion=MASK32 - 1), None) for v in lats],
                         shift=2, offset=100)
    assert got["underflow"] == 3 and got["overflow"] == 4
    assert bins[0] == 2 and bins[1] == 1 and bins[15] == 1
    assert got["lat_max"] == MASK32 and got["lat_min"] == 0
    assert got["comp_max"] == MASK32 - 1


def test_large_values_sums_exact():
    # Carries across the 48-bit halves of the sum of squares, back to back.
    lats = [MASK32] * 9 + [MASK32 - 12345, 1 << 31, (1 << 24) + 1]
    got, _, _ = check([(rec(v, completion=v), None) for v in lats], shift=31)
    assert got["lat_sumsq"] == sum(v * v for v in lats)
    assert got["flags"] == 0


def test_reserved_incomplete_word_and_shift_31():
    # No record is incomplete (the flag is gone from the LATENCY record): every
    # answered record counts its completion, and the reserved word reads 0.
    cycles = [(rec(50, 55), None), (None, None), (rec(60, 70), None)]
    got, bins, _ = check(cycles, shift=31)
    assert got["incomplete"] == 0
    assert (got["comp_min"], got["comp_max"], got["comp_sum"]) == (55, 70, 125)
    assert bins[0] == 2


def test_enable_gates_records():
    cycles = [(rec(k % 16), None) for k in range(12)]
    got, bins, _ = run_channel(cycles, enable=lambda k: k % 3 != 0)
    exp, exp_bins = reference([c for k, c in enumerate(cycles) if k % 3], 0, 0, 16)
    assert got == exp and bins == exp_bins


def test_bin_saturates_with_flag():
    dut = ChannelStats(n_bins=4, count_width=3)
    out = {}

    async def bench(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        await ctx.tick().repeat(4)
        ctx.set(dut.rec_a_valid, 1)
        ctx.set(dut.rec_a.latency, 2)
        await ctx.tick().repeat(10)
        ctx.set(dut.rec_a_valid, 0)
        await ctx.tick().repeat(PIPELINE_DEPTH)
        ctx.set(dut.enable, 0)
        ctx.set(dut.hist_addr, 2)
        await ctx.tick().repeat(2)
        out["bin"] = ctx.get(dut.hist_data)
        out["flags"] = ctx.get(dut.flags)
        out["answered"] = ctx.get(dut.answered)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert out == {"bin": 7, "flags": StatFlags.BIN_SATURATED, "answered": 10}


def test_clear_sweep_drops_and_rezeroes():
    # Records during the sweep are dropped and counted; a second clear re-zeroes bins.
    dut = ChannelStats(n_bins=8)
    out = {}

    async def feed(ctx, lat, n):
        ctx.set(dut.rec_a_valid, 1)
        ctx.set(dut.rec_a.latency, lat)
        await ctx.tick().repeat(n)
        ctx.set(dut.rec_a_valid, 0)

    async def bench(ctx):
        ctx.set(dut.enable, 1)
        await feed(ctx, 3, 5)                   # before any clear: memory starts zeroed
        await ctx.tick().repeat(PIPELINE_DEPTH)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        assert ctx.get(dut.busy) and ctx.get(dut.answered) == 0
        await feed(ctx, 5, 3)                   # during the sweep: dropped
        await ctx.tick().repeat(5)
        assert not ctx.get(dut.busy)
        await feed(ctx, 6, 2)
        await ctx.tick().repeat(PIPELINE_DEPTH)
        ctx.set(dut.enable, 0)
        for name in ("answered", "drops", "lat_min", "lat_max"):
            out[name] = ctx.get(getattr(dut, name))
        bins = []
        for i in range(8):
            ctx.set(dut.hist_addr, i)
            await ctx.tick().repeat(2)
            bins.append(ctx.get(dut.hist_data))
        out["bins"] = bins

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert out == {"answered": 2, "drops": 3, "lat_min": 6, "lat_max": 6,
                   "bins": [0, 0, 0, 0, 0, 0, 2, 0]}


def test_random_matcher_like_stream():
    rnd = random.Random(7)
    cycles = []
    for _ in range(400):
        gap = rnd.choice([0, 0, 0, 1, 2, 5])
        cycles += [(None, None)] * gap
        a = rec(rnd.choice([rnd.randrange(0, 40), rnd.randrange(0, 1 << 32)]),
                completion=rnd.randrange(0, 1 << 32)) \
            if rnd.random() < 0.8 else rec(0, missed=True)
        b = rec(0, missed=True) if rnd.random() < 0.2 else None
        cycles.append((a, b))
    got, _, _ = check(cycles, shift=1, offset=4, n_bins=16)
    assert got["drops"] == 0


def test_default_size_clear_sweep():
    got, bins, busy = run_channel([(rec(1023), None)], n_bins=1024)
    assert busy == 1024 and bins[1023] == 1 and got["answered"] == 1


def test_heartbeat_windows():
    dut = HeartbeatWindows()
    edges = {5, 6, 7, 12, 30, 31, 55}
    out = {}

    async def bench(ctx):
        ctx.set(dut.window, 10)
        ctx.set(dut.clear, 1)
        await ctx.tick()                      # cycle 0: clear; stimulus not running
        ctx.set(dut.clear, 0)
        lasts = []
        for c in range(1, 80):
            ctx.set(dut.running, 20 <= c < 61)
            ctx.set(dut.edge, c in edges)
            await ctx.tick()
            lasts.append(ctx.get(dut.last))
        out.update(last=lasts, min=ctx.get(dut.min), max=ctx.get(dut.max),
                   windows=ctx.get(dut.windows))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # Windows restart at cycle 0 (clear) and 20 (stimulus start): [0,10) holds 5, 6, 7;
    # [10,20) is cut by the start; [20,30), [30,40), [40,50), [50,60) lie inside the run
    # (0, 2, 0, 1 edges); [60,70) does not (running fell at 61).
    assert out["last"][10] == 3               # visible one cycle after the window
    assert out["windows"] == 4
    assert (out["min"], out["max"]) == (0, 2)
    assert out["last"][60] == 1 and out["last"][70] == 0


def test_statistics_read_windows():
    """Auto-incrementing windows at the command unit's read spacing (4 cycles)."""
    dut = StatAccumulators(n_channels=2, n_bins=8)
    out = {}

    async def read_window(ctx, sel_we, rd, data, start, n):
        ctx.set(dut.sel_data, start)
        ctx.set(sel_we, 1)
        await ctx.tick()
        ctx.set(sel_we, 0)
        await ctx.tick().repeat(3)
        values = []
        for _ in range(n):
            values.append(ctx.get(data))      # sampled by the register file at r_en
            ctx.set(rd, 1)
            await ctx.tick()
            ctx.set(rd, 0)
            await ctx.tick().repeat(3)
        return values

    async def bench(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        while ctx.get(dut.status) & 1:
            await ctx.tick()
        for ch, lats in ((0, [1, 1, 7]), (1, [2, 3, 3, 3, 100])):
            for v in lats:
                ctx.set(dut.rec_a_valid, 1 << ch)
                ctx.set(dut.rec_a[ch].latency, v)
                ctx.set(dut.rec_a[ch].completion, v + 1)
                await ctx.tick()
        ctx.set(dut.rec_a_valid, 0)
        await ctx.tick().repeat(PIPELINE_DEPTH)
        ctx.set(dut.enable, 0)
        out["hist"] = await read_window(ctx, dut.hist_sel_we, dut.hist_rd, dut.hist_data, 0, 16)
        out["stat1"] = await read_window(ctx, dut.stat_sel_we, dut.stat_rd, dut.stat_data,
                                         32, 22)
        out["info"] = ctx.get(dut.info)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert out["hist"] == [0, 2, 0, 0, 0, 0, 0, 1] + [0, 0, 1, 3, 0, 0, 0, 0]
    w = out["stat1"]
    assert w[STAT_WORDS["answered"][0]] == 5
    assert (w[STAT_WORDS["lat_min"][0]], w[STAT_WORDS["lat_max"][0]]) == (2, 100)
    assert w[STAT_WORDS["lat_sum"][0]] == 111
    assert w[STAT_WORDS["lat_sumsq"][0]] == 4 + 27 + 10000
    assert w[STAT_WORDS["overflow"][0]] == 1
    assert out["info"] == 3 | 2 << 8 | 32 << 16


@pytest.mark.parametrize("n_bins", [3, 1000])
def test_bins_must_be_power_of_two(n_bins):
    class Refused(ChannelStats):
        _MustUse__silence = True     # never elaborated: its constructor raises
    with pytest.raises(ValueError):
        Refused(n_bins=n_bins)
