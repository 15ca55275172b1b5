"""`cancel` in the runtime: the harness is asked to end the run
(backend.interrupt), and one that has not within the grace period
(HARNESSCTL_CANCEL_GRACE) is stopped while the runtime ends what is open
`cancelled` itself, so that a run never stays `cancelling` for good.  A send
still being confirmed when the cancel comes is interrupted once accepted.
The budget cancels the same way (spending.py).  Kept by the runtime, on its
loop thread."""

from __future__ import annotations

from . import budget
from .state import close_open_work
from .supervisor import READY

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict

    from .runtime import Runtime

GRACE = 15.0  # seconds a harness gets to end a cancelled run before it is stopped (HARNESSCTL_CANCEL_GRACE)


class Cancel:
    def __init__(self, runtime: Runtime, grace: float) -> None:
        """`runtime` provides conv, sends, supervisor, host, writer, spending,
        loop and debug."""
        self._runtime = runtime
        self.grace = grace
        self.cancelling = False
        self.after_accept = False  # the send in flight at the cancel is interrupted once accepted
        self._token: object = None  # the cancel whose grace period is running

    def request(self) -> None:
        runtime = self._runtime
        if not (runtime.conv.is_busy() or runtime.sends.in_flight):
            return
        if not self.cancelling:  # a second cancel does not put the deadline off
            token = self._token = object()
            runtime.loop.call_later(self.grace, lambda: self._overdue(token))
        self.cancelling = True
        if runtime.sends.in_flight:
            self.after_accept = True
        self.interrupt()

    def interrupt(self, only_if_busy: bool = True) -> None:
        supervisor = self._runtime.supervisor
        backend = supervisor.backend
        if supervisor.state == READY and backend is not None and (self._runtime.conv.is_busy() or not only_if_busy):
            backend.interrupt()

    def confirmed(self, accepted: bool) -> bool:
        """The send in flight was accepted (or failed): True if it must hear a
        cancel that came meanwhile."""
        after, self.after_accept = self.after_accept, False
        return after and accepted

    def settled(self) -> None:
        """A run ended: a cancel in progress is over once nothing is open."""
        if not self._runtime.conv.is_busy():
            self.cancelling = False
            self._token = None

    def _overdue(self, token: object) -> None:
        """The harness ignored the cancel for the grace period: stop it and end
        what is open `cancelled` (the caller asked for that), so a run never stays
        `cancelling` for good and the runtime can idle out.  The next send starts
        the harness again, resuming its conversation."""
        runtime = self._runtime
        if token is not self._token or not self.cancelling or not runtime.conv.is_busy():
            return
        message = "the harness did not end the run within %g s of the cancel: it was stopped" % self.grace
        runtime.debug(message)
        runtime.supervisor.drop()
        if runtime.sends.in_flight:
            runtime.host.send_failed(runtime.sends.in_flight[0].input_id, message, unavailable=True)
        runtime.writer.write_all([self._cancelled(e) if e["type"] == "result" else e
                                  for e in close_open_work(runtime.conv, message)])
        runtime.host.forget_requests()
        self.cancelling = False
        runtime.sends.pump()

    def _cancelled(self, result: Dict[str, Any]) -> Dict[str, Any]:
        """A result the cancel grace ended: `cancelled`, or `failed` when the budget asked for the cancel."""
        why = self._runtime.spending.run_ended(result["run_id"])
        if why is None:
            return dict(result, status="cancelled")
        return dict(result, status="failed", error="%s: the run was interrupted" % why, error_class=budget.CLASS)
