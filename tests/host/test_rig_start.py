# SPDX-License-Identifier: BSD-2-Clause
"""How ``Rig.run`` starts a run, by the rig's ``CAPS``: armed at a chosen rig time, or at
once on a rig built without armed runs (the iCEBreaker's board rig)."""

from rtrig.host.rig.rig import ARM_ALIGN_TICKS, Rig
from rtrig.protocol import Caps, Reg, StimCtrl, Target


class LogLink:
    """A link that logs writes and whose rig clock moves 1000 ticks per read."""

    def __init__(self):
        self.writes, self.now = [], 0

    def write(self, reg, value):
        self.writes.append((Reg(reg).name, int(value)))

    def configure(self, **regs):
        self.writes += [(name, value) for name, value in regs.items()]

    def time(self):
        self.now += 1000
        return self.now

    def read1(self, reg):
        return 0             # STIM_STATUS: not armed (started)


def _rig(caps):
    return Rig(LogLink(), {"caps": int(caps), "tick_hz": 120_000_000, "stim_step": 4})


def test_a_rig_without_armed_runs_starts_at_once():
    rig = _rig(1 << Target.EXTERNAL | 1 << Target.LOOPBACK)
    assert rig.run(stim1=True) is None and rig.last_start is None
    assert rig.link.writes == [("STIM_CTRL", int(StimCtrl.RUN | StimCtrl.STIM1_EN))]


def test_a_rig_with_armed_runs_arms_ahead_on_the_grid():
    rig = _rig(1 << Target.EXTERNAL | Caps.ARMED)
    start = rig.run()
    names = [n for n, _ in rig.link.writes]
    assert names == ["RUN_AT_LO", "RUN_AT_HI", "STIM_LEAD", "STIM_CTRL"]
    at = dict(rig.link.writes)["RUN_AT_LO"]
    assert start == {"at": at, "lead": 0, "restart": False} == rig.last_start
    assert at % ARM_ALIGN_TICKS == 0 and at > 2000
    assert dict(rig.link.writes)["STIM_CTRL"] == int(StimCtrl.RUN | StimCtrl.AT)
