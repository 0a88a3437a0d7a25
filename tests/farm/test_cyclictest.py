# SPDX-License-Identifier: BSD-2-Clause
"""cyclictest histograms: parsed from files the real tool wrote (checked in, and
written afresh when rt-tests is installed) and overlaid in ``rtrig report``."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rtrig.errors import CaptureFormatError
from rtrig.host.cli import main
from rtrig.host.integrations.cyclictest import parse, read

# One worker for the module: its module-scoped twin runs are made once, not once
# per worker that takes one of its tests.
pytestmark = pytest.mark.xdist_group("farm-cyclictest")

DATA = Path(__file__).with_name("data")


def _summary_line(path, key):
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return [int(v) for v in line.split(":", 1)[1].split()]
    raise AssertionError(key)


@pytest.mark.parametrize("name,threads,loops", [("cyclictest-h50.txt", 1, 2000),
                                                ("cyclictest-h200-2threads.txt", 2, 1000)])
def test_checked_in_outputs_parse_consistently(name, threads, loops):
    """`cyclictest -l 2000 -i 200 -h 50 -q` and `-l 1000 -h 200 -t 2`: every loop of
    the first thread is a sample, in a bucket or beyond the range (the others stop
    when it has done its loops)."""
    path = DATA / name
    h = read(path)
    assert h.threads == threads
    assert h.buckets == int(re.search(r"-h(\d+)", name).group(1))
    assert list(h.counts.sum(axis=1)) == _summary_line(path, "Total")
    assert list(h.overflows) == _summary_line(path, "Histogram Overflows")
    assert h.counts[0].sum() + h.overflows[0] == loops
    assert h.samples == sum(_summary_line(path, "Total")) + sum(h.overflows)
    assert list(h.max) == _summary_line(path, "Max Latencies")
    s = h.summary()
    assert s["min_ns"] == min(_summary_line(path, "Min Latencies")) * 1000
    # the lowest occupied bucket holds the minimum
    assert np.flatnonzero(h.combined())[0] * 1000 == s["min_ns"]
    assert h.notes == []


def test_percentiles_and_tail_of_a_known_histogram():
    # 100 samples: 50 at 3 µs, 40 at 5 µs, 9 at 7 µs, 1 beyond the 10 buckets (max 42)
    rows = "\n".join(f"{i:06d} {c:06d}" for i, c in
                     enumerate([0, 0, 0, 50, 0, 40, 0, 9, 0, 0]))
    text = ("# Histogram\n" + rows + "\n# Total: 000000099\n# Min Latencies: 00003\n"
            "# Avg Latencies: 00005\n# Max Latencies: 00042\n# Histogram Overflows: 00001\n")
    h = parse(text)
    s = h.summary()
    assert (s["p50_ns"], s["p99_ns"], s["p999_ns"]) == (3000, 7000, None)   # None: beyond
    assert (s["samples"], s["overflows"], s["min_ns"], s["max_ns"]) == (100, 1, 3000, 42000)
    x, p = h.exceedance()
    assert list(x) == [3000, 5000, 7000, 10000, 42000]
    assert np.allclose(p, [1.0, 0.5, 0.1, 0.01, 0.01])


@pytest.mark.parametrize("text,words", [
    ("hello\n", "no cyclictest histogram"),
    ("# Histogram\n000000 000001\n000002 000003\n", "bucket 2 where 1 was expected"),
    ("# Histogram\n000000 000001\n000001 000003 000004\n", "2 columns, the histogram has 1"),
    ("# Histogram\n000000 000001 000002 000003\n# Total: 1\n", "3 histogram columns but 1"),
])
def test_bad_files_say_what_is_wrong(text, words):
    with pytest.raises(CaptureFormatError, match=words):
        parse(text)


def test_histofall_total_column_is_dropped():
    """`cyclictest -l 500 -i 200 -H 100 -q -t 2`: a total column and total values."""
    path = DATA / "cyclictest-H100-2threads.txt"
    h = read(path)
    assert h.threads == 2 and h.buckets == 100 and h.counts[0].sum() + h.overflows[0] == 500
    assert h.samples == _summary_line(path, "Total")[2] + _summary_line(
        path, "Histogram Overflows")[2]
    assert list(h.counts.sum(axis=1)) == _summary_line(path, "Total")[:2]
    assert list(h.max) == _summary_line(path, "Max Latencies")[:2]
    assert h.summary()["max_ns"] == _summary_line(path, "Max Latencies")[2] * 1000


@pytest.fixture(scope="module")
def loopback_capture(tmp_path_factory):
    """A rig capture with a known latency: 1 µs loopback on the twin."""
    from rtrig.host import CaptureSettings, open_rig, run_capture
    path = tmp_path_factory.mktemp("rig") / "loopback.rtrig"
    with open_rig(sim=True, log=lambda m: None) as rig:
        run_capture(rig, CaptureSettings(freq=20_000, count=100, target="loopback",
                                         delay=1e-6), path, progress=False)
    return path


def _fresh_cyclictest(tmp_path):
    exe = shutil.which("cyclictest")
    if exe is None:
        pytest.skip("cyclictest is not installed (Debian package rt-tests: make system-deps)")
    out = tmp_path / "cyclictest.txt"
    proc = subprocess.run([exe, "-l", "2000", "-i", "200", "-h", "50", "-q"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"cyclictest cannot run here: {proc.stderr.strip()[:200]}")
    out.write_text(proc.stdout)
    return out


def test_report_overlays_cyclictest_and_the_rig(tmp_path, loopback_capture, capsys):
    fresh = _fresh_cyclictest(tmp_path)
    h = read(fresh)
    assert h.threads == 1 and h.buckets == 50 and h.samples == 2000   # -l 2000
    html_path = tmp_path / "r.html"
    main(["report", str(fresh), str(DATA / "cyclictest-h200-2threads.txt"),
          str(loopback_capture), "-o", str(html_path)])
    page = html_path.read_text()
    section = page[page.index('id="cyclictest"'):]
    rows = re.findall(r"<tr><td>(self-timed \(cyclictest\)|external \(rig\))</td><td>"
                      r"([^<]*)</td><td>(\d+)</td><td>([^<]*)</td>", section)
    assert [(r[0], r[2]) for r in rows] == [("self-timed (cyclictest)", "2000"),
                                            ("self-timed (cyclictest)", "2000"),
                                            ("external (rig)", "100")]
    assert rows[2][1] == "loopback · ISR" and rows[2][3] == "1"     # 1 µs, exactly
    assert "Latency density: self-timed (cyclictest) and external (rig)" in section
    assert "Tail: fraction of pulses" in section
    assert "self-timed (cyclictest): cyclictest.txt" in section


def test_report_rejects_a_file_that_is_neither(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a histogram\n")
    with pytest.raises(SystemExit) as e:
        main(["report", str(bad), "-o", str(tmp_path / "r.html")])
    assert e.value.code != 0
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: no cyclictest histogram") and "Traceback" not in err
