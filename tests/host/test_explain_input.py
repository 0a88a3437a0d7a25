# SPDX-License-Identifier: BSD-2-Clause
"""``rtrig explain`` (and the report and trace that explain too) on bad input: a
recording that is not a regular file, damaged, cut or of another run; an ELF that is
cut or of another firmware; a stage the capture has no edge of. Each is one ``error:``
line naming what is wrong and the files, never a hang, a traceback or a nonsense
figure.

The captures and recordings are made here, to the byte, with the rig's 120 MHz ticks
(4 samples per rig cycle at 30 MHz, the SoC at 50 MHz); the ELFs are the firmware
build's (binutils read them)."""

import hashlib
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rtrig.capture import CaptureWriter
from rtrig.errors import UsageError
from rtrig.host.explain import RECORD_DTYPE, load_recording
from rtrig.host.explain.recording import FLAG_EDGE, FLAG_MIE
from rtrig.protocol import EVENT_DTYPE, LATENCY_DTYPE

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware" / "build" / "rtrig-soc"
TICK_HZ = 120_000_000
CYCLES = [3_000 + 30_000 * k for k in range(6)]        # the pulses' rig cycles

needs_elf = pytest.mark.skipif(
    shutil.which("riscv64-unknown-elf-nm") is None or not (FW / "masked.elf").exists()
    or not (FW / "rt_test.elf").exists(), reason="no RISC-V binutils or firmware build")


def _sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def soc_capture(path, image="rt_test", pulses=len(CYCLES), missed=False, events=None):
    """A SoC-twin capture of ``pulses`` ISR pulses, 1 µs each, its SoC having run
    ``image`` (a build's name; None: a capture from before the image was recorded)."""
    meta = {"format": "rtrig-capture", "tick_hz": TICK_HZ, "simulation": True,
            "target": {"kind": "soc"}, "channels": ["isr"], "channel_names": {"0": "isr"},
            "mode": "records", "raw_events": events is not None,
            "stimulus": {"freq_hz": 4000.0, "period_ticks": 120_000, "high_ticks": 1200,
                         "count": pulses, "jitter_ticks": 0}}
    if image:
        meta["soc_image_sha256"] = _sha(FW / f"{image}.bin")
    lat = np.zeros(pulses, dtype=LATENCY_DTYPE)
    lat["pulse"] = np.arange(pulses)
    lat["stim_t"] = [4 * c for c in CYCLES[:pulses]]
    lat["latency"], lat["completion"] = 120, 240
    if missed:
        lat["flags"], lat["latency"], lat["completion"] = 0x80, 0, 0
    with CaptureWriter(path, meta) as w:
        w.array(b"LATR", lat)
        if events is not None:
            w.array(b"EVNT", events)
        w.close(final={"status": "complete"})
    return path


def recording(path, cycles=CYCLES, damage=None):
    """The twin's recording of edges at rig ``cycles``: an instruction before each edge,
    interrupts on, and two after it. ``damage(entries)`` changes it before it is
    written."""
    rows = []
    for c in cycles:
        t = c * 5 // 3                              # SoC cycles at 50 MHz
        rows += [(t - 10, 0x13, 0x100, FLAG_MIE), (t, c, 0, FLAG_EDGE),
                 (t + 20, 0x13, 0x104, FLAG_MIE), (t + 80, 0x13, 0x108, FLAG_MIE)]
    entries = np.array(rows, dtype=RECORD_DTYPE)
    if damage is not None:
        damage(entries)
    entries.tofile(path)
    return path


def _limit_memory():
    # A reader without bounds fails here instead of taking the machine's memory.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def rtrig(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rtrig", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_limit_memory)


def one_error(r, code=2):
    """The one ``error:`` line of a command that failed as it should."""
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)
    return errors[0]


# --- 1. only regular files, read within their size --------------------------------

