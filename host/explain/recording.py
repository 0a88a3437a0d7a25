# SPDX-License-Identifier: BSD-2-Clause
"""The SoC twin's recording (``rtrig-sim --record PATH``, or ``$RTRIG_SOC_RECORD``):
24-byte entries written by ``host/sim/harness.cpp``, cut into one window per STIM0
rising edge and matched to a capture's pulses by the edge's rig cycle."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import UsageError
from ...outputs import read_input

__all__ = ["RECORD_DTYPE", "Recording", "load_recording", "FLAG_MIE", "FLAG_TRAP",
           "FLAG_EXC", "FLAG_EDGE", "SOC_HZ", "MAX_RECORDING_BYTES", "check_entries"]

#: One entry: ``t`` the SoC cycle; ``aux`` the instruction word (a retired
#: instruction) or the rig cycle (an edge); ``pc``; ``flags``.
RECORD_DTYPE = np.dtype([("t", "<u8"), ("aux", "<u8"), ("pc", "<u4"), ("flags", "<u4")])
FLAG_MIE = 1             #: mstatus.MIE after the instruction
FLAG_TRAP = 2            #: a trap entry; the interrupt code in bits 8..11
FLAG_EXC = 4             #: the trap is an exception (ecall, fault), not an interrupt
FLAG_EDGE = 0x8000_0000  #: a STIM0 rising edge
#: The SoC's clock (rtrig.gateware.soc.SOC_CLK_HZ, docs/soc.md).
SOC_HZ = 50_000_000


@dataclass
class Recording:
    """A loaded recording: ``entries`` (all, in order) and the index of each edge."""
    entries: np.ndarray
    edges: np.ndarray          # indices into entries of the edge entries

    @property
    def edge_rig_cycles(self):
        return self.entries["aux"][self.edges].astype(np.int64)

    def window(self, k):
        """The entries around edge ``k``: from after the previous edge's window start to
        the next edge (the next window's entries before its edge belong to both)."""
        start = self.edges[k - 1] + 1 if k > 0 else 0
        stop = self.edges[k + 1] if k + 1 < len(self.edges) else len(self.entries)
        return self.entries[start:stop], self.edges[k] - start

    def match(self, stim_t):
        """The edge of each pulse whose stimulus rose at rig tick ``stim_t`` (array):
        the rig's ticks are its cycles times a constant number of samples per cycle,
        found from the edges themselves. -1 where no recorded edge matches."""
        cyc = self.edge_rig_cycles
        stim_t = np.asarray(stim_t, dtype=np.int64)
        if len(cyc) == 0:
            return np.full(len(stim_t), -1)
        step = _ticks_per_cycle(cyc, stim_t)
        pos = np.searchsorted(cyc * step, stim_t)
        pos = np.clip(pos, 0, len(cyc) - 1)
        return np.where(cyc[pos] * step == stim_t, pos, -1)


def _ticks_per_cycle(cyc, stim_t):
    """The samples per rig cycle (1, 2, 4 or 8) under which most stimulus times are
    recorded edges: one chance coincidence cannot outvote the real rate."""
    counts = [np.isin(stim_t, cyc * step).sum() for step in (1, 2, 4, 8)]
    return (1, 2, 4, 8)[int(np.argmax(counts))]


#: The largest recording rtrig reads (it is read whole): 4 GiB, some 300 000 pulses at
#: the default windows (about 13 KB each, docs/explain.md).
MAX_RECORDING_BYTES = 1 << 32
#: The flags an entry can have (harness.cpp): MIE, trap, exception, the cause code in
#: bits 8..11, edge.
_FLAGS = FLAG_MIE | FLAG_TRAP | FLAG_EXC | 0xF00 | FLAG_EDGE
#: Past this, a SoC cycle is not one: 2^62 cycles of 20 ns are 2900 years.
_MAX_CYCLE = 1 << 62


def load_recording(path):
    """Read a recording file; :class:`UsageError` (one line) when it is not one, or
    is damaged (:func:`check_entries`). Only a regular file is read, and at most
    :data:`MAX_RECORDING_BYTES`."""
    path = Path(path)
    raw = read_input(path, MAX_RECORDING_BYTES, "a SoC twin recording")
    if len(raw) % RECORD_DTYPE.itemsize:
        raise UsageError(f"{path} is not a SoC twin recording (size "
                         f"{len(raw)} is not a multiple of {RECORD_DTYPE.itemsize})")
    entries = np.frombuffer(raw, dtype=RECORD_DTYPE)
    if not len(entries):
        raise UsageError(f"{path} is empty: no pulse was recorded")
    edges = np.flatnonzero(entries["flags"] & FLAG_EDGE)
    if not len(edges):
        raise UsageError(f"{path} holds no STIM0 edge: no pulse was recorded")
    check_entries(path, entries, edges)
    return Recording(entries, edges)


def check_entries(path, entries, edges):
    """Refuse, in one line naming the first damaged entry, a recording whose entries
    the twin cannot have written: SoC cycles that go back or are out of range, flags
    it never sets, edges whose rig cycles do not rise."""
    t = entries["t"]
    bad = [("its SoC cycle is past any run's", np.flatnonzero(t >= _MAX_CYCLE)),
           ("its SoC cycle is before the entry's before it",
            np.flatnonzero(t[1:] < t[:-1]) + 1),
           ("its flags are none the twin writes",
            np.flatnonzero(entries["flags"] & ~np.uint32(_FLAGS))),
           ("it is an edge with a program counter",
            edges[entries["pc"][edges] != 0])]
    cyc = entries["aux"][edges]
    bad += [("its edge's rig cycle is past any run's", edges[cyc >= _MAX_CYCLE]),
            ("its edge's rig cycle is not after the edge's before it",
             edges[1:][cyc[1:] <= cyc[:-1]])]
    found = [(int(at[0]), why) for why, at in bad if len(at)]
    if found:
        i, why = min(found)
        raise UsageError(f"{path} is damaged at entry {i} (byte "
                         f"{i * RECORD_DTYPE.itemsize}): {why}",
                         hint="record the run again (docs/explain.md)")
