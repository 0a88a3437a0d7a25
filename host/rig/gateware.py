# SPDX-License-Identifier: BSD-2-Clause
"""Is the rig's gateware what this rtrig builds? (:func:`check_gateware`)

A rig names its board (``BOARD``), protocol (``VERSION``) and logic (``BUILD_HASH``,
the low 32 bits of the hash of its logic). This rtrig's own build of that board's rig
gives the expected ``BUILD_HASH`` (``GatewareTop.logic_hash()``; elaborating the rig
takes seconds, so each configuration is hashed once per process). A rig on a port
whose logic differs is refused for measurements unless ``--accept-gateware`` is
given; the capture's ``META`` records the comparison either way (``gateware``).
"""

from ...errors import UsageError
from ...protocol import GATEWARE_VERSION, Target

__all__ = ["expected_hash", "check_gateware", "twin_gateware", "refuse_mismatch"]

#: Expected ``BUILD_HASH`` by rig configuration, computed once per process.
_HASHES = {}


def _key(board, baud):
    return (board.clk_freq, baud, board.code, board.with_model, board.fifo_depth,
            board.with_stats, tuple(sorted(board.rig_options.items())))


def expected_hash(board, baud=None):
    """The ``BUILD_HASH`` of this rtrig's rig for ``board`` (a :class:`Board`) at link
    rate ``baud`` (default: the board's)."""
    baud = board.baud if baud is None else baud
    key = _key(board, baud)
    if key not in _HASHES:
        rig = board.rig(baud=baud)
        _HASHES[key] = rig.logic_hash()
        rig._MustUse__silence = True            # only its hash is taken
    return _HASHES[key]


def _fix(name, baud, board):
    rate = f" --baud {baud / 1e6:g}M" if baud != board.baud else ""
    return f"rtrig build {name}{rate} && rtrig flash {name}"


def check_gateware(info):
    """Compare a rig's identity (``info``: :meth:`RigLink.identify`'s registers) with
    this rtrig's build for its board. Returns the ``META`` entry ``gateware``:
    ``expected_hash`` (hex, or None when there is none to compare), ``match``
    (True, False, or None: not compared), ``board`` (the variant matched or the first
    of the code's), ``detail`` (the comparison in words) and ``fix`` (the command
    that builds and flashes the expected gateware, on a mismatch)."""
    from ...boards import BOARDS
    have = f"{info['build_hash']:08x}"
    boards = [b for b in BOARDS.values() if b.code == info.get("board") and b.code]
    out = {"rig_hash": have, "expected_hash": None, "match": None, "board": None}
    if info.get("version") != GATEWARE_VERSION:
        return {**out, "match": False,
                "detail": f"protocol {info.get('version')}, this rtrig's {GATEWARE_VERSION}",
                "fix": (_fix(boards[0].name, boards[0].baud, boards[0]) if boards
                        else "rtrig build --list")}
    if not boards:
        return {**out, "detail": f"board code {info.get('board')} is no board this "
                                 "rtrig builds: not compared"}
    if info.get("caps", 0) & (1 << Target.SOC):
        return {**out, "board": boards[0].name,
                "detail": "a rig with the SoC built in (its firmware is part of the "
                          "logic): not compared"}
    baud = info.get("baud") or boards[0].baud
    expected = {}
    for b in boards:
        expected.setdefault(f"{expected_hash(b, baud):08x}", b)
    if have in expected:
        return {**out, "expected_hash": have, "match": True, "board": expected[have].name,
                "detail": f"build {have} is this rtrig's {expected[have].name}"}
    want, b = next(iter(expected.items()))
    return {**out, "expected_hash": want, "match": False, "board": b.name,
            "detail": f"build {have}, this rtrig builds {want} for the {b.title}",
            "fix": _fix(b.name, baud, b)}


def twin_gateware(info):
    """The ``gateware`` entry of the simulation twin: the twin is this rtrig's own
    build, so what it reports is what is expected."""
    have = f"{info['build_hash']:08x}"
    return {"rig_hash": have, "expected_hash": have, "match": True, "board": None,
            "detail": "the simulation twin (this rtrig's build)"}


def refuse_mismatch(gateware):
    """Raise the one-line :class:`UsageError` of a rig whose gateware is not this
    rtrig's (``gateware``: :func:`check_gateware`'s entry); nothing when it is."""
    if gateware is None or gateware.get("match") is not False:
        return
    raise UsageError(f"the rig's gateware is not this rtrig's ({gateware['detail']}): run "
                     f"`{gateware['fix']}`, or give --accept-gateware to measure anyway")
