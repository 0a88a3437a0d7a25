# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the exports, read back by their consumers: numpy for CSV, json for JSON,
sigrok-cli for VCD, a cyclictest-histogram parser (as OSADL's plot scripts read it)."""

import io
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from test_report import TICK_HZ, events_from_records, make_records, write_capture

from rtrig.errors import UsageError
from rtrig.host.analysis import channel_stats
from rtrig.host.cli import main
from rtrig.host.integrations import export as ex
from rtrig.host.integrations import export_vcd
from rtrig.protocol import ChanFlags

SIGROK = shutil.which("sigrok-cli")
VCD2FST = shutil.which("vcd2fst")
FST2VCD = shutil.which("fst2vcd")
#: The boards' real ticks: the ECP5 boards (ULX3S, OrangeCrab) and their twins at
#: 120 MHz (8.33 ns), the iCEBreaker at 96 MHz (10.42 ns).
BOARD_TICKS = {"ecp5-120MHz": 120_000_000, "icebreaker-96MHz": 96_000_000}


@pytest.fixture
def cap2(tmp_path):
    rng = np.random.default_rng(11)
    n = 3000
    isr_lat = 100 + rng.integers(0, 300, n)          # 1.0 .. 4.0 µs
    isr = make_records(n, 0, isr_lat, isr_lat + 40)
    app_lat = 1500 + rng.integers(0, 2000, n)       # 15 .. 35 µs
    app = make_records(n, 1, app_lat, app_lat + 100, missed=(5, 6, 2999), incomplete=(9,))
    ev = events_from_records({0: isr, 1: app}, n)
    return write_capture(tmp_path / "c.rtrig", [isr, app], events=ev), isr, app


def _bytes(writer, cap, **kw):
    f = io.BytesIO()
    writer(cap, f, **kw)
    return f.getvalue()


# ------------------------------------------------------------------ CSV


def test_csv_reads_back_equal_to_records(cap2, tmp_path):
    cap, isr, app = cap2
    path = ex.export(cap, "csv", tmp_path / "c.csv")
    t = np.genfromtxt(path, delimiter=",", names=True, dtype=np.float64)
    assert t.dtype.names == ("pulse", "stim_t_ns", "isr_latency_ns", "isr_completion_ns",
                             "isr_missed", "isr_incomplete", "app_latency_ns",
                             "app_completion_ns", "app_missed", "app_incomplete")
    assert len(t) == 3000
    assert np.array_equal(t["pulse"], isr["pulse"])
    assert np.array_equal(t["stim_t_ns"], isr["stim_t"] * 10.0)
    assert np.array_equal(t["isr_latency_ns"], isr["latency"] * 10.0)
    assert np.array_equal(t["isr_completion_ns"], isr["completion"] * 10.0)
    missed = (app["flags"] & ChanFlags.MISSED) != 0
    assert np.array_equal(t["app_missed"], missed.astype(float))
    assert np.all(np.isnan(t["app_latency_ns"][missed]))
    assert np.array_equal(t["app_latency_ns"][~missed], app["latency"][~missed] * 10.0)
    assert np.isnan(t["app_completion_ns"][9]) and t["app_incomplete"][9] == 1
    assert t["app_latency_ns"][9] == app["latency"][9] * 10.0


def test_csv_channel_without_record_of_a_pulse(tmp_path):
    isr = make_records(4, 0, [1, 2, 3, 4], [5, 6, 7, 8])
    app = make_records(4, 1, [10, 20, 30, 40], [50, 60, 70, 80])[[0, 2]]   # pulses 1, 3 lost
    cap = write_capture(tmp_path / "gap.rtrig", [isr, app])
    text = _bytes(ex.write_csv, cap).decode().splitlines()
    assert text[1] == "0,10000,10,50,0,0,100,500,0,0"
    assert text[2] == "1,110000,20,60,0,0,,,,"


def test_csv_fractional_tick(tmp_path):
    rec = make_records(2, 0, [3, 7], [9, 12])
    cap = write_capture(tmp_path / "f.rtrig", [rec], meta={"tick_hz": 48_000_000})
    rows = _bytes(ex.write_csv, cap).decode().splitlines()
    assert rows[1].split(",")[2] == f"{3 * 1e9 / 48e6:.3f}"         # 62.500
    assert rows[2].split(",")[3] == f"{12 * 1e9 / 48e6:.3f}"        # 250.000


# ------------------------------------------------------------------ JSON


def test_json_summary(cap2, tmp_path):
    cap, isr, app = cap2
    d = json.loads(_bytes(ex.write_json, cap))
    assert d["channels"]["isr"] == channel_stats(isr, TICK_HZ)
    assert d["channels"]["app"]["missed"] == 3
    assert d["tick_hz"] == TICK_HZ and d["meta"]["target"]["kind"] == "model"


def test_summary_csv_is_the_json_summary_row_by_row(cap2):
    """One row per channel with every figure of the JSON summary, the bounds among
    them; a side too few samples bound is an empty field."""
    import csv
    cap, isr, app = cap2
    rows = list(csv.DictReader(io.StringIO(_bytes(ex.write_summary_csv, cap).decode())))
    assert [r["channel"] for r in rows] == ["isr", "app"]
    for r, rec in zip(rows, (isr, app), strict=True):
        st = channel_stats(rec, TICK_HZ)
        for key in ex.SUMMARY_COLUMNS:
            want = st[key]
            got = r[key]
            if want is None:
                assert got == ""
            else:
                assert float(got) == pytest.approx(want, rel=1e-5), key
        assert float(r["p99_lo_ns"]) <= float(r["p99_ns"]) <= float(r["p99_hi_ns"])
        assert r["p9999_hi_ns"] == ""                # 3000 pulses cannot bound it
    assert rows[1]["missed"] == "3"


def test_json_sweep(tmp_path):
    from test_report import make_sweep
    d = json.loads(_bytes(ex.write_json, make_sweep(tmp_path)))
    assert [s["freq_hz"] for s in d["steps"]] == [5_000, 20_000, 40_000, 150_000]
    assert d["results"] == {"mf_isr_hz": 127_000.0, "mf_app_hz": 15_000.0, "sf_hz": None}


# ------------------------------------------------------------------ cyclictest


_HIST_LINE = re.compile(r"^(\d{6}) (\d{6}(?:\t\d{6})*)$")


def parse_cyclictest(text):
    """Read a ``cyclictest -h`` histogram the way plotting scripts do."""
    hist, info = [], {}
    for line in text.splitlines():
        if not line.startswith("#"):
            m = _HIST_LINE.match(line)
            assert m, f"bad histogram line {line!r}"
            hist.append([int(m.group(1))] + [int(c) for c in m.group(2).split("\t")])
        elif ":" in line:
            key, _, vals = line[2:].partition(":")
            info[key] = vals.split()
    return np.array(hist), info


def test_cyclictest_format(cap2):
    cap, isr, app = cap2
    hist, info = parse_cyclictest(_bytes(ex.write_cyclictest, cap).decode())
    assert np.array_equal(hist[:, 0], np.arange(len(hist)))        # bucket = µs
    for col, rec in ((1, isr), (2, app)):
        ok = rec[(rec["flags"] & ChanFlags.MISSED) == 0]
        us = ok["latency"].astype(np.int64) * 10 // 1000
        assert np.array_equal(hist[:, col], np.bincount(us, minlength=len(hist)))
    mins = [int(v) for v in info["Min Latencies"]]
    maxs = [int(v) for v in info["Max Latencies"]]
    avgs = [int(v) for v in info["Avg Latencies"]]
    isr_us = isr["latency"].astype(np.int64) * 10 // 1000
    assert mins[0] == isr_us.min() and maxs[0] == isr_us.max()
    assert avgs[0] == isr_us.sum() // len(isr_us)
    assert len(hist) == max(maxs) + 1
    assert info["Histogram Overflows"] == ["00000", "00000"]
    assert [int(v) for v in info["Total"]] == [3000, 2997]
    assert re.search(r"^# Max Latencies: \d{5} \d{5}$",
                     _bytes(ex.write_cyclictest, cap).decode(), re.M)


def test_cyclictest_overflows(cap2):
    cap, isr, app = cap2
    hist, info = parse_cyclictest(_bytes(ex.write_cyclictest, cap, buckets=20).decode())
    assert len(hist) == 20
    app_ok = app[(app["flags"] & ChanFlags.MISSED) == 0]
    over = int(np.sum(app_ok["latency"].astype(np.int64) * 10 // 1000 >= 20))
    assert over > 0 and int(info["Histogram Overflows"][1]) == over
    assert hist[:, 2].sum() + over == len(app_ok)
    assert info["Thread 1"][0] == f"{app_ok['pulse'][app_ok['latency'] >= 2000][0]:05d}"


# ------------------------------------------------------------------ VCD


def _vcd_text(cap):
    return _bytes(ex.write_vcd, cap).decode()


def test_vcd_structure(cap2):
    cap, *_ = cap2
    text = _vcd_text(cap)
    assert "$timescale 10 ns $end" in text
    names = re.findall(r"\$var wire 1 (\S+) (\S+) \$end", text)
    assert [n for _, n in names] == ["STIM0", "ISR_OUT", "APP_OUT"]
    stamps = [int(x) for x in re.findall(r"^#(\d+)$", text, re.M)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_vcd_timescale_for_other_tick_rates():
    for ts in ("ns", "ps"):
        assert export_vcd._vcd_timescale(100e6, ts) == ("10 ns", 1)
        assert export_vcd._vcd_timescale(1e9, ts) == ("1 ns", 1)
        assert export_vcd._vcd_timescale(10e6, ts) == ("100 ns", 1)
    scale, factor = export_vcd._vcd_timescale(48e6, "ps")
    assert scale == "1 ps" and factor == pytest.approx(1e12 / 48e6)
    scale, factor = export_vcd._vcd_timescale(48e6, "ns")
    assert scale == "1 ns" and factor == pytest.approx(1e9 / 48e6)
    assert export_vcd._vcd_timescale(4e9, "ps") == ("1 ps", 250.0)
    with pytest.raises(UsageError, match="shorter than 1 ns"):
        export_vcd._vcd_timescale(4e9, "ns")         # 0.25 ns ticks would merge at 1 ns


def _board_capture(path, tick_hz, n):
    """A synthetic capture of ``n`` 10 kHz pulses at a board's tick, with raw events."""
    period = tick_hz // 10_000
    rng = np.random.default_rng(5)
    lat = 100 + rng.integers(0, 300, n)
    isr = make_records(n, 0, lat, lat + 40, period=period)
    app = make_records(n, 1, lat + 900, lat + 1200, missed=(n // 2,), period=period)
    ev = events_from_records({0: isr, 1: app}, n, period=period, high=period // 2)
    meta = {"tick_hz": tick_hz,
            "stimulus": {"freq_hz": 10_000, "period_ticks": period, "high_ticks": period // 2,
                         "count": n, "jitter_ticks": 0}}
    cap = write_capture(path, [isr, app], events=ev, meta=meta)
    cap.isr = isr
    return cap, ev


def _expected_edges(ev, tick_hz, per_s):
    """{wire: [(time in timescale units, level)]} the events make, rounded to the unit."""
    t0 = int(ev["t"][0])
    want = {}
    for inp, name in export_vcd.VCD_WIRES.items():
        e = ev[ev["input"] == inp]
        if len(e):
            t = np.round((e["t"].astype(np.int64) - t0) * (per_s / tick_hz)).astype(np.int64)
            want[name] = list(zip(t.tolist(), e["rising"].astype(int).tolist()))
    return want


def _edges_of_vcd(text):
    """{wire: [(time, level)]} of a VCD's value changes (after the dumpvars)."""
    ids = dict(re.findall(r"\$var wire 1 (\S+) (\S+) \$end", text))
    body = text.split("$enddefinitions $end", 1)[1]
    edges = {name: [] for name in ids.values()}
    last = {}
    now = 0
    for tok in body.split():
        if tok.startswith("#"):
            now = int(tok[1:])
        elif tok[0] in "01" and tok[1:] in ids:
            name, level = ids[tok[1:]], int(tok[0])
            if last.get(name) != level:
                if name in last or level == 1:
                    edges[name].append((now, level))
                last[name] = level
    return edges


def _timescale_of(text):
    return re.search(r"\$timescale\s+(\S+ ?\S*?)\s*\$end", text).group(1).replace(" ", "")


@pytest.mark.parametrize("tick_hz", BOARD_TICKS.values(), ids=BOARD_TICKS.keys())
def test_vcd_at_board_ticks_is_1ns_rounded(tmp_path, tick_hz):
    cap, ev = _board_capture(tmp_path / "b.rtrig", tick_hz, 200)
    text = _vcd_text(cap)
    assert "$timescale 1 ns $end" in text
    assert "rounded to the nearest ns (at most 0.5 ns off)" in text
    got = _edges_of_vcd(text)
    assert got == _expected_edges(ev, tick_hz, 1e9)
    exact = (ev["t"].astype(np.int64) - int(ev["t"][0])) * (1e9 / tick_hz)
    stamps = np.array([t for edges in got.values() for t, _ in edges])
    assert np.max(np.abs(np.sort(stamps) - np.sort(exact))) <= 0.5


def test_vcd_timescale_ps_option_keeps_exact_edges(tmp_path, capsys):
    cap, ev = _board_capture(tmp_path / "p.rtrig", 120_000_000, 50)
    main(["export", str(cap.path), "-f", "vcd", "--timescale", "ps",
          "-o", str(tmp_path / "p.vcd")])
    text = (tmp_path / "p.vcd").read_text()
    assert "$timescale 1 ps $end" in text and "nearest ps" in text
    assert _edges_of_vcd(text) == _expected_edges(ev, 120_000_000, 1e12)
    main(["export", str(cap.path), "-f", "vcd", "--timescale", "ns",
          "-o", str(tmp_path / "n.vcd")])
    assert "$timescale 1 ns $end" in (tmp_path / "n.vcd").read_text()


@pytest.mark.parametrize("argv, msg", [
    (["-f", "vcd", "--timescale", "us"], "error: --timescale must be ns or ps, not 'us'"),
    (["-f", "csv", "--timescale", "ns"], "error: --timescale applies to --format vcd only"),
])
def test_vcd_timescale_bad_values(tmp_path, capsys, argv, msg):
    cap, _ = _board_capture(tmp_path / "q.rtrig", 96_000_000, 5)
    with pytest.raises(SystemExit) as e:
        main(["export", str(cap.path), *argv, "-o", str(tmp_path / "q.out")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip() == msg
    assert not (tmp_path / "q.out").exists()


@pytest.mark.skipif(SIGROK is None, reason="sigrok-cli not installed (Debian: sigrok-cli)")
@pytest.mark.parametrize("tick_hz", BOARD_TICKS.values(), ids=BOARD_TICKS.keys())
def test_vcd_2000_pulses_at_board_tick_read_by_sigrok(tmp_path, tick_hz):
    """sigrok-cli reads a 2000-pulse VCD at a board's tick and answers (a 60 s bound:
    at 1 ps it stays busy for minutes), and writes back the same edges."""
    cap, ev = _board_capture(tmp_path / "s.rtrig", tick_hz, 2000)
    vcd = ex.export(cap, "vcd", tmp_path / "s.vcd")
    show = subprocess.run([SIGROK, "-i", str(vcd), "--show"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    assert "Samplerate: 1000000000" in show
    assert "- STIM0: logic" in show and "- APP_OUT: logic" in show
    span_ns = round((int(ev["t"][-1]) - int(ev["t"][0])) * 1e9 / tick_hz)
    count = int(re.search(r"Logic sample count: (\d+)", show).group(1))
    assert count == span_ns + 1                  # the closing stamp keeps the last edge
    out = subprocess.run([SIGROK, "-i", str(vcd), "-O", "vcd"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert _edges_of_vcd(out[out.index("$"):]) == _expected_edges(ev, tick_hz, 1e9)


@pytest.mark.skipif(VCD2FST is None or FST2VCD is None,
                    reason="GTKWave's vcd2fst not installed (Debian: gtkwave)")
@pytest.mark.parametrize("tick_hz", BOARD_TICKS.values(), ids=BOARD_TICKS.keys())
def test_vcd_at_board_tick_read_by_gtkwave(tmp_path, tick_hz):
    """GTKWave's vcd2fst converts the file; fst2vcd gives back the same edges."""
    cap, ev = _board_capture(tmp_path / "g.rtrig", tick_hz, 2000)
    vcd = ex.export(cap, "vcd", tmp_path / "g.vcd")
    subprocess.run([VCD2FST, str(vcd), str(tmp_path / "g.fst")], capture_output=True,
                   timeout=60, check=True)
    back = subprocess.run([FST2VCD, str(tmp_path / "g.fst")], capture_output=True,
                          text=True, timeout=60, check=True).stdout
    assert _timescale_of(back) == "1ns"
    assert _edges_of_vcd(back) == _expected_edges(ev, tick_hz, 1e9)


@pytest.mark.parametrize("timescale", export_vcd.TIMESCALES)
@pytest.mark.parametrize("tick_hz", BOARD_TICKS.values(), ids=BOARD_TICKS.keys())
def test_vcd_at_board_tick_read_by_pyvcd(tmp_path, tick_hz, timescale):
    """pyvcd's reader (Amaranth's VCD library) tokenizes the whole file."""
    from vcd.reader import TokenKind, tokenize
    cap, ev = _board_capture(tmp_path / "v.rtrig", tick_hz, 300)
    data = _bytes(ex.write_vcd, cap, timescale=timescale)
    per_s = 1e9 if timescale == "ns" else 1e12
    names, edges, last, now = {}, {}, {}, 0
    for tok in tokenize(io.BytesIO(data)):
        if tok.kind is TokenKind.TIMESCALE:
            assert tok.timescale.magnitude.value == 1
            assert tok.timescale.unit.value == timescale
        elif tok.kind is TokenKind.VAR:
            names[tok.var.id_code] = tok.var.reference
            edges[tok.var.reference] = []
        elif tok.kind is TokenKind.CHANGE_TIME:
            now = tok.time_change
        elif tok.kind is TokenKind.CHANGE_SCALAR:
            name, level = names[tok.scalar_change.id_code], int(tok.scalar_change.value)
            if last.get(name) != level:
                if name in last or level == 1:
                    edges[name].append((now, level))
                last[name] = level
    assert edges == _expected_edges(ev, tick_hz, per_s)


@pytest.mark.parametrize("tick_hz", BOARD_TICKS.values(), ids=BOARD_TICKS.keys())
def test_every_export_at_board_tick(tmp_path, tick_hz, capsys):
    """Each format writes a capture at a board's tick; the CSV's ns are the ticks'."""
    cap, _ = _board_capture(tmp_path / "e.rtrig", tick_hz, 100)
    for fmt in ex.FORMATS:
        out = tmp_path / f"e{ex.SUFFIX[fmt]}"
        main(["export", str(cap.path), "-f", fmt, "-o", str(out)])
        assert out.stat().st_size > 0, fmt
    t = np.genfromtxt(tmp_path / "e.csv", delimiter=",", names=True, dtype=np.float64)
    assert np.allclose(t["isr_latency_ns"], cap.isr["latency"] * 1e9 / tick_hz, atol=5e-4)


def test_vcd_without_events_is_a_usage_error(tmp_path, capsys):
    cap = write_capture(tmp_path / "n.rtrig", [make_records(3, 0, [1, 2, 3], [4, 5, 6])])
    with pytest.raises(SystemExit) as e:
        main(["export", str(cap.path), "-f", "vcd", "-o", str(tmp_path / "x.vcd")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "no raw events" in err and "--raw" in err
    assert not (tmp_path / "x.vcd").exists() and not (tmp_path / "x.vcd.part").exists()


@pytest.mark.skipif(SIGROK is None, reason="sigrok-cli not installed (Debian: sigrok-cli)")
def test_vcd_read_by_sigrok(tmp_path):
    n = 20
    rng = np.random.default_rng(2)
    lat = 100 + rng.integers(0, 50, n)
    isr = make_records(n, 0, lat, lat + 300)
    ev = events_from_records({0: isr}, n)
    cap = write_capture(tmp_path / "s.rtrig", [isr], events=ev)
    vcd = ex.export(cap, "vcd", tmp_path / "s.vcd")
    show = subprocess.run([SIGROK, "-i", str(vcd), "--show"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    assert "- STIM0: logic" in show and "- ISR_OUT: logic" in show
    assert "Samplerate: 100000000" in show
    out = subprocess.run([SIGROK, "-i", str(vcd), "-O", "csv"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    rows = [line for line in out.splitlines()
            if line and not line.startswith(";") and line[0] in "01"]
    samples = np.array([[int(v) for v in r.split(",")] for r in rows])
    # expected levels per tick from the events, starting at the first event
    t0 = int(ev["t"][0])
    span = int(ev["t"][-1]) - t0
    assert len(samples) >= span
    for col, inp in ((0, 14), (1, 0)):
        e = ev[ev["input"] == inp]
        level = np.zeros(span, dtype=np.int64)
        for t, r in zip(e["t"].astype(np.int64) - t0, e["rising"], strict=True):
            level[t:] = r
        assert np.array_equal(samples[:span, col], level), inp


# ------------------------------------------------------------------ statistics mode


def test_statistics_mode_exports(tmp_path, capsys):
    from test_report import make_stats_capture
    cap, isr_hist, app_hist = make_stats_capture(tmp_path, bin_shift=2)      # 40 ns bins
    hist, info = parse_cyclictest(_bytes(ex.write_cyclictest, cap).decode())
    # 40 ns bins: 25 per µs; isr bins 30..39 = 1.2..1.6 µs all in bucket 1
    assert hist[1, 1] == 1000 and hist[:, 1].sum() == 1000
    assert hist[16, 2] == 1000                 # app bins 400..409 = 16.0..16.4 µs
    assert info["Min Latencies"] == ["00001", "00016"]
    assert info["Max Latencies"] == ["00001", "00016"]
    d = json.loads(_bytes(ex.write_json, cap))
    assert d["channels_from"] == "statistics" and d["channels"]["app"]["missed"] == 7
    with pytest.raises(SystemExit) as e:
        main(["export", str(cap.path), "-f", "csv", "-o", str(tmp_path / "x.csv")])
    assert e.value.code == 2 and "no per-pulse records" in capsys.readouterr().err
    coarse, *_ = make_stats_capture(tmp_path, bin_shift=3)                   # 80 ns bins
    with pytest.raises(ex.UsageError, match="do not divide"):
        _bytes(ex.write_cyclictest, coarse)
    spill, *_ = make_stats_capture(tmp_path, bin_shift=2, overflow=2)
    with pytest.raises(ex.UsageError, match="above the rig's histogram range"):
        _bytes(ex.write_cyclictest, spill)


# ------------------------------------------------------------------ what is missing


@pytest.mark.parametrize("fmt", ["csv", "json", "summary-csv", "cyclictest"])
def test_every_format_says_what_a_capture_is_missing(tmp_path, capsys, fmt):
    """One warning line naming the file: a capture cut off (no final chunk), a
    channel without an answered pulse; nothing for a whole capture."""
    from test_compare import write_capture as write_isr
    from test_compare import write_chunked
    rng = np.random.default_rng(3)
    lat = rng.integers(900, 1100, 500)
    cases = {"whole": (write_chunked(tmp_path / "good.rtrig", lat), []),
             "cut": (write_chunked(tmp_path / "truncated.rtrig", lat[:219], final=False),
                     ["is cut off (no final chunk)"]),
             "dead": (write_isr(tmp_path / "zero.rtrig", [], missed=500),
                      ["has no answered pulse on ISR (500 pulses, all missed)"])}
    for path, words in cases.values():
        main(["export", str(path), "-f", fmt, "-o", str(tmp_path / f"out.{fmt}")])
        warned = [ln for ln in capsys.readouterr().err.splitlines()
                  if ln.startswith("warning:")]
        assert len(warned) == len(words), warned
        for w, word in zip(warned, words, strict=True):
            assert w.startswith(f"warning: {path} ") and word in w, w
