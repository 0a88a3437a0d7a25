# SPDX-License-Identifier: BSD-2-Clause
"""The Amaranth simulation every gateware test runs: one ``sync`` clock (10 ns), one
async testbench; a VCD per test when ``RTRIG_VCD`` names a directory."""

import os

from amaranth.sim import Simulator


def run(dut, tb, vcd=None):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    if os.environ.get("RTRIG_VCD"):
        with sim.write_vcd(f"{os.environ['RTRIG_VCD']}/{vcd or 'tb'}.vcd"):
            sim.run()
    else:
        sim.run()


def edges(levels):
    """(cycle, new level) for every change of a sampled 0/1 sequence."""
    out, prev = [], 0
    for c, v in enumerate(levels):
        if v != prev:
            out.append((c, v))
        prev = v
    return out
