# SPDX-License-Identifier: BSD-2-Clause
"""The model target's parameters from a preset and ``key=value`` text with units, as
the CLI's ``--preset``/``--model`` and the library's string arguments give them."""

import math
from dataclasses import asdict, fields

from ...errors import UsageError
from ...units import format_ns_exact, format_s, parse_duration

__all__ = ["model_params", "target_model"]


def _parse_model(text, ns_per_tick=None):
    """'isr_entry=2us,isr_service=500ns,app=0' → ModelParams.from_ns keyword arguments.

    Durations take units; a key spelt with ``_ns`` also takes a bare number of
    nanoseconds (``isr_entry_ns=1400``). Each value must be a whole number of the
    model's ticks of ``ns_per_tick`` ns (the rig's; never rounded: 1.5 ns is refused,
    not taken as 0) and fit its model register."""
    from ..rig.rig import MODEL_REGS, register_max
    from .common import TICK_NS, ModelParams
    ns_per_tick = ns_per_tick or TICK_NS
    names = [f.name for f in fields(ModelParams)]
    out = {}
    if not text:
        return out
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise UsageError(f"--model expects key=value pairs, got '{item}'",
                             hint="e.g. --model isr_entry=2us,isr_service=1us")
        key, v = (s.strip() for s in item.split("=", 1))
        k = key.removesuffix("_ns")
        if k not in names:
            raise UsageError(f"--model: unknown parameter '{key}'",
                             hint=f"parameters: {', '.join(names)} (docs/model.md)")
        if k == "app":
            if v.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise UsageError(f"--model app: '{v}' is not on or off", hint="app=1 or app=0")
            out[k] = v.lower() in ("1", "true", "yes", "on")
            continue
        top = register_max(MODEL_REGS[k])
        if k == "seed":
            try:
                seed = int(v, 0)
            except ValueError:
                raise UsageError(f"--model seed: '{v}' is not an integer",
                                 hint="e.g. seed=12345 or seed=0x9E3779B9") from None
            if not 0 <= seed <= top:
                raise UsageError(f"--model seed: {seed} is outside 0..{top} "
                                 f"(register {MODEL_REGS[k].name})")
            out[k] = seed
            continue
        try:
            ns = float(v) if key.endswith("_ns") and _is_number(v) else parse_duration(v) * 1e9
        except ValueError as e:
            raise UsageError(f"--model {key}: {e}",
                             hint=f"durations take a unit (2us), or use {k}_ns=NANOSECONDS"
                             ) from None
        if not (math.isfinite(ns) and ns >= 0):
            raise UsageError(f"--model {key}: must be a duration of 0 or more, got '{v}'")
        ticks = ns / ns_per_tick
        if abs(ticks - round(ticks)) > 1e-6 * max(1.0, ticks):
            lo = math.floor(ticks) * ns_per_tick
            raise UsageError(f"--model {key}: {format_s(ns * 1e-9)} is not a whole number of "
                             f"the model's {ns_per_tick:.6g} ns ticks",
                             hint=f"the nearest are {format_ns_exact(lo)} and "
                                  f"{format_ns_exact(lo + ns_per_tick)}")
        if round(ticks) > top:
            raise UsageError(f"--model {key}: {format_s(ns * 1e-9)} is more than the model "
                             f"holds: at most {format_s(top * ns_per_tick * 1e-9)} ({top} "
                             f"ticks, register {MODEL_REGS[k].name})")
        out[k + "_ns"] = ns
    return out


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def model_params(preset, model_text, tick_hz=None, step=1):
    """Model parameters (ticks, ModelParams fields) from a preset and overrides, in
    ticks of a rig of ``tick_hz`` (None: the default twin's 8.33 ns) whose model takes
    its times in steps of ``step`` ticks: the model runs in its rig's ticks, so a
    duration is the same on every twin. A preset that the rig's model cannot make
    exactly is refused in one line (never rounded)."""
    from .common import TICK_NS, ModelParams
    ns_per_tick = 1e9 / tick_hz if tick_hz else TICK_NS
    base = {}
    if preset:
        from .presets import PRESETS_NS
        if preset not in PRESETS_NS:
            raise UsageError(f"unknown preset '{preset}'",
                             hint=f"presets: {', '.join(sorted(PRESETS_NS))}")
        for key, ns in PRESETS_NS[preset].items():
            steps = ns / ns_per_tick / step if key.endswith("_ns") else 0
            if abs(steps - round(steps)) > 1e-6 * max(1.0, steps):
                raise UsageError(
                    f"preset {preset}: {key.removesuffix('_ns')} {format_s(ns * 1e-9)} is "
                    f"not a whole number of this rig's model steps of "
                    f"{step * ns_per_tick:.4g} ns",
                    hint="give the times with --model instead, in whole steps")
        base = asdict(ModelParams.from_ns(ns_per_tick=ns_per_tick, **PRESETS_NS[preset]))
    over = _parse_model(model_text, ns_per_tick)
    try:
        p = ModelParams.from_ns(ns_per_tick=ns_per_tick, **over) if over else None
    except (TypeError, ValueError) as e:
        raise UsageError(f"--model: {e}", hint="see docs/model.md for parameter names") from None
    merged = dict(base) if preset else asdict(ModelParams())
    if p is not None:
        given = {k.removesuffix("_ns") for k in over}
        merged.update({k: v for k, v in asdict(p).items() if k in given})
    return merged


def target_model(target, preset, model_text, tick_hz=None, step=1):
    """The model parameters of a measurement on ``target`` (None unless the model), in
    ticks of a rig of ``tick_hz`` (:func:`model_params`); ``--preset``/``--model`` on
    another target are an error."""
    if target == "model":
        return model_params(preset, model_text, tick_hz, step)
    if preset or model_text:
        raise UsageError("--model and --preset apply to --target model only")
    return None
