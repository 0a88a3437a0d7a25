"""``python -m rtrig``: the rtrig command."""

from .host.cli import main

main()
