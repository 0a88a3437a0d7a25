# SPDX-License-Identifier: BSD-2-Clause
"""The line-rate twin: the rig's link at a real board's 3 Mbaud (``--sim-link line``).

The default twin's link is fast (7.5 Mbaud: four of the ECP5 rig's 30 MHz cycles per
bit) so that simulations are not held up by shifting bits; what depends on the real link's bandwidth — saturation, the accounting
of records the link could not carry, ``--mode auto`` — is checked here at 3 Mbaud.
"""

import json
import os
import subprocess
import sys

import pytest

from rtrig import load
from rtrig.host import CaptureSettings, open_rig, run_capture
from rtrig.host.sim import FAST_DIVISOR, sim_board

# One worker for the module: its module-scoped twin runs are made once, not once
# per worker that takes one of its tests.
pytestmark = pytest.mark.xdist_group("line-rate")

BOARD = sim_board()
#: What the board's rig with the 3 Mbaud divisor (10 at 30 MHz) really runs at.
LINE_BAUD = BOARD.clk_freq // (BOARD.clk_freq // BOARD.baud)


@pytest.fixture(scope="module")
def line_rig():
    with open_rig(sim=True, sim_link="line", log=lambda m: None) as session:
        yield session


def test_each_twin_reports_the_link_it_has(line_rig):
    assert line_rig.info["baud"] == LINE_BAUD == 3_000_000
    with open_rig(sim=True, log=lambda m: None) as fast:
        assert fast.info["baud"] == BOARD.clk_freq // FAST_DIVISOR == 7_500_000


def test_saturated_link_counts_every_record_it_could_not_carry(line_rig, tmp_path):
    # 100 kHz × one 24-byte record is 8× what 3 Mbaud carries: the rig's FIFO fills and
    # the rest is dropped at the rig, counted in LAT_OVERFLOW, never lost silently.
    n = 3000
    s = CaptureSettings(freq=100_000, count=n, target="loopback", delay=0.5e-6)
    res = run_capture(line_rig, s, tmp_path / "sat.rtrig", progress=False)
    rec = load(res.path).channel("isr")
    assert res.link["lat_overflow"] > 1000
    assert len(rec) + res.link["lat_overflow"] == n
    assert res.final["status"] == "incomplete"
    assert (rec["latency"] == 60).all()                    # what arrived is exact
    assert res.link["crc_errors"] == 0 and res.link["lost_packets"] == 0
    # the link ran at its line rate (~12 k records per second of rig time, 30 ms of
    # pulses) and the FIFO (512 records) drained after the last pulse
    assert len(rec) < 512 + 16 + 0.03 * 15_000


def test_a_capture_beyond_the_line_rate_fits_the_fast_twin(tmp_path):
    # 20 kHz × 24 bytes is 1.6× what 3 Mbaud carries, 65 % of the fast twin's 7.5 Mbaud
    n = 3000
    s = CaptureSettings(freq=20_000, count=n, target="loopback", delay=0.5e-6)
    with open_rig(sim=True, log=lambda m: None) as fast:
        res = run_capture(fast, s, tmp_path / "fast.rtrig", progress=False)
    assert res.link["lat_overflow"] == 0 and res.final["status"] == "complete"
    assert len(load(res.path).channel("isr")) == n


@pytest.mark.parametrize("link,mode", [("line", "statistics"), ("fast", "records")])
def test_auto_mode_decides_from_the_link_the_rig_reports(link, mode, tmp_path):
    # 20 kHz of ISR records is 1.9× what 3 Mbaud carries (with margin), 76 % of the
    # fast twin's link; 2000 pulses are too many for the rig's FIFO to absorb.
    out = tmp_path / "auto.rtrig"
    r = subprocess.run(
        [sys.executable, "-m", "rtrig", "--sim", "--sim-link", link, "capture",
         "--target", "loopback", "--delay", "1us", "--freq", "20k", "--count", "2000",
         "--json", "-o", str(out)],
        capture_output=True, text=True, env=dict(os.environ, RTRIG_PORT=""))
    assert r.returncode == 0, r.stderr
    assert f"mode: {mode} (auto" in r.stderr
    d = json.loads(r.stdout)
    assert d["mode"] == mode
    isr = d["channels"]["isr"]
    assert (isr["answered"], isr["missed"]) == (2000, 0)
    assert isr["min_ns"] == isr["max_ns"] == 1000
