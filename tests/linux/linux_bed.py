# SPDX-License-Identifier: BSD-2-Clause
"""The Linux test bed: Debian's kernels in a QEMU VM, with the project's target module,
program and a virtual GPIO chip (firmware/linux/), driven from the host.

* **The matrix** (:data:`MATRIX`): each kernel line Debian packages (6.1, 6.12), generic
  and PREEMPT_RT, on x86_64 and, for 6.12, on arm64. Each row's kernel is the newest
  of its line in Debian's package lists at test time (:func:`newest_release`); a row
  whose line Debian no longer ships is skipped with that reason.
* **Kernels and headers** are fetched by name with ``apt-get download`` and kept in
  ``~/.cache/rtrig/linux/`` by package version: the image (only its ``vmlinuz`` is
  kept), the flavour's headers with their ``-common`` part and the host's kbuild tools,
  extracted with ``dpkg-deb`` into a tree of their own (:class:`Headers`). Nothing is
  installed into the system, so arm64 headers serve a cross build as amd64 ones do.
* **The initramfs** is busybox (Debian's ``busybox-static`` of the guest's
  architecture), the modules and the programs built for that kernel, and an ``/init``
  that starts the guest agent on its own serial line.
* **The VM** is ``qemu-system-x86_64`` (``pc``) or ``qemu-system-aarch64`` (``virt``)
  under TCG: timing in it means nothing, only behaviour. Its first serial port is the
  kernel console (a file); the agent's line protocol runs on a second serial port
  (x86_64) or a virtio console (arm64), a Unix socket on the host (:class:`VM`).
"""

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINUX_SRC = ROOT / "firmware" / "linux"
CACHE = Path(os.environ.get("RTRIG_CACHE_DIR", Path.home() / ".cache" / "rtrig")) / "linux"
#: Offsets of the virtual chip's lines (docs/linux.md, "The VM test bed").
LINES = {"stim0": 0, "stim1": 1, "load_en": 2, "isr_out": 3, "app_out": 4, "heartbeat": 5,
         "marker0": 6, "marker1": 7, "marker2": 8}


@dataclass(frozen=True)
class Arch:
    """How one guest architecture is built and booted."""
    name: str           # x86_64, arm64
    deb: str            # Debian's architecture and flavour suffix: amd64, arm64
    qemu: list          # the emulator and its machine
    console: str        # the kernel console's device
    agent_tty: str      # the agent's line in the guest
    agent_port: list    # QEMU options that give agent_tty on the chardev "agent"
    kbuild: dict        # ARCH=, CROSS_COMPILE= for a cross build; {} for a native one


ARCHES = {
    "x86_64": Arch("x86_64", "amd64", ["qemu-system-x86_64", "-cpu", "max"], "ttyS0",
                   "/dev/ttyS1", ["-serial", "chardev:agent"], {}),
    # virt has one UART: the agent talks over a virtio console (CONFIG_VIRTIO_CONSOLE=y
    # in Debian's arm64 flavours); Cortex-A72 emulates faster than -cpu max
    "arm64": Arch("arm64", "arm64",
                  ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72"], "ttyAMA0",
                  "/dev/hvc0",
                  ["-device", "virtio-serial-pci", "-device", "virtconsole,chardev=agent"],
                  {"ARCH": "arm64", "CROSS_COMPILE": "aarch64-linux-gnu-"}),
}
#: (kernel line, flavour, architecture): every row the bed boots (``make test-linux``).
MATRIX = [("6.1", "generic", "x86_64"), ("6.1", "rt", "x86_64"),
          ("6.12", "generic", "x86_64"), ("6.12", "rt", "x86_64"),
          ("6.12", "generic", "arm64"), ("6.12", "rt", "arm64")]
#: Rows only built, not booted: every line and flavour is compiled for both
#: architectures, though only 6.12 is booted on arm64.
BUILD_ONLY = [("6.1", "generic", "arm64"), ("6.1", "rt", "arm64")]
#: The rows ``make test`` runs (``RTRIG_LINUX_MATRIX=family``): one kernel per line
#: and architecture, both flavours among them; ``make test-linux`` runs every row.
FAMILY = [("6.1", "rt", "x86_64"), ("6.12", "generic", "x86_64"), ("6.12", "rt", "arm64"),
          ("6.1", "generic", "arm64")]
