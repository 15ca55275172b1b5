"""The commands' requests, each read on the loop thread and handed to the
part that serves it.  Fields as ipc.py encodes them: send/VERSION and named
fields (binding.send_request) | status | cancel [INPUT_ID] | reply ID ANSWER
| wait INPUT_ID (empty: the conversation) [notes] [now].  A send is the
coordinator's to take (`Moments.send`): it may change the binding."""

from __future__ import annotations

from ..binding import read_send_request
from ..errors import HarnessctlError
from ..eventfile.state import status_line

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Protocol

    from ..eventfile.eventlog import EventLog
    from .loop import Loop
    from .replies import Replies
    from .sends import Sends
    from .server import Waiter
    from .watches import Watches

    class Moments(Protocol):
        """What a request asks of the coordinator."""

        def send(self, text: str, schema: str, wanted: Dict[str, Any], deliver: Optional[str],
                 waiter: Waiter) -> None: ...

        def status(self) -> Dict[str, Any]: ...

        def cancel_run(self, interrupting: Optional[str] = None) -> None: ...

        def shutdown(self, reason: str) -> None: ...


class Requests:
    def __init__(self, path: str, events: EventLog, loop: Loop, sends: Sends, replies: Replies, watches: Watches,
                 moments: Moments, debug: Callable[[str], None]) -> None:
        self._path, self._events, self._loop = path, events, loop
        self._sends, self._replies, self._watches = sends, replies, watches
        self._moments, self._debug = moments, debug

    def submit(self, request: List[str], waiter: Waiter) -> None:
        """From a handler thread: run the request on the loop thread."""
        self._loop.post(lambda: self._dispatch(request, waiter), owner=waiter)

    def _dispatch(self, request: List[str], waiter: Waiter) -> None:
        op = request[0]
        if self._events.replaced():
            waiter.retry()  # a new runtime serves the file now at the path (or refuses a foreign one)
            self._moments.shutdown("the event file was removed or replaced")
            return
        try:
            if op.partition("/")[0] == "send":
                self._moments.send(*read_send_request(request, self._path), waiter)
            elif op == "status":
                waiter.ok(status_line(self._moments.status()))
            elif op == "cancel" and len(request) == 1:
                self._moments.cancel_run()
                waiter.ok()
            elif op == "cancel" and len(request) == 2:
                self._sends.revoke(request[1])
                waiter.ok()
            elif op == "reply" and len(request) == 3:
                self._replies.reply(request[1], request[2])
                waiter.ok()
            elif op == "wait" and len(request) >= 2 and set(request[2:]) <= {"notes", "now"}:
                self._watches.add(request[1] or None, waiter, "notes" in request[2:], "now" in request[2:])
            else:
                waiter.fail(HarnessctlError("malformed request %r" % op))
        except HarnessctlError as e:
            waiter.fail(e)
        except Exception as e:
            import traceback

            self._debug("error handling %s:\n%s" % (op, traceback.format_exc()))
            waiter.fail(HarnessctlError("internal error in the runtime: %s" % e))
