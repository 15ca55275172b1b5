"""The sends a runtime holds: those waiting, in order, and the one handed to
the backend and not yet confirmed.  One at a time, so that the harness
confirms (accepts or fails) each input before it is given the next; a send
not confirmed within HARNESSCTL_TIMEOUT exits with an unknown outcome.  A
harness that takes the answer's schema on its command line
(Backend.SCHEMA_PER_PROCESS) is restarted between runs for a send that asks
for another.  Kept by the runtime, on its loop thread."""

from __future__ import annotations

from collections import deque

from . import registry, structured
from .errors import OutcomeUnknownError, UnavailableError, UsageError
from .supervisor import READY, STOPPED

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Deque, Dict, Optional, Tuple

    from .runtime import Runtime

    from .backend import Input
    from .errors import HarnessctlError
    from .server import Waiter


class Sends:
    def __init__(self, runtime: Runtime) -> None:
        """`runtime` provides conv, binding, addr, supervisor, host, cancel,
        loop, timeout, stopping, start_harness and debug."""
        self._runtime = runtime
        self.waiting: Deque[Tuple[Input, Waiter]] = deque()
        self.in_flight: Optional[Tuple[Input, Waiter]] = None

    def pending(self) -> bool:
        return bool(self.waiting or self.in_flight)

    def next_schema(self) -> Optional[Dict[str, Any]]:
        """The schema of the send the harness will be given next."""
        return self.waiting[0][0].schema if self.waiting else None

    def schema(self, field: str) -> Optional[Dict[str, Any]]:
        """A send's schema (structured.py), refused where the harness cannot
        promise it, and while a run is going or about to start: that run's
        answer is asked for already, and this send would only steer it."""
        schema = structured.from_field(field)
        if schema is None:
            return None
        runtime = self._runtime
        structured.check_claimed(registry.manifest(runtime.binding["adapter"]), runtime.binding.get("agent"))
        if runtime.conv.is_busy() or self.pending():
            raise UsageError("--schema: a run is going on %s and its answer cannot change schema: wait for it "
                             "(harnessctl wait FILE) and send again, or send without --schema to steer it"
                             % runtime.addr.path)
        return schema

    def add(self, item: Input, waiter: Waiter) -> None:
        self.waiting.append((item, waiter))
        self.pump()

    def pump(self) -> None:
        """Hand the next waiting send to the backend: one at a time."""
        runtime = self._runtime
        if self.in_flight or not self.waiting or runtime.stopping:
            return
        supervisor = runtime.supervisor
        if supervisor.state == STOPPED:
            runtime.start_harness()
            return
        backend = supervisor.backend
        if supervisor.state != READY or backend is None:
            return
        schema = self.waiting[0][0].schema
        if backend.SCHEMA_PER_PROCESS and schema != backend.config.schema and not runtime.conv.is_busy():
            runtime.debug("restarting the harness: the next input asks for %s"
                          % ("another schema" if schema else "none"))
            supervisor.stop()
            runtime.start_harness()
            return
        item, waiter = self.waiting.popleft()
        self.in_flight = (item, waiter)
        runtime.host.expect(item)
        generation = supervisor.generation
        runtime.loop.call_later(runtime.timeout, lambda: self._timed_out(item.input_id, generation))
        try:
            backend.send(item)
        except Exception as e:
            import traceback

            runtime.debug("backend.send failed:\n" + traceback.format_exc())
            runtime.host.send_failed(item.input_id, "adapter error: %s" % e)

    def _timed_out(self, input_id: str, generation: int) -> None:
        runtime = self._runtime
        if self.in_flight and self.in_flight[0].input_id == input_id and generation == runtime.supervisor.generation:
            self.in_flight[1].fail(OutcomeUnknownError(
                "the harness did not confirm the input within %g s; it may still be accepted: "
                "read the event file before retrying" % runtime.timeout))
            self.in_flight = None
            self.pump()

    def finish(self, input_id: str, error: Optional[HarnessctlError], interrupt: bool = False) -> None:
        """The send in flight is accepted (error None) or failed; `interrupt`:
        the harness may have its input although it failed here."""
        cancel = self._runtime.cancel
        if self.in_flight and self.in_flight[0].input_id == input_id:
            waiter = self.in_flight[1]
            self.in_flight = None
            if error is None:
                waiter.ok(input_id)
            else:
                waiter.fail(error)
            interrupt = cancel.confirmed(error is None) or interrupt
        if interrupt:
            cancel.interrupt(only_if_busy=False)
        self.pump()

    def fail_waiting(self, error: HarnessctlError) -> None:
        while self.waiting:
            self.waiting.popleft()[1].fail(error)

    def stop(self, reason: str) -> None:
        """The runtime stops: the send in flight has an unknown outcome, the waiting ones can go again."""
        if self.in_flight:
            self.in_flight[1].fail(OutcomeUnknownError("the runtime stopped (%s) while confirming the input" % reason))
        self.fail_waiting(UnavailableError("the runtime stopped (%s); send again" % reason))
