# SPDX-License-Identifier: BSD-2-Clause
"""Measurement procedures on a :class:`~rtrig.host.rig.rig.Rig`: records, on-chip statistics, sweeps, the self-test and the kernel suite, with the settings they share."""
