# SPDX-License-Identifier: BSD-2-Clause
"""The project's own error types; the CLI turns them into one-line messages."""

__all__ = ["RtrigError", "UsageError", "LinkError", "NotARigError", "RigUnplugged",
           "SimulationError",
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


class RigUnplugged(LinkError):
    """The rig's serial port went away while in use (a cable pulled, a board reset)."""


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


#: A stop signal taken and not yet handled: its number, or None.
_stop = {"signum": None}


def stop_requested(signum):
    """Note a stop signal (the CLI's handler, which also raises :class:`Interrupted`):
    should that exception be lost in code that swallowed it, :func:`check_stop` raises
    it again, so the command still ends."""
    _stop["signum"] = signum


def stop_taken():
    """The stop is being handled (a capture's cleanup runs): nothing to raise again."""
    _stop["signum"] = None


def check_stop():
    """Raise :class:`Interrupted` for a stop signal that came and is not handled yet
    (once; the rig link checks at every poll)."""
    signum = _stop["signum"]
    if signum is not None:
        _stop["signum"] = None
        raise Interrupted(signum)

