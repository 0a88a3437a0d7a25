# SPDX-License-Identifier: BSD-2-Clause
"""The library API on one open rig, as tests and farm drivers call it.

:class:`RigAPI` wraps a rig (:func:`rtrig.host.rig.connect.open_rig`) and offers
``capture`` and ``sweep`` with the CLI's units (``"5k"``, ``"20us"``) and defaults.
The pytest plugin (:mod:`rtrig.host.integrations.pytest_plugin`) and the labgrid driver
(:mod:`rtrig.host.integrations.labgrid_driver`) both hand this object to tests, so a rig
reached directly, through the simulation twin or through labgrid behaves alike.
It is the one place that knows how a session is driven: pointing it at another rig
interface changes nothing above it.
"""

import contextlib
import inspect
import itertools
from pathlib import Path

from ..errors import UsageError
from .procedures.options import api_signature, describe, option_values
from .rig.rig import TARGETS as RIG_TARGETS

__all__ = ["RigAPI", "open_api", "TARGETS"]

#: The targets a rig can measure (``external``: the device wired to the rig).
TARGETS = tuple(RIG_TARGETS)

_KW = inspect.Parameter.KEYWORD_ONLY
#: The methods' signatures: the option table's capture and sweep options (the target's
#: default is the RigAPI's), then where the capture goes and how progress is told.
_CAPTURE = api_signature("capture", positional=("freq", "count"), defaults={"target": None},
                         extra=[inspect.Parameter("path", _KW, default=None),
                                inspect.Parameter("progress", _KW, default=False)])
_SWEEP = api_signature("sweep", positional=("f_from", "f_to"), defaults={"target": None},
                       extra=[inspect.Parameter("path", _KW, default=None),
                              inspect.Parameter("log", _KW, default=None)])


def _call(signature, args, kwargs):
    """The options of a call (``self`` and the extra parameters taken out)."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    values.pop("self")
    return values


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

    def _values(self, command, values):
        if values["target"] is None:
            values["target"] = self.target
        return option_values(command, values)

    def capture(self, *args, **kwargs):
        """Run one capture; returns its result (``.summary``, ``.path``, ``.to_json()``).

        The options are ``rtrig capture``'s (one table,
        :mod:`rtrig.host.procedures.options`), their settings built as the CLI builds
        them. Frequencies and durations take numbers (Hz, s) or the CLI's strings
        (``"8k"``, ``"20us"``); ``channels``: ``"isr,app"`` or a tuple (default: ISR,
        and APP too on the model and SoC targets); ``model``: a dict or ``"k=v,…"``
        with units; ``target``: default the RigAPI's. ``path``: the capture file
        (default: a new one in ``captures``); ``progress``: a progress line on stderr.

        Options, from the table:
        """
        values = _call(_CAPTURE, (self, *args), kwargs)
        path, progress = values.pop("path"), values.pop("progress")
        from .procedures.measure import measure
        from .procedures.options import capture_settings
        values = self._values("capture", values)
        mode, bin_shift = values.pop("mode"), values.pop("bin_shift")
        settings = capture_settings(**values, tick_hz=self.session.tick_hz,
                                    step=self.session.stim_step)
        settings.ticks(self.session.tick_hz, self.session.stim_step)   # before the file
        return measure(self.session, settings, self._path(path, "capture"), mode=mode,
                       bin_shift=bin_shift, progress=progress)

    def sweep(self, *args, **kwargs):
        """Find MF-ISR, MF-APP (and with ``load`` SF) between ``f_from`` and ``f_to``;
        returns the sweep result (``.value("mf_isr_hz")``, ``.path``, ``.to_json()``).

        The options are ``rtrig sweep``'s (:mod:`rtrig.host.procedures.options`), as
        :meth:`capture`'s are ``rtrig capture``'s; ``log`` is told each step.

        Options, from the table:
        """
        values = _call(_SWEEP, (self, *args), kwargs)
        path, log = values.pop("path"), values.pop("log")
        from .procedures import sweep as procedure
        from .procedures.options import sweep_settings
        settings = sweep_settings(**self._values("sweep", values),
                                  tick_hz=self.session.tick_hz, step=self.session.stim_step)
        settings.validate(self.session.tick_hz, self.session.stim_step)
        return procedure.run_sweep(self.session, settings, self._path(path, "sweep"),
                                   log=log or (lambda msg: None))

    capture.__signature__ = _CAPTURE
    capture.__doc__ = inspect.cleandoc(capture.__doc__) + "\n\n" + describe(
        "capture", {"target": None})
    sweep.__signature__ = _SWEEP
    sweep.__doc__ = inspect.cleandoc(sweep.__doc__) + "\n\n" + describe(
        "sweep", {"target": None})


@contextlib.contextmanager
def open_api(port=None, sim=False, target=None, firmware=None, captures="captures",
             baudrate=3_000_000, log=None):
    """Open a rig (``port``, or the simulation twin with ``sim``) and yield a
    :class:`RigAPI` on it; the rig (and the twin) is closed on leaving."""
    from .rig.connect import open_rig
    if target is None:
        target = "model" if sim else "external"
    if firmware is not None and not (sim and target == "soc"):
        raise UsageError("a firmware image applies to the simulated SoC target only")
    with open_rig(port, sim, log=log, soc=sim and target == "soc", firmware=firmware,
                  baudrate=baudrate) as session:
        yield RigAPI(session, captures, target)
