# SPDX-License-Identifier: BSD-2-Clause
"""What a query is asked is what it answers: a label given twice is refused (a run
holds one value per label), a ``--where`` or ``--by`` key no run has is named with
the keys there are, and ``history report -o -`` writes the page to stdout."""

import json

import numpy as np
import pytest
from history_helpers import rtrig, write_capture


@pytest.fixture
def history(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    for i, kernel in enumerate(("6.1", "6.12")):
        path = write_capture(tmp_path / f"c{i}.rtrig", np.arange(1000, 1100) + 100 * i)
        code, _, err = rtrig(capsys, "history", "add", path, "--history", db, "--label",
                             f"kernel={kernel}", "--label", "dut=rpi4")
        assert code == 0, err
    return db


def _one_line(code, out, err, says):
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("error: ") and says in err.splitlines()[0], err
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err


@pytest.mark.parametrize("args", [
    ["history", "add", "{tmp}/c0.rtrig", "--label", "k=1", "--label", "k=2"],
    ["history", "show", "--where", "kernel=6.1", "--where", "kernel=6.12"],
], ids=["label", "where"])
def test_a_key_given_twice_is_refused(history, tmp_path, capsys, args):
    args = [a.format(tmp=tmp_path) for a in args]
    code, out, err = rtrig(capsys, *args, "--history", history)
    option = args[-2]
    _one_line(code, out, err, f"{option} '{args[-1]}': {args[-1].split('=')[0]} is given "
                              f"twice (first {args[-3]})")
    code, out, _ = rtrig(capsys, "history", "show", "--history", history, "--json")
    assert len(json.loads(out)) == 2                # nothing was recorded


def test_a_label_given_twice_is_refused_before_a_capture(tmp_path, capsys):
    code, out, err = rtrig(capsys, "capture", "--sim", "--target", "model", "--count", "10",
                           "-o", tmp_path / "x.rtrig", "--history", tmp_path / "h.sqlite",
                           "--label", "k=1", "--label", "k=2")
    _one_line(code, out, err, "--label 'k=2': k is given twice (first k=1)")
    assert not (tmp_path / "x.rtrig").exists() and not (tmp_path / "h.sqlite").exists()


@pytest.mark.parametrize("args, says", [
    (["show", "--where", "kernl=6.1"], "--where kernl=6.1: no run has a label or set-up "
                                       "field 'kernl'"),
    (["show", "--figure", "isr.p99", "--by", "kernl"], "--by kernl: no run has a label or "
                                                       "set-up field 'kernl'"),
    (["report", "-o", "{tmp}/t.html", "--where", "kernl=6.1"], "--where kernl=6.1"),
    (["report", "-o", "{tmp}/t.html", "--by", "kernl"], "--by kernl"),
], ids=["show-where", "show-by", "report-where", "report-by"])
def test_an_unknown_key_is_named_with_the_known_ones(history, tmp_path, capsys, args, says):
    args = [a.format(tmp=tmp_path) for a in args]
    code, out, err = rtrig(capsys, "history", *args, "--history", history)
    _one_line(code, out, err, says)
    assert err.splitlines()[1] == ("hint: set-up fields: kind, board, target, source, "
                                   "status; labels: dut, kernel"), err
    assert not (tmp_path / "t.html").exists()


def test_known_keys_still_answer(history, capsys):
    code, out, err = rtrig(capsys, "history", "show", "--history", history, "--figure",
                           "isr.p99", "--by", "kernel", "--where", "dut=rpi4", "--where",
                           "board=sim")
    assert code == 0, err
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["6.1", "6.12"]


def test_report_to_stdout(history, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = rtrig(capsys, "history", "report", "--history", history, "-o", "-")
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert err.startswith("trend: stdout (")
