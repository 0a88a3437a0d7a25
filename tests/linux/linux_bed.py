# SPDX-License-Identifier: BSD-2-Clause
"""The Linux test bed: Debian's kernels in a QEMU VM, with the project's target module,
program and a virtual GPIO chip (firmware/linux/), driven from the host.

* **Kernels** are Debian's newest packaged ``amd64`` and ``rt-amd64`` images (the
  packages ``linux-image-amd64`` and ``linux-image-rt-amd64`` name them), fetched with
  ``apt-get download`` and kept in ``~/.cache/rtrig/linux/`` by package version. Their
  headers come installed from Debian (``make linux-deps``, as root).
* **The initramfs** is busybox (Debian's ``busybox-static``), the modules and the
  programs built for that kernel, and an ``/init`` that starts the guest agent on the
  second serial port.
* **The VM** is ``qemu-system-x86_64`` under TCG (``-cpu max``): timing in it means
  nothing, only behaviour. Its first serial port is the kernel console (a file), the
  second the agent's line protocol on a Unix socket (:class:`VM`).
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINUX_SRC = ROOT / "firmware" / "linux"
CACHE = Path(os.environ.get("RTRIG_CACHE_DIR", Path.home() / ".cache" / "rtrig")) / "linux"
#: flavour → the Debian meta-package that depends on its newest kernel image.
FLAVOURS = {"generic": "linux-image-amd64", "rt": "linux-image-rt-amd64"}
QEMU = "qemu-system-x86_64"
#: Offsets of the virtual chip's lines (docs/linux.md, "The VM test bed").
LINES = {"stim0": 0, "stim1": 1, "load_en": 2, "isr_out": 3, "app_out": 4, "heartbeat": 5,
         "marker0": 6, "marker1": 7, "marker2": 8}


class BedError(RuntimeError):
    """The test bed cannot be set up here (a one-line reason)."""


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise BedError(f"{' '.join(map(str, cmd))}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def kernel_package(flavour):
    """``linux-image-6.1.0-56-amd64``: the image package Debian's meta-package names."""
    out = _run(["apt-cache", "depends", FLAVOURS[flavour]])
    m = re.search(r"Depends: (linux-image-\S+)", out)
    if not m:
        raise BedError(f"apt-cache names no kernel for {FLAVOURS[flavour]} (run apt-get update)")
    return m.group(1)


def package_version(pkg):
    out = _run(["apt-cache", "policy", pkg])
    m = re.search(r"Candidate: (\S+)", out)
    if not m or m.group(1) == "(none)":
        raise BedError(f"no candidate version of {pkg} (run apt-get update)")
    return m.group(1)


def fetch(pkg):
    """The ``.deb`` of ``pkg``'s candidate version, downloaded once into the cache."""
    version = package_version(pkg)
    deb = CACHE / "debs" / f"{pkg}_{version.replace(':', '%3a')}.deb"
    if not deb.exists():
        deb.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=deb.parent) as tmp:
            _run(["apt-get", "download", f"{pkg}={version}"], cwd=tmp)
            got = list(Path(tmp).glob("*.deb"))
            if len(got) != 1:
                raise BedError(f"apt-get download {pkg} gave {len(got)} files")
            got[0].replace(deb)
    return deb


def _extract(deb, member, dest):
    """One file of a ``.deb``'s data, to ``dest`` (kept across runs)."""
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp, f"./{member}"], stdin=tar.stdout, check=True)
        tar.wait()
        (Path(tmp) / member).replace(dest)
    return dest


class Kernel:
    """One flavour's kernel: its release (``6.1.0-56-amd64``), image and headers."""

    def __init__(self, flavour):
        self.flavour = flavour
        self.package = kernel_package(flavour)
        self.release = self.package.removeprefix("linux-image-")
        self.version = package_version(self.package)
        self.headers = Path(f"/usr/src/linux-headers-{self.release}")
        if not (self.headers / "Makefile").exists():
            raise BedError(f"the headers of {self.release} are not installed: run "
                           "`make linux-deps` as root (apt-get install "
                           f"linux-headers-{self.release})")
        self.image = _extract(fetch(self.package), f"boot/vmlinuz-{self.release}",
                              CACHE / self.version / f"vmlinuz-{self.release}")

    def __repr__(self):
        return f"{self.release} ({self.package} {self.version})"


