# SPDX-License-Identifier: BSD-2-Clause
# rtrig — top-level build. `make help` lists the targets.
#
# Everything a fresh machine lacks is installed here: a Python venv with pinned
# packages (.venv), and Debian packages (apt-get, as root) for the firmware
# toolchains, the browser check of reports and the VCD consumer.

SHELL   := /bin/bash
PYTHON  ?= $(shell command -v python3.11 || command -v python3)
VENV    ?= .venv
PY      := $(VENV)/bin/python
RTRIG   := $(VENV)/bin/rtrig
STAMP   := $(VENV)/.installed
export YOWASP_CACHE_DIR ?= $(CURDIR)/build/yowasp-cache

# Debian packages: perl (Verilator), chromium + fonts (browser check of reports),
# sigrok-cli and gtkwave (vcd2fst): real consumers of VCD exports, rt-tests
# (cyclictest, beside the rig in reports), openfpgaloader (the board names rtrig flash
# passes)
APT_PACKAGES := perl chromium fonts-dejavu-core sigrok-cli gtkwave rt-tests postgresql openfpgaloader

.PHONY: help venv system-deps demo demo-soc test test-python test-firmware lint bench \
        linux-deps test-linux test-linux-all \
        firmware sim clean distclean
.DEFAULT_GOAL := help

help:                ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "}; {printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: python3.11 not found"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,labgrid]'
	@# labgrid's pyserial-labgrid and pyserial install the same `serial` module: put
	@# labgrid's in place last, so the whole suite runs on it (docs/farm.md)
	$(PY) -m pip install -q --force-reinstall --no-deps "pyserial-labgrid==$$($(PY) -c \
	  'import importlib.metadata as m; print(m.version("pyserial-labgrid"))')"
	@touch $@

venv: $(STAMP)       ## create .venv with the pinned Python packages (and the labgrid extra)

system-deps:         ## install missing Debian packages (chromium, sigrok-cli, gtkwave, perl, rt-tests, openfpgaloader)
	@missing=""; for pkg in $(APT_PACKAGES); do \
	  dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null || { echo "error: apt-get failed"; exit 1; }; \
	else echo "warning: missing$$missing (not root: tests that need them will skip)"; fi

sim: venv            ## build the simulation twin (cached in build/sim)
	$(PY) -c "from rtrig.host.sim import build; build()"

DEMO_CAPTURE := $(RTRIG) --sim capture --target model --preset fast --freq 8k --count 500 \
  --jitter 20us

demo: venv sim       ## simulated measurement: selftest, captures, sweep and report
	@mkdir -p captures
	@# The self-test and the two captures need nothing of each other: each runs on its
	@# own twin, at once; the captures' output follows the self-test's when all have ended.
	@out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	echo '$(DEMO_CAPTURE) -o captures/demo-unloaded.rtrig' >"$$out/1"; \
	$(DEMO_CAPTURE) -o captures/demo-unloaded.rtrig >>"$$out/1" 2>&1 & one=$$!; \
	echo '$(DEMO_CAPTURE) --load -o captures/demo-loaded.rtrig' >"$$out/2"; \
	$(DEMO_CAPTURE) --load -o captures/demo-loaded.rtrig >>"$$out/2" 2>&1 & two=$$!; \
	echo '$(RTRIG) --sim selftest'; $(RTRIG) --sim selftest; ok=$$?; \
	wait $$one || ok=1; wait $$two || ok=1; cat "$$out/1" "$$out/2"; exit $$ok
	$(RTRIG) compare captures/demo-unloaded.rtrig captures/demo-loaded.rtrig
	@# --max-pulses 4000: an MF step meets the preset's 100 µs tick in every phase well
	@# before that (docs/sweep.md); the default 20000 only makes the demo longer. The
	@# sweep runs its steps on one twin per core (docs/sweep.md, "Parallel twins").
	$(RTRIG) --sim sweep --target model --preset fast --load --from 20k --to 250k \
	  --pulses 100 --max-pulses 4000 -o captures/demo-sweep.rtrig
	$(RTRIG) report captures/demo-unloaded.rtrig captures/demo-loaded.rtrig \
	  captures/demo-sweep.rtrig -o captures/demo-report.html
	@echo "report: $(CURDIR)/captures/demo-report.html"

