# SPDX-License-Identifier: BSD-2-Clause
"""The rig's features: one module per feature, each a
:class:`~rtrig.gateware.feature.Feature` (its registers, streams and capability bits)
around the blocks of :mod:`rtrig.gateware` that do the work; :class:`~rtrig.gateware.top.GatewareTop`
lists them (docs/architecture.md)."""
