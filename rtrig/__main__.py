# SPDX-License-Identifier: BSD-2-Clause
"""``python -m rtrig``: the rtrig command."""

from .host.cli import main

main()
