# SPDX-License-Identifier: BSD-2-Clause
"""What a capture measures: :class:`CaptureSettings`, in seconds and hertz, and its
translation into register values in rig ticks (:meth:`CaptureSettings.ticks`), which
checks every value against the register it goes to before anything runs."""

import math
from dataclasses import dataclass, field

from ...channels import CHANNEL_HELP, ChannelPlan
from ...errors import UsageError
from ...protocol import Input, Reg
from ...units import format_ns_exact, format_s
from ..rig.rig import MODEL_REGS, TARGETS, register_max

__all__ = ["CaptureSettings", "default_channels", "parse_channels", "RAW_INPUTS"]

#: Names of the inputs a capture's raw events can record (``--raw-inputs``) → their
#: ``EDGE_EN`` bits (docs/protocol.md): both edges of a rig input, or the stimulus.
RAW_INPUTS = {
    **{i.name.lower(): (1 | 1 << 8) << i for i in Input},
    "isr": (1 | 1 << 8) << Input.ISR_OUT, "app": (1 | 1 << 8) << Input.APP_OUT,
    "stim": 1 << 16,
}


@dataclass
class CaptureSettings:
    """What to measure. Times in seconds, frequencies in Hz.

    ``count`` pulses (or ``duration`` s) at ``freq`` with ``duty`` high fraction and up
    to ``jitter`` s of uniform extra delay per period; ``channels`` are the response
    channels recorded (``isr``, ``app``); ``target`` says what drives the rig inputs.
    ``timeout`` bounds the wait for a response rise (default: the longest period,
    i.e. "before the next stimulus").
    """
    freq: float
    count: int | None = 1000
    duration: float | None = None
    duty: float = 0.5
    jitter: float = 0.0
    channels: tuple = ("isr",)
    target: str = "external"
    delay: float = 0.0
    model: dict | None = None      # ModelParams fields (ticks) for target "model"
    preset: str | None = None
    load: bool = False
    timeout: float | None = None
    raw_events: bool = False
    #: With ``raw_events``: the inputs whose edges are recorded (names of
    #: :data:`RAW_INPUTS`; None: every input and the stimulus).
    raw_inputs: tuple | None = None
    truth: bool = False
    stim1_offset: float | None = None   # STIM1 follows STIM0 by this much (None: off)
    burst: int = 0                      # pulses per burst (0: no bursts)
    gap: float | None = None            # after a burst's last pulse, rise to rise
    #: The period of the target's own activity, s (None: the model's tick, else 1 ms
    #: assumed; 0: none) and whether the period moves to meet its phases
    #: (:func:`rtrig.host.rhythm.detune`): "cover", or "as-set" (sweeps, suites).
    target_period: float | None = None
    phases: str = "as-set"
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def edge_enable(self):
        """``EDGE_EN`` of the raw events asked for: every input's edges and the
        stimulus', or those of :attr:`raw_inputs` (an unknown name is a one-line
        UsageError); 0 without :attr:`raw_events`."""
        if not self.raw_events:
            return 0
        names = self.raw_inputs if self.raw_inputs is not None else ("stim", *(
            i.name.lower() for i in Input))
        bits = 0
        for name in names:
            if name not in RAW_INPUTS:
                raise UsageError(f"unknown raw-event input '{name}'",
                                 hint=f"choose from: {', '.join(RAW_INPUTS)}")
            bits |= RAW_INPUTS[name]
        if not bits:
            raise UsageError("--raw-inputs names no input", hint="e.g. marker0,marker1,stim")
        return bits

    @property
    def plan(self):
        """The :class:`~rtrig.channels.ChannelPlan` of :attr:`channels`: each one's
        matcher number and edges (a one-line :class:`UsageError` for an unknown channel
        or too many). A procedure resolves it once and hands it on."""
        return ChannelPlan.of(self.channels)

    def ticks(self, tick_hz, step=1):
        """Validate against the rig's tick rate; returns register values. ``step``
        (register ``STIM_STEP``, 2 or 4 on a rig with DDR input capture): the period
        and high time that a frequency and duty cycle give are rounded down to multiples
        of it (the capture records the frequency made); a jitter, loopback delay, STIM1
        offset or burst gap that is not a whole number of steps is refused, never
        rounded. Every value must fit its register (:func:`register_max`): none is
        left to wrap."""
        def limit(what, value, ticks, reg, hint=None):
            top = register_max(reg)
            if ticks > top:
                raise UsageError(f"{what} {value} is more than the rig holds: at most "
                                 f"{format_s(top / tick_hz)} ({top} ticks, register "
                                 f"{reg.name})", hint=hint)

        if not (self.freq > 0 and math.isfinite(self.freq)):
            raise UsageError(f"frequency must be positive, got {self.freq:g} Hz",
                             hint="e.g. --freq 10k")
        if not 0 < self.duty < 1:
            raise UsageError(f"duty cycle must be between 0 and 1 (exclusive), got {self.duty:g}")
        if self.count is not None and self.count <= 0:
            raise UsageError(f"pulse count must be at least 1, got {self.count}")
        if self.count is not None and self.count > register_max(Reg.STIM_COUNT):
            raise UsageError(f"pulse count {self.count} is more than the rig counts: at most "
                             f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)",
                             hint="split the measurement into several captures")
        if self.duration is not None and not (self.duration > 0 and
                                              math.isfinite(self.duration)):
            raise UsageError(f"duration must be positive, got {self.duration:g} s")
        if not (self.jitter >= 0 and self.delay >= 0):
            raise UsageError("jitter and delay cannot be negative")
        if self.timeout is not None and not self.timeout >= 0:
            raise UsageError(f"response timeout cannot be negative, got {format_s(self.timeout)}",
                             hint="e.g. --timeout 100us (default: until the next stimulus)")
        for name, v in (("jitter", self.jitter), ("delay", self.delay),
                        ("timeout", self.timeout), ("STIM1 offset", self.stim1_offset)):
            if v is not None and not math.isfinite(v):
                raise UsageError(f"{name} must be a finite duration, got {v:g} s")
        if self.target not in TARGETS:
            raise UsageError(f"unknown target '{self.target}'",
                             hint=f"choose one of: {', '.join(TARGETS)}")
        if not self.channels:
            raise UsageError("no response channel given", hint=CHANNEL_HELP)
        ChannelPlan.of(self.channels)       # an unknown channel fails here, before any run
        _ = self.edge_enable                # so does an unknown raw-event input
        _check_model(self.model, tick_hz, step)

        def whole(ticks):
            return ticks // step * step

        def exact(what, seconds):
            return _exact(what, seconds, tick_hz, step)

        period = whole(round(tick_hz / self.freq))
        if period < 4 * step:
            raise UsageError(f"{self.freq:g} Hz is too fast for a rig of "
                             f"{tick_hz / step / 1e6:g} MHz (period {period} ticks; at least "
                             f"{4 * step}, four clock cycles)")
        if period >= 2**31:
            raise UsageError(f"{self.freq:g} Hz is too slow (period over 2^31 ticks)")
        high = min(max(step, whole(round(period * self.duty))), period - step)
        count = self.count
        if count is None:
            count = max(1, round((self.duration or 1.0) * self.freq))
            if count > register_max(Reg.STIM_COUNT):
                raise UsageError(f"{format_s(self.duration)} at {self.freq:g} Hz is {count} "
                                 f"pulses, more than the rig counts: at most "
                                 f"{register_max(Reg.STIM_COUNT)} (register STIM_COUNT)",
                                 hint="split the measurement into several captures")
        jitter = exact("jitter", self.jitter)
        limit("jitter", format_s(self.jitter), jitter, Reg.STIM_JITTER)
        # The stimulus counts each period plus its jitter in one 32-bit counter, and the
        # default response window is that long.
        limit("period plus jitter", format_s((period + jitter) / tick_hz), period + jitter,
              Reg.STIM_PERIOD, hint="lower --jitter")
        offset = None
        if self.stim1_offset is not None:
            offset = exact("STIM1 offset", self.stim1_offset)
        burst, gap = self._burst(tick_hz, exact, period, high, jitter, offset)
        # Default window: until the next stimulus, the longest time to it.
        timeout = (round(self.timeout * tick_hz) if self.timeout
                   else max(period, gap) + jitter)
        if timeout == 0:
            raise UsageError(f"response timeout {format_s(self.timeout)} is shorter than one "
                             f"tick ({format_s(1 / tick_hz)})",
                             hint="give 0 for the default: until the next stimulus")
        limit("response timeout", format_s(timeout / tick_hz), timeout, Reg.LAT_TIMEOUT)
        delay = exact("loopback delay", self.delay)
        limit("loopback delay", format_s(self.delay), delay, Reg.LOOP_DELAY)
        if offset is not None:
            if offset < 0 or offset + high >= period:
                raise UsageError("STIM1 offset plus the high time must fit in one period",
                                 hint=f"offset < {(period - high) / tick_hz * 1e6:g} µs "
                                      "at this frequency and duty cycle")
        period, high, rhythm = self._cover_phases(tick_hz, step, period, high, count,
                                                  jitter, burst, offset)
        return {"period": period, "high": high, "count": count, "jitter": jitter,
                "timeout": timeout, "delay": delay, "stim1_offset": offset,
                "burst": burst, "gap": gap, "rhythm": rhythm}

    def _cover_phases(self, tick_hz, step, period, high, count, jitter, burst, offset):
        """``(period, high, rhythm)``: with ``phases`` "cover", the period moved by the
        fewest stimulus steps that let ``count`` pulses meet every phase of the target
        period (:func:`rtrig.host.rhythm.detune`; not for bursts, whose spacing is
        set), the high time kept below it; ``rhythm``: META's (the target period, its
        source, the period asked for and the coverage planned)."""
        from ..procedures.beat import target_tick
        from ..rhythm import ASSUMED_PERIOD_S, detune
        if self.phases not in ("cover", "as-set"):
            raise UsageError(f"unknown phase mode '{self.phases}'", hint="cover or as-set")
        if self.target_period is not None and not (self.target_period >= 0 and
                                                   math.isfinite(self.target_period)):
            raise UsageError(f"target period must be a duration of 0 or more, got "
                             f"{self.target_period:g} s", hint="e.g. --target-period 1ms")
        # Known: given, the model's tick, the SoC's rt_test tick (1 ms). An external
        # target's is found in its capture's latencies, if at all: not moved for.
        if self.target_period is not None:
            source, tp = "given", round(self.target_period * tick_hz)
        elif self.target == "model":
            source, tp = "target", target_tick(None, "model", self.model, tick_hz)
        elif self.target == "soc":
            source, tp = "target", round(ASSUMED_PERIOD_S * tick_hz)
        else:
            source, tp = "unknown", 0
        rhythm = {"period_ticks": tp, "source": source, "phases": self.phases,
                  "requested_period_ticks": period}
        if not tp:
            rhythm["source"] = "none" if source in ("given", "target") else source
            return period, high, rhythm
        if self.phases == "cover" and not burst:
            moved, cov = detune(period, tp, min(count, 100_000), step, jitter)
            if moved != period and high < moved - step and (offset or 0) + high < moved:
                period = moved
            rhythm["coverage_planned"] = None if cov is None else round(cov, 4)
        return period, min(high, period - step), rhythm

    def _burst(self, tick_hz, exact, period, high, jitter, offset):
        """``STIM_BURST`` and ``STIM_GAP`` (ticks), checked like the period."""
        if not self.burst:
            if self.gap is not None:
                raise UsageError("--gap needs --burst (pulses per burst)")
            return 0, 0
        if not 0 < self.burst <= register_max(Reg.STIM_BURST):
            raise UsageError(f"pulses per burst must be at least 1, got {self.burst}")
        if self.gap is None or not (self.gap > 0 and math.isfinite(self.gap)):
            raise UsageError("a burst needs its gap: --gap, rise to rise after the "
                             "burst's last pulse", hint="e.g. --burst 5 --gap 1ms")
        gap = exact("gap", self.gap)
        if gap <= high + (offset or 0) or gap < period:
            raise UsageError(f"gap {format_s(self.gap)} is shorter than the period "
                             f"({format_s(period / tick_hz)})",
                             hint="the gap is rise to rise, like the period")
        if gap + jitter > register_max(Reg.STIM_GAP):
            raise UsageError(f"gap {format_s(self.gap)} plus jitter is more than the rig "
                             f"holds (register STIM_GAP)")
        return self.burst, gap


