"""A command with no live runtime: it becomes the event file's one writer for
a moment and applies the lost-runtime rule (every accepted input without a
result gets a failed one, pending requests expire, nothing is replayed)."""

from __future__ import annotations

import os
import time

from .errors import HarnessctlError, OutcomeUnknownError, UnavailableError, UsageError
from .store.address import Address, check_event_file, open_event_file
from .store.bindingfile import read_binding

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any


# A recovering command holds the event file's lock for milliseconds (seconds
# for a long file without a snapshot); held longer, a runtime serving another
# name of the same file (a hard link) writes it.
WRITER_GRACE = 2.0


def while_stopped(addr: Address, deadline: float, fn: Any, elsewhere: Any = None) -> Any:
    """Run fn(addr, fd) as the event file's one writer (fd: the file, locked)
    and, when it has a sidecar, holding the sidecar's lock (no runtime can
    start meanwhile); None if a runtime is alive after all (ask it instead),
    store.holder.HeldElsewhere if it is alive on another machine.
    If another process keeps writing the file, elsewhere(addr) answers, or the
    command exits 5 having done nothing."""
    from .store import locks, private
    from .store.pidfile import kill_leftover

    sidecar = os.path.lexists(addr.sidecar)  # none: a file made by hand, or a copy
    lock = None
    if sidecar:
        private.check_dir(addr.sidecar)
        lock = locks.try_lock(addr.runtime_lock)
        if lock is None:
            from .store.holder import refuse_if_elsewhere

            refuse_if_elsewhere(addr)  # HeldElsewhere: its runtime lives on another machine
            if time.monotonic() >= deadline:
                raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
            time.sleep(0.01)  # a runtime is starting or exiting: ask again shortly
            return None
    try:
        fd = _open_writer(addr)
        try:
            if not locks.lock_fd(fd, min(deadline, time.monotonic() + WRITER_GRACE)):
                if elsewhere is not None:
                    return elsewhere(addr)
                raise UnavailableError("%s is being written by a runtime serving another name of it (a hard link?): "
                                       "nothing was done; use the name that runtime was started for" % addr.path)
            if sidecar:
                kill_leftover(addr.harness_pid)
            return fn(addr, fd)
        finally:
            os.close(fd)
    finally:
        locks.unlock(lock)


def _open_writer(addr: Address) -> int:
    """The event file for writing, or for reading only where it cannot be
    written (a status still works; a recovery that must write says why)."""
    from .store import private

    try:
        return private.open_file(addr.path, os.O_RDWR | os.O_APPEND, "event file")
    except FileNotFoundError:
        raise UsageError("event file %s disappeared" % addr.path) from None
    except OSError:
        return open_event_file(addr, os.O_RDONLY)  # EACCES, EROFS: read only; anything else: its error


def status_written_elsewhere(addr: Address) -> str:
    """The status line of a file that a runtime serving another of its names
    writes: what the file says, and that runtime alive."""
    from .eventfile import snapshot
    from .eventfile.state import status_line, status_report

    return status_line(status_report(snapshot.load(addr)[0], read_binding(addr), alive=True))


def stopped_status(addr: Address, fd: int) -> str:
    """The status line without a runtime: from the snapshot when the file has
    not changed since it was taken (no JSON parse), else from the fold."""
    from .eventfile import snapshot

    line = snapshot.current_status(addr)
    if line is None:
        from .eventfile.state import status_line, status_report

        line = status_line(status_report(recovered(addr, fd, reading=True), read_binding(addr), alive=False))
    return line


# A file that cannot be written at all: EBADF (it is open read-only), EROFS, EACCES.
READ_ONLY_ERRNOS = (9, 30, 13)


def recovered(addr: Address, fd: int, reading: bool = False) -> Any:
    """The conversation after the lost-runtime rule: every accepted input
    without a result gets a failed one, pending requests expire, nothing is
    replayed.  Only this path reads the event file, so only it imports the fold.

    `reading`: for a command that only reads (status), a file that cannot be
    written (a read-only filesystem) gets the rule applied in memory only: it
    shows what the next writer will record.  Otherwise that is an error."""
    from .eventfile import snapshot
    from .eventfile.state import LOST, close_open_work

    check_event_file(addr)
    binding = read_binding(addr)  # refused (untrusted) before anything is written, never after
    conv, offset, stale = snapshot.load(addr)
    lost = close_open_work(conv, LOST)
    if lost:
        from .eventfile.eventlog import EventLog

        log = EventLog(os.dup(fd), addr.path, conv.seq)  # the dup shares the lock; closing it keeps the lock
        first = log.seq
        try:
            for event in lost:
                conv.apply(log.append(event))
        except OSError as e:  # e.g. the disk is full: say so (not "internal error"); the next command retries
            if reading and e.errno in READ_ONLY_ERRNOS and log.seq == first:  # nothing was written
                for event in lost:
                    conv.apply(event, unwritten=True)
                return conv
            # EBADF: _open_writer could only open it for reading
            why = "it is read-only (the file or its filesystem)" if e.errno == 9 else e.strerror
            raise HarnessctlError("cannot write %s: %s (recording what the lost runtime left open); retry "
                                  "once it can be written" % (addr.path, why)) from None
        finally:
            log.close()
        offset = os.path.getsize(addr.path)
    if (stale or lost) and os.path.isdir(addr.sidecar):
        snapshot.save(addr, conv, offset, binding)
    return conv
