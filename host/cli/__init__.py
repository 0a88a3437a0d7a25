# SPDX-License-Identifier: BSD-2-Clause
"""The ``rtrig`` command: thin wrappers over the library functions.

Results go to stdout (``--json`` for machines); status and progress to stderr.
Errors are one line ``error: …`` plus a hint, with the exit code of their type;
``--debug`` shows tracebacks. Each subcommand lives in its own module of this
package; :mod:`.main` is the group that lists them and the entry point.
"""


from .entry import INTERRUPTED, cli, main

__all__ = ["cli", "main", "INTERRUPTED"]
