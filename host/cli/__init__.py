# SPDX-License-Identifier: BSD-2-Clause
"""The ``rtrig`` command: thin wrappers over the library functions.

Results go to stdout (``--json`` for machines); status and progress to stderr.
Errors are one line ``error: …`` plus a hint, with the exit code of their type;
``--debug`` shows tracebacks. Each subcommand lives in its own module of this
package; :mod:`.main` is the group that lists them and the entry point.
"""


def _interrupted(exc):
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
    # ("initialization failed"); it is the interrupt, and ends the command as one
    # before rtrig's own handling has started would (nothing has been recorded).
    if _interrupted(e):
        raise KeyboardInterrupt from None
    raise

__all__ = ["cli", "main", "INTERRUPTED"]
