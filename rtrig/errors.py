# SPDX-License-Identifier: BSD-2-Clause
"""The project's own error types; the CLI turns them into one-line messages."""

__all__ = ["RtrigError", "UsageError", "LinkError", "NotARigError", "SimulationError",
           "CaptureFormatError", "ToolchainError", "Interrupted"]


class RtrigError(Exception):
    """Base of all rtrig errors. ``hint`` says what to try; ``exit_code`` for the CLI."""
    exit_code = 1

    def __init__(self, message, hint=None):
        super().__init__(message)
        self.hint = hint


class UsageError(RtrigError):
    """Bad settings (the user's input)."""
    exit_code = 2


class LinkError(RtrigError):
    """The port cannot be opened or the rig does not answer."""
    exit_code = 3


class NotARigError(LinkError):
    """Something answers on the port, but it is not an rtrig rig."""
    exit_code = 4


class SimulationError(RtrigError):
    """The simulation twin could not be built or started."""
    exit_code = 5


class CaptureFormatError(RtrigError):
    """A capture file is unreadable or of an unknown version."""
    exit_code = 6


class ToolchainError(RtrigError):
    """A build tool is missing or failed."""
    exit_code = 7


class Interrupted(KeyboardInterrupt):
    """A signal that ends a command like Ctrl-C (SIGINT, SIGTERM, SIGHUP).

    A KeyboardInterrupt, so the procedures that handle Ctrl-C (capture, statistics,
    sweep) stop the stimulus and close their file with status ``interrupted``; the CLI
    then exits with 128 + ``signum``.
    """

    def __init__(self, signum):
        import signal
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