def _source_hash():
    h = hashlib.sha256()
    for p in sorted(LINUX_SRC.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(LINUX_SRC)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def build(kernel):
    """Build firmware/linux/ for ``kernel`` (cached by source and kernel): the folder
    holding ``rtrig_linux.ko``, ``rtrig_vgpio.ko``, ``rtrig-linux`` and ``rtrig-vm-agent``.

    Each attempt builds in a fresh folder of its own, with none of the calling make's
    variables (MAKEFLAGS, MAKELEVEL), and is renamed into place only when complete, so
    two processes building one kernel never share a folder; a failed attempt's whole
    output is kept in ``<cache>/build/failed-<kernel>.log``."""
    out = CACHE / "build" / f"{kernel.release}-{kernel.version}-{_source_hash()}"
    products = ("rtrig_linux.ko", "rtrig_vgpio.ko", "rtrig-linux", "rtrig-vm-agent")
    if all((out / p).exists() for p in products):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    log = out.parent / f"failed-{kernel.release}.log"
    errors = []
    for attempt in (1, 2, 3):
        tmp = Path(tempfile.mkdtemp(prefix=f"{out.name}.", dir=out.parent))
        cmd = ["make", "-C", str(LINUX_SRC), f"KDIR={kernel.headers}", f"O={tmp}"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        missing = [p for p in products if not (tmp / p).exists()]
        if r.returncode == 0 and not missing:
            if all((out / p).exists() for p in products):
                shutil.rmtree(tmp, ignore_errors=True)     # another worker's came first
            else:
                shutil.rmtree(out, ignore_errors=True)
                os.replace(tmp, out)
            return out
        shutil.rmtree(tmp, ignore_errors=True)
        with open(log, "a") as f:
            f.write(f"== attempt {attempt}: {' '.join(cmd)} (exit {r.returncode})\n"
                    f"{r.stdout}{r.stderr}\n")
        # the first compiler or make error says why; more tries tell a transient
        # failure (the machine under load) from a real one
        first = [ln for ln in (r.stdout + r.stderr).splitlines() if "error" in ln.lower()]
        if r.returncode == 0:
            first = [f"built no {', '.join(missing)}"]
        errors.append(first[0] if first else r.stderr.strip()[-300:])
    raise BedError(f"make -C firmware/linux KDIR={kernel.headers} failed 3 times "
                   f"(output: {log}): {errors[0]}")


def busybox():
    return _extract(fetch("busybox-static"), "bin/busybox", CACHE / "busybox")


INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
echo "rtrig-vm: booted $(uname -r)"
exec /bin/rtrig-vm-agent --tty /dev/ttyS1
"""


def initramfs(kernel, products):
    """The gzipped newc initramfs for ``kernel`` (cached beside the build products)."""
    out = products / "initrd.gz"
    if out.exists():
        return out
    bb = busybox()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for d in ("bin", "dev", "proc", "sys", "tmp", "lib/rtrig"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy(bb, root / "bin" / "busybox")
        for p in ("rtrig-linux", "rtrig-vm-agent"):
            shutil.copy(products / p, root / "bin" / p)
        for p in ("rtrig_linux.ko", "rtrig_vgpio.ko"):
            shutil.copy(products / p, root / "lib" / "rtrig" / p)
        (root / "init").write_text(INIT)
        (root / "init").chmod(0o755)
        files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
        cpio = subprocess.run([str(bb), "cpio", "-o", "-H", "newc"], cwd=root, input=files,
                              capture_output=True, check=True).stdout
        tmp_out = out.with_suffix(".part")
        with open(tmp_out, "wb") as f:
            f.write(subprocess.run(["gzip", "-1"], input=cpio, capture_output=True,
                                   check=True).stdout)
        tmp_out.replace(out)
    return out


class VM:
    """A booted guest with its agent: :meth:`sh` runs a command, :meth:`set` drives an
    input line of the virtual chip, :meth:`events` collects its output edges."""

    def __init__(self, kernel, products, workdir, boot_timeout=180):
        self.kernel = kernel
        self.console = Path(workdir) / f"console-{kernel.flavour}.log"
        self.sock_path = Path(tempfile.mkdtemp(prefix="rtrig-vm-")) / "agent.sock"
        cmd = [QEMU, "-accel", "tcg", "-cpu", "max", "-m", "512", "-smp", "2",
               "-nographic", "-no-reboot", "-nic", "none", "-monitor", "none",
               "-kernel", str(kernel.image), "-initrd", str(initramfs(kernel, products)),
               "-append", "console=ttyS0 panic=-1 oops=panic",
               "-serial", f"file:{self.console}",
               "-serial", f"unix:{self.sock_path},server=on,wait=off"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.buf = b""
        self.edges = []
        self.lost = 0
        self.sock = self._connect(boot_timeout)
        self.boot_s = self._wait_ready(boot_timeout)

    def _connect(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise BedError(f"qemu exited: {self.proc.stdout.read().decode()[-400:]}")
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(str(self.sock_path))
                return s
            except OSError:
                time.sleep(0.05)
        raise BedError("qemu opened no agent socket")

    def _wait_ready(self, timeout):
        """Until the agent answers: each try sends a new token, and the replies to
        earlier tries (queued in the serial line before the agent ran) are skipped."""
        t = time.monotonic()
        end = t + timeout
        token = 0
        while time.monotonic() < end:
            token += 1
            self.sock.sendall(f"C echo ready-{token}\n".encode())
            deadline = min(end, time.monotonic() + 2)
            try:
                while True:
                    if self._reply(deadline)[1].strip() == f"ready-{token}":
                        return time.monotonic() - t
            except TimeoutError:
                continue
        raise BedError(f"the {self.kernel.release} guest did not start its agent in "
                       f"{timeout} s (console: {self.console})")

    # --- the agent's line protocol ------------------------------------------------
    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the guest agent did not answer")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("the guest agent did not answer") from None
        if not data:
            raise BedError("the guest agent closed its port")
        self.buf += data

    def _line(self, deadline):
        """The next line that is not an edge (edges are collected on the way)."""
        while True:
            i = self.buf.find(b"\n")
            if i < 0:
                self._fill(deadline)
                continue
            line, self.buf = self.buf[:i].decode(errors="replace"), self.buf[i + 1:]
            if line.startswith(("E ", "L ")):
                self._edge(line)
            else:
                return line

    def sh(self, command, timeout=60):
        """Run ``command`` in the guest's shell: ``(exit status, output)``."""
        self.sock.sendall(f"C {command}\n".encode())
        return self._reply(time.monotonic() + timeout)

    def _reply(self, deadline):
        while True:
            line = self._line(deadline)
            if line.startswith("R "):
                _, rc, n = line.split()
                n = int(n)
                while len(self.buf) < n:
                    self._fill(deadline)
                out, self.buf = self.buf[:n], self.buf[n:]
                return int(rc), out.decode(errors="replace")

    def set(self, line, value):
        self.sock.sendall(f"S {LINES.get(line, line)} {int(value)}\n".encode())

    def _drain_edges(self):
        """Take the edge lines at the head of the buffer."""
        while self.buf.startswith((b"E ", b"L ")) and b"\n" in self.buf:
            i = self.buf.index(b"\n")
            line, self.buf = self.buf[:i].decode(), self.buf[i + 1:]
            self._edge(line)

    def _edge(self, line):
        if line.startswith("E "):
            _, t, ln, v = line.split()
            self.edges.append((int(t), int(ln), int(v)))
        else:
            self.lost += int(line.split()[1])

    def wait_edges(self, count, timeout=10):
        """Collect output edges until ``count`` have arrived in all, or ``timeout``."""
        deadline = time.monotonic() + timeout
        self._drain_edges()
        while len(self.edges) < count:
            try:
                self._fill(deadline)
            except TimeoutError:
                break
            self._drain_edges()
        return self.edges

    def stop(self):
        try:
            self.sock.sendall(b"Q\n")
            self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self.sock.close()
            shutil.rmtree(self.sock_path.parent, ignore_errors=True)
