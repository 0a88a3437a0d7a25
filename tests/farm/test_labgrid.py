# SPDX-License-Identifier: BSD-2-Clause
"""labgrid with real processes on loopback addresses: a coordinator, an exporter
that exports two simulation twins as network serial ports, two places acquired,
and a budget test run against both in parallel through ``pytest --lg-env``.
Everything started here is stopped at the end."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("labgrid", reason="the labgrid extra is not installed "
                                      "(pip install 'rtrig[labgrid]'; make venv installs it)")

BIN = Path(sys.executable).parent
PLACES = ("rig-a", "rig-b")

BUDGET_TEST = '''
import pytest

@pytest.mark.latency_budget(channel="isr", p99="2us", max="2us", missed=0)
def test_loopback_within_budget(rtrig):
    res = rtrig.capture(freq="20k", count=40, delay="1us")
    assert res.summary["isr"]["p99_ns"] == 1000
'''


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port, proc, what, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} ended with status {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} is not listening on {port} after {timeout} s")


class _Processes:
    """Processes started by the test, stopped (TERM, then KILL) in reverse order."""

    def __init__(self, log_dir):
        self.procs = []
        self.log_dir = log_dir

    def start(self, name, args, **kw):
        log = open(self.log_dir / f"{name}.log", "w")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, **kw)
        self.procs.append((p, log))
        return p

    def stop(self):
        for p, log in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()


def _clients(coordinator, commands, env):
    """Run several labgrid-client commands at once (one per place)."""
    procs = [subprocess.Popen([str(BIN / "labgrid-client"), "-x", coordinator, *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env) for args in commands]
    for args, p in zip(commands, procs, strict=True):
        out = p.communicate(timeout=60)[0]
        if p.returncode != 0:
            raise AssertionError(f"labgrid-client {' '.join(args)} failed:\n{out}")


def _client(coordinator, *args, check=True, env=None):
    proc = subprocess.run([str(BIN / "labgrid-client"), "-x", coordinator, *args],
                          capture_output=True, text=True, timeout=60, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"labgrid-client {' '.join(args)} failed:\n{proc.stdout}"
                             f"{proc.stderr}")
    return proc.stdout


def test_two_places_run_a_budget_test_in_parallel(tmp_path):
    if not (BIN / "labgrid-coordinator").exists():
        pytest.skip("labgrid's programs are not installed beside this Python")
    from rtrig.host.sim import SimRig
    coord = f"127.0.0.1:{_free_port()}"
    procs = _Processes(tmp_path)
    twins = [SimRig(log=lambda m: None) for _ in PLACES]
    env = {**os.environ, "LG_COORDINATOR": coord, "LG_USERNAME": "farm-test",
           "LG_HOSTNAME": "farm-test-host", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("LG_ENV", None)
    acquired = []
    try:
        for t in twins:
            t.start()
        ports = [int(t.url.rsplit(":", 1)[1]) for t in twins]
        c = procs.start("coordinator", [str(BIN / "labgrid-coordinator"), "--listen", coord],
                        cwd=tmp_path, env=env)
        _wait_listening(int(coord.rsplit(":", 1)[1]), c, "labgrid-coordinator")
        (tmp_path / "exporter.yaml").write_text("".join(
            f"{name}:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {port}\n"
            f"    speed: 3000000\n    protocol: raw\n"
            for name, port in zip(PLACES, ports, strict=True)))
        procs.start("exporter", [str(BIN / "labgrid-exporter"), "--coordinator", coord,
                                 "--name", "farm-test", "--hostname", "127.0.0.1",
                                 "exporter.yaml"], cwd=tmp_path, env=env)
        end = time.monotonic() + 30
        while "farm-test/rig-b/NetworkSerialPort" not in _client(coord, "resources", env=env):
            assert time.monotonic() < end, "the exporter's resources never appeared"
            time.sleep(0.2)
        _clients(coord, [("-p", name, "create") for name in PLACES], env)
        _clients(coord, [("-p", name, "add-match", f"farm-test/{name}/NetworkSerialPort")
                         for name in PLACES], env)
        acquired = list(PLACES)
        _clients(coord, [("-p", name, "acquire") for name in PLACES], env)
        for name in PLACES:
            (tmp_path / f"{name}.yaml").write_text(
                "imports:\n  - rtrig.host.integrations.labgrid_driver\n"
                "targets:\n  main:\n    resources:\n      RemotePlace:\n"
                f"        name: {name}\n    drivers:\n      RtrigDriver:\n"
                "        dut: loopback\n")
        (tmp_path / "test_rig.py").write_text(BUDGET_TEST)
        runs = [subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--lg-env", f"{name}.yaml", "--rtrig-results", f"{name}.json",
             "--rtrig-captures", f"caps-{name}", "test_rig.py"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True) for name in PLACES]                     # both at once
        outs = [r.communicate(timeout=300)[0] for r in runs]
        for name, r, out in zip(PLACES, runs, outs, strict=True):
            assert r.returncode == 0, f"{name}:\n{out}"
            assert "1 passed" in out
        for name, port in zip(PLACES, ports, strict=True):
            row = json.loads((tmp_path / f"{name}.json").read_text())["tests"][0]
            assert row["outcome"] == "passed" and row["violations"] == []
            # each place's test ran on its own twin
            assert row["rig"]["port"] == f"socket://127.0.0.1:{port}"
            cap = row["captures"][0]
            assert cap["target"] == "loopback" and cap["channels"]["isr"]["max_ns"] == 1000
            assert Path(cap["path"]).is_file() and f"caps-{name}" in cap["path"]
        places = _client(coord, "places", env=env)
        assert all(name in places for name in PLACES)
    finally:
        if acquired:
            with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
                _clients(coord, [("-p", name, "release") for name in acquired], env)
        procs.stop()
        for t in twins:
            t.stop()
    assert all(p.poll() is not None for p, _ in procs.procs)


def test_without_the_extra_this_module_skips_saying_why(tmp_path):
    """With labgrid not importable (a stand-in package that refuses to import, and
    labgrid's pytest plugin not loaded) these tests skip and say what to install."""
    fake = tmp_path / "fake" / "labgrid"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'labgrid'\", name='labgrid')\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:labgrid", "-p",
                           "no:cacheprovider", "-q", "-rs", "-p", "no:xdist", __file__],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr    # 5: nothing ran
    assert "1 skipped" in proc.stdout
    assert "the labgrid extra is not installed" in proc.stdout


def test_the_serial_module_is_labgrids():
    """The extra brings pyserial-labgrid beside pyserial; both install ``serial``.
    The Makefile puts labgrid's in place last, so the whole suite runs on it."""
    import importlib.metadata

    import serial
    assert serial.__version__ == importlib.metadata.version("pyserial-labgrid")
