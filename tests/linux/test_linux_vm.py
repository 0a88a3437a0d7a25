# SPDX-License-Identifier: BSD-2-Clause
"""The Linux target (firmware/linux/) on Debian's newest 6.1 and 6.12 kernels, generic
and PREEMPT_RT, x86_64 and arm64, each in a QEMU VM (tests/linux/linux_bed.py): the
module's hard IRQ handler and IST, the program in both modes, the LOAD task, errors,
signals and a clean unload.

The guest runs under TCG: its timing means nothing, and no latency figure of it is a
result. The tests check behaviour only: every stimulus answered once on each output,
in the order ISR, IST, APP, nothing missed, nothing left behind.
"""

import re
import time

import pytest
from linux_bed import LINES

from rtrig.host.integrations.cyclictest import read as read_histogram

INSMOD_TARGET = ("insmod /lib/rtrig/rtrig_linux.ko chip=rtrig-vgpio stim=0 isr_out=3 "
                 "marker0=6")
APP = "rtrig-linux --chip rtrig-vgpio --app-out 4"
BAD_KERNEL_LOG = re.compile(r"WARNING:|BUG:|Oops|Call Trace|general protection")


def ok(vm, command, timeout=60):
    rc, out = vm.sh(command, timeout=timeout)
    assert rc == 0, f"{command}: exit {rc}: {out}"
    return out


@pytest.fixture
def chip(vm):
    """The guest with only the virtual chip loaded and the edges of earlier tests
    forgotten; the program and the target module are gone again after the test."""
    vm.edges.clear()
    yield vm
    vm.sh("killall rtrig-linux; sleep 0.2; rmmod rtrig_linux")


def start(vm, args, log="/tmp/app.log"):
    """Start the program in the background; its pid."""
    pid = ok(vm, f"{APP} {args} > {log} 2>&1 & echo $!").strip()
    time.sleep(0.5)                                 # let it request its lines
    assert ok(vm, f"kill -0 {pid} && echo alive").strip() == "alive", \
        ok(vm, f"cat {log}")
    return pid


def pulse_edges(vm, count, outputs, high_s=0.0):
    """``count`` stimulus pulses, one at a time: each waits for one rise and one fall
    of every line in ``outputs`` before STIM0 falls and the next pulse starts.
    Returns the edges of each pulse."""
    per_pulse = []
    for _ in range(count):
        start = len(vm.edges)
        vm.set("stim0", 1)
        edges = vm.wait_edges(start + 2 * len(outputs), timeout=20)[start:]
        if high_s:
            time.sleep(high_s)
        vm.set("stim0", 0)
        per_pulse.append(edges)
        if len(edges) < 2 * len(outputs):
            break
    return per_pulse


def check_order(per_pulse, outputs, count):
    assert len(per_pulse) == count and all(len(e) == 2 * len(outputs) for e in per_pulse), \
        f"pulse {len(per_pulse) - 1} answered with {per_pulse[-1]}"
    for k, edges in enumerate(per_pulse):
        for name in outputs:
            mine = [v for _, line, v in edges if line == LINES[name]]
            assert mine == [1, 0], f"pulse {k}: {name} moved {mine}"
        rises = [line for _, line, v in sorted(edges) if v == 1]
        assert rises == [LINES[n] for n in outputs], f"pulse {k}: rises in order {rises}"


def test_the_guest_runs_debian_kernel_it_was_given(vm, kernel):
    assert ok(vm, "uname -r").strip() == kernel.release
    assert ok(vm, "uname -m").strip() == {"x86_64": "x86_64", "arm64": "aarch64"}[kernel.arch.name]
    rt = "PREEMPT_RT" in ok(vm, "uname -v")
    assert rt == (kernel.flavour == "rt")


