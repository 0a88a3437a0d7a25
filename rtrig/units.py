# SPDX-License-Identifier: BSD-2-Clause
"""Quantities with units: frequencies and durations, parsed from text and formatted
for messages and tables."""

import math
import re

__all__ = ["parse_frequency", "parse_duration", "format_hz", "format_ns", "format_ns_exact",
           "format_s"]

_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}


def parse_frequency(text):
    """'5k', '127kHz', '10 Hz', '1.5MHz', '2000' → Hz (float)."""
    m = re.fullmatch(_NUM + r"\s*([kKMG]?)(?:[hH][zZ])?", str(text).strip())
    if not m:
        raise ValueError(f"'{text}' is not a frequency (try 10k, 127kHz, 50Hz)")
    hz = float(m.group(1)) * _SI[m.group(2)]
    if not math.isfinite(hz):
        raise ValueError(f"'{text}' is not a finite frequency")
    return hz


def parse_duration(text):
    """'1.5us', '200ms', '2s', '10ns', '0' → seconds (float). A unit is required for
    nonzero values."""
    s = str(text).strip()
    m = re.fullmatch(_NUM + r"\s*(s|ms|us|µs|ns|min)?", s)
    if not m or (m.group(2) is None and float(m.group(1)) != 0):
        raise ValueError(f"'{text}' is not a duration (try 1.5us, 200ms, 2s)")
    s = float(m.group(1)) * _TIME[m.group(2) or "s"]
    if not math.isfinite(s):
        raise ValueError(f"'{text}' is not a finite duration")
    return s


def format_hz(hz):
    if hz is None:
        return "—"
    for unit, f in (("MHz", 1e6), ("kHz", 1e3)):
        if hz >= f:
            return f"{hz / f:.4g} {unit}"
    return f"{hz:.4g} Hz"


def format_ns(ns):
    if ns is None:
        return "—"
    if abs(ns) >= 10_000:
        return f"{ns / 1000:.1f} µs"
    return f"{ns:.0f} ns"


def format_ns_exact(ns):
    """A duration in ns with the digits that give the same whole number of ticks back
    when typed in again (``1016.6667 ns``, ``1000 ns``): what a hint proposes."""
    return f"{ns:.4f}".rstrip("0").rstrip(".") + " ns"


def format_s(seconds):
    """A duration for messages: '42.95 s', '1.5 ms', '10 ns' (4 significant digits)."""
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= f:
            return f"{seconds / f:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"
