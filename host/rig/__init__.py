# SPDX-License-Identifier: BSD-2-Clause
"""The rig interface: the link (registers, streams, loss accounting), :class:`~rtrig.host.rig.rig.Rig`'s typed operations, and the capture run that writes a file."""
