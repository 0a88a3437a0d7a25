# SPDX-License-Identifier: BSD-2-Clause
"""The simulation twin: the rig's real gateware compiled with Verilator.

:func:`build` (:mod:`~rtrig.host.sim.builder`) converts a board's
:class:`rtrig.gateware.top.GatewareTop` (the ULX3S's by default, :data:`SIM_BOARD`) to Verilog
and compiles it with the C++ harness (``harness.cpp``) into a simulator binary, cached
by the hash of everything that goes into it. :class:`SimRig`
(:mod:`~rtrig.host.sim.simrig`) starts that binary and gives the ``socket://`` URL the
host connects to; :mod:`~rtrig.host.sim.pty_link` serves it on a pseudo-terminal
instead (``RTRIG_SIM_SERIAL=pty``). :mod:`~rtrig.host.sim.soc_ram` holds the SoC twin's RAM image,
:mod:`~rtrig.host.sim.console` the SoC console's verdicts.
"""

from .builder import FAST_DIVISOR, LINKS, SIM_BOARD, build, cache_dir, link_baud, sim_board
from .simrig import SimRig
from .soc_ram import ram_file, soc_image

__all__ = ["build", "SimRig", "soc_image", "ram_file", "SIM_BOARD", "sim_board",
           "FAST_DIVISOR", "LINKS", "link_baud", "cache_dir"]
