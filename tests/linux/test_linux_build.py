# SPDX-License-Identifier: BSD-2-Clause
"""Building firmware/linux/ for a kernel it cannot serve, and running its program where
the module cannot be: one line that names the cause, never a compiler wall."""

import os
import platform
import subprocess

import pytest
from linux_bed import (
    BUILD_ONLY,
    LINUX_SRC,
    MATRIX,
    BedError,
    Kernel,
    NotShipped,
    build,
    matrix_skip,
)


def make(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(LINUX_SRC),
                           f"O={tmp_path / 'out'}", *args],
                          capture_output=True, text=True, env=env)


def fake_tree(tmp_path, release, config):
    """A kernel build tree as far as the Makefile's checks read it."""
    tree = tmp_path / f"linux-{release}"
    (tree / "include" / "config").mkdir(parents=True)
    (tree / "include" / "config" / "kernel.release").write_text(release + "\n")
    (tree / "include" / "config" / "auto.conf").write_text("".join(f"{c}\n" for c in config))
    (tree / "Makefile").write_text("$(error kbuild must not be reached)\n")
    return tree


def one_error_line(r, *words):
    lines = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stdout + r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("release", ["5.15.0-91-generic", "6.0.12-amd64", "4.19.0-27-rt-amd64"])
def test_a_kernel_older_than_6_1_is_refused_in_one_line(tmp_path, release):
    kdir = fake_tree(tmp_path, release, ["CONFIG_GPIOLIB=y"])
    one_error_line(make(tmp_path, f"KDIR={kdir}"), release, "6.1 or later")


def test_a_kernel_without_gpio_support_is_refused_in_one_line(tmp_path):
    kdir = fake_tree(tmp_path, "6.12.117+deb12-amd64", ["CONFIG_MODULES=y"])
    one_error_line(make(tmp_path, f"KDIR={kdir}"), "6.12.117+deb12-amd64", "CONFIG_GPIOLIB")


def test_a_missing_or_unconfigured_kernel_tree_is_one_line(tmp_path):
    one_error_line(make(tmp_path, f"KDIR={tmp_path / 'nope'}"), "not a kernel build tree")
    (tmp_path / "bare").mkdir()
    one_error_line(make(tmp_path, f"KDIR={tmp_path / 'bare'}"), "auto.conf")


def test_kernels_6_1_and_later_pass_the_checks(tmp_path):
    # the checks let a supported kernel through to kbuild (here a stub that stops)
    for release in ("6.1.0-57-amd64", "6.12.117+deb12-rt-arm64", "7.0.1"):
        kdir = fake_tree(tmp_path / release, release, ["CONFIG_GPIOLIB=y"])
        r = make(tmp_path / release, f"KDIR={kdir}", "modules")
        assert "kbuild must not be reached" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.fixture(scope="module")
def host_build():
    """The x86_64 programs of the first row (6.1 generic), from the bed's cache."""
    if platform.machine() != "x86_64":
        pytest.skip("the bed's x86_64 programs run only on an x86_64 host")
    try:
        kernel = Kernel(*MATRIX[0])
        return kernel, build(kernel)
    except (BedError, FileNotFoundError) as e:
        if os.environ.get("CI") and not isinstance(e, NotShipped):
            pytest.fail(f"Linux test bed: {e}", pytrace=False)
        pytest.skip(f"Linux test bed: {e}")


def test_the_program_on_another_kernel_names_both_kernels(host_build):
    kernel, products = host_build
    if platform.release() == kernel.release or os.path.exists("/dev/rtrig"):
        pytest.skip("this host runs the kernel the program was built for")
    r = subprocess.run([str(products / "rtrig-linux"), "--chip", "any", "--app-out", "4"],
                       capture_output=True, text=True)
    one_error_line(r, "/dev/rtrig", kernel.release, platform.release())


@pytest.mark.parametrize("row", BUILD_ONLY, ids="-".join)
def test_the_lines_not_booted_on_arm64_build_with_wall_werror(row):
    # the booted rows build in the VM fixtures; these are compiled only
    if matrix_skip(row):
        pytest.skip(matrix_skip(row))
    try:
        kernel = Kernel(*row, boot=False)
    except NotShipped as e:
        pytest.skip(str(e))
    except (BedError, FileNotFoundError) as e:
        if os.environ.get("CI"):
            pytest.fail(f"Linux test bed: {e}", pytrace=False)
        pytest.skip(f"Linux test bed: {e}")
    products = build(kernel)                # Kbuild and the Makefile: -Wall -Werror
    for product in ("rtrig_linux.ko", "rtrig_vgpio.ko", "rtrig-linux", "rtrig-vm-agent"):
        header = (products / product).read_bytes()[:20]
        # ELF, 64-bit, e_machine 183: AArch64
        assert header[:5] == b"\x7fELF\x02" and int.from_bytes(header[18:20], "little") == 183
