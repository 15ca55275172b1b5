"""flock-based locks on files in the sidecar.

`runtime.lock` is held by the runtime for its whole life: whoever can take it
knows no runtime is alive.  `spawn.lock` serializes the commands that start a
runtime, so concurrent first sends start exactly one.
"""

from __future__ import annotations

import fcntl
import os
import time

TYPE_CHECKING = False  # typing is not imported at run time: every command pays for its imports
if TYPE_CHECKING:
    from typing import Optional


def try_lock(path: str) -> Optional[int]:
    """The fd holding an exclusive lock on `path`, or None if someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def wait_lock(path: str, deadline: float) -> Optional[int]:
    """Like try_lock, but wait until `deadline` (time.monotonic()).  Holders are
    short-lived (a recovering command, an exiting runtime), so a 10 ms retry is
    cheaper than a helper thread for a timed blocking flock."""
    while True:
        fd = try_lock(path)
        if fd is not None or time.monotonic() >= deadline:
            return fd
        time.sleep(0.01)


def unlock(fd: Optional[int]) -> None:
    if fd is not None:
        os.close(fd)
