"""flock-based locks: two for the sidecar, one on the event file itself.

`runtime.lock` is held by the runtime for its whole life: whoever can take it
knows no runtime lives in this sidecar (its socket, its harness pid).
`spawn.lock` serializes the commands that start a runtime, so concurrent
first sends start exactly one.  And the event file's own inode is locked by
its one writer, the runtime or a command recovering a lost one: a lock on a
name would let a rename, a hard link or a removed sidecar give one file two
writers (two results for one input, a `seq` used twice).
"""

from __future__ import annotations

import fcntl
import os
import time

from . import private

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional


def try_lock(path: str) -> Optional[int]:
    """The fd holding an exclusive lock on `path` (created 0600 if missing),
    or None if someone else holds it.

    A lock needs no write access (flock works on a read-only descriptor), so
    on a read-only filesystem a command still learns that no runtime lives;
    where the lock file cannot even be created, nobody can hold it, and the
    fd returned holds the directory instead (a token for unlock)."""
    return _lock_or_close(open_lock(path))


def open_lock(path: str) -> int:
    """The lock file `path` opened for locking (try_lock's docstring), not locked yet."""
    try:
        return private.open_file(path, os.O_RDWR | os.O_CREAT, "lock file")
    except OSError as e:
        if e.errno not in READ_ONLY_ERRNOS:
            raise private.cannot("open lock file", path, e) from None
        return _open_read_only(path)


READ_ONLY_ERRNOS = (30, 13, 1)  # EROFS, EACCES, EPERM (numbers: the errno module is an import)


def _open_read_only(path: str) -> int:
    try:
        return private.open_file(path, os.O_RDONLY, "lock file")
    except FileNotFoundError:
        return os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise private.cannot("open lock file", path, e) from None


def wait_lock(path: str, deadline: float) -> Optional[int]:
    """Like try_lock, but wait until `deadline` (time.monotonic()).  Holders are
    short-lived (a recovering command, an exiting runtime), so a 10 ms retry is
    cheaper than a helper thread for a timed blocking flock."""
    while True:
        fd = try_lock(path)
        if fd is not None or time.monotonic() >= deadline:
            return fd
        time.sleep(0.01)


def is_held(path: str) -> bool:
    """Whether someone else holds the lock on `path` (it is taken for a moment to know)."""
    fd = try_lock(path)
    unlock(fd)
    return fd is None


def lock_fd(fd: int, deadline: Optional[float] = None) -> bool:
    """Take the exclusive lock on an open file (the event file: its inode,
    whatever names it has), trying until `deadline` or, without one, once."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if deadline is None or time.monotonic() >= deadline:
                return False
            time.sleep(0.01)


def _lock_or_close(fd: int) -> Optional[int]:
    if lock_fd(fd):
        return fd
    os.close(fd)
    return None


def unlock(fd: Optional[int]) -> None:
    if fd is not None:
        os.close(fd)
