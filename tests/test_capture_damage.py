# SPDX-License-Identifier: BSD-2-Clause
"""Damaged capture files: the readers return the intact chunks before the damage, or
raise CaptureFormatError; never a record they cannot vouch for.

The damage is what power loss or a full disk leaves: the file cut at some byte and
followed by nothing, zeros, garbage or a copy of bytes written earlier. The expected
result is computed from the bytes alone: a reader keeps exactly the chunks that are
byte for byte those written, up to the first that is not, and reports where that one
starts (``truncated_at``)."""

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from rtrig.capture import CaptureWriter, load, scan
from rtrig.errors import CaptureFormatError
from rtrig.host.cli import main
from rtrig.protocol import EVENT_DTYPE, LATENCY_DTYPE, TRUTH_DTYPE

HEADER = 12                                   # magic, version, reserved
META = {"format": "rtrig-capture", "tick_hz": 100_000_000, "simulation": True,
        "rtrig_version": "test", "channels": ["isr", "app"], "mode": "records"}
ARRAYS = {b"LATR": LATENCY_DTYPE, b"EVNT": EVENT_DTYPE, b"TRTH": TRUTH_DTYPE}


def _records(rng, kind, n, first=0, channel=0):
    """``n`` records of ``kind`` with every field non-zero (zeros would be fabricated)."""
    rec = np.zeros(n, dtype=ARRAYS[kind])
    for name in rec.dtype.names:
        rec[name] = rng.integers(1, 200, n)
    if "pulse" in rec.dtype.names:
        rec["pulse"] = first + np.arange(n)
    if "channel" in rec.dtype.names:
        rec["channel"] = channel
    return rec


def _chunk_plan(rng):
    """What the test capture holds, chunk by chunk after META: (kind, value)."""
    return [(b"LATR", _records(rng, b"LATR", 40, 0, 0)),
            (b"EVNT", _records(rng, b"EVNT", 30)),
            (b"STEP", {"step": 0, "freq_hz": 1000}),
            (b"LATR", _records(rng, b"LATR", 25, 0, 1)),
            (b"TRTH", _records(rng, b"TRTH", 12)),
            (b"LATR", _records(rng, b"LATR", 33, 40, 0)),
            (b"STEP", {"step": 1, "freq_hz": 2000}),
            (b"EVNT", _records(rng, b"EVNT", 17)),
            (b"STAT", {"isr": {"count": 73}}),
            (b"LATR", _records(rng, b"LATR", 1, 25, 1)),
            (b"LATR", _records(rng, b"LATR", 9, 73, 0))]


def write_capture(path, seed=1):
    """A capture written by CaptureWriter; returns its bytes and its chunks as
    ``(start, end, kind, value)``, the first being the file header (kind None)."""
    rng = np.random.default_rng(seed)
    chunks = [(0, HEADER, None, None)]
    with CaptureWriter(path, META) as w:
        chunks.append((HEADER, path.stat().st_size, b"META", META))
        for kind, value in _chunk_plan(rng):
            (w.array if kind in ARRAYS else w.json)(kind, value)
            chunks.append((chunks[-1][1], path.stat().st_size, kind, value))
        final = {"status": "complete"}
        w.close(final=final)
        chunks.append((chunks[-1][1], path.stat().st_size, b"FINL", final))
    return path.read_bytes(), chunks


def expected(data, chunks, damaged):
    """The chunks a reader must keep from ``damaged``, and the offset of the first
    damaged one (None when the file ends cleanly at a chunk boundary)."""
    kept = []
    for start, end, kind, value in chunks:
        if len(damaged) == start:
            return kept, None
        if damaged[start:end] != data[start:end]:
            return kept, start
        kept.append((kind, value))
    return kept, (len(data) if len(damaged) > len(data) else None)


def _records_of(kept, kind):
    parts = [v for k, v in kept if k == kind]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=ARRAYS[kind])


def _json_of(kept, kind):
    found = [v for k, v in kept if k == kind]
    return found[-1] if found else None


def check(path, data, chunks, damaged):
    """Both readers on ``damaged`` give exactly the intact prefix, or a clear error."""
    path.write_bytes(damaged)
    kept, bad = expected(data, chunks, damaged)
    if not any(kind == b"META" for kind, _ in kept):
        for read in (load, scan):
            with pytest.raises(CaptureFormatError) as e:
                read(path)
            msg = str(e.value)
            assert str(path) in msg and "\n" not in msg, msg
        return
    steps = [v for k, v in kept if k == b"STEP"]
    final, stats = _json_of(kept, b"FINL"), _json_of(kept, b"STAT")
    cap = load(path)
    lat = _records_of(kept, b"LATR")
    assert np.array_equal(cap.latency, lat[np.lexsort((lat["pulse"], lat["channel"]))])
    assert np.array_equal(cap.events, _records_of(kept, b"EVNT"))
    assert np.array_equal(cap.truth, _records_of(kept, b"TRTH"))
    assert (cap.meta, cap.steps, cap.final, cap.stats) == (META, steps, final, stats)
    assert (cap.truncated, cap.truncated_at) == (bad is not None, bad)
    chunked = scan(path)
    for kind in ARRAYS:
        assert chunked.count(kind) == len(_records_of(kept, kind))
        blocks = list(chunked.blocks(kind, size=7))
        got = np.concatenate(blocks) if blocks else np.zeros(0, dtype=ARRAYS[kind])
        assert np.array_equal(got, _records_of(kept, kind))
    assert (chunked.meta, chunked.steps, chunked.final, chunked.stats) == \
        (META, steps, final, stats)
    assert (chunked.truncated, chunked.truncated_at) == (bad is not None, bad)