def test_a_device_as_recording_is_refused_before_it_is_read(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig")
    line = one_error(rtrig("explain", cap, "--recording", "/dev/zero", timeout=30))
    assert "/dev/zero" in line and "character device, not a regular file" in line


@pytest.mark.parametrize("command", ["explain", "trace", "report"])
def test_a_fifo_as_recording_is_refused_not_waited_for(tmp_path, command):
    cap = soc_capture(tmp_path / "c.rtrig")
    os.mkfifo(tmp_path / "c.rec")                      # the recording beside it
    args = {"explain": ["explain", cap],
            "trace": ["export", cap, "-f", "trace", "-o", tmp_path / "t.json"],
            "report": ["report", cap, "-o", tmp_path / "r.html"]}[command]
    line = one_error(rtrig(*args, timeout=30))
    assert "c.rec" in line and "a FIFO, not a regular file" in line


def test_a_recording_larger_than_rtrig_reads_is_refused_unread(tmp_path, monkeypatch):
    from rtrig.host.explain import recording as rec_module
    path = recording(tmp_path / "r.rec")
    monkeypatch.setattr(rec_module, "MAX_RECORDING_BYTES", 100)
    with pytest.raises(UsageError, match=r"r\.rec is 576 bytes, more than a SoC twin "
                                         r"recording can be \(at most 100\)"):
        load_recording(path)


# --- 3. damaged, cut and foreign recordings; a cut ELF ------------------------------

def _back_in_time(e):
    e["t"][5] = 3                # the edge of pulse 1 before what was recorded before it


def _huge_cycle(e):
    e["t"][4:] += np.uint64(1 << 63)


def _odd_flags(e):
    e["flags"][2] = 0x1234_0000


def _edges_out_of_order(e):
    e["aux"][5] = 2_000


@pytest.mark.parametrize("damage, entry, why", [
    (_back_in_time, 5, "its SoC cycle is before the entry's before it"),
    (_huge_cycle, 4, "its SoC cycle is past any run's"),
    (_odd_flags, 2, "its flags are none the twin writes"),
    (_edges_out_of_order, 5, "its edge's rig cycle is not after the edge's before it"),
])
def test_a_damaged_recording_is_named_with_its_damage(tmp_path, damage, entry, why):
    path = recording(tmp_path / "d.rec", damage=damage)
    with pytest.raises(UsageError) as e:
        load_recording(path)
    assert str(e.value) == (f"{path} is damaged at entry {entry} (byte {entry * 24}): "
                            f"{why}")


@needs_elf
def test_a_damaged_recording_gives_no_nonsense_figure(tmp_path):
    """Before: 'interrupts masked for -142130432049502192.000 µs'."""
    cap = soc_capture(tmp_path / "c.rtrig")
    recording(tmp_path / "c.rec", damage=_back_in_time)
    r = rtrig("explain", cap, "--pulse", "1")
    line = one_error(r)
    assert "c.rec is damaged at entry 5" in line and "µs" not in r.stdout


@needs_elf
def test_a_cut_recording_names_both_files(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig")
    recording(tmp_path / "c.rec", cycles=CYCLES[:3])            # the twin stopped early
    assert rtrig("explain", cap, "--pulse", "2").returncode == 0
    line = one_error(rtrig("explain", cap, "--pulse", "4"))
    assert "pulse 4 of c.rtrig is not in the recording" in line
    assert str(tmp_path / "c.rec") in line and "3 edges" in line


@needs_elf
def test_a_recording_of_another_run_is_refused(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig")
    other = recording(tmp_path / "other.rec", cycles=[c + 7 for c in CYCLES])
    line = one_error(rtrig("explain", cap, "--recording", other))
    assert f"{other} is not the recording of c.rtrig" in line
    assert "pulse 0 is none of them" in line


@needs_elf
def test_a_cut_elf_is_one_clean_line(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig", image=None)
    recording(tmp_path / "c.rec")
    cut = tmp_path / "cut.elf"
    cut.write_bytes((FW / "rt_test.elf").read_bytes()[:3000])
    line = one_error(rtrig("explain", cap, "--elf", cut))
    assert line.startswith(f"error: cannot read the firmware ELF {cut}: ")
    assert "[" not in line and "'" not in line, line        # no Python list in it


# --- 4. the ELF and the recording are the capture's -----------------------------------

@needs_elf
def test_an_elf_of_another_firmware_is_refused(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig", image="rt_test")
    recording(tmp_path / "c.rec")
    line = one_error(rtrig("explain", cap, "--elf", FW / "masked.elf"))
    assert f"{FW / 'masked.elf'} is not the firmware c.rtrig ran" in line
    assert rtrig("explain", cap, "--elf", FW / "rt_test.elf").returncode == 0
    # the report and the trace refuse it alike
    one_error(rtrig("report", cap, "--elf", FW / "masked.elf", "-o", tmp_path / "r.html"))
    one_error(rtrig("export", cap, "-f", "trace", "--elf", FW / "masked.elf",
                    "-o", tmp_path / "t.json"))


@needs_elf
def test_without_elf_the_build_of_the_captures_image_explains_it(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig", image="masked")
    recording(tmp_path / "c.rec")
    r = rtrig("explain", cap, "-n", "1")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert r.stdout.startswith("isr pulse ")


@needs_elf
def test_a_capture_that_does_not_name_its_image_warns_once(tmp_path):
    cap = soc_capture(tmp_path / "c.rtrig", image=None)
    recording(tmp_path / "c.rec")
    r = rtrig("explain", cap, "-n", "3", "--elf", FW / "masked.elf")
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1, r.stderr
    assert "masked.elf is its firmware is not checked" in warnings[0]
    assert r.stdout.count("isr pulse ") == 3
    r = rtrig("report", cap, "--elf", FW / "masked.elf", "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").read_text().count("is its firmware is not checked") == 1


# --- 2. a stage the capture has no edge of ------------------------------------------

@pytest.mark.parametrize("command", ["explain", "report", "trace"])
def test_a_stage_the_capture_lacks_is_named(tmp_path, command):
    ev = np.array([(4 * c + d, i, r) for c in CYCLES for d, i, r in
                   ((0, 14, 1), (60, 4, 1), (120, 0, 1), (300, 0, 0))], dtype=EVENT_DTYPE)
    cap = soc_capture(tmp_path / "c.rtrig", events=ev)
    args = {"explain": ["explain", cap],
            "report": ["report", cap, "-o", tmp_path / "r.html"],
            "trace": ["export", cap, "-f", "trace", "-o", tmp_path / "t.json"]}[command]
    line = one_error(rtrig(*args, "--stages", "marker1+,marker2+"))
    assert "has no marker2+ edge in its raw events (it has: isr+, isr-, marker1+, stim0+)" \
        in line
    assert rtrig(*args, "--stages", "marker1+").returncode == 0


# --- 7. the trace of every pulse, and of no pulse -------------------------------------

def test_the_trace_of_an_all_missed_capture_has_each_pulse(tmp_path):
    from test_trace_export import check_trace

    from rtrig import load
    from rtrig.host.integrations.export import export
    cap = load(soc_capture(tmp_path / "m.rtrig", missed=True))
    tracks = check_trace(export(cap, "trace", tmp_path / "m.json"))
    stim = sorted(tracks[(1, 0)])
    assert [ev["args"]["pulse"] for _, _, ev in stim] == list(range(len(CYCLES)))
    assert [ts for ts, _, _ in stim] == pytest.approx([4 * c / 120 for c in CYCLES])
    assert all(d == pytest.approx(10.0) for _, d, _ in stim)      # 1200 ticks high
    assert (1, 1) not in tracks                                   # nothing answered


def test_the_trace_of_a_sweep_is_refused(tmp_path):
    line = one_error(rtrig("export", ROOT / "captures" / "examples" / "soc-sweep-loaded.rtrig",
                           "-f", "trace", "-o", tmp_path / "s.json"))
    assert "is a sweep: it has no pulses to trace" in line
    assert not (tmp_path / "s.json").exists()
