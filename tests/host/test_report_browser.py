# SPDX-License-Identifier: BSD-2-Clause
"""The report in a real browser: headless Chromium loads it offline, runs plotly.js
without a console error, renders every plot and takes a screenshot.

Skipped when Chromium is missing (Debian package ``chromium``)."""

import re
import shutil
import struct
import subprocess

import numpy as np
import pytest
from test_report import events_from_records, make_records, make_sweep, write_capture

from rtrig.host import report

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="headless Chromium not installed (Debian: chromium)")


def chromium(tmp_path, *args, timeout=120):
    """Run headless Chromium with a fresh profile and no network side traffic."""
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=10000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def console_errors(stderr):
    """Console messages of the page that report errors (Chromium logs them as
    ``CONSOLE(line)`` lines when ``--enable-logging=stderr`` is given)."""
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line and re.search(r"error|uncaught|warn", line, re.I)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    rng = np.random.default_rng(4)
    n = 4000
    isr_lat = 150 + rng.gamma(2.0, 10.0, n).astype(np.int64)
    app_lat = 1500 + rng.gamma(2.0, 80.0, n).astype(np.int64)
    isr = make_records(n, 0, isr_lat, isr_lat + 450)
    app = make_records(n, 1, app_lat, app_lat + 1000, missed=(100, 2500))
    cap = write_capture(tmp / "a.rtrig", [isr, app], events=events_from_records(
        {0: isr, 1: app}, n))
    cap_b = write_capture(tmp / "b.rtrig", [make_records(n, 0, isr_lat + 40, isr_lat + 500)])
    html = report.build_report([cap, cap_b, make_sweep(tmp)])
    path = tmp / "report.html"
    path.write_text(html, encoding="utf-8")
    return tmp, path, html.count("Plotly.newPlot(")


def test_renders_every_plot_without_console_errors(page):
    tmp, path, n_figures = page
    res = chromium(tmp, "--dump-dom", path.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert console_errors(res.stderr) == []
    dom = res.stdout
    # plotly.js replaces each empty div by an SVG plot ("main-svg")
    rendered = re.findall(r'<div id="fig\d+" class="plot[^"]*js-plotly-plot', dom)
    assert n_figures >= 10
    assert len(rendered) == n_figures
    assert dom.count('class="main-svg"') >= n_figures


def test_detects_a_broken_page(tmp_path):
    """The console check can fail: a page with a script error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>Plotly.newPlot('x', [], {});</script></body></html>")
    res = chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert console_errors(res.stderr), res.stderr[-2000:]


def test_screenshot(page):
    tmp, path, _ = page
    shot = tmp / "report.png"
    res = chromium(tmp, f"--screenshot={shot}", "--window-size=1400,3000", path.as_uri())
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 3000)
    # plots, not a blank page: a blank 1400×3000 PNG compresses to a few kB
    assert len(data) > 100_000
