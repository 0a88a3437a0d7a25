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

from dataclasses import dataclass

from .errors import UsageError
from .protocol import EDGE_SOURCES, LAT_EDGES_RESET, N_LATENCY_CHANNELS, lat_edges

__all__ = ["LATENCY_CHANNELS", "SOURCE_NAMES", "channel_order", "is_interval", "parse_interval",
           "Channel", "ChannelPlan", "CHANNEL_HELP", "SWEEP_NAMES", "mf_key", "mf_channel",
           "sweep_figure_keys", "sweep_figure_name"]

#: The stimulus-to-response channels and their fixed numbers.
LATENCY_CHANNELS = {"isr": 0, "app": 1}
#: Edge source names on the command line → ``LAT_EDGES`` source code.
SOURCE_NAMES = {"isr": 0, "app": 1, **{n.lower(): k for k, n in enumerate(EDGE_SOURCES)}}


def channel_order(name):
    """The sort key of channel ``name`` in tables, plots and exports: ISR first, then
    APP, then any other channel by name."""
    return (LATENCY_CHANNELS.get(name, len(LATENCY_CHANNELS)), name)


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


@dataclass(frozen=True)
class Channel:
    """One channel of a capture: its ``name``, the ``number`` of the matcher that times
    it, and for an interval its ``interval`` (:func:`parse_interval`; None for ``isr``
    and ``app``, which time the stimulus to a response)."""
    name: str
    number: int
    interval: tuple | None = None

    @property
    def is_interval(self):
        return self.interval is not None

    @property
    def edges(self):
        """This channel's byte of ``LAT_EDGES``: its two edges."""
        if self.interval is None:
            return LAT_EDGES_RESET >> 8 * self.number & 0xFF
        return lat_edges(*self.interval)


@dataclass(frozen=True)
class ChannelPlan:
    """The channels of one capture, resolved once: each name's matcher number and
    edges (:meth:`of`). What the rig is set to (:attr:`mask`, :attr:`lat_edges`), what
    the capture file names (:attr:`channel_names`) and which counters are read come
    from here; nothing else turns a name into a number. ``ChannelPlan()``: no channel
    is matched (a run timed by raw events or the heartbeat alone)."""
    channels: tuple = ()

    @classmethod
    def of(cls, names):
        """The plan of ``names`` (``isr``, ``app``, intervals ``START..END``), in their
        order; a one-line :class:`UsageError` for an unknown name or too many channels."""
        names = tuple(names)
        numbers, intervals = {}, {}
        for name in names:
            if name in LATENCY_CHANNELS:
                numbers[name] = LATENCY_CHANNELS[name]
            elif is_interval(name):
                intervals[name] = parse_interval(name)
            else:
                raise UsageError(f"unknown channel '{name}'", hint=CHANNEL_HELP)
        free = [c for c in range(N_LATENCY_CHANNELS) if c not in numbers.values()]
        if len(intervals) > len(free):
            raise UsageError(f"{len(names)} channels asked for, a rig has at most "
                             f"{N_LATENCY_CHANNELS}", hint="isr and app take channels 0 and 1")
        numbers.update(zip(intervals, free))
        return cls(tuple(Channel(n, numbers[n], intervals.get(n)) for n in names))

    def __iter__(self):
        return iter(self.channels)

    def __len__(self):
        return len(self.channels)

    @property
    def names(self):
        return tuple(c.name for c in self.channels)

    def number(self, name):
        """The matcher number of channel ``name`` (one of this plan's)."""
        for c in self.channels:
            if c.name == name:
                return c.number
        raise KeyError(name)

    @property
    def mask(self):
        """The ``LAT_CH_EN`` value: the matchers of these channels."""
        out = 0
        for c in self.channels:
            out |= 1 << c.number
        return out

    @property
    def lat_edges(self):
        """The ``LAT_EDGES`` value (unused channels keep their reset edges)."""
        value = LAT_EDGES_RESET
        for c in self.channels:
            value = value & ~(0xFF << 8 * c.number) | c.edges << 8 * c.number
        return value

    @property
    def has_intervals(self):
        return any(c.is_interval for c in self.channels)

    @property
    def pulse_numbers(self):
        """The numbers of the channels with one record per stimulus pulse: ``isr``,
        ``app`` and the intervals that start on a STIM0 edge (their record's ``pulse``
        is the stimulus pulse's index). Any other interval has one per start edge."""
        return [c.number for c in self.channels if not c.is_interval
                or c.interval[0] == SOURCE_NAMES["stim0"]]

    @property
    def channel_names(self):
        """``{"number": name}``, as a capture's META holds it."""
        return {str(c.number): c.name for c in self.channels}


#: The figures every sweep has a place for, found or not: result key → name.
SWEEP_NAMES = {"mf_isr_hz": "MF-ISR", "mf_app_hz": "MF-APP", "sf_hz": "SF"}


def mf_key(channel):
    """The sweep result key of channel ``channel``'s MF: ``mf_isr_hz``, ``mf_app_hz``,
    ``mf_stim0+..marker0+_hz``."""
    return f"mf_{channel}_hz"


def mf_channel(key):
    """The channel whose MF result key ``key`` is (:func:`mf_key`), or None (``sf_hz``)."""
    if key.startswith("mf_") and key.endswith("_hz"):
        return key[3:-3]
    return None


def sweep_figure_keys(channels):
    """A sweep's result keys in table order: MF-ISR, MF-APP, the MF of each interval
    channel of ``channels`` (once each, in their order), SF."""
    intervals = [mf_key(c) for c in dict.fromkeys(channels) if is_interval(c)]
    return ["mf_isr_hz", "mf_app_hz", *intervals, "sf_hz"]


def sweep_figure_name(key):
    """A sweep result key as tables name it: ``MF-ISR``, ``MF-APP``, ``SF``, and
    ``MF stim0+..marker0+`` for an interval channel's MF."""
    if key in SWEEP_NAMES:
        return SWEEP_NAMES[key]
    channel = mf_channel(key)
    return f"MF {channel}" if channel else key
