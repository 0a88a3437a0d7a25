# SPDX-License-Identifier: BSD-2-Clause
"""How long an MF step runs (rtrig.host.procedures.beat) and what it does to a sweep's search:
against fake measurements whose miss needs the target's tick at one phase of the pulse
train."""

import math
import random

import pytest

from rtrig.host.procedures.beat import cover_ticks, max_phase_gap, step_pulses, target_tick
from rtrig.host.procedures.search import search_threshold

TICK_HZ = 100_000_000
TICK = 100_000              # the target's 1 ms tick in rig ticks


def test_max_phase_gap_by_hand():
    assert max_phase_gap(0.25, 4) == pytest.approx(0.25)      # phases 0, ¼, ½, ¾
    assert max_phase_gap(0.25, 2) == pytest.approx(0.75)      # 0, ¼: the gap ¼ → 1
    assert max_phase_gap(0.3, 1) == 1.0


@pytest.mark.parametrize("period", [588, 1770, 1923, 2083, 2500.5, 10_025])
@pytest.mark.parametrize("gap", [0.05, 0.02])
def test_cover_ticks_is_the_fewest_that_cover(period, gap):
    k = cover_ticks(period, TICK, gap)
    assert k is not None
    ratio = TICK / period
    assert max_phase_gap(ratio, k) <= gap < max_phase_gap(ratio, k - 1)


def test_cover_ticks_none_when_the_phases_repeat():
    # a tick of exactly 10 periods meets the train at one phase only, 10.25 at four
    assert cover_ticks(1000, 10_000, 0.02) is None
    assert cover_ticks(1000, 10_250, 0.3) == 4
    assert cover_ticks(1000, 10_250, 0.2) is None
    assert cover_ticks(1000, 0, 0.02) == 0


def test_step_pulses():
    assert step_pulses(1770, 0, 200, 0.02, 20_000) == (200, 0)        # no tick
    n, k = step_pulses(1770, TICK, 200, 0.02, 20_000, jitter=8)
    assert k == cover_ticks(1774, TICK, 0.02)
    assert n * 1774 >= (k + 1) * TICK and (n - 1) * 1774 < (k + 1) * TICK
    assert step_pulses(1770, TICK, 200, 0.02, 500, jitter=8) == (500, None)   # capped
    assert step_pulses(1000, 10_000, 200, 0.02, 5_000) == (5_000, None)       # locked
    # a step never sends fewer than the base pulses
    assert step_pulses(30_000, TICK, 200, 0.4, 20_000) == (200, 3)


def test_target_tick():
    assert target_tick(None, "soc", None, TICK_HZ) == TICK
    assert target_tick(None, "external", None, TICK_HZ) == TICK
    assert target_tick(0.0, "soc", None, TICK_HZ) == 0
    assert target_tick(None, "model", {"tick_period": 5_000}, TICK_HZ) == 5_000
    assert target_tick(None, "model", {"tick_period": 0}, TICK_HZ) == 0
    assert target_tick(2e-3, "model", {"tick_period": 5_000}, TICK_HZ) == 200_000


class PhaseFake:
    """Above ``thr`` Hz a pulse is missed only when a tick lands in the first ``window``
    of a pulse period, below it never, from ``sat`` Hz on always (the CPU no longer
    keeps up, tick or not). Every step starts at a random phase of the tick
    (``rng``), as a real step starts whenever the host gets to it; ``pulses(period,
    jitter)`` says how many pulses a step sends. The stimulus jitter is the sweep's
    automatic one for a target with an unknown tick (0.5 % of the period); its mean
    sets the period the ticks meet (its randomness is left out, so a phase a step does
    not meet by the beat it does not meet at all)."""

    def __init__(self, thr, sat, window, pulses, rng):
        self.thr, self.sat, self.window, self.pulses, self.rng = thr, sat, window, pulses, rng
        self.calls = []

    def __call__(self, f, phase):
        self.calls.append((f, phase))
        if f < self.thr or f >= self.sat:
            return f >= self.sat
        period = round(TICK_HZ / f)
        jitter = int(period * 0.005)
        mean = period + jitter / 2
        ticks = math.floor(self.pulses(period, jitter) * mean / TICK)
        start = self.rng.random()
        return any((start + i * TICK / mean) % 1.0 < self.window for i in range(ticks))


