# SPDX-License-Identifier: BSD-2-Clause
"""cyclictest's results as history runs: its ``--json`` output and its ``-h``
histograms (read by :func:`rtrig.host.integrations.cyclictest.read`).

Both become a :class:`~rtrig.host.integrations.cyclictest.Histogram` (1 µs buckets
per thread, the samples beyond the last bucket, cyclictest's own min/avg/max), and
then one run of kind ``cyclictest``: the latencies the system timed itself, recorded
beside the rig's as channel ``cyclictest`` (all threads together) with
``cyclictest.p50`` … ``cyclictest.p9999`` and their bounds (those of a binned
capture: :class:`rtrig.host.report.compare.Samples` over the buckets, each bound
widened to its bucket's edge), ``min``, ``mean``, ``max`` and ``pulses`` (samples),
and each thread's maximum (``cyclictest.thread0.max``). A percentile among the
samples beyond the last bucket reads as the last bucket's edge, clamped to the
maximum.
"""


import numpy as np

from ...errors import CaptureFormatError
from ..analysis import PERCENTILES
from .connect import HistoryError
from .figures import samples_json
from .store import Run

__all__ = ["run_of_cyclictest", "histogram_of_json", "is_cyclictest_json"]

CHANNEL = "cyclictest"


def is_cyclictest_json(path):
    try:
        with open(path, "rb") as f:
            return f.read(64).lstrip().startswith(b"{")
    except OSError:
        return False


def histogram_of_json(path):
    """A :class:`Histogram` of cyclictest's ``--json`` file ``path``, read and checked
    by the one cyclictest reader (buckets, counts and extremes validated; a file that
    is not regular or too large refused unread)."""
    from ..integrations.cyclictest import read
    return read(path)


def _samples(h):
    from ..report.compare import Samples
    counts = h.combined()
    lo = int(h.min.min()) if h.min is not None else int(np.flatnonzero(counts)[0])
    hi = int(h.max.max()) if h.max is not None else len(counts)
    hist = {"below": 0, "hist": [int(c) for c in counts], "overflow": int(h.overflows.sum()),
            "offset": 0, "width": 1, "lo": lo, "hi": hi}
    return Samples(np.zeros(0, np.int64), np.zeros(0, np.int64), h.samples, 0,
                   1e9 / h.unit_ns, hist)


def run_of_cyclictest(path, labels=None):
    """The :class:`Run` of a cyclictest ``--json`` or ``-h`` file."""
    from ..bounds import DEFAULT_CONFIDENCE
    from ..integrations.cyclictest import read
    try:
        h = histogram_of_json(path) if is_cyclictest_json(path) else read(path)
    except CaptureFormatError as e:
        raise HistoryError(str(e), hint="give an rtrig capture, cyclictest --json output "
                                        "or a cyclictest -h histogram") from None
    if h.samples == 0:
        raise HistoryError(f"{path}: the cyclictest results hold no sample")
    s = _samples(h)
    figures = []
    for key, pct in PERCENTILES.items():
        lo, hi = s.bounds(pct / 100, DEFAULT_CONFIDENCE)
        figures.append((f"{CHANNEL}.{key}", s.ns(s.point(pct / 100)), s.ns(lo), s.ns(hi), "ns"))
    summ = h.summary()
    for key in ("min", "mean", "max"):
        figures.append((f"{CHANNEL}.{key}", summ.get(f"{key}_ns"), None, None, "ns"))
    figures.append((f"{CHANNEL}.pulses", h.samples, None, None, "count"))
    if h.max is not None:
        figures += [(f"{CHANNEL}.thread{i}.max", int(m) * h.unit_ns, None, None, "ns")
                    for i, m in enumerate(h.max)]
    sysinfo = getattr(h, "sysinfo", {})
    settings = {"threads": h.threads, "buckets": h.buckets, "self_timed": True,
                "release": sysinfo.get("release"), "realtime": sysinfo.get("realtime")}
    return Run("cyclictest", str(path), str(sysinfo.get("nodename") or "unknown"),
               "cyclictest", settings, "complete", dict(labels or {}), figures,
               {CHANNEL: samples_json(s)})