def _exact(what, seconds, tick_hz, step):
    """``seconds`` in ticks, refused unless a whole number of stimulus steps."""
    t = seconds * tick_hz
    n = round(t)
    if abs(t - n) <= 1e-6 * max(1.0, abs(t)) and n % step == 0:
        return n
    lo = math.floor(t / step) * step
    size = f"{format_s(step / tick_hz)}" + (f" ({step} ticks)" if step > 1 else "")
    raise UsageError(f"{what} {format_s(seconds)} is not a whole number of this rig's "
                     f"{'stimulus steps' if step > 1 else 'ticks'} of {size}",
                     hint=f"use {_ns(lo, tick_hz)} or {_ns(lo + step, tick_hz)}")


def _ns(ticks, tick_hz):
    """``ticks`` in ns with the digits that make it the same number of ticks again."""
    return format_ns_exact(ticks * 1e9 / tick_hz)


def _check_model(model, tick_hz, step):
    """Each of the model's times fits its register and is a whole number of the rig's
    model steps (the model runs one step per clock); a one-line UsageError if not."""
    for name, reg in MODEL_REGS.items():
        v = (model or {}).get(name)
        if v is None:
            continue
        if not 0 <= v <= register_max(reg):
            raise UsageError(f"model {name} {v} ticks is outside what the rig holds: "
                             f"0..{register_max(reg)} (register {reg.name})")
        if name != "seed" and v % step:
            lo = v - v % step
            raise UsageError(
                f"model {name} {format_s(v / tick_hz)} is not a whole number of this "
                f"rig's model steps of {step * 1e9 / tick_hz:.4g} ns ({step} ticks)",
                hint=f"use {_ns(lo, tick_hz)} or {_ns(lo + step, tick_hz)}")


def default_channels(target, model=None):
    """The response channels measured when none are named: ISR, and APP too on the
    targets that run an APP thread (the SoC; the model unless its ``app`` is off)."""
    if target == "soc" or (target == "model" and (model is None or model.get("app", True))):
        return ("isr", "app")
    return ("isr",)


def parse_channels(text):
    """``"isr,app"`` (or a sequence of names) → ``("isr", "app")``."""
    if not isinstance(text, str):
        return tuple(text)
    return tuple(c.strip().lower() for c in text.split(",") if c.strip())
