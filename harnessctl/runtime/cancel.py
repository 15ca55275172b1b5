"""`cancel` in the runtime: the harness is asked to end the run
(backend.interrupt), and one that has not within the grace period
(HARNESSCTL_CANCEL_GRACE) is stopped while the runtime ends what is open
`cancelled` itself, so that a run never stays `cancelling` for good.  A send
still being confirmed when the cancel comes is interrupted once accepted.
The budget cancels the same way (spending.py).  Kept by the runtime, on its
loop thread."""

from __future__ import annotations

from ..checks import budget
from .supervisor import READY

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    from .loop import Loop
    from .supervisor import Supervisor

GRACE = 15.0  # seconds a harness gets to end a cancelled run before it is stopped (HARNESSCTL_CANCEL_GRACE)


class Cancel:
    def __init__(self, running: Callable[[], bool], supervisor: Supervisor, loop: Loop, grace: float,
                 overdue: Callable[[str], None]) -> None:
        """`running` says whether the harness has work (sends.py: an input the
        runtime holds for the next run is none); `overdue` is the runtime's:
        the harness ignored the cancel for the grace period (the message says
        so), and must be stopped."""
        self._running = running
        self._supervisor = supervisor
        self._loop = loop
        self._overdue = overdue
        self.grace = grace
        self.cancelling = False
        self.after_accept = False  # the send in flight at the cancel is interrupted once accepted
        self._token: object = None  # the cancel whose grace period is running

    def request(self, sending: bool) -> None:
        """`sending`: a send is in flight (being confirmed)."""
        if not (self._running() or sending):
            return
        if not self.cancelling:  # a second cancel does not put the deadline off
            token = self._token = object()
            self._loop.call_later(self.grace, lambda: self._grace_over(token))
        self.cancelling = True
        if sending:
            self.after_accept = True
        self.interrupt()

    def interrupt(self, only_if_busy: bool = True) -> None:
        supervisor = self._supervisor
        backend = supervisor.backend
        if supervisor.state == READY and backend is not None and (self._running() or not only_if_busy):
            backend.interrupt()

    def confirmed(self, accepted: bool) -> bool:
        """The send in flight was accepted (or failed): True if it must hear a
        cancel that came meanwhile."""
        after, self.after_accept = self.after_accept, False
        return after and accepted

    def settled(self) -> None:
        """A run ended: a cancel in progress is over once nothing is open."""
        if not self._running():
            self.over()

    def over(self) -> None:
        """The harness is gone and the runtime ended what was open: no cancel is in progress."""
        self.cancelling = False
        self._token = None

    def _grace_over(self, token: object) -> None:
        """The harness ignored the cancel for the grace period: the runtime
        stops it and ends what is open `cancelled` (the caller asked for that),
        so a run never stays `cancelling` for good and the runtime can idle
        out.  The next send starts the harness again, resuming its conversation."""
        if token is not self._token or not self.cancelling or not self._running():
            return
        self._overdue("the harness did not end the run within %g s of the cancel: it was stopped" % self.grace)


def cancelled(result: Dict[str, Any], why: Optional[str]) -> Dict[str, Any]:
    """A result the cancel grace ended: `cancelled`, or `failed` when the
    budget asked for the cancel (`why` says why)."""
    if why is None:
        return dict(result, status="cancelled")
    return dict(result, status="failed", error="%s: the run was interrupted" % why, error_class=budget.CLASS)
