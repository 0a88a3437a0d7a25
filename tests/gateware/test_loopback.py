# SPDX-License-Identifier: BSD-2-Clause
"""Exact-cycle tests of the loopback target (gateware/loopback.py)."""

import pytest
from simrun import run

from rtrig.gateware.loopback import LoopbackDelayLine


@pytest.mark.parametrize("delay", [0, 1, 2, 3, 17, 64, 65])
def test_loopback_delay_line_is_exact_up_to_its_depth(delay):
    dut = LoopbackDelayLine(depth=64)
    stim, out, too_long = [], [], []

    async def tb(ctx):
        ctx.set(dut.delay, delay)
        for c in range(300):
            s = 1 if (c % 23) in range(5, 9) or c % 41 == 0 else 0   # many edges in flight
            ctx.set(dut.stim, s)
            stim.append(s)
            out.append(ctx.get(dut.out))
            too_long.append(ctx.get(dut.too_long))
            await ctx.tick()

    run(dut, tb)
    if delay <= 64:
        k = delay + 2                     # the delay setting is registered
        assert out[k:] == stim[k - delay:len(stim) - delay] and not any(too_long[2:])
    else:
        assert not any(out) and all(too_long[2:])
