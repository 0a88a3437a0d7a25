# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig explain``: the split of a pulse's latency over what the CPU executed.

Against ground truth twice: hand-made recordings whose spans are known, and the SoC twin
running ``apps/masked`` (interrupts off for MASKED_CYCLES = 500 SoC cycles at a stretch,
plus its loop's last turn), whose worst ISR pulse must be the masked section's."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from rtrig import load
from rtrig.host.explain import RECORD_DTYPE, explain_pulse, load_recording
from rtrig.host.explain.attribute import MRET
from rtrig.host.explain.capture import explain_capture
from rtrig.host.explain.recording import FLAG_EDGE, FLAG_MIE, FLAG_TRAP

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware" / "build" / "rtrig-soc"
MASKED_CYCLES = 500          # apps/masked/main.c


class _Syms:
    """Functions by address range: 0x100 app, 0x200 masker, 0x300 handler, 0x400 sched."""
    names = {1: "app", 2: "masker", 3: "handler", 4: "k_sched"}

    def function(self, pc):
        return self.names.get(pc >> 8, "?")

    def file_of(self, fn):
        return "kernel/sched.c" if fn == "k_sched" else "apps/x.c"


def _rec(rows):
    return np.array([tuple(r) for r in rows], dtype=RECORD_DTYPE)


def _masked_window():
    # masker turns interrupts off at 10 (csrci), the edge comes at 20, they are back on
    # at 60; the trap at 64, the handler to 80, the scheduler to 90, mret at 91, app.
    return _rec([
        (5, 0, 0x100, FLAG_MIE), (10, 0, 0x200, 0), (20, 7, 0, FLAG_EDGE),
        (30, 0, 0x204, 0), (60, 0, 0x208, FLAG_MIE), (64, 0, 0, FLAG_TRAP | 11 << 8),
        (80, 0, 0x300, 0), (90, 0, 0x400, 0), (91, MRET, 0x304, FLAG_MIE),
        (100, 0, 0x100, FLAG_MIE), (140, 0, 0x104, FLAG_MIE)])


def test_categories_of_a_known_window():
    ex = explain_pulse(_masked_window(), 2, 90.0, _Syms())
    assert ex.edge_function == "masker"
    assert ex.masked_before == 10 and ex.masked_by == "masker"
    assert ex.trap_at == 44
    cats = dict(ex.categories)
    assert cats == {"masked": 40, "entry": 4, "handler": 16 + 1, "scheduler": 10,
                    "application": 19}
    assert sum(cats.values()) == 90
    assert ex.functions["masker"] == 40 and ex.functions["(trap entry)"] == 4


def test_masked_just_after_the_edge():
    # the edge at 8 while app runs open; masker turns interrupts off at 10, before the
    # interrupt reached the CPU; back on at 60, the trap at 64
    w = _rec([(5, 0, 0x100, FLAG_MIE), (8, 7, 0, FLAG_EDGE), (9, 0, 0x104, FLAG_MIE),
              (10, 0, 0x200, 0), (60, 0, 0x208, FLAG_MIE), (64, 0, 0, FLAG_TRAP | 11 << 8),
              (80, 0, 0x300, 0)])
    ex = explain_pulse(w, 1, 80.0, _Syms())
    assert ex.edge_function == "app" and ex.masked_before == 0
    assert ex.masked_by == "masker" and ex.categories["masked"] == 50
    # a mask after the trap is not the one that delayed it
    w2 = _rec([(5, 0, 0x100, FLAG_MIE), (8, 7, 0, FLAG_EDGE), (9, 0, 0x104, FLAG_MIE),
               (12, 0, 0, FLAG_TRAP | 11 << 8), (20, 0, 0x300, 0), (21, MRET, 0x304, FLAG_MIE),
               (30, 0, 0x200, 0), (40, 0, 0x208, FLAG_MIE)])
    assert explain_pulse(w2, 1, 40.0, _Syms()).masked_by == ""


def test_timer_trap_and_unrecorded_tail():
    w = _rec([(0, 0, 0x100, FLAG_MIE), (2, 0, 0, FLAG_EDGE),
              (4, 0, 0, FLAG_TRAP | 7 << 8), (20, 0, 0x400, 0), (21, MRET, 0x300, FLAG_MIE),
              (25, 0, 0, FLAG_TRAP | 11 << 8), (30, 0, 0x300, 0)])
    ex = explain_pulse(w, 1, 40.0, _Syms())
    cats = dict(ex.categories)
    assert cats["kernel tick"] == 17 and cats["entry"] == 2 + 4
    assert cats["handler"] == 5 and cats["unrecorded"] == 12
    assert sum(cats.values()) == 40


def test_recording_windows_and_matching(tmp_path):
    rows = [(1, 0, 0x100, 1), (2, 10, 0, FLAG_EDGE), (3, 0, 0x100, 1),
            (9, 0, 0x100, 1), (12, 25, 0, FLAG_EDGE), (13, 0, 0x104, 1)]
    path = tmp_path / "r.rec"
    _rec(rows).tofile(path)
    rec = load_recording(path)
    assert list(rec.edges) == [1, 4]
    entries, at = rec.window(1)
    assert at == 2 and list(entries["t"]) == [3, 9, 12, 13]
    # 4 ticks per rig cycle: found from the edges; an unknown stimulus time is -1
    assert list(rec.match([40, 100, 44])) == [0, 1, -1]
    # a stimulus time that is also an edge's cycle (25) does not outvote the others
    assert list(rec.match([40, 100, 25])) == [0, 1, -1]


def _rtrig(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "rtrig", *args], capture_output=True,
                          text=True, timeout=60)


