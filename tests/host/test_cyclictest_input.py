# SPDX-License-Identifier: BSD-2-Clause
"""cyclictest files on bad input (``rtrig report``, the history's import): what
cyclictest cannot have written is refused in one ``error:`` line naming the file and
the field, never a MemoryError, an OverflowError or a figure made of it (a negative
bucket was taken as 300 samples in the last one)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rtrig.errors import CaptureFormatError
from rtrig.host.cli import main
from rtrig.host.integrations.cyclictest import Histogram, read

SUMMARY = ("# Min Latencies: {min}\n# Avg Latencies: 00001\n# Max Latencies: 00003\n"
           "# Histogram Overflows: {over}\n")


def _text(rows="000000 000001\n000001 000005\n", lo="00000", over="00000"):
    return "# Histogram\n" + rows + SUMMARY.format(min=lo, over=over)


def _json(histogram=None, **thread):
    t = {"histogram": {"1": 5} if histogram is None else histogram, "cycles": 5,
         "min": 1, "avg": 1.4, "max": 3, **thread}
    return json.dumps({"thread": {"0": t}}).replace('"INF"', "Infinity")


CASES = {
    # the -h text
    "text: a count of 10^30": (_text("000000 " + "1" + "0" * 30 + "\n"),
                               "line 2: bucket 0's count is 1000000000000000000000000000000: "
                               "more samples than there can be"),
    "text: a negative count": (_text("000000 000001\n000001 -00005\n"),
                               "line 3: bucket 1's count is -5: a count of samples cannot "
                               "be negative"),
    "text: negative overflows": (_text(over="-0300"),
                                 "line 7: 'Histogram Overflows' is -300: a count of samples "
                                 "cannot be negative"),
    "text: min above max": (_text(lo="00005"), "thread 0's min (5) is above its max (3)"),
    # cyclictest --json
    "json: a bucket of 10^12": (_json({"1000000000000": 5}),
                                "thread 0's histogram has bucket 1000000000000: "
                                "cyclictest's are 0 to 999999"),
    "json: a count of 10^30": (_json({"1": 10 ** 30}),
                               "thread 0's bucket 1 is 1000000000000000000000000000000"),
    "json: Infinity as max": (_json(max="INF"), "thread 0's max is inf: a latency is 0 to"),
    "json: a string as min": (_json(min="abc"), "thread 0's min is 'abc', not a number"),
    "json: a negative bucket": (_json({"-1": 300, "9": 5}, cycles=305),
                                "thread 0's histogram has bucket -1"),
    "json: a negative count": (_json({"1": -5}), "thread 0's bucket 1 is -5: a count of "
                                                 "samples cannot be negative"),
    "json: min above max": (_json(min=5, avg=5), "thread 0's min (5.0) is above its max"),
    "json: no threads": (json.dumps({"sysinfo": {}}), "not cyclictest --json output"),
    "json: not an object": ("{[1, 2]}", "not cyclictest --json output"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_cyclictest_file_is_one_line_naming_file_and_field(tmp_path, capsys, case):
    text, words = CASES[case]
    path = tmp_path / "ct.txt"
    path.write_text(text)
    with pytest.raises(SystemExit) as e:
        main(["report", str(path), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert e.value.code == 6 and "Traceback" not in err and "internal error" not in err, err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {path}: "), err
    assert words in errors[0], err
    assert not (tmp_path / "r.html").exists()


def test_good_json_reads_as_its_histogram(tmp_path):
    path = tmp_path / "ct.json"
    path.write_text(_json({"1": 3, "2": 1}, cycles=5, sysinfo=None))
    h = read(path)
    assert h.counts.tolist() == [[0, 3, 1]] and h.overflows.tolist() == [1]
    assert h.summary()["max_ns"] == 3000


@pytest.mark.parametrize("field, value, words", [
    ("min", np.array(["abc"]), "thread 0's min is 'abc', not a number"),
    ("max", np.array([np.inf]), "thread 0's max is inf"),
    ("min", np.array([9]), "thread 0's min (9) is above its max (3)"),
    ("counts", np.array([[1, -5]]), "thread 0's bucket 1 holds -5 samples"),
])
def test_a_histogram_is_checked_however_it_was_read(field, value, words):
    """The history's own --json reader makes its Histogram directly: checked there."""
    fields = {"counts": np.array([[1, 5]]), "min": np.array([0]), "avg": np.array([1]),
              "max": np.array([3])}
    fields[field] = value
    with pytest.raises(CaptureFormatError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Histogram("ct.json", fields.pop("counts"), np.array([0]), **fields)


def test_a_fifo_is_refused_not_waited_for(tmp_path):
    fifo = tmp_path / "ct.txt"
    os.mkfifo(fifo)
    code = ("from rtrig.host.integrations.cyclictest import read\n"
            f"read({str(fifo)!r})")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0 and "ct.txt: it is a FIFO, not a regular file" in r.stderr


def test_a_file_larger_than_any_histogram_is_refused_unread(tmp_path, monkeypatch):
    from rtrig.host.integrations import cyclictest
    path = tmp_path / "ct.txt"
    path.write_text(_text())
    monkeypatch.setattr(cyclictest, "MAX_FILE_BYTES", 10)
    with pytest.raises(CaptureFormatError, match="more than a cyclictest file can be"):
        read(path)
