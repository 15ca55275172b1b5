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
from .server import identity

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    from ..eventfile.eventlog import EventLog
    from ..eventfile.state import Conversation
    from ..store.address import Address
    from .loop import Loop
    from .server import CommandServer
    from .writer import EventWriter

# How often the runtime checks that its path still names its file and its
# socket is still its own: one that cannot be reached stops, so that the
# file's next writer does not wait for it.
REACHABLE_CHECK = 1.0


class Lifetime:
    def __init__(self, idle_timeout: float, addr: Address, events: EventLog, server: CommandServer, loop: Loop,
                 stop: Callable[[str], None], tick: Callable[[], None]) -> None:
        """`stop(reason)` is the runtime's shutdown; `tick` runs at each
        reachability check that finds us reachable (the watches drop their
        hung-up commands)."""
        self.idle_timeout = idle_timeout
        self.idle_since: Optional[float] = time.monotonic()
        self._addr = addr
        self._events = events
        self._server = server
        self._loop = loop
        self._stop = stop
        self._tick = tick
        self._sidecar_identity = identity(addr.sidecar)

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
        self._loop.call_later(REACHABLE_CHECK, self._check_reachable)

    def _check_reachable(self) -> None:
        """Stop once no command can reach us for this file."""
        if self._events.replaced():
            self._stop("the event file was moved, removed or replaced")
        elif identity(self._addr.sidecar) != self._sidecar_identity or not self._server.is_ours():
            self._stop("the sidecar or the socket was removed or replaced")
        else:
            self._tick()
            self.watch_reachable()


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
