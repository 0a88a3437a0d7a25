# SPDX-License-Identifier: BSD-2-Clause
"""What a sweep is asked to find and what it hands back (docs/sweep.md).

:class:`SweepSettings` is a sweep's range, channels and search rules, checked against
the rig's registers before the first step; :func:`default_pulses` the pulses per MF
step by default; :class:`SweepResult` the figures found, with the steps that found
them; :data:`FIGURES` the figures' names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ...channels import CHANNEL_HELP, SWEEP_NAMES, ChannelPlan
from ...errors import UsageError
from ...protocol import Reg
from ...units import format_hz
from ..rig.rig import register_max
from .settings import CaptureSettings

__all__ = ["SweepSettings", "SweepResult", "default_pulses", "FIGURES"]

#: Figure name → what it is, for tables and reasons. A sweep of an interval channel
#: adds that channel's MF (``mf_stim0+..marker0+_hz``, :func:`rtrig.channels.mf_key`).
FIGURES = SWEEP_NAMES


def default_pulses(detect=0.01, margin=2.0):
    """Pulses per MF step so that a miss ``detect`` (relative) above MF shows.

    Below the critical period T_c (one pulse's worth of CPU work) the backlog grows by
    T_c − T per pulse and the first pulse is lost once it exceeds one period, after
    about T/(T_c − T) ≈ 1/detect pulses. ``margin`` covers the start-up transient and
    the pending latch/queued event that absorb the first period of backlog.
    """
    return int(math.ceil(margin / detect))


@dataclass
class SweepSettings:
    """What to sweep. Frequencies in Hz, times in seconds.

    ``pulses`` per MF step (None: :func:`default_pulses`); ``resolution`` is the
    relative width of the final bracket; ``factor`` the geometric bracketing step;
    ``stim_jitter`` extra random delay per period (None: automatic, see
    docs/sweep.md); ``sf_threshold`` the load progress below which LOAD counts as
    starved. SF is sought only with ``load``. ``channels``: ``isr``, ``app`` and any
    interval channels (``stim0+..marker0+``), each swept on its own for its MF (a miss:
    a start edge whose end edge has not come when the next start comes).
    ``early_end``: a step ends as soon as its verdict is known (the first miss of an MF
    step; an SF step's heartbeats past what the threshold needs), so the missed
    fraction and load progress it records cover the pulses it ran; False runs every
    pulse of every step.
    """
    f_from: float
    f_to: float
    target: str = "external"
    model: dict | None = None
    preset: str | None = None
    load: bool = False
    sf_threshold: float = 0.01
    resolution: float = 0.005
    pulses: int | None = None
    factor: float = 2.0
    stim_jitter: float | None = None
    confirm: bool = True
    channels: tuple = ("isr", "app")
    min_heartbeats: int = 2000
    early_end: bool = True
    tick: float | None = None
    phase_gap: float = 0.02
    max_pulses: int | None = None

    def validate(self, tick_hz=None, step=1):
        """Check the settings (raises UsageError); returns ``self``. With the rig's
        ``tick_hz`` (and ``STIM_STEP``) also that the steps at both ends of the range
        fit the rig's registers, before the first step runs."""
        for name in ("f_from", "f_to"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise UsageError(f"--{name[2:]} must be a positive frequency, got {v!r}",
                                 hint="e.g. --from 10k --to 200k")
        if self.f_from >= self.f_to:
            raise UsageError(f"--from ({format_hz(self.f_from)}) must be below --to "
                             f"({format_hz(self.f_to)})")
        if not 0 < self.resolution < 0.5:
            raise UsageError(f"resolution must be between 0 and 50 %, got {self.resolution:g}",
                             hint="e.g. --resolution 0.5%")
        if not (self.factor > 1 + self.resolution and math.isfinite(self.factor)):
            raise UsageError(f"bracketing factor must be above 1 + resolution, got {self.factor:g}")
        if not 0 < self.sf_threshold < 1:
            raise UsageError(f"--sf-threshold must be between 0 and 1, got {self.sf_threshold:g}")
        if self.pulses is not None and self.pulses < 2:
            raise UsageError(f"--pulses must be at least 2, got {self.pulses}")
        if self.pulses is not None and self.pulses > register_max(Reg.STIM_COUNT):
            raise UsageError(f"--pulses {self.pulses} is more than the rig counts: at most "
                             f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)")
        if self.tick is not None and not (self.tick >= 0 and math.isfinite(self.tick)):
            raise UsageError("--tick must be a finite duration of 0 (no tick) or more")
        if not 0 < self.phase_gap < 0.5:
            raise UsageError(f"phase gap must be between 0 and 50 %, got {self.phase_gap:g}")
        if not self.n_pulses <= self.step_cap <= register_max(Reg.STIM_COUNT):
            raise UsageError(f"--max-pulses must be between the pulses per step "
                             f"({self.n_pulses}) and {register_max(Reg.STIM_COUNT)}, "
                             f"got {self.max_pulses}")
        if self.stim_jitter is not None and not (self.stim_jitter >= 0 and
                                                 math.isfinite(self.stim_jitter)):
            raise UsageError("stimulus jitter must be a finite duration of 0 or more")
        for ch in self.channels:
            ChannelPlan.of((ch,))               # each step times one channel
            if self.channels.count(ch) > 1:
                raise UsageError(f"channel '{ch}' is named twice")
        if not self.channels and not self.load:
            raise UsageError("no channel to sweep and no --load: nothing to find",
                             hint=CHANNEL_HELP)
        if tick_hz is not None:
            # The slowest step (longest period, plus jitter) and the fastest.
            for option, f in (("--from", self.f_from), ("--to", self.f_to)):
                probe = CaptureSettings(freq=f, count=self.n_pulses,
                                        jitter=self.stim_jitter or 0.0,
                                        channels=tuple(self.channels[:1]) or ("isr",),
                                        target=self.target, model=self.model)
                try:
                    probe.ticks(tick_hz, step)
                except UsageError as e:
                    raise UsageError(f"{option} {format_hz(f)}: {e}", hint=e.hint) from None
        return self

    @property
    def n_pulses(self):
        return self.pulses if self.pulses is not None else default_pulses()

    @property
    def step_cap(self):
        """Most pulses an MF step sends (``max_pulses``; None: 20000, or ``pulses`` if
        more)."""
        return self.max_pulses if self.max_pulses is not None else max(20_000, self.n_pulses)


@dataclass
class SweepResult:
    path: Path
    figures: dict              # mf_isr_hz, mf_app_hz, sf_hz → Threshold
    reasons: dict
    steps: list
    meta: dict
    final: dict = field(default_factory=dict)

    def value(self, name):
        t = self.figures.get(name)
        return None if t is None else t.hz

    def to_json(self):
        out = {name: self.value(name) for name in self.figures}
        out["reasons"] = {k: v for k, v in self.reasons.items() if v}
        out["below_hz"] = {k: (t.below_hz if t else None) for k, t in self.figures.items()}
        out["confirmed"] = {k: (t.confirmed if t else None) for k, t in self.figures.items()}
        out["steps"] = self.steps
        out["unloaded_heartbeat_hz"] = self.final.get("unloaded_heartbeat_hz")
        out["pulses_per_step"] = self.meta["sweep"]["pulses"]
        out["capture"] = str(self.path)
        out["status"] = self.final.get("status")
        out["link"] = self.final.get("link")
        out["wall_s"] = self.final.get("wall_s")
        return out
