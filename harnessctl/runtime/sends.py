"""The sends a runtime holds: those waiting, in order, and the one handed to
the backend and not yet confirmed.  One at a time, so that the harness
confirms (accepts or fails) each input before it is given the next; a send
not confirmed within HARNESSCTL_TIMEOUT exits with an unknown outcome.  A
harness that takes the answer's schema on its command line
(Backend.SCHEMA_PER_PROCESS) is restarted between runs for a send that asks
for another.  Kept by the runtime, on its loop thread."""

from __future__ import annotations

from collections import deque

from .. import registry
from ..checks import structured
from ..errors import OutcomeUnknownError, UnavailableError, UsageError
from .supervisor import READY, STOPPED

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, Dict, Optional, Protocol, Tuple

    from ..errors import HarnessctlError
    from ..eventfile.state import Conversation
    from ..kit.backend import Input
    from .loop import Loop
    from .server import Waiter
    from .supervisor import Supervisor

    class Hands(Protocol):
        """Where a send handed to the backend is recorded (host.py): its text
        goes into `accepted`, and one the backend refused fails there."""

        def expect(self, item: Input) -> None: ...

        def send_failed(self, input_id: str, message: str, unavailable: bool = False) -> None: ...


class Sends:
    def __init__(self, conv: Conversation, supervisor: Supervisor, hands: Hands, loop: Loop, timeout: float,
                 path: str, start_harness: Callable[[], None], debug: Callable[[str], None]) -> None:
        """`start_harness` is the runtime's: a send waits for a harness it starts."""
        self._conv = conv
        self._supervisor = supervisor
        self._hands = hands
        self._loop = loop
        self._timeout = timeout
        self._path = path
        self._start_harness = start_harness
        self._debug = debug
        self._closed = False  # the runtime stops: nothing more is handed to the backend
        self.waiting: Deque[Tuple[Input, Waiter]] = deque()
        self.in_flight: Optional[Tuple[Input, Waiter]] = None

    def pending(self) -> bool:
        return bool(self.waiting or self.in_flight)

    def next_schema(self) -> Optional[Dict[str, Any]]:
        """The schema of the send the harness will be given next."""
        return self.waiting[0][0].schema if self.waiting else None

    def schema(self, field: str, binding: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """A send's schema (structured.py), refused where the harness cannot
        promise it, and while a run is going or about to start: that run's
        answer is asked for already, and this send would only steer it."""
        schema = structured.from_field(field)
        if schema is None:
            return None
        structured.check_claimed(registry.manifest(binding["adapter"]), binding.get("agent"))
        if self._conv.is_busy() or self.pending():
            raise UsageError("--schema: a run is going on %s and its answer cannot change schema: wait for it "
                             "(harnessctl wait FILE) and send again, or send without --schema to steer it"
                             % self._path)
        return schema

    def add(self, item: Input, waiter: Waiter) -> None:
        self.waiting.append((item, waiter))
        self.pump()

    def pump(self) -> None:
        """Hand the next waiting send to the backend: one at a time."""
        if self.in_flight or not self.waiting or self._closed:
            return
        supervisor = self._supervisor
        if supervisor.state == STOPPED:
            self._start_harness()
            return
        backend = supervisor.backend
        if supervisor.state != READY or backend is None:
            return
        schema = self.waiting[0][0].schema
        if backend.SCHEMA_PER_PROCESS and schema != backend.config.schema and not self._conv.is_busy():
            self._debug("restarting the harness: the next input asks for %s" % ("another schema" if schema else "none"))
            supervisor.stop()
            self._start_harness()
            return
        item, waiter = self.waiting.popleft()
        self.in_flight = (item, waiter)
        self._hands.expect(item)
        generation = supervisor.generation
        self._loop.call_later(self._timeout, lambda: self._timed_out(item.input_id, generation))
        try:
            backend.send(item)
        except Exception as e:
            import traceback

            self._debug("backend.send failed:\n" + traceback.format_exc())
            self._hands.send_failed(item.input_id, "adapter error: %s" % e)

    def _timed_out(self, input_id: str, generation: int) -> None:
        if self.in_flight and self.in_flight[0].input_id == input_id and generation == self._supervisor.generation:
            self.in_flight[1].fail(OutcomeUnknownError(
                "the harness did not confirm the input within %g s; it may still be accepted: "
                "read the event file before retrying" % self._timeout))
            self.in_flight = None
            self.pump()

    def confirm(self, input_id: str, error: Optional[HarnessctlError]) -> bool:
        """The send in flight is accepted (error None) or failed: its command
        hears it.  False if `input_id` is not that send (any more)."""
        if not (self.in_flight and self.in_flight[0].input_id == input_id):
            return False
        waiter = self.in_flight[1]
        self.in_flight = None
        if error is None:
            waiter.ok(input_id)
        else:
            waiter.fail(error)
        return True

    def fail_waiting(self, error: HarnessctlError) -> None:
        while self.waiting:
            self.waiting.popleft()[1].fail(error)

    def close(self) -> None:
        """The runtime is stopping: no send is handed to the backend from now on."""
        self._closed = True

    def stop(self, reason: str) -> None:
        """The runtime stops: the send in flight has an unknown outcome, the waiting ones can go again."""
        if self.in_flight:
            self.in_flight[1].fail(OutcomeUnknownError("the runtime stopped (%s) while confirming the input" % reason))
        self.fail_waiting(UnavailableError("the runtime stopped (%s); send again" % reason))
