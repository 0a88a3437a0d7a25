# SPDX-License-Identifier: BSD-2-Clause
"""The library API on one open rig, as tests and farm drivers call it.

:class:`RigAPI` wraps a rig (:func:`rtrig.host.rig.rig.open_rig`) and offers
``capture`` and ``sweep`` with the CLI's units (``"5k"``, ``"20us"``) and defaults.
The pytest plugin (:mod:`rtrig.host.integrations.pytest_plugin`) and the labgrid driver
(:mod:`rtrig.host.integrations.labgrid_driver`) both hand this object to tests, so a rig
reached directly, through the simulation twin or through labgrid behaves alike.
It is the one place that knows how a session is driven: pointing it at another rig
interface changes nothing above it.
"""

import contextlib
import itertools
from pathlib import Path

from ..errors import UsageError
from ..units import parse_duration, parse_frequency
from .rig.rig import TARGETS as RIG_TARGETS

__all__ = ["RigAPI", "open_api", "TARGETS"]

#: The targets a rig can measure (``external``: the device wired to the rig).
TARGETS = tuple(RIG_TARGETS)


def _hz(value, what):
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return parse_frequency(value)
    except ValueError as e:
        raise UsageError(f"{what}: {e}") from None


def _seconds(value, what):
    if value is None or isinstance(value, (int, float)):
        return value
    try:
        return parse_duration(value)
    except ValueError as e:
        raise UsageError(f"{what}: {e}") from None


class RigAPI:
    """``capture`` and ``sweep`` on one open rig session.

    ``session``: a :class:`rtrig.host.rig.rig.Rig`; ``captures``: the folder
    where capture files go when a call names none; ``target``: the default target of
    every call (``external`` on a real rig, ``model`` or ``loopback`` on the twin).
    """

    def __init__(self, session, captures="captures", target="external"):
        if target not in TARGETS:
            raise UsageError(f"unknown target '{target}'", hint=f"one of: {', '.join(TARGETS)}")
        self.session = session
        self.captures = Path(captures)
        self.target = target
        self._n = itertools.count(1)

    @property
    def info(self):
        """The rig's identity (board, gateware, tick rate, port or simulation)."""
        return self.session.describe()

    def _path(self, path, kind):
        if path is not None:
            return Path(path)
        self.captures.mkdir(parents=True, exist_ok=True)
        while True:
            p = self.captures / f"{kind}-{next(self._n)}.rtrig"
            if not p.exists():
                return p

    def _model(self, target, preset, model):
        if target != "model":
            if preset or model:
                raise UsageError("preset and model apply to target 'model' only")
            return None
        from .model.params import model_params
        if isinstance(model, dict):
            model = ",".join(f"{k}={v}" for k, v in model.items())
        return model_params(preset, model)

    def capture(self, freq="1k", count=1000, *, duration=None, channels=None, target=None,
                preset=None, model=None, load=False, jitter=0.0, duty=0.5, delay=0.0,
                timeout=None, mode="auto", path=None, progress=False):
        """Run one capture; returns its result (``.summary``, ``.path``, ``.to_json()``).

        Frequencies and durations take numbers (Hz, s) or the CLI's strings (``"8k"``,
        ``"20us"``). ``channels``: ``"isr"``, ``"isr,app"`` or a tuple (default: ISR,
        and APP too on the model and SoC targets); ``preset``/``model`` (a dict or
        ``"k=v,…"`` with units) set the model target; ``mode``: ``auto``,
        ``records`` or ``statistics``, as ``rtrig capture --mode``.
        """
        from .procedures.measure import measure
        from .procedures.settings import CaptureSettings, default_channels, parse_channels
        target = target or self.target
        if target not in TARGETS:
            raise UsageError(f"unknown target '{target}'", hint=f"one of: {', '.join(TARGETS)}")
        params = self._model(target, preset, model)
        channels = default_channels(target, params) if channels is None \
            else parse_channels(channels)
        settings = CaptureSettings(
            freq=_hz(freq, "freq"), count=None if duration is not None else count,
            duration=_seconds(duration, "duration"), duty=duty,
            jitter=_seconds(jitter, "jitter"), channels=channels, target=target,
            delay=_seconds(delay, "delay"), model=params, preset=preset, load=load,
            timeout=_seconds(timeout, "timeout"))
        settings.ticks(self.session.tick_hz, self.session.stim_step)   # before the file
        return measure(self.session, settings, self._path(path, "capture"), mode=mode,
                       progress=progress)

    def sweep(self, f_from, f_to, *, target=None, preset=None, model=None, load=False,
              channels=("isr", "app"), pulses=None, resolution=0.005, confirm=True,
              tick=None, max_pulses=None, path=None, log=None):
        """Find MF-ISR, MF-APP (and with ``load`` SF) between ``f_from`` and ``f_to``;
        returns the sweep result (``.value("mf_isr_hz")``, ``.path``, ``.to_json()``).
        ``tick``: the target's tick in seconds (0: none; None: the model's, else 1 ms),
        which MF steps cover in every phase (docs/sweep.md); ``max_pulses``: their cap."""
        from .procedures.sweep import SweepSettings, run_sweep
        target = target or self.target
        from .procedures.settings import parse_channels
        channels = parse_channels(channels)
        params = self._model(target, preset, model)
        settings = SweepSettings(
            f_from=_hz(f_from, "f_from"), f_to=_hz(f_to, "f_to"), target=target,
            model=params, preset=preset, load=load, pulses=pulses, resolution=resolution,
            confirm=confirm, channels=tuple(channels), tick=tick,
            max_pulses=max_pulses).validate()
        settings.validate(self.session.tick_hz, self.session.stim_step)
        return run_sweep(self.session, settings, self._path(path, "sweep"),
                         log=log or (lambda msg: None))


@contextlib.contextmanager
def open_api(port=None, sim=False, target=None, firmware=None, captures="captures",
             baudrate=3_000_000, log=None):
    """Open a rig (``port``, or the simulation twin with ``sim``) and yield a
    :class:`RigAPI` on it; the rig (and the twin) is closed on leaving."""
    from .rig.rig import open_rig
    if target is None:
        target = "model" if sim else "external"
    if firmware is not None and not (sim and target == "soc"):
        raise UsageError("a firmware image applies to the simulated SoC target only")
    with open_rig(port, sim, log=log, soc=sim and target == "soc", firmware=firmware,
                  baudrate=baudrate) as session:
        yield RigAPI(session, captures, target)