def quantize(f):
    return TICK_HZ / round(TICK_HZ / f)


def sweep(rule, seed, thr=47_000.0, sat=60_000.0, window=0.03):
    fake = PhaseFake(thr, sat, window, rule, random.Random(seed))
    t = search_threshold(fake, 10_000, 400_000, quantize=quantize, what="APP miss")
    return t, fake


def test_a_short_step_misses_the_tick_phase_and_the_confirmation_fails():
    # 200 pulses at ~50 kHz meet the tick about four times: a 3 % window is met by
    # chance, so the figure lands anywhere between the threshold and saturation, and
    # its confirmation fails in some sweeps
    results = [sweep(lambda period, jitter: 200, seed)[0] for seed in range(10)]
    assert any(t.confirmed is not True for t in results)
    assert any(t.hz > 47_000 * 1.05 for t in results)


def test_steps_covering_every_phase_confirm_the_threshold():
    def rule(period, jitter):
        return step_pulses(period, TICK, 200, 0.02, 10**6, jitter)[0]

    for seed in range(10):
        t, fake = sweep(rule, seed)
        assert t.confirmed is True, seed
        assert t.below_hz < 47_000 <= t.hz and t.hz / t.below_hz <= 1.005, seed
        assert [p for _, p in fake.calls][-2:] == ["confirm", "confirm"]


def test_sweeper_steps_cover_the_tick_and_the_confirmation_looks_again(tmp_path, monkeypatch):
    # A rig in statistics mode whose target misses above 47 kHz only once in every
    # ~4000 pulses (a rare phase), at pulses drawn at random for every step: each MF
    # step sends the pulses that cover the 1 ms tick (or --max-pulses when it cannot),
    # and the confirmation at the frequency that missed sends up to 5 × --max-pulses.
    import types

    from rtrig.host.procedures import sweep as sweep_mod

    rng = random.Random(7)
    sent = []

    def fake_count(self, settings, channel):
        n = settings.count
        sent.append((settings.freq, n))
        first = rng.randrange(8000) if settings.freq >= 47_000 else None
        if first is not None and first < n:
            return first + 1, 1, 0, "ended early", first + 1
        return n, 0, 0, "complete", n

    monkeypatch.setattr(sweep_mod._Sweeper, "_count_misses", fake_count)
    counters = {"crc_errors": 0, "lost_packets": 0, "bad_payloads": 0, "duplicates": 0}
    session = types.SimpleNamespace(tick_hz=TICK_HZ, stim_step=1, sim=None,
                                    host_counters=lambda: dict(counters),
                                    has_statistics=lambda: True,
                                    info={"version": 1, "build_hash": 0, "board": 0})
    st = sweep_mod.SweepSettings(10_000, 400_000, target="soc", channels=("app",))
    res = sweep_mod.run_sweep(session, st, tmp_path / "s.rtrig", log=lambda m: None)
    mf = [s for s in res.steps if s["figure"] == "mf_app"]
    assert len(mf) == len(sent)
    for s, (_, n) in zip(mf, sent):
        want, k = step_pulses(s["period_ticks"], TICK, 200, 0.02, 20_000, s["jitter_ticks"])
        if s["phase"] == "confirm" and s is mf[-1]:
            assert n == 100_000                     # the frequency that missed, again
        else:
            assert n == want and s["cover_ticks"] == k
    t = res.figures["mf_app_hz"]
    assert t.below_hz < 47_000 <= t.hz and t.confirmed is True
    assert res.meta["sweep"]["tick_ticks"] == TICK and res.meta["sweep"]["max_pulses"] == 20_000