HOST_DEB = "amd64"


def matrix_skip(row):
    """Why ``row`` is not booted in this run, or None."""
    if os.environ.get("RTRIG_LINUX_MATRIX", "full") == "family" and tuple(row) not in FAMILY:
        return ("one kernel per line and architecture in this run "
                "(RTRIG_LINUX_MATRIX=family); `make test-linux` boots every row")
    return None


class BedError(RuntimeError):
    """The test bed cannot be set up here (a one-line reason)."""


class NotShipped(BedError):
    """Debian's package lists hold no kernel of a row's line (a skip, not a failure)."""


def _run(cmd, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except FileNotFoundError:
        raise BedError(f"{cmd[0]} is not installed (make linux-deps)") from None
    if r.returncode:
        raise BedError(f"{' '.join(map(str, cmd))}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def _qualified(pkg, deb):
    """``pkg:arm64`` for a foreign architecture's package, ``pkg`` for the host's."""
    return pkg if deb in (HOST_DEB, "all") else f"{pkg}:{deb}"


def flavour_tag(flavour, arch):
    """Debian's flavour name: ``amd64``, ``rt-amd64``, ``arm64``, ``rt-arm64``."""
    return arch.deb if flavour == "generic" else f"rt-{arch.deb}"


# apt-cache rebuilds its package cache on every call where it is not kept (a few
# seconds with two architectures' lists): ask about many packages at once, and keep
# the answers in the cache for as long as the package lists stay the same.
def _lists_fingerprint():
    h = hashlib.sha256()
    for p in sorted(Path("/var/lib/apt/lists").glob("*_Packages*")):
        st = p.stat()
        h.update(f"{p.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


_MEMO = CACHE / "apt" / f"answers-{_lists_fingerprint()}.json"
try:
    _memo = json.loads(_MEMO.read_text())
except (OSError, ValueError):
    _memo = {}
_versions = _memo.setdefault("versions", {})
_searches = _memo.setdefault("searches", {})
_deps = _memo.setdefault("depends", {})


def _keep_answers():
    _MEMO.parent.mkdir(parents=True, exist_ok=True)
    part = _MEMO.with_name(f"{_MEMO.name}.{os.getpid()}.part")
    part.write_text(json.dumps(_memo))
    part.replace(_MEMO)


def package_versions(pkgs):
    """``{package: candidate version or None}`` for ``pkgs`` (``name`` or ``name:arch``),
    asked of apt-cache in one call and remembered."""
    todo = [p for p in dict.fromkeys(pkgs) if p not in _versions]
    if todo:
        out = _run(["apt-cache", "policy", *todo])
        found = dict(re.findall(r"^(\S+):\n  Installed: .*\n  Candidate: (\S+)", out, re.M))
        for p in todo:
            _versions[p] = None if found.get(p, "(none)") == "(none)" else found[p]
        _keep_answers()
    return {p: _versions[p] for p in pkgs}


def package_version(pkg):
    version = package_versions([pkg])[pkg]
    if version is None:
        raise BedError(f"no candidate version of {pkg} (run apt-get update)")
    return version


def newest_release(line, flavour, arch):
    """``6.12.117+deb12-rt-arm64``: the newest kernel of ``line`` in Debian's package
    lists whose unsigned image and headers both have a candidate version."""
    tag = flavour_tag(flavour, arch)
    if line not in _searches:
        _searches[line] = _run(["apt-cache", "search", "--names-only",
                                f"^linux-image-{re.escape(line)}\\."])
        _keep_answers()
    pat = re.compile(rf"linux-image-({re.escape(line)}\.\d+(?:-\d+|\+deb\d+))-{tag}-unsigned")
    names = (ln.split(" ")[0] for ln in _searches[line].splitlines())
    abis = sorted({m.group(1) for m in map(pat.fullmatch, names) if m},
                  key=lambda a: [int(n) for n in re.findall(r"\d+", a)], reverse=True)
    pairs = {abi: [_qualified(f"linux-{kind}-{abi}-{tag}{suffix}", arch.deb)
                   for kind, suffix in (("image", "-unsigned"), ("headers", ""))]
             for abi in abis}
    have = package_versions([p for pair in pairs.values() for p in pair])
    for abi in abis:
        if all(have[p] for p in pairs[abi]):
            return f"{abi}-{tag}"
    raise NotShipped(f"Debian's package lists hold no {line} {flavour} {arch.deb} kernel "
                     "with its headers (apt-get update, or the line is no longer shipped)")


def fetch(pkg):
    """The ``.deb`` of ``pkg``'s (``name`` or ``name:arch``) candidate version,
    downloaded once into the cache."""
    version = package_version(pkg)
    deb = CACHE / "debs" / f"{pkg.replace(':', '_')}_{version.replace(':', '%3a')}.deb"
    if not deb.exists():
        deb.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=deb.parent) as tmp:
            _run(["apt-get", "download", "-q", f"{pkg}={version}"], cwd=tmp)
            got = list(Path(tmp).glob("*.deb"))
            if len(got) != 1:
                raise BedError(f"apt-get download {pkg} gave {len(got)} files")
            got[0].replace(deb)
    return deb


def _extract(deb, member, dest):
    """One file of a ``.deb``'s data, to ``dest`` (kept across runs). The data is read
    only up to that file: a kernel image's comes first, before ~400 MB of modules."""
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as tar_proc:
        try:
            with tarfile.open(fileobj=tar_proc.stdout, mode="r|") as tar:
                for entry in tar:
                    if entry.name.removeprefix("./") == member and entry.isfile():
                        part = dest.with_name(f"{dest.name}.{os.getpid()}.part")
                        with open(part, "wb") as f:
                            shutil.copyfileobj(tar.extractfile(entry), f)
                        part.chmod(entry.mode & 0o755)
                        part.replace(dest)
                        return dest
        finally:
            tar_proc.kill()
    raise BedError(f"{deb.name} holds no {member}")


def _depends(pkg, prefix):
    """The name of ``pkg``'s dependency that starts with ``prefix``."""
    if pkg not in _deps:
        _deps[pkg] = re.findall(r"Depends: <?([^\s:>]+)", _run(["apt-cache", "depends", pkg]))
        _keep_answers()
    for name in _deps[pkg]:
        if name.startswith(prefix):
            return name
    raise BedError(f"{pkg} depends on no {prefix}* package")


class Headers:
    """A kernel's build tree from Debian's packages, extracted into the cache: the
    flavour's headers, their ``-common`` part and the host's kbuild tools (a cross
    build runs them on the host). The flavour's Makefile includes the common one by
    its absolute ``/usr/src`` path: it is pointed at the extracted tree."""

    def __init__(self, release, deb):
        pkg = _qualified(f"linux-headers-{release}", deb)
        parts = [pkg, _depends(pkg, "linux-headers-"), _depends(pkg, "linux-kbuild-")]
        package_versions(parts)
        root = CACHE / "headers" / f"{release}_{package_version(pkg)}"
        self.path = root / "usr" / "src" / f"linux-headers-{release}"
        if (root / ".complete").exists():
            return
        debs = [fetch(p) for p in parts]
        root.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{root.name}.", dir=root.parent))
        for d in debs:
            _run(["dpkg-deb", "-x", str(d), str(tmp)])
        mk = tmp / "usr" / "src" / f"linux-headers-{release}" / "Makefile"
        mk.write_text(re.sub(r"^include /usr/src/", f"include {root}/usr/src/",
                             mk.read_text(), flags=re.M))
        (tmp / ".complete").touch()
        try:
            os.replace(tmp, root)               # only complete trees are ever in place
        except OSError:                         # another worker's came first: keep it
            shutil.rmtree(tmp, ignore_errors=True)


class Kernel:
    """One row of :data:`MATRIX`: its release (``6.12.117+deb12-rt-arm64``), image and
    headers."""

    def __init__(self, line, flavour, arch, boot=True):
        self.line, self.flavour, self.arch = line, flavour, ARCHES[arch]
        self.release = newest_release(line, flavour, self.arch)
        self.package = _qualified(f"linux-image-{self.release}-unsigned", self.arch.deb)
        self.version = package_version(self.package)
        self.headers = Headers(self.release, self.arch.deb).path
        # a build-only row needs the headers alone, not the ~100 MB image
        self.image = _extract(fetch(self.package), f"boot/vmlinuz-{self.release}",
                              CACHE / self.version / f"vmlinuz-{self.release}") if boot else None

    @property
    def name(self):
        return f"{self.line} {self.flavour} {self.arch.name}"

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
        cmd = ["make", "-C", str(LINUX_SRC), f"KDIR={kernel.headers}", f"O={tmp}",
               *(f"{k}={v}" for k, v in kernel.arch.kbuild.items())]
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


def busybox(deb=HOST_DEB):
    """Debian's static busybox for ``deb`` (the host's packs the initramfs)."""
    pkg = _qualified("busybox-static", deb)
    return _extract(fetch(pkg), "bin/busybox", CACHE / f"busybox-{package_version(pkg)}-{deb}")


INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
echo "rtrig-vm: booted $(uname -r)"
exec /bin/rtrig-vm-agent --tty {agent_tty}
"""


def initramfs(kernel, products):
    """The gzipped newc initramfs for ``kernel`` (cached beside the build products)."""
    out = products / "initrd.gz"
    if out.exists():
        return out
    bb = busybox()
    guest_bb = busybox(kernel.arch.deb)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for d in ("bin", "dev", "proc", "sys", "tmp", "lib/rtrig"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy(guest_bb, root / "bin" / "busybox")
        for p in ("rtrig-linux", "rtrig-vm-agent"):
            shutil.copy(products / p, root / "bin" / p)
        for p in ("rtrig_linux.ko", "rtrig_vgpio.ko"):
            shutil.copy(products / p, root / "lib" / "rtrig" / p)
        (root / "init").write_text(INIT.format(agent_tty=kernel.arch.agent_tty))
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
        self.console = Path(workdir) / f"console-{kernel.release}.log"
        self.sock_path = Path(tempfile.mkdtemp(prefix="rtrig-vm-")) / "agent.sock"
        arch = kernel.arch
        cmd = [*arch.qemu, "-accel", "tcg", "-m", "512", "-smp", "2",
               "-nographic", "-no-reboot", "-nic", "none", "-monitor", "none",
               "-kernel", str(kernel.image), "-initrd", str(initramfs(kernel, products)),
               "-append", f"console={arch.console} panic=-1 oops=panic",
               "-serial", f"file:{self.console}",
               "-chardev", f"socket,id=agent,path={self.sock_path},server=on,wait=off",
               *arch.agent_port]
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
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(self.sock_path))
                return s
            except OSError:
                s.close()
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
            self.proc.stdout.close()
            shutil.rmtree(self.sock_path.parent, ignore_errors=True)


def main():
    """Resolve, fetch and print every row's kernel (``make linux-deps``); a row that
    cannot be had says why."""
    import sys
    failed = False
    for row in MATRIX + BUILD_ONLY:
        if matrix_skip(row):
            print(f"Linux test bed: {' '.join(row)}: not in this run (RTRIG_LINUX_MATRIX=family)")
            continue
        try:
            k = Kernel(*row, boot=row in MATRIX)
            what = "Debian kernel" if row in MATRIX else "built only, Debian headers"
            print(f"Linux test bed: {' '.join(row)}: {what} {k.release} ({k.version})")
        except NotShipped as e:
            print(f"Linux test bed: {' '.join(row)}: skipped: {e}")
        except BedError as e:
            print(f"error: Linux test bed: {' '.join(row)}: {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
