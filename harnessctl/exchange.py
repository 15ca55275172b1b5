"""One request to a file's runtime and its answer: what every command does
first (client.py, waiting.py), falling back to the file itself when no
runtime listens (recovery.py).  Imports stay light: a command that finds
its runtime alive needs no more than a socket."""

from __future__ import annotations

import os
import time

from . import ipc
from .errors import OutcomeUnknownError, UnavailableError, UsageError, from_code

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List, Optional

    from .address import Address


class NoRuntime(Exception):
    """Nobody is listening on the session's socket."""


def timeout_seconds() -> float:
    if "HARNESSCTL_TIMEOUT" not in os.environ:
        return 30.0  # the default, without importing the parser: every command pays for its imports
    from . import knobs

    return knobs.seconds(os.environ, "HARNESSCTL_TIMEOUT", 30.0)


def status_once(addr: Address, deadline: float) -> Optional[str]:
    """The status line from the live runtime, or from the file without one;
    None when a runtime turned out to be starting or exiting (ask again)."""
    try:
        return exchange(addr, ["status"], deadline, retry_on_eof=True)
    except NoRuntime:
        pass
    from .recovery import status_written_elsewhere, stopped_status, while_stopped

    return while_stopped(addr, deadline, stopped_status, elsewhere=status_written_elsewhere)


def exchange(addr: Address, fields: List[str], deadline: float, retry_on_eof: bool) -> str:
    """One request, one response: the response text, or the error it carries
    raised.  NoRuntime if nobody listens (or the runtime is exiting)."""
    request = ipc.encode_fields(fields)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
        try:
            conn = ipc.connect(addr.socket, remaining)
        except PermissionError as e:
            raise UsageError(str(e)) from None
        except OSError:
            raise NoRuntime() from None
        try:
            ipc.send_all(conn, request)
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            data = ipc.read_all(conn)
        except ipc.Timeout:
            raise OutcomeUnknownError(
                "timed out after %g s waiting for the runtime; the input may have been accepted: "
                "read %s before retrying" % (timeout_seconds(), addr.path)) from None
        except (ConnectionResetError, BrokenPipeError):
            # Closed before it read our whole request (an exiting runtime does not
            # accept what is still queued): nothing was applied, a new runtime may take it.
            raise NoRuntime() from None
        except OSError:
            data = b""
        finally:
            conn.close()
        if not data:
            if retry_on_eof:
                continue
            raise OutcomeUnknownError("the runtime went away before answering; the request may have been "
                                      "applied: read %s before retrying" % addr.path)
        response = ipc.decode_response(data)
        if response is None:
            raise NoRuntime()
        code, text = response
        if code:
            raise _earlier(addr, fields[0], text) or from_code(code, text)
        return text


def _earlier(addr: Address, op: str, text: str) -> Optional[UnavailableError]:
    """The error for a versioned request (ipc.named) that a runtime of an
    earlier harnessctl, which knows no versions, calls malformed."""
    name, slash, version = op.partition("/")
    if not slash or text != "malformed request %r" % op:
        return None
    return UnavailableError(ipc.other_version(addr.path, name, "an earlier harnessctl", 1,
                                              "harnessctl %s" % ipc.own_version(), version))
