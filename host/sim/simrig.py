# SPDX-License-Identifier: BSD-2-Clause
"""A running simulation twin: :class:`SimRig` starts the built binary and gives the
``socket://`` URL the host connects to; the process is stopped with the host (and
dies with it even on a hard kill, through ``PR_SET_PDEATHSIG``)."""

import os
import shutil
import signal
import subprocess
from pathlib import Path

from ...errors import SimulationError
from .builder import build, link_baud, sim_board
from .soc_ram import ram_file, soc_image

__all__ = ["SimRig"]


class SimRig:
    """A running simulation twin. Use as a context manager; ``url`` is the port."""

    def __init__(self, baud=None, log=None, soc=False, firmware=None, console=None,
                 trace=None, board=None, link="fast", poll_cycles=None):
        """``board``: the board whose gateware is simulated (a name; default
        :data:`~rtrig.host.sim.builder.SIM_BOARD`, see :func:`build`). ``soc=True``:
        the board's ``soc`` target, its SoC running ``firmware``; its console
        output goes to ``console`` and its TRACE words to ``trace`` (paths; by default
        files in a fresh temporary directory, removed by :meth:`stop`; a path given
        here is kept). ``link``: ``fast`` (the
        default) or ``line`` (the board's own baud), see :data:`LINKS`; ``baud``
        overrides it. ``poll_cycles``: rig cycles between two services of the socket
        by the harness (default 128; a benchmark knob)."""
        b = sim_board(board)
        clk_freq = b.clk_freq
        if baud is None:
            baud = link_baud(link, clk_freq, b.baud)
        self.link = link
        self.poll_cycles = poll_cycles
        self.clk_freq = clk_freq
        self.baud = baud
        self.soc = soc
        #: The SoC's RAM image (raw bytes; None without the SoC), read before any build.
        self.image = soc_image(firmware) if soc else None
        self.exe = build(baud, log=log, soc=soc, board=b.name)
        self.console = self.trace = None
        #: The run's temporary directory (or None): the SoC's RAM file, and the
        #: console/trace files not given.
        self.tmpdir = None
        #: Is the console a file the caller asked for (kept after the run)?
        self.console_kept = console is not None
        if soc:
            import tempfile
            self.tmpdir = Path(tempfile.mkdtemp(prefix="rtrig-soc-"))
            self.console = Path(console) if console else self.tmpdir / "console.txt"
            self.trace = Path(trace) if trace else self.tmpdir / "trace.txt"
        self.proc = None
        self.url = None
        #: Exit status of the stopped simulator (0: it ended cleanly when asked; a
        #: signal another process sent it: minus its number, as :mod:`subprocess` says).
        self.returncode = None

    def start(self):
        divisor = self.clk_freq // self.baud
        args = []
        if self.poll_cycles:
            args += ["--poll", str(int(self.poll_cycles))]
        if self.soc:
            args += ["--console", str(self.console), "--trace", str(self.trace),
                     "--ram", str(ram_file(self.image, self.tmpdir))]
        # --parent: the twin leaves if we die before it has armed PR_SET_PDEATHSIG.
        self.proc = subprocess.Popen(
            [str(self.exe), "--divisor", str(divisor), "--port", "0",
             "--parent", str(os.getpid()), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)   # Ctrl-C reaches the host, which then stops us
        line = self.proc.stdout.readline()
        if not line.startswith("RTRIG-SIM LISTENING"):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise SimulationError(f"the simulation twin did not start: {line.strip()} {err}")
        port = int(line.split()[-1])
        self.url = f"socket://127.0.0.1:{port}"
        return self

    def stop(self):
        """Stop the simulator: SIGTERM, which it honours at every moment (waiting for
        the client too) within ~50 ms. SIGKILL only if it has not ended after 5 s."""
        p, self.proc = self.proc, None
        if p is None:
            self._remove_tmpdir()
            return
        try:
            asked = p.poll() is None
            if asked:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            # A twin ends by the signal that stopped it (harness.cpp): by our SIGTERM,
            # it ended cleanly when asked; by anyone else's, the status says whose.
            self.returncode = 0 if asked and p.returncode == -signal.SIGTERM else p.returncode
        finally:
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
            self._remove_tmpdir()

    def _remove_tmpdir(self):
        # The console and trace files nobody asked for go with the run.
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
