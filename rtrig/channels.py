# SPDX-License-Identifier: BSD-2-Clause
"""What a latency channel times: a stimulus-to-response latency (``isr``, ``app``) or
an interval between any two edges (``marker0+..marker0-``).

The rig has :data:`~rtrig.protocol.N_LATENCY_CHANNELS` matchers. ``isr`` is always
channel 0 and ``app`` channel 1 (their edges are ``LAT_EDGES``' reset value, so every
capture file written before interval channels reads the same); an interval takes the
lowest channel left. An interval is written ``START..END``, each an edge source of
:data:`~rtrig.protocol.EDGE_SOURCES` (``isr``, ``app``, ``heartbeat``, ``marker0`` ..
``marker2``, ``stim0``, ``stim1``) followed by ``+`` (rising) or ``-`` (falling).
"""

from .errors import UsageError
from .protocol import EDGE_SOURCES, LAT_EDGES_RESET, N_LATENCY_CHANNELS, lat_edges

__all__ = ["LATENCY_CHANNELS", "SOURCE_NAMES", "is_interval", "parse_interval",
           "channel_numbers", "lat_edges_for", "CHANNEL_HELP"]

#: The stimulus-to-response channels and their fixed numbers.
LATENCY_CHANNELS = {"isr": 0, "app": 1}
#: Edge source names on the command line → ``LAT_EDGES`` source code.
SOURCE_NAMES = {"isr": 0, "app": 1, **{n.lower(): k for k, n in enumerate(EDGE_SOURCES)}}

CHANNEL_HELP = ("channels are isr, app, or an interval START..END between two edges, "
                "e.g. marker0+..marker0- (sources: isr, app, heartbeat, marker0..2, "
                "stim0, stim1; + rising, - falling)")


def is_interval(name):
    return ".." in name


def _edge(text, spec):
    text = text.strip().lower()
    if len(text) < 2 or text[-1] not in "+-" or text[:-1] not in SOURCE_NAMES:
        raise UsageError(f"bad interval '{spec}': '{text}' is not an edge", hint=CHANNEL_HELP)
    return SOURCE_NAMES[text[:-1]], int(text[-1] == "-")


def parse_interval(spec):
    """``"marker0+..marker0-"`` → (start source, start falling, end source, end falling)."""
    start, sep, end = spec.partition("..")
    if not sep:
        raise UsageError(f"bad interval '{spec}': no '..' between its edges", hint=CHANNEL_HELP)
    s, e = _edge(start, spec), _edge(end, spec)
    if s == e:
        raise UsageError(f"bad interval '{spec}': it starts and ends on the same edge",
                         hint="time a full period as the fall before it to the rise, "
                              "e.g. stim0-..stim0+")
    return s + e


def channel_numbers(channels):
    """``{name: channel number}`` for the channels of one capture; a one-line
    :class:`UsageError` for an unknown name or too many channels."""
    out, intervals = {}, []
    for name in channels:
        if name in LATENCY_CHANNELS:
            out[name] = LATENCY_CHANNELS[name]
        elif is_interval(name):
            parse_interval(name)
            intervals.append(name)
        else:
            raise UsageError(f"unknown channel '{name}'", hint=CHANNEL_HELP)
    free = [c for c in range(N_LATENCY_CHANNELS) if c not in out.values()]
    if len(intervals) > len(free):
        raise UsageError(f"{len(channels)} channels asked for, the rig has "
                         f"{N_LATENCY_CHANNELS}", hint="isr and app take channels 0 and 1")
    out.update(zip(intervals, free))
    return out


def lat_edges_for(channels):
    """The ``LAT_EDGES`` value of these channels (unused channels keep their reset
    edges)."""
    value = LAT_EDGES_RESET
    for name, ch in channel_numbers(channels).items():
        if is_interval(name):
            value &= ~(0xFF << 8 * ch)
            value |= lat_edges(*parse_interval(name)) << 8 * ch
    return value
