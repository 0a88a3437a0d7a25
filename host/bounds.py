# SPDX-License-Identifier: BSD-2-Clause
"""Confidence bounds on a capture's figures, free of any assumption about the shape
of the latency distribution.

* **A percentile** lies between two of the measured samples. How many samples fall
  below the true p-quantile is binomial (``n``, ``p``), so the ranks of the two
  order statistics that hold it with a stated confidence follow from the binomial
  distribution alone (:func:`rank_bounds`): exact, cheap, and valid in the tails,
  where a bootstrap fails. A side that ``n`` samples cannot bound is None (too few
  samples beyond the percentile).
* **The maximum** gets no interval: nothing bounds what was never seen. What ``n``
  samples do support is an upper bound on how often a pulse exceeds the measured
  maximum (:func:`max_exceedance`: at 95 % about 3 / n).
* **A fraction** (missed pulses) gets the exact Clopper–Pearson interval
  (:func:`fraction_bounds`).

What the bounds assume: the samples are independent draws from one distribution.
Latencies that lock to a periodic kernel tick are not quite independent; docs/report.md
gives the coverage measured on the model target with a tick.

Bounds on ranks hold for discrete data (latencies are whole ticks) too: with ties the
closed interval between the two order statistics covers at least as often.
"""

import math

import numpy as np
from scipy import stats

__all__ = ["DEFAULT_CONFIDENCE", "rank_bounds", "values_at", "quantile_bounds",
           "binned_quantile_bounds", "max_exceedance", "fraction_bounds", "difference",
           "joint_level", "check_confidence"]

#: The confidence of every bound unless a caller says otherwise.
DEFAULT_CONFIDENCE = 0.95


def check_confidence(confidence):
    """``confidence`` as a float in (0, 1), or ValueError with a one-line reason."""
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise ValueError(f"confidence must be a number between 0 and 1, "
                         f"not {confidence!r}") from None
    if not 0.5 <= c < 1:
        raise ValueError(f"confidence must be at least 0.5 and below 1 (e.g. 0.95), "
                         f"not {confidence!r}")
    return c


def rank_bounds(n, q, confidence=DEFAULT_CONFIDENCE):
    """0-based ranks ``(lo, hi)`` in ``n`` sorted samples of the order statistics that
    hold the ``q``-quantile (0 < q < 1) with at least ``confidence`` (two-sided, equal
    tails); a side that ``n`` samples cannot bound is None.

    With ``B`` ~ Binomial(``n``, ``q``) the count of samples below the quantile, the
    interval between the samples of 1-based ranks ``j`` and ``k`` holds it with
    probability P(j ≤ B ≤ k − 1): ``j − 1`` is the largest count whose CDF is below
    (1 − confidence) / 2 and ``k − 1`` the smallest whose CDF reaches
    (1 + confidence) / 2.
    """
    alpha = 1 - check_confidence(confidence)
    if n <= 0:
        return None, None
    x0 = int(stats.binom.ppf(alpha / 2, n, q))       # smallest x with F(x) ≥ α/2
    if stats.binom.cdf(x0, n, q) > alpha / 2:
        x0 -= 1                                      # now the largest with F(x) ≤ α/2
    x1 = int(stats.binom.ppf(1 - alpha / 2, n, q))   # smallest x with F(x) ≥ 1 − α/2
    lo = x0 if x0 >= 0 else None                     # 1-based rank x0 + 1
    hi = x1 if x1 < n else None                      # 1-based rank x1 + 1
    return lo, hi


def values_at(values, counts, ranks):
    """The samples at 0-based ``ranks`` of the samples ``values`` × ``counts``
    (values ascending)."""
    cum = np.cumsum(np.asarray(counts, dtype=np.int64))
    return np.asarray(values)[np.searchsorted(cum, np.asarray(ranks, dtype=np.int64),
                                              side="right")]


def quantile_bounds(values, counts, q, confidence=DEFAULT_CONFIDENCE):
    """``(lo, hi)``: the bounds of the ``q``-quantile of the samples ``values`` ×
    ``counts`` (values ascending), in the values' unit; None for a side the samples
    cannot bound."""
    n = int(np.sum(counts))
    lo, hi = rank_bounds(n, q, confidence)
    return (None if lo is None else values_at(values, counts, [lo])[0].item(),
            None if hi is None else values_at(values, counts, [hi])[0].item())


def binned_quantile_bounds(n, below, hist, overflow, offset, width, lowest, highest, q,
                           confidence=DEFAULT_CONFIDENCE):
    """:func:`quantile_bounds` of ``n`` samples known only as a histogram (the rig's
    on-chip statistics): ``below`` samples under ``offset``, ``hist[i]`` samples in
    ``[offset + i·width, offset + (i+1)·width)``, ``overflow`` above the last bin,
    the extremes ``lowest`` and ``highest`` exact. A lower bound is the lower edge of
    its bin, an upper bound the last value of its bin: the bounds widen by the bin
    width, never narrow."""
    lo_rank, hi_rank = rank_bounds(n, q, confidence)
    edges = np.cumsum(np.concatenate([[below], np.asarray(hist, dtype=np.int64), [overflow]]))

    def where(rank):                     # index into [underflow, bins..., overflow]
        return int(np.searchsorted(edges, rank, side="right"))

    top = len(hist)
    lo = hi = None
    if lo_rank is not None:
        i = where(lo_rank)
        lo = lowest if i == 0 else offset + (i - 1) * width
    if hi_rank is not None:
        i = where(hi_rank)
        hi = offset - 1 if i == 0 else highest if i > top else offset + i * width - 1
    clamp = lambda v: None if v is None else min(max(v, lowest), highest)  # noqa: E731
    lo, hi = clamp(lo), clamp(hi)
    return lo, hi


def max_exceedance(n, confidence=DEFAULT_CONFIDENCE):
    """The upper bound, at ``confidence``, on the probability that one more pulse
    exceeds the maximum of ``n`` samples: the p with (1 − p)^n = 1 − confidence
    (about −ln(1 − confidence) / n, 3 / n at 95 %). None without samples."""
    if n <= 0:
        return None
    alpha = 1 - check_confidence(confidence)
    return -math.expm1(math.log(alpha) / n)


def fraction_bounds(k, n, confidence=DEFAULT_CONFIDENCE):
    """The exact (Clopper–Pearson) bounds of a fraction seen as ``k`` of ``n``:
    ``(lo, hi)``, or ``(None, None)`` without trials."""
    if n <= 0:
        return None, None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(
        confidence_level=check_confidence(confidence), method="exact")
    return float(ci.low), float(ci.high)


def joint_level(confidence, statements=1):
    """The confidence each of two independent captures' bounds needs so that every
    one of ``statements`` differences made from them holds together with
    ``confidence``: Bonferroni over the statements, then the square root for the two
    independent captures."""
    alpha = 1 - check_confidence(confidence)
    return math.sqrt(1 - alpha / max(int(statements), 1))


def difference(a, b):
    """Bounds of B − A from the bounds ``a = (lo, hi)`` and ``b`` of two independent
    captures (each side None when unbounded): ``(b.lo − a.hi, b.hi − a.lo)``. When
    each holds with probability c, both hold, and so does the difference, with c²."""
    lo = None if b[0] is None or a[1] is None else b[0] - a[1]
    hi = None if b[1] is None or a[0] is None else b[1] - a[0]
    return lo, hi
