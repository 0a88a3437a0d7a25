# SPDX-License-Identifier: BSD-2-Clause
"""Sweep steps on parallel simulation twins (docs/sweep.md, "Parallel twins").

A sweep is one or more *chains*: searches whose next step depends only on the
outcomes of their own earlier steps (MF-APP then MF-ISR; each interval channel's MF;
the unloaded heartbeat rate then SF). A chain is a function ``chain(ask, out)`` that
asks for its steps one by one (``ask(request) -> outcome``) and writes its figures to
``out``; given the same outcomes it asks for the same steps, so :func:`replay` finds
the step it asks for after any sequence of outcomes, measured or supposed.

:func:`run_parallel` keeps one twin per worker busy: every chain's next step first,
then the steps a chain would ask for next if a step still running came out clean (or
missed), the likelier first. A step measured ahead is recorded when its chain gets
there, and dropped (its twin stopped mid-step) as soon as the chain has gone the other
way. Each chain so records the same steps with the same results, in the same order,
as on one rig; chains' steps interleave. A real rig is one instrument: a sweep on it
runs its chains in turn, step by step (``run_sweep`` without further twins).
"""

import heapq
import itertools
import queue
import threading

__all__ = ["Cancelled", "replay", "run_parallel", "P_CLEAN"]

#: The weight of "clean" for a boolean step not yet measured. A clean step runs every
#: pulse while a missing one ends at its first miss, so a step still running is more
#: likely clean than not, and the step its chain asks for after a clean outcome is
#: the one worth starting early.
P_CLEAN = 0.7
#: Replays at most per scheduling round (each is a few dozen steps of pure logic).
_MAX_REPLAYS = 400


class Cancelled(Exception):
    """A step measured ahead that is no longer needed (raised inside its worker)."""


class _Need(Exception):
    def __init__(self, request):
        super().__init__(request)
        self.request = request


def replay(chain, path, out=None):
    """The request ``chain`` makes after the outcomes ``path`` (``(request, outcome)``
    pairs in order), or None when it has finished; ``out`` receives what it writes."""
    it = iter(path)

    def ask(request):
        known = next(it, None)
        if known is None:
            raise _Need(request)
        if known[0] != request:
            raise RuntimeError(f"a sweep chain asked for {request} on replay, "
                               f"not {known[0]}: its steps must follow its outcomes only")
        return known[1]

    try:
        chain(ask, {} if out is None else out)
    except _Need as need:
        return need.request
    return None


def _ranked(chains, paths, done, limit):
    """Up to ``limit`` steps worth measuring, most likely needed first: ``(node,
    request)`` with ``node = (chain index, path prefix)``. A chain's next step has
    weight 1; a boolean step not yet known branches into its outcomes (``request.
    outcomes``, clean first, weighted :data:`P_CLEAN` and its complement), a known one
    (``done``) is followed; a step with any other outcome ends the look ahead."""
    order = itertools.count()
    heap = [(-1.0, next(order), i, tuple(p)) for i, p in enumerate(paths)]
    ranked, replays = [], 0
    while heap and len(ranked) < limit and replays < _MAX_REPLAYS:
        neg, _, i, prefix = heapq.heappop(heap)
        request = replay(chains[i], prefix)
        replays += 1
        if request is None:
            continue
        node = (i, prefix)
        if node in done:
            heapq.heappush(heap, (neg, next(order), i, prefix + ((request, done[node][0]),)))
            continue
        ranked.append((node, request))
        outcomes = getattr(request, "outcomes", None)
        for outcome, w in zip(outcomes or (), (P_CLEAN, 1 - P_CLEAN)):
            heapq.heappush(heap, (neg * w, next(order), i, prefix + ((request, outcome),)))
    return ranked


class _Worker:
    """One twin's thread: measures the requests it is given, one at a time."""

    def __init__(self, twin, events):
        self.twin = twin
        self.events = events
        self.node = None
        self.cancel = threading.Event()
        self.jobs = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def start(self, node, request):
        self.node = node
        self.cancel = threading.Event()
        self.jobs.put((node, request, self.cancel))

    def _loop(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            node, request, cancel = job
            self.twin.cancelled = cancel.is_set
            try:
                result = self.twin.do(request)
            except Cancelled:
                result = Cancelled()
            except BaseException as e:          # handed to the sweep's thread
                result = e
            self.events.put((self, node, result))

    def close(self):
        self.cancel.set()
        self.jobs.put(None)


def _extends(node, paths):
    i, prefix = node
    return prefix[:len(paths[i])] == tuple(paths[i])


def _advance(chains, paths, done, take, out):
    """Record every chain's next steps that are measured already; returns whether every
    chain has finished."""
    finished = True
    for i, chain in enumerate(chains):
        while True:
            request = replay(chain, paths[i], out)
            node = (i, tuple(paths[i]))
            if request is None or node not in done:
                break
            outcome = take(done.pop(node))
            paths[i].append((request, outcome))
        finished = finished and request is None
    return finished


def _schedule(workers, ranked, paths):
    """Stop the steps no chain can need any more, free a twin for every chain's next
    step if none is idle (the least likely step measured ahead gives way), and start
    the idle twins on the likeliest steps not yet running."""
    busy = {w.node: w for w in workers if w.node is not None}
    for node, w in busy.items():
        if not _extends(node, paths):
            w.cancel.set()
    rank = {node: k for k, (node, _) in enumerate(ranked)}
    heads = [n for n, _ in ranked if len(n[1]) == len(paths[n[0]]) and n not in busy]
    idle = [w for w in workers if w.node is None]
    stopping = sum(1 for w in busy.values() if w.cancel.is_set())
    spare = sorted((w for w in busy.values() if not w.cancel.is_set()
                    and len(w.node[1]) > len(paths[w.node[0]])),
                   key=lambda w: rank.get(w.node, len(rank)), reverse=True)
    for w in spare[:max(0, len(heads) - len(idle) - stopping)]:
        w.cancel.set()
    for node, request in ranked:
        if not idle:
            break
        if node not in busy:
            idle.pop().start(node, request)


def run_parallel(chains, twins, take, out):
    """Run ``chains`` on the ``twins`` (objects with ``do(request)`` and a settable
    ``cancelled`` callable, each on its own thread); ``take(result)`` records a step's
    result and returns its outcome, called on this thread, in each chain's order.
    ``out`` receives the chains' figures as their steps are recorded. On an error in
    any twin, or Ctrl-C, every twin's step is stopped and the error propagates; the
    steps recorded so far stay recorded, those measured ahead are dropped."""
    events = queue.Queue()
    workers = [_Worker(t, events) for t in twins]
    paths = [[] for _ in chains]
    done = {}
    try:
        while not _advance(chains, paths, done, take, out):
            done = {n: r for n, r in done.items() if _extends(n, paths)}
            ranked = _ranked(chains, paths, done, 2 * len(workers))
            _schedule(workers, ranked, paths)
            while True:
                try:
                    worker, node, result = events.get(timeout=0.2)
                    break
                except queue.Empty:
                    continue
            worker.node = None
            if isinstance(result, Cancelled):
                continue
            if isinstance(result, BaseException):
                raise result
            if _extends(node, paths):
                done[node] = result
    finally:
        for w in workers:
            w.close()
        for w in workers:
            w.thread.join(timeout=30)