def test_1000_stimuli_each_answered_by_isr_ist_and_app_in_order(chip, kernel, tmp_path):
    vm = chip
    ok(vm, "dmesg -c > /dev/null")
    ok(vm, INSMOD_TARGET)
    loaded = ok(vm, "dmesg")
    assert "rtrig: chip rtrig-vgpio stim=0" in loaded, loaded
    # on PREEMPT_RT the module says its hard handler runs force-threaded
    assert ("PREEMPT_RT: the primary handler is force-threaded" in loaded) == \
        (kernel.flavour == "rt"), loaded
    pid = start(vm, "--mode module --prio 80 --mlock --hist /tmp/app.hist")
    per_pulse = pulse_edges(vm, 1000, ("isr_out", "marker0", "app_out"))
    check_order(per_pulse, ("isr_out", "marker0", "app_out"), 1000)
    assert vm.lost == 0
    ok(vm, f"kill -TERM {pid}; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done")
    log = ok(vm, "cat /tmp/app.log")
    assert "error" not in log.lower(), log
    (tmp_path / "app.hist").write_text(ok(vm, "cat /tmp/app.hist"))
    hist = read_histogram(tmp_path / "app.hist")
    # one self-timed sample per pulse (the rig's report overlays this file)
    assert int(hist.counts.sum() + hist.overflows.sum()) == 1000
    # the interrupt was raised and handled in the contexts the kernel checks
    log = ok(vm, "dmesg")
    assert not BAD_KERNEL_LOG.search(log), log


def test_module_less_mode_answers_on_app_out(chip):
    vm = chip
    ok(vm, "dmesg -c > /dev/null")
    start(vm, "--mode gpio --stim 0 --prio 80")
    per_pulse = pulse_edges(vm, 200, ("app_out",))
    check_order(per_pulse, ("app_out",), 200)
    log = ok(vm, "dmesg")
    assert not BAD_KERNEL_LOG.search(log), log


def test_heartbeat_toggles_only_while_load_en_is_high(chip):
    vm = chip
    vm.set("load_en", 0)
    start(vm, "--mode gpio --stim 0 --heartbeat 5 --load-en 2 --work 20000")
    beats = [e for e in vm.wait_edges(10**9, timeout=1.5) if e[1] == LINES["heartbeat"]]
    assert beats == []
    vm.set("load_en", 1)
    n0 = len(vm.edges)
    vm.wait_edges(n0 + 10, timeout=10)
    vm.set("load_en", 0)
    on = [e for e in vm.edges[n0:] if e[1] == LINES["heartbeat"]]
    assert len(on) >= 10
    vm.wait_edges(10**9, timeout=1.0)                   # the unit of work under way ends
    n1 = len(vm.edges)
    vm.wait_edges(10**9, timeout=1.5)
    assert [e for e in vm.edges[n1:] if e[1] == LINES["heartbeat"]] == []


@pytest.mark.parametrize("params, words", [
    ("chip=nope stim=0 isr_out=3", "nope"),
    ("chip=rtrig-vgpio stim=0 isr_out=42", "42"),
])
def test_a_wrong_chip_or_line_is_one_error_line_and_no_oops(chip, params, words):
    vm = chip
    ok(vm, "dmesg -c > /dev/null")
    rc, _ = vm.sh(f"insmod /lib/rtrig/rtrig_linux.ko {params}")
    assert rc != 0
    log = ok(vm, "dmesg -c")
    # busybox's insmod tries finit_module, then init_module: the module may say it
    # twice, always the same one line
    errors = {ln.split("] ", 1)[-1] for ln in log.splitlines() if "rtrig" in ln}
    assert len(errors) == 1 and words in errors.pop(), log
    assert not BAD_KERNEL_LOG.search(log), log
    rc, out = vm.sh(f"{APP} --chip nope")
    assert rc == 2 and [ln for ln in out.splitlines() if ln.startswith("error:")], out


def test_sigterm_releases_the_lines_and_unload_is_clean(chip):
    vm = chip
    ok(vm, "dmesg -c > /dev/null")
    ok(vm, INSMOD_TARGET)
    pid = start(vm, "--mode module")
    ok(vm, f"kill -TERM {pid}; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done")
    pid = start(vm, "--mode module", log="/tmp/app2.log")      # the lines are free again
    ok(vm, f"kill -INT {pid}; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done")
    ok(vm, "rmmod rtrig_linux")
    log = ok(vm, "dmesg")
    assert not BAD_KERNEL_LOG.search(log), log
