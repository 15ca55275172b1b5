"""FILE.d/runtime.host: which machine's runtime holds the session.

On shared storage (NFS) a command on another node sees the runtime's locks
held but cannot reach its unix socket, which belongs to that machine.  The
runtime writes this record right after it takes `runtime.lock` and removes it
before it exits, so that such a command can say at once where the session
is held (`status`), refuse at once what only that runtime may do (`send`,
`reply`, `cancel`: exit 5), and `wait` can sleep on the lock instead of
trying it dozens of times a second.  The record is one line, `HOST PID`.

It is advisory: a command reads it only when the lock is held and nobody
listens, only if the file is ours (private.py), and as untrusted text (a
bounded read, a host name of letters, digits, `.`, `-` and `_`).  Anything
else is no record, and the command does what it did without one.
"""

from __future__ import annotations

import os
import time

from ..errors import HarnessctlError, UnavailableError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .address import Address

MOST = 300  # bytes: a host name of 253 and a pid fit
HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
MAX_HOST = 253  # a DNS name's longest
LOOK_AGAIN = 1.0  # seconds between two looks at the record while a wait sleeps on the lock


def this_host() -> str:
    """This machine's name, as socket.gethostname() says it (without its import)."""
    return os.uname().nodename


def own_text() -> str:
    """The record this process writes."""
    return "%s %d\n" % (this_host(), os.getpid())


def write(addr: Address) -> None:
    """The runtime's record, written once it holds `runtime.lock`.  Best
    effort: a sidecar that cannot take it (a full disk) costs only the other
    nodes' answers, which then wait as they did before the record."""
    from . import private

    try:
        private.write_atomic(addr.runtime_host, own_text())
    except OSError:
        pass


def forget(addr: Address) -> None:
    """Remove the record when it is still this process's own (the runtime,
    exiting, still holds the lock: no other runtime wrote one since)."""
    if _read_text(addr) == own_text():
        try:
            os.unlink(addr.runtime_host)
        except OSError:
            pass


def parse(text: str) -> Optional[Tuple[str, int]]:
    """(host, pid) of a record's text, or None when it is not one: exactly
    one line `HOST PID`, a host of HOST_CHARS at most MAX_HOST long, a pid of
    at most ten digits, above zero."""
    if not text.endswith("\n") or text.count("\n") != 1:
        return None
    words = text[:-1].split(" ")
    if len(words) != 2:
        return None
    host, pid = words
    if not host or len(host) > MAX_HOST or not set(host) <= HOST_CHARS:
        return None
    if not pid.isdigit() or not pid.isascii() or len(pid) > 10 or int(pid) == 0:
        return None
    return host, int(pid)


def _read_text(addr: Address) -> Optional[str]:
    """The record's text, at most MOST bytes of ASCII; None when there is
    none, it is not ours (a symlink, another user's, writable by others), too
    long or not ASCII."""
    from . import private

    try:
        fd = private.open_file(addr.runtime_host, os.O_RDONLY, "runtime record")
    except (OSError, HarnessctlError):
        return None
    try:
        data = os.read(fd, MOST + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MOST:
        return None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return None


def elsewhere(addr: Address) -> Optional[Tuple[str, int]]:
    """(host, pid) when the record names a machine other than this one."""
    text = _read_text(addr)
    found = None if text is None else parse(text)
    if found is None or found[0].lower() == this_host().lower():
        return None
    return found


class HeldElsewhere(UnavailableError):
    """The session is held by a runtime on another machine: only a command
    run there reaches it.  Exit 5, nothing done."""

    def __init__(self, addr: Address, host: str, pid: int) -> None:
        self.addr, self.host, self.pid = addr, host, pid
        super().__init__("%s is held by its runtime on %s (pid %d), which this machine cannot reach: nothing was "
                         "done; run the command there, or use %s" % (addr.path, host, pid, self.address))

    @property
    def address(self) -> str:
        return "ssh://%s%s" % (self.host, self.addr.path)

    def held_by(self) -> Dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "address": self.address}

    def status(self) -> str:
        """The status line from here: what the file says, read without its
        writer's lock and without the lost-runtime rule (its runtime lives),
        with `"runtime":"elsewhere"` and, after it, `held_by`."""
        from ..eventfile import snapshot
        from ..eventfile.state import status_line, status_report
        from .bindingfile import read_binding

        report = status_report(snapshot.load(self.addr)[0], read_binding(self.addr), alive=True)
        shown: Dict[str, Any] = {}
        for key, value in report.items():
            shown[key] = "elsewhere" if key == "runtime" else value
            if key == "runtime":
                shown["held_by"] = self.held_by()
        return status_line(shown)


def refuse_if_elsewhere(addr: Address) -> None:
    """Raise HeldElsewhere when the record names another machine: called
    where a command finds the lock held and nobody listening."""
    found = elsewhere(addr)
    if found is not None:
        raise HeldElsewhere(addr, *found)


_SLEEPERS: Dict[str, Any] = {}  # lock path -> the threading.Event its sleeping thread sets


def released(addr: Address, until: Optional[float]) -> bool:
    """Sleep until the runtime held elsewhere lets go of `runtime.lock`: True
    then, or once the record no longer names another machine (a runtime of
    this one, or one exiting); False once `until` (time.monotonic()) passed.

    A daemon thread blocks in flock (the kernel wakes it; an NFS client asks
    the server at its own slow pace), one per lock for the process's life;
    this thread looks at the record and the lock once every LOOK_AGAIN
    seconds, in case that one cannot block (flock refused)."""
    import threading

    from . import locks

    event = _SLEEPERS.get(addr.runtime_lock)
    if event is None or event.is_set():
        event = _SLEEPERS[addr.runtime_lock] = threading.Event()
        threading.Thread(target=_sleep_on, args=(addr.runtime_lock, event), daemon=True).start()
    while True:
        left = None if until is None else until - time.monotonic()
        if left is not None and left <= 0:
            return False
        if event.wait(LOOK_AGAIN if left is None else min(left, LOOK_AGAIN)):
            return True
        if elsewhere(addr) is None or not locks.is_held(addr.runtime_lock):
            return True


def _sleep_on(path: str, event: Any) -> None:
    """Take the lock blocking, let go of it at once, and say so."""
    import fcntl

    from . import locks

    try:
        fd = locks.open_lock(path)
    except (OSError, HarnessctlError):
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        return
    finally:
        os.close(fd)
    event.set()
