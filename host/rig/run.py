# SPDX-License-Identifier: BSD-2-Clause
"""One capture run: the capture file, its metadata, progress and interruption.

Every procedure that writes a capture file (records, statistics, sweep) opens a
:class:`CaptureRun` around its measurement. The run writes ``META`` first, takes the
procedure's chunks as they come, and ends the file with its ``END`` status whatever
happens: ``complete``/``incomplete`` by :meth:`CaptureRun.finish`, and on Ctrl-C, a
lost link, an unplugged rig or a failure ``interrupted``/``link lost``/``unplugged``/
``failed`` — after stopping the
stimulus and saving what the procedure can still recover (its ``salvage`` callback),
so an interrupted capture keeps everything recorded so far.
"""

import datetime
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ... import __version__
from ...capture import CaptureWriter
from ...errors import LinkError, RigUnplugged, stop_taken

__all__ = ["CaptureRun", "CaptureResult", "Progress", "rig_meta", "capture_meta", "now"]


def now():
    """The wall-clock time of a capture's start and end (UTC, ISO 8601)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def end_status(exc):
    """The ``END`` status of a run ended by ``exc``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, RigUnplugged):
        return "unplugged"
    return "link lost" if isinstance(exc, LinkError) else "failed"


class Progress:
    """One status line on stderr, updated at most every 0.5 s."""

    def __init__(self, total, label, enabled=True):
        self.total, self.label, self.enabled = total, label, enabled
        self._last = 0.0
        self._shown = False

    def update(self, done, force=False):
        t = time.monotonic()
        if not self.enabled or (not force and t - self._last < 0.5):
            return
        self._last = t
        pct = 100.0 * done / self.total if self.total else 100.0
        print(f"\r{self.label}: {done}/{self.total} ({pct:.0f} %)", end="", file=sys.stderr,
              flush=True)
        self._shown = True

    def done(self):
        if self._shown:
            print(file=sys.stderr)
            self._shown = False


def rig_meta(rig):
    """The part of a capture's ``META`` that says which rig measured it."""
    return {
        "format": "rtrig-capture",
        "rtrig_version": __version__,
        "gateware_version": rig.info["version"],
        "gateware_hash": f"{rig.info['build_hash']:08x}",
        "board": rig.info["board"],
        "simulation": rig.sim is not None,
        "tick_hz": rig.tick_hz,
        # The rig's logic against this rtrig's build of it (host/rig/gateware.py).
        **({"gateware": rig.gateware} if getattr(rig, "gateware", None) else {}),
        # The SoC twin's firmware, so that a replay can tell it runs the same image.
        **({"soc_image_sha256": hashlib.sha256(rig.sim.image).hexdigest()}
           if rig.sim is not None and getattr(rig.sim, "image", None) else {}),
    }


def capture_meta(rig, settings, regs, mode, plan):
    """The ``META`` object of a records or statistics capture (docs/capture-format.md);
    ``plan``: the :class:`~rtrig.channels.ChannelPlan` of ``settings``' channels."""
    return {
        **rig_meta(rig),
        "in_delay_ticks": rig.info["in_delay"],
        "calibration": {"in_delay_ticks_subtracted": rig.info["in_delay"]},
        "target": {"kind": settings.target, "delay_ticks": regs["delay"],
                   "model": settings.model, "preset": settings.preset,
                   "description": settings.description},
        "stimulus": {"freq_hz": rig.tick_hz / regs["period"],
                     "requested_freq_hz": settings.freq,
                     "period_ticks": regs["period"], "high_ticks": regs["high"],
                     "count": regs["count"], "jitter_ticks": regs["jitter"],
                     "seed": 1, "step_ticks": rig.stim_step,
                     **({"stim1_offset_ticks": regs["stim1_offset"]}
                        if regs.get("stim1_offset") is not None else {}),
                     **({"burst": regs["burst"], "gap_ticks": regs["gap"]}
                        if regs.get("burst") else {})},
        **({"rhythm": regs["rhythm"]} if regs.get("rhythm") else {}),
        "channels": list(plan.names),
        # Channel number → name (rtrig.channels): isr 0, app 1, intervals after them.
        "channel_names": plan.channel_names,
        "load": settings.load,
        "timeout_ticks": regs["timeout"],
        "mode": mode,
        "raw_events": False if mode == "statistics" else settings.raw_events,
        "truth": bool(settings.truth) and mode != "statistics",
        **({"raw_inputs": list(settings.raw_inputs)}
           if settings.raw_inputs is not None and settings.raw_events else {}),
        "start_time": now(),
        **settings.extra,
    }


class CaptureRun:
    """A capture file being written by one procedure on ``rig``.

    Use as a context manager around the measurement; write chunks through
    :attr:`writer` and end with :meth:`finish`. ``salvage(status)``, when set, is called
    if the run ends by an exception: it saves what it can (records still buffered,
    counters) and returns the entries it adds to ``final``; whatever fails in it is
    given up, so the original exception always propagates.
    """

    def __init__(self, rig, path, meta, progress=None, salvage=None):
        self.rig = rig
        self.path = path
        self.meta = meta
        self.progress = progress or Progress(0, "", enabled=False)
        self.salvage = salvage
        self.final = None
        self.writer = CaptureWriter(path, meta)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        stop_taken()                # a stop is handled here: the cleanup below may poll
        self.progress.done()
        if exc is None or self.final is not None:
            return False
        status = end_status(exc)
        final = {"status": status}
        try:
            # what the host knows by itself, kept if the salvage cannot do better
            final["link"] = self.rig.host_counters()
        except Exception:
            pass
        try:
            self.rig.halt()         # the stimulus stops whatever else fails
        except Exception:
            pass
        if self.salvage is not None:
            try:
                final.update(self.salvage(status))
            except Exception:
                pass
        final["end_time"] = now()
        self.finish(final)
        return False

    def finish(self, final):
        """Close the file with ``final`` as its ``END`` object (``end_time`` added, and
        ``start``: where the rig armed the run, :attr:`Rig.last_start`, when it did)."""
        start = getattr(self.rig, "last_start", None)
        self.final = {**({"start": {f"{k}_ticks" if k != "restart" else k: v
                                    for k, v in start.items()}} if start else {}),
                      **final, "end_time": final.get("end_time") or now()}
        self.writer.close(final=self.final)
        self.progress.done()
        return self.final


@dataclass
class CaptureResult:
    """What a capture procedure returns: its file, per-channel figures (the keys of
    :func:`rtrig.host.analysis.channel_stats`), loss counters, META and END."""
    path: Path
    summary: dict
    link: dict
    meta: dict
    final: dict

    def to_json(self):
        from ..closed_loop import closed_loop_of_file
        return {"capture": str(self.path), "channels": self.summary, "link": self.link,
                "target": self.meta["target"], "stimulus": self.meta["stimulus"],
                "mode": self.meta["mode"], "status": self.final.get("status"),
                "tick_hz": self.meta["tick_hz"],
                # what a closed-loop tool would have said (docs/report.md)
                "closed_loop": closed_loop_of_file(self.path, self.meta)}
