"""Answering the harness's requests (docs/PROTOCOL.md section 8): a `reply`
command's answer, checked by answers.py, or the bound policy's (policy.py).
Either is in the event file before the harness hears it: `reply` exits 0
only once its answer is on disk.  Kept by the runtime, on its loop thread."""

from __future__ import annotations

from . import answers, policy
from .errors import HarnessctlError, StateError
from .supervisor import READY

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .runtime import Runtime


class Replies:
    def __init__(self, runtime: Runtime) -> None:
        """`runtime` provides conv, binding, addr, supervisor, host, writer,
        loop and debug."""
        self._runtime = runtime

    def reply(self, request_id: str, answer: str) -> None:
        runtime = self._runtime
        request = runtime.conv.pending.get(request_id)
        if request is None:
            state = runtime.conv.closed_requests.get(request_id)
            if state:
                raise StateError("%s is already %s" % (request_id, state))
            raise StateError("unknown request id %s" % request_id)
        value = answers.validate(request, answer)
        backend = runtime.supervisor.backend
        if runtime.supervisor.state != READY or backend is None:
            raise StateError("%s can no longer be answered: the harness is gone" % request_id)
        try:  # on disk first: `reply` exits 0 only once its answer is in the file (README)
            runtime.writer.write(dict(request, state="replied", answer=value, by="reply"), now=True)
        except OSError as e:
            raise HarnessctlError("could not record the answer in the event file (%s); the harness was not "
                                  "answered: reply again once the file can be written" % e.strerror) from None
        backend.answer(runtime.host.take_token(request_id), answers.for_agent(request, value))

    def decide(self, request: Dict[str, Any]) -> Optional[Tuple[str, Dict[str, str]]]:
        """The bound policy's answer to a permission request (policy.py), or
        None: it waits for `reply`."""
        addr = self._runtime.addr
        return policy.decide(self._runtime.binding, request, (addr.path, addr.sidecar))

    def by_policy(self, request: Dict[str, Any], value: str, why: Dict[str, str]) -> None:
        """A permission request the policy decided was just written: its answer
        is fsynced first (with the request), as a reply's is; the harness hears
        it once the adapter has returned from asking (a timer due at once:
        this loop pass)."""
        runtime = self._runtime
        request_id = request["request_id"]
        try:
            runtime.writer.write(dict(request, state="replied", answer=value, **why), now=True)
        except OSError as e:
            runtime.debug("%s stays pending: its answer by the policy could not be written (%s)"
                          % (request_id, e.strerror))
            return
        runtime.loop.call_later(0, lambda: self._answer_decided(request_id, answers.for_agent(request, value)))

    def _answer_decided(self, request_id: str, value: Any) -> None:
        runtime = self._runtime
        backend = runtime.supervisor.backend
        if runtime.host.is_asking(request_id) and runtime.supervisor.state == READY and backend is not None:
            backend.answer(runtime.host.take_token(request_id), value)