demo-soc: venv       ## the project's kernel on the simulated RISC-V SoC, loaded and unloaded
	$(MAKE) -C firmware toolchains all
	@mkdir -p captures
	$(RTRIG) --sim capture --target soc --freq 5k --jitter 40us --count 500 --no-load \
	  --channels isr,app -o captures/demo-soc-unloaded.rtrig
	$(RTRIG) --sim capture --target soc --freq 5k --jitter 40us --count 500 --load \
	  --channels isr,app -o captures/demo-soc-loaded.rtrig
	$(RTRIG) report captures/demo-soc-unloaded.rtrig captures/demo-soc-loaded.rtrig \
	  -o captures/demo-soc-report.html
	@echo "report: $(CURDIR)/captures/demo-soc-report.html"

# `make test` boots one Linux kernel per line and architecture (6.1 rt x86_64, 6.12
# generic x86_64, 6.12 rt arm64; 6.1 generic arm64 is built only) to stay within its
# time; `make test-linux` boots all six.
test: export RTRIG_LINUX_MATRIX ?= family
test: venv system-deps fpga-tools linux-deps  ## install what is needed and run every test
	$(MAKE) -C firmware toolchains
	$(MAKE) test-firmware
	$(MAKE) test-python

# The Linux test bed (tests/linux, docs/linux.md): QEMU for x86_64 and arm64, Debian's
# aarch64 cross compiler and static libc, and the arm64 package lists. The kernels and
# their headers (6.1 and 6.12, generic and rt, amd64 and arm64: the newest of each line)
# are fetched by name with apt-get download into ~/.cache/rtrig/linux, by version, and
# printed; nothing of them is installed into the system.
LINUX_PACKAGES := qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
                  libelf1 libssl3 zlib1g

linux-deps:          ## QEMU, the arm64 cross compiler, and the kernels of the Linux test bed
	@if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "warning: not root on Debian: the Linux test bed (tests/linux) will skip"; exit 0; fi; \
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then \
	  echo "adding Debian's arm64 package lists (arm64 kernels, headers, busybox)"; \
	  dpkg --add-architecture arm64 && apt-get update -qq; fi; \
	[ -n "$$(apt-cache search --names-only '^linux-image-rt-arm64$$')" ] || apt-get update -qq; \
	missing=""; for p in $(LINUX_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    $$missing >/dev/null || { echo "error: apt-get failed"; exit 1; }; fi; \
	$(PYTHON) tests/linux/linux_bed.py
	@echo "Linux test bed: QEMU under TCG: timing in the VM means nothing," \
	  "the tests check behaviour only (no latency figure from it is a result)"

test-linux: venv linux-deps  ## the Linux target in QEMU VMs: 6.1 and 6.12, generic and rt, x86_64 and arm64
	$(PY) -m pytest -q -n $(JOBS) --dist loadgroup tests/linux

test-linux-all: test-linux  ## the same: every row of the Linux kernel matrix

test-firmware:       ## firmware: native kernel tests, QEMU self-tests, all builds
	$(MAKE) -C firmware all test

# Independent tests run on every core (pytest-xdist); JOBS=1 runs them in one process.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# One FPGA build per family here (the ULX3S 85F, OrangeCrab 25F, iCEBreaker), the
# ULX3S rig with the SoC and the SoC alone; `make test-boards` builds every board. The
# slowest tests are listed at the end, to keep the run within its time.
test-python: venv    ## Python tests (gateware, link, simulation twin, CLI), on every core (JOBS=N)
	RTRIG_BOARD_MATRIX=$${RTRIG_BOARD_MATRIX:-family} $(PY) -m pytest -q -n $(JOBS) \
	  --dist loadgroup --durations=25

firmware:            ## build every firmware target
	$(MAKE) -C firmware toolchains all

lint: venv           ## ruff and clang-format checks
	$(VENV)/bin/ruff check rtrig gateware host rig tests benchmarks
	$(MAKE) -C firmware lint

bench: venv sim      ## benchmarks; figures go to docs/performance.md
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:               ## remove build products and caches (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .hypothesis
	$(MAKE) -C firmware clean

distclean: clean     ## also remove .venv
	rm -rf $(VENV)

-include rig/boards/boards.mk