def test_bad_inputs_one_line(tmp_path):
    bad = tmp_path / "x.rec"
    bad.write_bytes(b"12345")
    model = ROOT / "captures" / "examples" / "model-fast-loaded.rtrig"
    soc = ROOT / "captures" / "examples" / "soc-unloaded-5k-jitter.rtrig"
    for args, says, code in (([model], "not a SoC-twin capture", 2),
                             ([soc, "--recording", bad], "not a SoC twin recording", 2),
                             ([bad], "not an rtrig capture", 6)):
        r = _rtrig("explain", *map(str, args))
        assert r.returncode == code and "Traceback" not in r.stderr, r.stderr
        assert says in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr


needs_fw = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                              reason="no RISC-V firmware toolchain")


@needs_fw
def test_masked_section_in_the_soc_twin(tmp_path, monkeypatch):
    import subprocess

    from rtrig.host import CaptureSettings, open_rig, run_capture
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s",
                    "build/rtrig-soc/masked.bin"], check=True)
    rec_path = tmp_path / "m.rec"
    monkeypatch.setenv("RTRIG_SOC_RECORD", str(rec_path))
    # Jittered over more than the masker's loop (~820 cycles): the edges fall at every
    # phase of it, so the worst pulse is one that came early in a masked stretch (a
    # fixed period can sample the loop at a few phases only).
    s = CaptureSettings(freq=3_000, jitter=40e-6, count=60, target="soc",
                        channels=("isr", "app"))
    with open_rig(sim=True, soc=True, firmware=str(FW / "masked.bin")) as rig:
        res = run_capture(rig, s, tmp_path / "m.rtrig", progress=False)
    cap = load(res.path)
    isr = cap.channel("isr")
    items = explain_capture(res.path, FW / "masked.elf", rec_path, worst=1,
                            channels=["isr"])
    (worst,) = items
    ex = worst.explanation
    assert worst.latency_ns == isr["latency"].max() * 1e9 / cap.tick_hz
    # The edge came in the masked stretch, or in the few cycles before its csrci while
    # the interrupt line was still on its way to the CPU (its synchroniser): the CPU
    # was then in the loop that calls it, and was masked before it took the interrupt.
    assert ex.edge_function in ("masked_section", "masker_entry"), ex.edge_function
    assert worst.edge_line.startswith("apps/masked/main.c:")
    # The whole masked stretch (before and after the edge): the known length, and the
    # loop's last turn at most.
    masked = ex.masked_before + ex.categories["masked"]
    assert MASKED_CYCLES <= masked <= MASKED_CYCLES + 20, masked
    assert ex.masked_by == "masked_section"
    # The categories sum to the measured latency (±1 SoC cycle)...
    assert abs(sum(ex.categories.values()) - ex.latency_cycles) <= 1
    # ...and, the mask and any tick taken at the unmask taken away, what is left is the
    # unmasked ISR path: the capture's fastest pulse, within a few cycles (the unmask's
    # csrsi and the pending interrupt's way into the trap: up to ~5 cycles more).
    rest_ns = ex.ns(ex.latency_cycles - ex.categories["masked"]
                    - ex.categories["kernel tick"] - ex.categories["other interrupt"])
    assert abs(rest_ns - isr["latency"].min() * 1e9 / cap.tick_hz) < 8 * 20
    # Bounded: no more entries than the ring before each edge and its window after.
    rec = load_recording(rec_path)
    assert len(rec.edges) == 60
    assert len(rec.entries) <= 60 * (4096 + 10000 + 1)

    # The trace export's CPU spans of that pulse cover its latency on the rig's track.
    from test_trace_export import check_trace

    from rtrig.host.integrations.export import export
    tracks = check_trace(export(cap, "trace", tmp_path / "m.trace.json",
                                elf=FW / "masked.elf"))
    rig = [s for s in tracks[(1, 1)] if s[2]["args"]["pulse"] == worst.pulse]
    cpu = [s for s in tracks[(2, 1)] if s[2]["args"]["pulse"] == worst.pulse]
    assert len(rig) == 1 and cpu
    assert abs(sum(d for _, d, _ in cpu) - rig[0][1]) < 0.001
    # the pulse's masked time is one span, masked_section's, and the longest of them
    masked_spans = [sp for sp in cpu if sp[2]["cat"] == "masked"]
    assert [sp[2]["name"] for sp in masked_spans] == ["masked_section"], cpu
    assert max(cpu, key=lambda sp: sp[1]) is masked_spans[0], cpu
    # The report's section names the masked section first among the worst ISR pulses'
    # common culprits.
    from rtrig.host.report.page import write_report
    out, _ = write_report([res.path], tmp_path / "m.html", elf=FW / "masked.elf")
    page = out.read_text()
    assert "Why the slowest pulses were slow" in page
    assert "<tr><td>masked_section</td><td>5 of 5</td>" in page


