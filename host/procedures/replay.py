# SPDX-License-Identifier: BSD-2-Clause
"""A capture run again from its file: the settings its ``META`` recorded
(``rtrig capture --replay FILE``). On the simulation twin a run is a function of its
settings, so the replay's records are those of the file, relative to each run's start
(docs/capture-format.md, "Start")."""

from ...capture import load
from ...errors import CaptureFormatError, UsageError
from ..rig.run import rig_meta
from .settings import CaptureSettings

__all__ = ["replay_settings", "check_replay_rig"]


def replay_settings(path):
    """``(settings, mode, bin_shift, meta)`` of the records or statistics capture at
    ``path``: its stimulus, channels, target, load and streams as the file recorded
    them, in the rig's ticks (so they give the same register values again). A file
    that is not such a capture is a one-line UsageError."""
    try:
        cap = load(path)
    except (OSError, CaptureFormatError, ValueError) as e:
        raise UsageError(f"cannot replay {path}: {e}") from None
    meta = cap.meta
    mode = meta.get("mode")
    if mode not in ("records", "statistics"):
        raise UsageError(f"cannot replay {path}: it is a {mode or 'unknown'} file, not a "
                         "capture", hint="--replay takes a file of rtrig capture")
    try:
        hz, stim, target = float(meta["tick_hz"]), meta["stimulus"], meta["target"]
        period = int(stim["period_ticks"])
        offset = stim.get("stim1_offset_ticks")
        settings = CaptureSettings(
            freq=hz / period, count=int(stim["count"]), duty=int(stim["high_ticks"]) / period,
            jitter=int(stim["jitter_ticks"]) / hz, channels=tuple(meta["channels"]),
            target=target["kind"], delay=int(target.get("delay_ticks") or 0) / hz,
            model=target.get("model"), preset=target.get("preset"),
            load=bool(meta["load"]), timeout=int(meta["timeout_ticks"]) / hz,
            raw_events=bool(meta.get("raw_events")),
            raw_inputs=tuple(meta["raw_inputs"]) if meta.get("raw_inputs") else None,
            truth=bool(meta.get("truth")),
            stim1_offset=None if offset is None else int(offset) / hz,
            burst=int(stim.get("burst") or 0),
            gap=int(stim["gap_ticks"]) / hz if stim.get("burst") else None,
            description=target.get("description") or "")
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"cannot replay {path}: its META lacks the settings ({e})") from None
    bin_shift = (meta.get("statistics") or {}).get("bin_shift") if mode == "statistics" else None
    return settings, mode, bin_shift, meta


def check_replay_rig(meta, rig):
    """Refuse, in one line, a rig that would not run the capture of ``meta`` as it
    ran: another board's gateware or tick, or on the SoC twin another firmware image."""
    if int(meta.get("board", -1)) != rig.info["board"] or float(meta["tick_hz"]) != rig.tick_hz:
        raise UsageError("the capture was made on another rig's gateware (board "
                         f"{meta.get('board')}, {meta.get('tick_hz')} ticks/s; this one: "
                         f"board {rig.info['board']}, {rig.tick_hz} ticks/s)",
                         hint="replay it on the same board, or --sim-board as recorded")
    want = meta.get("soc_image_sha256")
    have = rig_meta(rig).get("soc_image_sha256")
    if want and have and want != have:
        raise UsageError("the capture's SoC ran another firmware image than this twin's",
                         hint="give the same --firmware as the capture had")