def _tail(rng, how, data, chunks, cut):
    n = int(rng.integers(1, len(data) - cut + 64))
    if how == "cut":
        return b""
    if how == "zeros":
        return bytes(n)
    if how == "garbage":
        return rng.bytes(n)
    earlier = [c for c in chunks[1:] if c[1] <= cut] or chunks[1:2]
    start, end, *_ = earlier[int(rng.integers(len(earlier)))]
    return data[start:end]


@pytest.mark.parametrize("how", ["cut", "zeros", "garbage", "copy"])
def test_damage_gives_the_intact_prefix(tmp_path, how):
    data, chunks = write_capture(tmp_path / "good.rtrig")
    assert load(tmp_path / "good.rtrig").complete
    rng = np.random.default_rng(["cut", "zeros", "garbage", "copy"].index(how))
    cuts = sorted({c[1] for c in chunks} | {0, 5, 8} | set(rng.integers(0, len(data), 300)))
    path = tmp_path / "damaged.rtrig"
    failures = []
    for cut in cuts:
        damaged = data[:cut] + _tail(rng, how, data, chunks, cut)
        try:
            check(path, data, chunks, damaged)
        except Exception as e:               # noqa: BLE001 - report every offset at once
            failures.append(f"cut at {cut} + {len(damaged) - cut} bytes: {type(e).__name__}: "
                            f"{str(e)[:200]}")
    assert not failures, f"{len(failures)} of {len(cuts)} offsets:\n" + "\n".join(failures[:8])


def test_flipped_byte_in_each_chunk_stops_there(tmp_path):
    """Damage in place, the file keeping its length: the chunk fails its checksum."""
    data, chunks = write_capture(tmp_path / "good.rtrig", seed=3)
    rng = np.random.default_rng(3)
    for start, end, _, _ in chunks[1:]:
        at = int(rng.integers(start, end))
        damaged = bytearray(data)
        damaged[at] ^= 1 << int(rng.integers(8))
        check(tmp_path / "flip.rtrig", data, chunks, bytes(damaged))


def _write_v1(path, plan):
    """A file of format 1, as the rtrig of before the checksums wrote it."""
    out = [b"RTRIGCAP" + struct.pack("<HH", 1, 0)]
    for kind, value in plan:
        body = value.tobytes() if kind in ARRAYS else json.dumps(value).encode()
        out.append(struct.pack("<4sI", kind, len(body)) + body)
    path.write_bytes(b"".join(out))
    return out


def test_version_1_files_still_load(tmp_path):
    """A file of format 1 (no checksums) loads as before: every chunk, a torn last
    chunk skipped, a trailing partial record ignored."""
    rng = np.random.default_rng(5)
    plan = [(b"META", META)] + _chunk_plan(rng) + [(b"FINL", {"status": "complete"})]
    v1 = tmp_path / "v1.rtrig"
    out = _write_v1(v1, plan)
    cap, chunked = load(v1), scan(v1)
    for c in (cap, chunked):
        assert c.version == 1 and c.complete and (c.truncated, c.truncated_at) == (False, None)
        assert (c.meta, c.steps, c.stats) == (META, [v for k, v in plan if k == b"STEP"],
                                              _json_of(plan, b"STAT"))
    lat = _records_of(plan, b"LATR")
    assert np.array_equal(cap.latency, lat[np.lexsort((lat["pulse"], lat["channel"]))])
    assert np.array_equal(cap.events, _records_of(plan, b"EVNT"))
    assert np.array_equal(chunked.array(b"LATR"), lat)
    # torn inside the final chunk, as a crash leaves it
    torn = tmp_path / "torn.rtrig"
    torn.write_bytes(v1.read_bytes()[:-3])
    for c in (load(torn), scan(torn)):
        assert (c.truncated, c.truncated_at) == (True, len(b"".join(out[:-1])))
        assert c.final is None and len(c.steps) == 2
    # a partial record at the end of an array chunk is ignored, as before
    odd = tmp_path / "odd.rtrig"
    _write_v1(odd, [(b"META", META)])
    body = _records(rng, b"EVNT", 4).tobytes() + b"\x01\x02\x03"
    odd.write_bytes(odd.read_bytes() + struct.pack("<4sI", b"EVNT", len(body)) + body)
    assert len(load(odd).events) == 4 and scan(odd).count(b"EVNT") == 4


def test_examples_are_whole_and_current():
    # (files of format 1 are written by _write_v1 above and read in the tests beside it)
    from rtrig.capture import FORMAT_VERSION
    examples = sorted((Path(__file__).resolve().parents[1] / "captures/examples").glob("*.rtrig"))
    assert len(examples) >= 6
    for example in examples:
        for cap in (load(example), scan(example)):
            assert cap.version == FORMAT_VERSION and cap.complete, example
            assert cap.truncated_at is None, example


def test_cli_reports_a_damaged_capture(tmp_path, capsys):
    data, chunks = write_capture(tmp_path / "good.rtrig")
    bad = tmp_path / "bad.rtrig"
    bad.write_bytes(data[:chunks[1][1] - 3] + bytes(40))     # metadata chunk torn
    with pytest.raises(SystemExit) as e:
        main(["report", str(bad), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert e.value.code == 6 and err.startswith("error:") and str(bad) in err
    assert "Traceback" not in err
