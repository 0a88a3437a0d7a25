# SPDX-License-Identifier: BSD-2-Clause
"""The model target's parameters from a preset and ``key=value`` text with units, as
the CLI's ``--preset``/``--model`` and the library's string arguments give them."""

import math
from dataclasses import asdict, fields

from ...errors import UsageError
from ...units import format_s, parse_duration

__all__ = ["model_params", "target_model"]


def _parse_model(text):
    """'isr_entry=2us,isr_service=500ns,app=0' → ModelParams.from_ns keyword arguments.

    Durations take units; a key spelt with ``_ns`` also takes a bare number of
    nanoseconds (``isr_entry_ns=1400``). Each value must be a whole number of the
    model's ticks (never rounded: 1.5 ns is refused, not taken as 0) and fit its model
    register."""
    from ..rig.rig import MODEL_REGS, register_max
    from .common import TICK_NS, ModelParams
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
        ticks = ns / TICK_NS
        if abs(ticks - round(ticks)) > 1e-6 * max(1.0, ticks):
            lo = math.floor(ticks) * TICK_NS
            raise UsageError(f"--model {key}: {format_s(ns * 1e-9)} is not a whole number of "
                             f"the model's {TICK_NS} ns ticks",
                             hint=f"the nearest are {format_s(lo * 1e-9)} and "
                                  f"{format_s((lo + TICK_NS) * 1e-9)}")
        if round(ticks) > top:
            raise UsageError(f"--model {key}: {format_s(ns * 1e-9)} is more than the model "
                             f"holds: at most {format_s(top * TICK_NS * 1e-9)} ({top} ticks, "
                             f"register {MODEL_REGS[k].name})")
        out[k + "_ns"] = ns
    return out


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def model_params(preset, model_text):
    """Model parameters (ticks, ModelParams fields) from a preset and overrides."""
    from .common import ModelParams
    base = {}
    if preset:
        from .presets import PRESETS
        if preset not in PRESETS:
            raise UsageError(f"unknown preset '{preset}'",
                             hint=f"presets: {', '.join(sorted(PRESETS))}")
        base = asdict(PRESETS[preset])
    over = _parse_model(model_text)
    try:
        p = ModelParams.from_ns(**over) if over else None
    except (TypeError, ValueError) as e:
        raise UsageError(f"--model: {e}", hint="see docs/model.md for parameter names") from None
    merged = dict(base) if preset else asdict(ModelParams())
    if p is not None:
        given = {k.removesuffix("_ns") for k in over}
        merged.update({k: v for k, v in asdict(p).items() if k in given})
    return merged


def target_model(target, preset, model_text):
    """The model parameters of a measurement on ``target`` (None unless the model);
    ``--preset``/``--model`` on another target are an error."""
    if target == "model":
        return model_params(preset, model_text)
    if preset or model_text:
        raise UsageError("--model and --preset apply to --target model only")
    return None