def test_stage_times_exact(tmp_path):
    from rtrig.capture import CaptureWriter
    from rtrig.host.explain.stages import parse_stages, stage_times
    from rtrig.protocol import EVENT_DTYPE, LATENCY_DTYPE
    lat = np.zeros(3, dtype=LATENCY_DTYPE)
    lat["pulse"], lat["stim_t"], lat["latency"] = [0, 1, 2], [100, 1100, 2100], 50
    # marker1 rises 30 ticks after pulse 0 and 70 after pulse 2 (a fall at 20 does not
    # count); marker2 only once, 400 ticks after pulse 1 (its rise at 90 is before any).
    ev = np.array([(90, 5, 1), (120, 4, 0), (130, 4, 1), (1500, 5, 1), (2170, 4, 1),
                   (2180, 4, 1)], dtype=EVENT_DTYPE)
    path = tmp_path / "s.rtrig"
    with CaptureWriter(path, {"tick_hz": 100_000_000, "raw_events": True,
                              "channel_names": {"0": "isr"}}) as w:
        w.array(b"LATR", lat)
        w.array(b"EVNT", ev)
    pulses, t = stage_times(load(path), parse_stages("marker1+, marker2+"))
    assert list(pulses) == [0, 1, 2]
    assert np.array_equal(t["marker1+"], [300.0, np.nan, 700.0], equal_nan=True)
    assert np.array_equal(t["marker2+"], [np.nan, 4000.0, np.nan], equal_nan=True)


@needs_fw
def test_stages_against_the_rigs_own_channel(tmp_path):
    """rt_trace1 pulses MARKER1 at the dispatch: before ISR_OUT rises. The stage isr+
    read from the raw events is the ISR channel's latency read by the matcher."""
    import subprocess

    from rtrig.host import CaptureSettings, open_rig, run_capture
    from rtrig.host.explain.stages import parse_stages, stage_times
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s",
                    "build/rtrig-soc/rt_trace1.bin"], check=True)
    s = CaptureSettings(freq=3_000, count=40, target="soc", channels=("isr", "app"),
                        raw_events=True)
    with open_rig(sim=True, soc=True, firmware=str(FW / "rt_trace1.bin")) as rig:
        res = run_capture(rig, s, tmp_path / "t1.rtrig", progress=False)
    cap = load(res.path)
    pulses, t = stage_times(cap, parse_stages("marker1+,isr+"))
    isr = cap.channel("isr")
    isr_ns = isr["latency"][np.searchsorted(isr["pulse"], pulses)] * 1e9 / cap.tick_hz
    assert np.allclose(t["isr+"], isr_ns)
    assert (t["marker1+"] > 0).all() and (t["marker1+"] < isr_ns).all()
    r = _rtrig("explain", str(res.path), "-n", "1", "--channel", "isr",
               "--stages", "marker1+")
    assert r.returncode == 0, r.stderr
    assert "stages: marker1+ +" in r.stdout
    # In the trace: a track per stage, a span per pulse, as long as the stage's time.
    from test_trace_export import check_trace

    from rtrig.host.integrations.export import export
    tracks = check_trace(export(cap, "trace", tmp_path / "t1.json", stages="marker1+"))
    (stage,) = [v for k, v in tracks.items() if k == (1, 3)]
    assert np.allclose(sorted(d * 1000 for _, d, _ in stage), np.sort(t["marker1+"]))


def test_a_threads_own_switch_is_the_scheduler():
    # The kernel's yield and block call riscv_switch_thread (arch/riscv32/trap.S)
    # instead of trapping: it is scheduling, wherever it is called from.
    from rtrig.host.explain.attribute import _State
    st = _State()
    st.ours_taken = True
    assert st.category("arch/riscv32/trap.S", "riscv_switch_thread") == "scheduler"
    assert st.category("arch/riscv32/trap.S", "riscv_trap_entry") == "application"
    assert st.category("kernel/sched.c", "k_sched_pick") == "scheduler"
