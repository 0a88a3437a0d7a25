# SPDX-License-Identifier: BSD-2-Clause
"""The command's start-up import: :mod:`.main` and every module it needs, with a SIGINT
that strikes a compiled module's initialisation ended as the interrupt it is."""


def interrupted(exc):
    """Was ``exc`` raised because a signal's KeyboardInterrupt struck inside it?"""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


try:
    from .main import INTERRUPTED, cli, main
except ImportError as e:
    # A SIGINT while a compiled module initialises comes out as its ImportError
    # ("initialization failed", scipy's); it is the interrupt, and ends the command as
    # one before rtrig's own handling has started would (nothing has been recorded).
    if interrupted(e):
        raise KeyboardInterrupt from None
    raise

__all__ = ["cli", "main", "INTERRUPTED"]
