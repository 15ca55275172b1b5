"""The sends a runtime holds: those waiting, in order, the one handed to
the backend and not yet confirmed, and those it holds back for the next run.
One at a time, so that the harness confirms (accepts or fails) each input
before it is given the next; a send not confirmed within HARNESSCTL_TIMEOUT
exits with an unknown outcome.  A harness that takes the answer's schema on
its command line (Backend.SCHEMA_PER_PROCESS) is restarted between runs for
a send that asks for another.

A `send --queue` (or `--interrupt`) while a run is going is held here, not
by the harness: it is accepted `queued` at once, and handed to the backend
only once no run is going, so that it starts a run of its own; until then
`cancel FILE INPUT_ID` can take it back, because the harness never saw it.
Kept by the runtime, on its loop thread."""

from __future__ import annotations

from collections import deque

from ..checks import structured
from ..errors import HarnessctlError, OutcomeUnknownError, StateError, UnavailableError, UsageError
from ..store import registry
from .server import Waiter
from .supervisor import READY, STOPPED

REVOKED = "revoked"  # the error_class of a held input taken back by `cancel FILE INPUT_ID`
REVOKED_WHY = "revoked by harnessctl cancel before it reached the harness"
DROPPED = "dropped"  # the error_class of a held input a `send --interrupt` dropped
DROPPED_WHY = "dropped by an --interrupt send (input %s) before it reached the harness"

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, Dict, List, Optional, Protocol, Set, Tuple

    from ..eventfile.state import Conversation
    from ..kit.backend import Input
    from .loop import Loop, Timer
    from .supervisor import Supervisor

    class Hands(Protocol):
        """Where a send handed to the backend is recorded (host.py): its text
        goes into `accepted`, and one the backend refused fails there."""

        def expect(self, item: Input, held: bool) -> None: ...

        def send_failed(self, input_id: str, message: str, unavailable: bool = False) -> None: ...

        def held(self, item: Input) -> None: ...

        def dropped(self, input_ids: List[str], status: str, error: Optional[str] = None,
                    error_class: Optional[str] = None) -> None: ...


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
        self._deadline: Optional[Timer] = None  # when the send in flight times out unless confirmed
        self.held: Deque[Input] = deque()  # accepted `queued`: each starts a run of its own
        self._handed: Set[str] = set()  # held inputs handed to the backend: their send heard already

    def pending(self) -> bool:
        return bool(self.waiting or self.in_flight or self.held)

    def held_ids(self) -> Set[str]:
        return {item.input_id for item in self.held}

    def run_going(self) -> bool:
        """Whether the harness has work: a run, a request, or an input it has
        (any open input but those held here)."""
        conv = self._conv
        if conv.open_runs or conv.pending:
            return True
        held = self.held_ids()
        return any(input_id not in held for input_id in conv.open_inputs)

    def next_schema(self) -> Optional[Dict[str, Any]]:
        """The schema of the send the harness will be given next."""
        following = self._next()
        return following[0].schema if following else None

    def schema(self, field: str, binding: Dict[str, Any], hold: bool = False) -> Optional[Dict[str, Any]]:
        """A send's schema (structured.py), refused where the harness cannot
        promise it, and while a run is going or about to start: that run's
        answer is asked for already, and this send would only steer it (one
        that is held, `hold`, starts a run of its own)."""
        schema = structured.from_field(field)
        if schema is None:
            return None
        structured.check_claimed(registry.manifest(binding["adapter"]), binding.get("agent"))
        if not hold and (self._conv.is_busy() or self.pending()):
            raise UsageError("--schema: a run is going on %s and its answer cannot change schema: send with "
                             "--queue (it starts the next run), or without --schema to steer it" % self._path)
        return schema

    def add(self, item: Input, waiter: Waiter, hold: bool = False) -> None:
        """`hold` (send --queue, --interrupt): never steer; while a run is going
        (or a send is on its way to one) the input is accepted `queued` and
        held for a run of its own."""
        if hold and (self.run_going() or self.pending()):
            try:
                self._hands.held(item)
            except OSError as e:
                waiter.fail(HarnessctlError("could not record the input in the event file (%s)" % e.strerror))
                return
            self.held.append(item)
            waiter.ok(item.input_id)
            return
        self.waiting.append((item, waiter))
        self.pump()

    def revoke(self, input_id: str) -> None:
        """`cancel FILE INPUT_ID`: take back an input no harness has seen (held
        here, or by an adapter whose harness cannot steer), or say why not."""
        item = next((i for i in self.held if i.input_id == input_id), None)
        backend = self._supervisor.backend
        if item is not None:
            self.held.remove(item)
        elif not (input_id in self._conv.open_inputs and backend is not None and backend.revoke(input_id)):
            raise StateError(self._refusal(input_id))
        self._hands.dropped([input_id], "cancelled", REVOKED_WHY, REVOKED)

    def _refusal(self, input_id: str) -> str:
        """Why `input_id` cannot be taken back: the harness has it, or it is not open."""
        if input_id not in self._conv.open_inputs:
            return "input %s is not open on %s: it is unknown or has ended" % (input_id, self._path)
        run_id = self._conv.open_inputs[input_id]
        return ("input %s was already delivered to the harness (%s): `harnessctl cancel FILE` cancels the run"
                % (input_id, "run %s" % run_id if run_id else "its run is not known yet"))

    def drop_held(self, interrupting: Optional[str] = None) -> None:
        """A cancel: every held input ends `cancelled`, in no run (as a harness's held ones do).
        Dropped by `send --interrupt` (`interrupting`: its input id), each says so: a
        result with no reason would read as a cancel nobody asked for."""
        items, self.held = list(self.held), deque()
        if items and interrupting is not None:
            self._hands.dropped([i.input_id for i in items], "cancelled", DROPPED_WHY % interrupting, DROPPED)
        elif items:
            self._hands.dropped([i.input_id for i in items], "cancelled")

    def fail_held(self, error: HarnessctlError) -> None:
        """The harness cannot start: the held inputs fail with its reason."""
        items, self.held = list(self.held), deque()
        for item in items:
            self._hands.dropped([item.input_id], "failed", str(error))

    def _next(self) -> Optional[Tuple[Input, Optional[Waiter]]]:
        """The send to hand the backend next: a waiting one, else a held one once no run is going."""
        if self.waiting:
            return self.waiting[0]
        if self.held and not self.run_going():
            return self.held[0], None
        return None

    def pump(self) -> None:
        """Hand the next send to the backend: one at a time."""
        following = self._next()
        if self.in_flight or following is None or self._closed:
            return
        supervisor = self._supervisor
        if supervisor.state == STOPPED:
            self._start_harness()
            return
        backend = supervisor.backend
        if supervisor.state != READY or backend is None:
            return
        schema = following[0].schema
        if backend.SCHEMA_PER_PROCESS and schema != backend.config.schema and not self.run_going():
            self._debug("restarting the harness: the next input asks for %s" % ("another schema" if schema else "none"))
            supervisor.stop()
            self._start_harness()
            return
        if following[1] is None:
            item, waiter = self.held.popleft(), Waiter()  # its send heard already: nobody reads this slot
            self._handed.add(item.input_id)
        else:
            item, waiter = self.waiting.popleft()
        self.in_flight = (item, waiter)
        self._hands.expect(item, item.input_id in self._handed)
        generation = supervisor.generation
        self._deadline = self._loop.call_later(self._timeout, lambda: self._timed_out(item.input_id, generation))
        try:
            backend.send(item)
        except Exception as e:
            import traceback

            self._debug("backend.send failed:\n" + traceback.format_exc())
            self._hands.send_failed(item.input_id, "adapter error: %s" % e)

    def _timed_out(self, input_id: str, generation: int) -> None:
        if self.in_flight and self.in_flight[0].input_id == input_id and generation == self._supervisor.generation:
            self.confirm(input_id, OutcomeUnknownError(
                "the harness did not confirm the input within %g s; it may still be accepted: "
                "read the event file before retrying" % self._timeout))
            self.pump()

    def confirm(self, input_id: str, error: Optional[HarnessctlError]) -> bool:
        """The send in flight is accepted (error None) or failed: its command
        hears it.  False if `input_id` is not that send (any more)."""
        if not (self.in_flight and self.in_flight[0].input_id == input_id):
            return False
        waiter = self.in_flight[1]
        self.in_flight = None
        if self._deadline is not None:  # confirmed in time: an idle runtime does not wake for it
            self._loop.cancel(self._deadline)
            self._deadline = None
        if input_id in self._handed:  # a held input: its `accepted` is written, so its end must be too
            self._handed.discard(input_id)
            if error is not None:
                self._hands.dropped([input_id], "failed", str(error))
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
        """The runtime stops: the send in flight has an unknown outcome, the
        waiting ones can go again (the held ones end with what is open)."""
        self.held.clear()
        if self.in_flight:
            self.in_flight[1].fail(OutcomeUnknownError("the runtime stopped (%s) while confirming the input" % reason))
        self.fail_waiting(UnavailableError("the runtime stopped (%s); send again" % reason))
