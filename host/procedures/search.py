# SPDX-License-Identifier: BSD-2-Clause
"""The threshold search of a sweep, independent of any rig.

MF and SF are each the lowest frequency at which a predicate — "a pulse was missed",
"the load task starved" — turns from false to true as the frequency rises.
:func:`search_threshold` finds it: bracket upwards in geometric steps, bisect
(geometrically) to a relative resolution, then confirm by measuring again just below
and at the found frequency. It calls a measurement function and knows nothing else,
so it is tested against fake measurements with known thresholds.
"""

import math
from dataclasses import asdict, dataclass

from ...units import format_hz

__all__ = ["Threshold", "search_threshold"]


@dataclass
class Threshold:
    """Result of one search: ``hz`` is the lowest frequency with the event (None if not
    found in the range, then ``reason`` says why); ``below_hz`` the highest frequency
    measured without it; ``confirmed`` whether the re-measurements agreed."""
    hz: float | None
    below_hz: float | None = None
    reason: str | None = None
    confirmed: bool | None = None
    steps: int = 0

    def to_json(self):
        return asdict(self)


def _identity(f):
    return f


def search_threshold(measure, f_from, f_to, *, resolution=0.005, factor=2.0,
                     quantize=_identity, known_clear=None, confirm=True, rounds=3,
                     what="event"):
    """Lowest frequency in [f_from, f_to] at which ``measure`` reports the event.

    ``measure(freq, phase) -> bool`` runs one step (``phase`` is ``"bracket"``,
    ``"bisect"`` or ``"confirm"``); the event is assumed absent below some frequency
    and present above it. ``quantize`` maps a frequency to one the stimulus can make
    (integer-tick periods); the bisection stops early when two such frequencies are
    adjacent. ``known_clear``: a frequency already known free of the event (the
    bracket starts there without measuring it). Returns a :class:`Threshold`.
    """
    steps = 0
    history = {}           # freq → last outcome

    def m(f, phase):
        nonlocal steps
        steps += 1
        r = bool(measure(f, phase))
        history[f] = r
        return r

    lo_lim, hi_lim = quantize(f_from), quantize(f_to)
    if known_clear is not None and lo_lim <= quantize(known_clear) < hi_lim:
        lo = quantize(known_clear)
        history[lo] = False
    else:
        lo = lo_lim
        if m(lo, "bracket"):
            return Threshold(None, None, f"{what} already at {format_hz(lo)} (the low end "
                             "of the range): the threshold is at or below it",
                             steps=steps)
    hi = None
    while hi is None:
        if lo >= hi_lim:
            return Threshold(None, lo, f"no {what} up to {format_hz(hi_lim)}", steps=steps)
        nf = min(quantize(lo * factor), hi_lim)
        if nf <= lo:
            nf = hi_lim
        if m(nf, "bracket"):
            hi = nf
        else:
            lo = nf

    confirmed = None
    for _ in range(rounds):
        while hi / lo > 1 + resolution:
            mid = quantize(math.sqrt(lo * hi))
            if not lo < mid < hi:
                break                   # adjacent stimulus periods: finest possible
            if m(mid, "bisect"):
                hi = mid
            else:
                lo = mid
        if not confirm:
            break
        # Confirm: no event just below, the event at the found frequency.
        if m(lo, "confirm"):
            # The boundary is lower than the bisection believed (a rare worst case
            # seen only now): bisect again below, from the last clear frequency.
            hi = lo
            clear = [f for f, r in history.items() if not r and f < lo]
            if not clear:
                return Threshold(None, None, f"{what} already at {format_hz(lo)} on "
                                 "re-measurement: the threshold is at or below the low "
                                 "end of the range", confirmed=False, steps=steps)
            lo = max(clear)
            confirmed = False
            continue
        confirmed = m(hi, "confirm")
        break
    return Threshold(hi, lo, None, confirmed, steps)
