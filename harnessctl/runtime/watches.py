"""The `wait` commands a runtime holds open, and when to answer each.

A watch is answered the moment what it waits for is in the file: the loop
hands over the critical events each pass appended, so a waiter hears within
the pass that wrote its line and costs nothing in between.  The answer is
`KIND LINE`: a result's status and the result line, `request` and the
pending request line of the input's run, `status` and the status line, or
`done`: not open here, the line is in the file already.
"""

from __future__ import annotations

from ..eventfile.eventlog import encode
from ..eventfile.state import status_line

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from ..eventfile.state import Conversation
    from .server import Waiter
    from .writer import EventWriter

# The latest results, kept for a `wait` that arrives just after its input's
# result (a `send --wait` on a quick run): it is answered without reading the
# file.  Small ones only: this is a shortcut, the file is the truth.
RECENT_RESULTS = 16
RECENT_RESULT_BYTES = 65536
# How often the waiters held open are looked at for a command that hung up.
# Only while some are: a `wait` is held while a run goes on (or waits for a
# reply), never in an idle runtime, which must not wake for this.
HUNG_UP_CHECK = 1.0


class Watches:
    def __init__(self, conv: Conversation, writer: EventWriter, status: Callable[[], Dict[str, Any]],
                 call_later: Callable[[float, Callable[[], None]], object]) -> None:
        self.conv = conv
        self.writer = writer
        self.status = status  # the status report, as `status` prints it
        # (input id, or None: the conversation; its waiter; whether it asked to hear of the harness's warnings)
        self.open: List[Tuple[Optional[str], Waiter, bool]] = []
        self.recent: Dict[str, Dict[str, Any]] = {}  # input id -> its result
        self._call_later = call_later
        self._sweeping = False  # a look for hung-up waiters is due

    def add(self, input_id: Optional[str], waiter: Waiter, nudge: bool = False, now: bool = False) -> None:
        """Hold a `wait`; with `nudge`, it hears of each harness warning written
        meanwhile (Waiter.nudge); with `now`, it is answered at once, `timeout`
        while there is nothing to say (a look: MCP's tasks/get)."""
        answer = self._answer(input_id, {})
        if answer is None and now:
            waiter.ok("timeout ")
        elif answer is None:
            self.open.append((input_id, waiter, nudge))
            self._sweep_later()
        else:
            waiter.ok(answer)

    def written(self, events: List[Dict[str, Any]]) -> None:
        """Answer the watches that these newly appended events settle."""
        results = {i: e for e in events if e["type"] == "result" for i in e.get("input_ids") or ()}
        self._remember(results)
        still = []
        for watch in self.open:
            answer = self._answer(watch[0], results)
            if answer is None:
                still.append(watch)
            else:
                watch[1].ok(answer)
        self.open = still

    def warned(self) -> None:
        """A harness warning is in the file: nudge the watches that asked to hear of it."""
        for _, waiter, nudge in self.open:
            if nudge:
                waiter.nudge()

    def drop_hung_up(self) -> None:
        """Forget waiters whose command went away, so a script that waits with
        --timeout in a loop leaves nothing behind."""
        for watch in [w for w in self.open if w[1].hung_up()]:
            self.open.remove(watch)
            watch[1].reply(b"")

    def _sweep_later(self) -> None:
        if not self._sweeping:
            self._sweeping = True
            self._call_later(HUNG_UP_CHECK, self._sweep)

    def _sweep(self) -> None:
        """Drop the hung-up waiters; look again while any are open."""
        self._sweeping = False
        self.drop_hung_up()
        if self.open:
            self._sweep_later()

    def retry_all(self) -> None:
        """The runtime stops with these open: each command recovers from the file."""
        for _, waiter, _ in self.open:
            waiter.retry()
        self.open = []

    def _answer(self, input_id: Optional[str], results: Dict[str, Dict[str, Any]]) -> Optional[str]:
        """What the waiter is told now, or None while it must wait."""
        if input_id is None:
            report = self.status()
            return None if report["state"] in ("running", "cancelling") else "status " + status_line(report)
        result = results.get(input_id) or self.recent.get(input_id)
        if result is not None:
            return "%s %s" % (result["status"], line(result))
        if input_id not in self.conv.open_inputs and not self.writer.holds_result(input_id):
            return "done"
        run_id = self.conv.open_inputs.get(input_id)
        for request in self.conv.pending.values():
            if run_id is not None and request.get("run_id") == run_id and "seq" in request:  # in the file
                return "request " + line(request)
        return None

    def _remember(self, results: Dict[str, Dict[str, Any]]) -> None:
        for input_id, result in results.items():
            if len(result.get("output") or "") <= RECENT_RESULT_BYTES:
                self.recent[input_id] = result
        while len(self.recent) > RECENT_RESULTS:
            del self.recent[next(iter(self.recent))]


def line(event: Dict[str, Any]) -> str:
    """An event exactly as its line in the file, without the newline."""
    return encode(event)[:-1].decode("utf-8")
