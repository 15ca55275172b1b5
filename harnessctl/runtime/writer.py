"""The runtime's writes to its event file: critical events folded into the
conversation as they land, the queue of those a full disk held back, and
the droppable logs, flushed a moment later in one write."""

from __future__ import annotations

import time
from collections import deque

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, Dict, List, Optional

    from ..eventfile.eventlog import EventLog
    from ..eventfile.state import Conversation

LOG_FLUSH_DELAY = 0.1
# How long events that a full disk held back keep the runtime from idling
# out: space may come back; a file size limit or a read-only file never passes.
UNWRITTEN_GRACE = 600.0
RETRYABLE_WRITE_ERRNOS = (28, 122)  # ENOSPC, EDQUOT


class EventWriter:
    def __init__(self, events: EventLog, conv: Conversation, call_later: Callable[[float, Callable[[], None]], object],
                 debug: Callable[[str], None]) -> None:
        self.events = events
        self.conv = conv
        self.call_later = call_later
        self.debug = debug
        self.unwritten: Deque[Dict[str, Any]] = deque()  # critical events a full disk held back, in order
        self.unwritten_since = 0.0  # when the first of them failed
        self.unwritten_errno: Optional[int] = None
        self.written: List[Dict[str, Any]] = []  # appended since `take_written`, as written
        self.flush_scheduled = False

    def write(self, event: Dict[str, Any], now: bool = False, sync: bool = True) -> None:
        """Append a critical event and fold it in.  When the file cannot take it
        (disk full) it waits in `unwritten`, in order, retried every second, so
        the file catches up once there is space again.  With `now` (an
        `accepted`, on disk before its send exits 0) the OSError is raised.
        Without `sync` the caller writes another at once, whose fsync covers both."""
        try:
            self.write_unwritten()
            self.conv.apply(self._append(event, sync))
        except OSError as e:
            if now:
                raise
            if not self.unwritten:
                self.debug("cannot write the event file (%s); retrying every second" % e.strerror)
                self.unwritten_since, self.unwritten_errno = time.monotonic(), e.errno
                self.call_later(1.0, self._retry_unwritten)
            self.unwritten.append(event)
            self.conv.apply(event, unwritten=True)

    def write_all(self, events: List[Dict[str, Any]]) -> None:
        for event in events:
            self.write(event)

    def write_unwritten(self) -> None:
        """Raises OSError while the file still cannot take them."""
        while self.unwritten:
            self.conv.seq = self._append(self.unwritten[0])["seq"]
            self.unwritten.popleft()

    def take_written(self) -> List[Dict[str, Any]]:
        """The critical events appended since the last call."""
        written, self.written = self.written, []
        return written

    def may_pass(self) -> bool:
        """Held-back events keep the runtime alive while the disk may get space
        again, never for good: a runtime that cannot write its file still exits."""
        return bool(self.unwritten) and self.unwritten_errno in RETRYABLE_WRITE_ERRNOS and (
            time.monotonic() < self.unwritten_since + UNWRITTEN_GRACE)

    def holds_result(self, input_id: str) -> bool:
        """A result for `input_id` is held back: folded in, not yet in the file."""
        return any(e["type"] == "result" and input_id in (e.get("input_ids") or ()) for e in self.unwritten)

    def log(self, event: Dict[str, Any]) -> None:
        self.events.log(event)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.call_later(LOG_FLUSH_DELAY, self._flush_logs)

    def _append(self, event: Dict[str, Any], sync: bool = True) -> Dict[str, Any]:
        full = self.events.append(event, sync)
        self.written.append(full)
        return full

    def _retry_unwritten(self) -> None:
        try:
            self.write_unwritten()
        except OSError as e:
            self.unwritten_errno = e.errno
            self.call_later(1.0, self._retry_unwritten)

    def _flush_logs(self) -> None:
        self.flush_scheduled = False
        self.events.flush_logs()
