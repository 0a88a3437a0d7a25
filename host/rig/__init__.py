# SPDX-License-Identifier: BSD-2-Clause
"""The rig interface: the link (registers, streams), the stream payloads' decoding, loss accounting, :class:`~rtrig.host.rig.rig.Rig`'s typed operations and their reads of statistics and counters, opening a rig, and the capture run that writes a file."""
