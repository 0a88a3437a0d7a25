# SPDX-License-Identifier: BSD-2-Clause
"""The rig is a list of features: together they declare every register of the one
register map exactly once, and a feature left out takes its registers with it."""

import pytest

from rtrig.gateware.feature import Feature
from rtrig.gateware.top import GatewareTop
from rtrig.protocol import REGISTERS


def features(rig):
    """The rig's features, not elaborated (without Amaranth's unused-object warning)."""
    out = rig.features()
    for f in [rig, *out.values()]:
        f._MustUse__silence = True
    return out


def owned(rig):
    return [name for f in features(rig).values() for name in f.registers]


#: The iCEBreaker's rig: without interval channels, bursts and the two-level read.
SMALL = {"intervals": False, "bursts": False, "read_pipeline": False, "lat_channels": 2}


@pytest.mark.parametrize("kw", [{}, SMALL, {"with_soc": True, "pin_latency": 1},
                                {"bursts": False}, {"intervals": False, "lat_channels": 2}])
def test_features_declare_every_register_once(kw):
    names = owned(GatewareTop(**kw))
    # A rig without interval channels or bursts has not their registers.
    left_out = set()
    if not kw.get("intervals", True):
        left_out |= {"LAT_EDGES"}
    if not kw.get("bursts", True):
        left_out |= {"STIM_BURST", "STIM_GAP"}
    assert sorted(names) == sorted(r.name for r in REGISTERS if r.name not in left_out)


@pytest.mark.parametrize("kw", [{}, SMALL, {"bursts": False},
                                {"intervals": False, "lat_channels": 2}])
def test_caps_say_which_of_intervals_and_bursts_are_built_in(kw):
    from rtrig.protocol import Caps
    caps = features(GatewareTop(**kw))["control"].values["CAPS"]
    assert bool(caps & Caps.INTERVALS) == kw.get("intervals", True)
    assert bool(caps & Caps.BURST) == kw.get("bursts", True)


def test_features_left_out_take_their_registers():
    # The registers that read their map value in a rig without model and statistics:
    # what the rig's earlier name-prefix rule made absent, the model's TRUTH_OVERFLOW and
    # the lead of an armed run that restarts an internal target; without armed runs,
    # RUN_AT too.
    expected = {r.name for r in REGISTERS
                if r.name.startswith(("MODEL_", "STAT_", "HIST_", "HB_")) and r.name != "HB_COUNT"}
    expected |= {"TRUTH_OVERFLOW", "STIM_LEAD"}
    for armed, more in ((True, set()), (False, {"RUN_AT_LO", "RUN_AT_HI"})):
        rig = GatewareTop(with_model=False, with_stats=False, armed=armed)
        assert {r.name for r in REGISTERS} - set(owned(rig)) == expected | more


@pytest.mark.parametrize("kw", [{}, {"with_model": False}, {"with_model": False, "armed": False},
                                {"armed": False}])
def test_caps_say_whether_runs_are_armed(kw):
    from rtrig.protocol import Caps
    caps = features(GatewareTop(**kw))["control"].values["CAPS"]
    # The model (or the SoC) is restarted by an armed run: such a rig always arms.
    assert bool(caps & Caps.ARMED) == (kw.get("armed", True) or kw.get("with_model", True))


def test_every_feature_documents_its_members():
    for name, f in features(GatewareTop(with_soc=True, pin_latency=1)).items():
        assert isinstance(f, Feature), name
        doc = type(f).__doc__
        assert "Members\n    -------" in doc, name
        for member in f.signature.members:
            if member == "regs":
                continue
            stem = member.rstrip("0123456789")
            assert stem in doc or member.split("_")[0] in doc, (name, member)


def test_uses_only_read_write_registers():
    class Bad(Feature):
        _MustUse__silence = True     # never elaborated: its constructor raises

        def __init__(self):
            super().__init__({}, registers=(), uses=("STIM_PULSES",))
    with pytest.raises(ValueError, match="only use read/write"):
        Bad()
