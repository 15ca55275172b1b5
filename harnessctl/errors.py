"""The exception family.  Each error carries its exit code; cli.py is the only
place that turns one into a process exit (docs/PROTOCOL.md section 15)."""


class HarnessctlError(Exception):
    """Base class: a failure with a message for a human and an exit code."""

    exit_code = 1


class UsageError(HarnessctlError):
    """Bad flags, empty text, invalid answer, binding conflict, not an event file."""

    exit_code = 2


class StateError(HarnessctlError):
    """Refused by state: unknown, already answered or expired request id."""

    exit_code = 3


class NotFoundError(HarnessctlError):
    """The address does not exist yet."""

    exit_code = 4


class UnavailableError(HarnessctlError):
    """The harness is unavailable: not found, failed to start, refused."""

    exit_code = 5


class OutcomeUnknownError(HarnessctlError):
    """Timed out waiting for the runtime: the input MAY have been accepted."""

    exit_code = 6


BY_CODE = {
    cls.exit_code: cls
    for cls in (HarnessctlError, UsageError, StateError, NotFoundError, UnavailableError, OutcomeUnknownError)
}


def from_code(code: int, message: str) -> HarnessctlError:
    """Rebuild an error the runtime reported over the socket."""
    return BY_CODE.get(code, HarnessctlError)(message)
