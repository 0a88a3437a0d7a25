# SPDX-License-Identifier: BSD-2-Clause
"""Nothing left running, nothing lost: SIGTERM, SIGHUP and SIGINT end ``rtrig`` like
Ctrl-C at any moment (the start-up window included): the stimulus is stopped, the
capture closed with status ``interrupted``, the twin stopped, and the exit status is
128 + the signal number. The twin dies with its parent at every moment, and stops on
SIGTERM without needing SIGKILL, waiting for its client too."""

import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import rtrig
from rtrig.host.cli import INTERRUPTED
from rtrig.host.sim import SimRig, build

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _tagged(tag):
    """Live processes (zombies excluded) whose environment holds ``tag``: everything a
    test's rtrig started, even when it has been reparented since."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            comm = (d / "comm").read_text().strip()
        except OSError:
            continue
        if tag.encode() in env and state != "Z":
            found.append(f"{d.name} {comm}")
    return found


def _gone(tag, within=3.0):
    """Wait for every process carrying ``tag`` to end; returns those left."""
    deadline = time.monotonic() + within
    while (left := _tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@contextlib.contextmanager
def _signals_not_ignored():
    """Children inherit ignored signals (a test run started with ``&`` ignores SIGINT):
    let them have the default ones, as from a terminal."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        for s, h in saved.items():
            if h == signal.SIG_IGN:
                signal.signal(s, signal.SIG_DFL)
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


@pytest.fixture(scope="module", autouse=True)
def _twin_built():
    build()          # so that no run's random moment falls inside a simulator build


def test_interrupted_message_is_the_documented_one():
    assert INTERRUPTED in (ROOT / "docs" / "quickstart.md").read_text()


@pytest.mark.parametrize("run", range(10))
def test_signal_at_a_random_moment(run, tmp_path):
    rng = random.Random(1000 + run)
    sig = SIGNALS[run % len(SIGNALS)]
    delay = 0.0 if run == 0 else rng.uniform(0.0, 1.5)
    tag = f"RTRIG_TEST_TAG={uuid.uuid4().hex}"
    out = tmp_path / "c.rtrig"
    env = dict(os.environ, RTRIG_TEST_TAG=tag.split("=", 1)[1])
    with _signals_not_ignored():
        p = subprocess.Popen(
            [sys.executable, "-m", "rtrig", "capture", "--sim", "--target", "loopback",
             "--freq", "10k", "--count", "1000000", "--delay", "1us", "-q", "-o", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(delay)
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        pytest.fail(f"rtrig still running 30 s after {sig.name} at {delay:.3f} s: {err}")
    what = f"{sig.name} at {delay:.3f} s: exit {p.returncode}\n{err}"
    assert p.returncode in (128 + sig, -sig), what
    if p.returncode == -sig:
        # Python's own handling, before rtrig's code runs (the interpreter and its
        # imports): nothing has started yet.
        assert not out.exists() and "RTRIG-SIM" not in err, what
    else:
        assert "Traceback" not in err, what
        assert err.rstrip().splitlines()[-1] == INTERRUPTED, what
    assert not _gone(tag), f"left running after {what}"
    if out.exists():
        cap = rtrig.load(out)
        assert cap.final is not None and cap.final["status"] == "interrupted", what


def test_twin_stops_on_sigterm_before_its_client_connects():
    sim = SimRig()
    for _ in range(3):
        sim.start()
        t = time.monotonic()
        sim.stop()
        assert sim.returncode == 0 and time.monotonic() - t < 1.0


def test_twin_dies_with_its_parent_before_the_client_connects():
    """The host killed outright while the twin waits for it (SIGKILL: no cleanup)."""
    tag = f"RTRIG_TEST_TAG={uuid.uuid4().hex}"
    code = ("import time; from rtrig.host.sim import SimRig; s = SimRig(); s.start(); "
            "print(s.proc.pid, flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, RTRIG_TEST_TAG=tag.split("=", 1)[1]))
    twin = int(p.stdout.readline())
    p.kill()
    p.wait()
    p.stdout.close()
    assert not _gone(tag, within=2.0), f"twin {twin} outlived its parent"


def test_twin_leaves_when_its_parent_is_already_gone():
    """Started by a parent that died before PR_SET_PDEATHSIG was armed: the twin sees
    it has another parent than the one it was given and leaves at once."""
    r = subprocess.run([str(build()), "--divisor", "4", "--port", "0", "--parent",
                        str(os.getpid() + 1_000_000)], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0 and not re.search("LISTENING", r.stdout)


def test_a_stop_lost_on_its_way_still_ends_the_capture(tmp_path):
    # The handler's Interrupted can be lost in code that swallows it (seen once: a
    # SIGTERM 0.27 s after start left the capture running); the link raises it again
    # at its next poll, and the capture closes as interrupted.
    from rtrig.errors import Interrupted, stop_requested
    from rtrig.host import CaptureSettings, open_rig, run_capture
    from rtrig.protocol import Reg
    s = CaptureSettings(freq=10e3, count=1_000_000, target="loopback", delay=1e-6)
    def at_the_first_block(*_):
        stop_requested(signal.SIGTERM)             # as if its exception had been lost
    with open_rig(sim=True) as rig:
        with pytest.raises(Interrupted):
            run_capture(rig, s, tmp_path / "c.rtrig", progress=False,
                        on_block=at_the_first_block)
        assert rig.link.read1(Reg.SCRATCH) is not None     # the link answers after it
    cap = rtrig.load(tmp_path / "c.rtrig")
    assert cap.final["status"] == "interrupted" and 0 < len(cap.channel("isr")) < 1_000_000


#: Starts the command as ``rtrig`` does, with one module of its start-up failing as a
#: compiled module does when SIGINT strikes its initialisation (scipy's, in a CI run):
#: an ImportError whose cause is the KeyboardInterrupt.
_FAILING_IMPORT = """
import sys
class Fail:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            cause = KeyboardInterrupt() if sys.argv[1] == "interrupted" else None
            raise ImportError("initialization failed") from cause
sys.meta_path.insert(0, Fail())
from rtrig.host.cli import main
"""


@pytest.mark.parametrize("how", ["interrupted", "broken"])
def test_an_import_interrupted_by_sigint_ends_as_the_interrupt(how):
    p = subprocess.run([sys.executable, "-c", _FAILING_IMPORT, how], capture_output=True,
                       text=True, timeout=60)
    if how == "interrupted":
        # as Python's own handling before rtrig's code runs: killed by SIGINT
        assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr)
        assert "ImportError" not in p.stderr and "KeyboardInterrupt" in p.stderr, p.stderr
    else:
        # a module that is truly broken is still its ImportError
        assert p.returncode == 1 and "ImportError: initialization failed" in p.stderr, p.stderr
