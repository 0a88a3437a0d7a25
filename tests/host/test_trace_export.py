# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig export -f trace``: Chrome trace event JSON, checked against the format's
rules as its consumers apply them (the JSON object form, the phases used, µs times,
complete events with a duration, and the spans of one track nested or apart: Perfetto
drops a slice that overlaps another partly), and against the capture it came from.

Perfetto's own trace processor (the ``perfetto`` PyPI package) fetches its binary from
the network at first use, which the test machines cannot; see docs/explain.md."""

import json
from pathlib import Path

import numpy as np

from rtrig import load
from rtrig.host.integrations.export import export

ROOT = Path(__file__).resolve().parents[2]
SOC = ROOT / "captures" / "examples" / "soc-unloaded-5k-jitter.rtrig"


def check_trace(path):
    """The format's rules; returns the complete events by (pid, tid)."""
    doc = json.loads(Path(path).read_text())
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    tracks, named = {}, set()
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("X", "M"), ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        assert isinstance(ev["name"], str) and ev["name"]
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name") and ev["args"]["name"]
            named.add((ev["pid"], ev["tid"]) if ev["name"] == "thread_name" else ev["pid"])
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["dur"] >= 0
        tracks.setdefault((ev["pid"], ev["tid"]), []).append((ev["ts"], ev["dur"], ev))
    for key, spans in tracks.items():
        assert key in named and key[0] in named, f"track {key} has no name"
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for ts, dur, _ in spans:
            while open_ends and open_ends[-1] <= ts + 1e-9:
                open_ends.pop()
            assert not open_ends or ts + dur <= open_ends[-1] + 1e-9, f"partial overlap on {key}"
            open_ends.append(ts + dur)
    return tracks


def test_rig_tracks_of_a_capture(tmp_path):
    out = export(load(SOC), "trace", tmp_path / "t.json")
    tracks = check_trace(out)
    cap = load(SOC)
    us = 1e6 / cap.tick_hz
    for tid, name in ((1, "isr"), (2, "app")):
        recs = cap.channel(name)
        spans = sorted((s[2]["args"]["pulse"], s[0], s[1]) for s in tracks[(1, tid)])
        answered = recs[recs["flags"] == 0]
        assert [p for p, _, _ in spans] == sorted(answered["pulse"].tolist())
        got = np.array([d for _, _, d in spans])
        assert np.allclose(got, answered[np.argsort(answered["pulse"])]["latency"] * us)
    assert len(tracks[(1, 0)]) == len(set(cap.latency["pulse"].tolist()))
