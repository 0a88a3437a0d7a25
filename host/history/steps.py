# SPDX-License-Identifier: BSD-2-Clause
"""The steps between consecutive groups of runs (one version after another): is
the later group higher, lower, or is no difference shown?

The verdict is ``rtrig compare``'s own. A latency percentile or the missed
fraction of a channel whose runs kept their samples (value counts, or a histogram)
is judged by :func:`rtrig.host.report.compare.compare_samples` on the two groups'
pooled samples — the bounds, the joint confidence over the channel's statements
and the rule of ``compare``. A figure recorded only with bounds (a sweep's MF and
SF, between the highest frequency measured clear and the first failing) is judged
by compare's rule on the bounds of the groups' last runs: higher when the whole
interval of B − A lies above 0. Minimum, mean and maximum get no verdict, as in
``compare`` (no interval).

Pooling assumes the runs of one group are draws of one distribution, as the
samples of one capture are.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Step", "steps", "judge", "pool"]


@dataclass
class Step:
    """A step of ``figure`` between group ``a`` and the next, ``b``: the verdict and
    the bounds of B − A (in the figure's unit; None for a side not bounded)."""
    figure: str
    a: str
    b: str
    after_run: int            # the id of A's last run
    verdict: str
    diff: tuple


def pool(docs):
    """One :class:`Samples` of several runs' samples dicts, or None when they cannot
    be pooled (different ticks or bins)."""
    from ..report.compare import Samples
    ticks = {d["tick_hz"] for d in docs}
    if len(ticks) != 1:
        return None
    pulses = sum(d["pulses"] for d in docs)
    missed = sum(d["missed"] for d in docs)
    hists = [d["hist"] for d in docs]
    if all(h is None for h in hists):
        values = np.concatenate([np.asarray(d["values"], np.int64) for d in docs])
        counts = np.concatenate([np.asarray(d["counts"], np.int64) for d in docs])
        u, inv = np.unique(values, return_inverse=True)
        return Samples(u, np.bincount(inv, weights=counts).astype(np.int64), pulses, missed,
                       ticks.pop())
    if any(h is None for h in hists) or len({(h["offset"], h["width"], len(h["hist"]))
                                             for h in hists}) != 1:
        return None
    hist = dict(hists[0], hist=[int(x) for x in np.sum([h["hist"] for h in hists], axis=0)],
                below=sum(h["below"] for h in hists),
                overflow=sum(h["overflow"] for h in hists),
                lo=min(h["lo"] for h in hists), hi=max(h["hi"] for h in hists))
    return Samples(np.zeros(0, np.int64), np.zeros(0, np.int64), pulses, missed, ticks.pop(),
                   hist)


class _Judge:
    """The comparisons of each channel between two groups, made once."""

    def __init__(self, history, confidence):
        self.history, self.confidence = history, confidence
        self.cache = {}

    def channel(self, channel, a_ids, b_ids):
        from ..report.compare import CompareError, compare_samples
        key = (channel, tuple(a_ids), tuple(b_ids))
        if key not in self.cache:
            docs = self.history.samples(channel, [*a_ids, *b_ids])
            result = None
            if all(i in docs for i in [*a_ids, *b_ids]):
                a = pool([docs[i] for i in a_ids])
                b = pool([docs[i] for i in b_ids])
                if a is not None and b is not None and a.answered and b.answered:
                    try:
                        result = compare_samples({channel: a}, {channel: b}, self.confidence,
                                                 [channel]).channels[channel]
                    except CompareError:
                        result = None
            self.cache[key] = result
        return self.cache[key]


def _judge(judge, figure, a_runs, b_runs, values):
    from ..analysis import PERCENTILES
    from ..bounds import difference
    from ..report.compare import NONE, _verdict
    channel, _, stat = figure.rpartition(".")
    if channel and (stat in PERCENTILES or stat == "missed"):
        ch = judge.channel(channel, [r["id"] for r in a_runs], [r["id"] for r in b_runs])
        if ch is not None:
            if stat == "missed":
                return ch.missed["verdict"], tuple(ch.missed["difference_bounds"])
            f = next(f for f in ch.figures if f.figure == stat)
            return f.verdict, tuple(f.diff)
    a, b = values.get(a_runs[-1]["id"]), values.get(b_runs[-1]["id"])
    if a is None or b is None or stat in ("min", "mean", "max", "pulses", "max_exceedance"):
        return NONE, (None, None)
    d = difference((a[1], a[2]), (b[1], b[2]))
    return _verdict(*d), d


def steps(history, figure, grouped, values, confidence=0.95, judge=None):
    """``[Step]`` of ``figure`` between each pair of consecutive groups
    (``grouped``: :func:`rtrig.host.history.query.groups`' list; ``values``:
    :meth:`History.figures`' dict)."""
    judge = judge or _Judge(history, confidence)
    out = []
    for (ga, a_runs), (gb, b_runs) in zip(grouped, grouped[1:]):
        verdict, diff = _judge(judge, figure, a_runs, b_runs, values)
        out.append(Step(figure, ga, gb, a_runs[-1]["id"], verdict, diff))
    return out


def judge(history, confidence=0.95):
    """A judge to share between :func:`steps` calls (each channel compared once)."""
    return _Judge(history, confidence)
