"""When a runtime ends by itself, and what it leaves behind.

It stops once idle for HARNESSCTL_IDLE_TIMEOUT (nothing open, nothing
waiting, no hook running), or once no command can reach it for its file: the
path names another file (or none), or the sidecar or its socket was removed
or replaced; the file's next writer is waiting for its lock.  Its last act is
the snapshot of exactly what it wrote (`close_file`).  What stopping means
for the parts is the runtime's (its `shutdown`)."""

from __future__ import annotations

import os
import time

from ..eventfile import snapshot
from . import reachwatch
from .server import identity

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    from ..eventfile.eventlog import EventLog
    from ..eventfile.state import Conversation
    from ..store.address import Address
    from .loop import Loop
    from .reachwatch import ReachWatch
    from .server import CommandServer
    from .writer import EventWriter

# How often the runtime checks that its path still names its file and its
# socket is still its own, where inotify cannot tell it (reachwatch.py): one
# that cannot be reached stops, so that the file's next writer does not wait
# for it.
REACHABLE_CHECK = 1.0
# How long after inotify's news the check comes: a file renamed there and back
# meanwhile (an agent's tool, a backup) was never out of reach.
SETTLE = 0.5


class Lifetime:
    def __init__(self, idle_timeout: float, addr: Address, events: EventLog, server: CommandServer, loop: Loop,
                 stop: Callable[[str], None], libc: Any = None) -> None:
        """`stop(reason)` is the runtime's shutdown; `libc` stands in for the C
        library's inotify calls (a test's)."""
        self.idle_timeout = idle_timeout
        self.idle_since: Optional[float] = time.monotonic()
        self._addr = addr
        self._events = events
        self._server = server
        self._loop = loop
        self._stop = stop
        self._libc = libc
        self._sidecar_identity = identity(addr.sidecar)
        self.watch: Optional[ReachWatch] = None  # None: the timer checks
        self._settling = False  # a check after inotify's news is due

    def deadline(self) -> Optional[float]:
        """When the runtime idles out unless something happens first (None: it is not idle)."""
        return None if self.idle_since is None else self.idle_since + self.idle_timeout

    def check_idle(self, idle: bool) -> None:
        if not idle:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = time.monotonic()
        elif time.monotonic() >= self.idle_since + self.idle_timeout:
            self._stop("idle")

    def watch_reachable(self) -> None:
        """Check when inotify says something we depend on changed, so that an
        idle runtime sleeps until then; where it cannot, each REACHABLE_CHECK.
        One check follows at once: a change before the watches were in place."""
        self.watch = reachwatch.start(self._addr.path, self._addr.sidecar, self._server.path,
                                      lambda: self._loop.post(self._changed),
                                      lambda: self._loop.post(self._watch_lost), self._libc)
        if self.watch is None:
            self._loop.call_later(REACHABLE_CHECK, self._check_each_second)
        else:
            self._loop.call_later(0, self._check_reachable)

    def close(self) -> None:
        """The runtime stops: the watches and their descriptor go."""
        if self.watch is not None:
            self.watch.stop()
            self.watch = None

    def _changed(self) -> None:
        """inotify's news: one check SETTLE later, however many changes come meanwhile."""
        if not self._settling:
            self._settling = True
            self._loop.call_later(SETTLE, self._settled)

    def _settled(self) -> None:
        self._settling = False
        self._check_reachable()

    def _watch_lost(self) -> None:
        """A watch ended by itself (its filesystem unmounted, the queue overflowed): the timer takes over."""
        if self.watch is not None:
            self.watch = None
            self._check_each_second()

    def _check_each_second(self) -> None:
        why = self._unreachable()
        if why is None:
            self._loop.call_later(REACHABLE_CHECK, self._check_each_second)
        else:
            self._stop(why)

    def _check_reachable(self) -> None:
        """Stop once no command can reach us for this file (else nothing happens)."""
        why = self._unreachable()
        if why is not None:
            self._stop(why)

    def _unreachable(self) -> Optional[str]:
        """Why no command can reach us for this file, or None."""
        if self._events.replaced():
            return "the event file was moved, removed or replaced"
        if identity(self._addr.sidecar) != self._sidecar_identity or not self._server.is_ours():
            return "the sidecar or the socket was removed or replaced"
        return None


def close_file(writer: EventWriter, conv: Conversation, addr: Address, binding: Dict[str, Any],
               debug: Callable[[str], None]) -> None:
    """Write what a full disk held back if we can, and leave a snapshot of
    exactly what we wrote (the next writer may append at once)."""
    try:
        writer.write_unwritten()
    except OSError as e:  # the file keeps that work open: the next command applies the lost-runtime rule
        debug("%d events could not be written (%s)" % (len(writer.unwritten), e.strerror))
    replaced = writer.events.replaced()
    writer.events.flush_logs()
    covered = os.fstat(writer.events.fd).st_size  # while we are the writer
    writer.events.close()
    conv.seq = writer.events.seq  # log lines written after the last critical event count too
    if not (replaced or writer.unwritten):  # the snapshot must describe the file at the path
        snapshot.save(addr, conv, covered, binding)
