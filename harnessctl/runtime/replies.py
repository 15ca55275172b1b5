"""Answering the harness's requests (docs/PROTOCOL-COMMANDS.md section 8): a `reply`
command's answer, checked by answers.py, or the bound policy's (policy.py).
Either is in the event file before the harness hears it: `reply` exits 0
only once its answer is on disk.  Kept by the runtime, on its loop thread."""

from __future__ import annotations

from ..checks import answers, policy
from ..errors import HarnessctlError, StateError
from .supervisor import READY

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Protocol, Tuple

    from ..eventfile.state import Conversation
    from .loop import Loop
    from .supervisor import Supervisor
    from .writer import EventWriter

    class Asking(Protocol):
        """The harness's tokens of the requests it is asking (host.py)."""

        def take_token(self, request_id: str) -> Any: ...

        def is_asking(self, request_id: str) -> bool: ...


class Replies:
    def __init__(self, conv: Conversation, writer: EventWriter, supervisor: Supervisor, asking: Asking, loop: Loop,
                 own: Tuple[str, ...], debug: Callable[[str], None]) -> None:
        """`own`: the session's own files (the event file, its sidecar), which no rule may allow to change."""
        self._conv = conv
        self._writer = writer
        self._supervisor = supervisor
        self._asking = asking
        self._loop = loop
        self._own = own
        self._debug = debug

    def reply(self, request_id: str, answer: str) -> None:
        request = self._conv.pending.get(request_id)
        if request is None:
            state = self._conv.closed_requests.get(request_id)
            if state:
                raise StateError("%s is already %s" % (request_id, state))
            raise StateError("unknown request id %s" % request_id)
        value = answers.validate(request, answer)
        backend = self._supervisor.backend
        if self._supervisor.state != READY or backend is None:
            raise StateError("%s can no longer be answered: the harness is gone" % request_id)
        try:  # on disk first: `reply` exits 0 only once its answer is in the file (README)
            self._writer.write(dict(request, state="replied", answer=value, by="reply"), now=True)
        except OSError as e:
            raise HarnessctlError("could not record the answer in the event file (%s); the harness was not "
                                  "answered: reply again once the file can be written" % e.strerror) from None
        backend.answer(self._asking.take_token(request_id), answers.for_agent(request, value))

    def decide(self, binding: Dict[str, Any], request: Dict[str, Any]) -> Optional[Tuple[str, Dict[str, str]]]:
        """The bound policy's answer to a permission request (policy.py), or
        None: it parks for a `reply`.  A path with a NUL names no file the
        rules could look at, so a request naming one parks (the agent chose
        the bytes; a person judges); so does one the policy fails to judge for
        any other reason in its input."""
        paths = request.get("paths")
        if isinstance(paths, list) and any("\x00" in str(p) for p in paths):
            self._debug("%s parks: a path it names holds a NUL" % request["request_id"])
            return None
        try:
            return policy.decide(binding, request, self._own)
        except (ValueError, TypeError, OSError, RecursionError) as e:
            self._debug("%s parks: the policy could not judge it (%s: %s)" % (request["request_id"],
                                                                             type(e).__name__, e))
            return None

    def by_policy(self, request: Dict[str, Any], value: str, why: Dict[str, str]) -> None:
        """A permission request the policy decided was just written: its answer
        is fsynced first (with the request), as a reply's is; the harness hears
        it once the adapter has returned from asking (a timer due at once:
        this loop pass)."""
        request_id = request["request_id"]
        try:
            self._writer.write(dict(request, state="replied", answer=value, **why), now=True)
        except OSError as e:
            self._debug("%s stays pending: its answer by the policy could not be written (%s)"
                        % (request_id, e.strerror))
            return
        self._loop.call_later(0, lambda: self._answer_decided(request_id, answers.for_agent(request, value)))

    def _answer_decided(self, request_id: str, value: Any) -> None:
        backend = self._supervisor.backend
        if self._asking.is_asking(request_id) and self._supervisor.state == READY and backend is not None:
            backend.answer(self._asking.take_token(request_id), value)
