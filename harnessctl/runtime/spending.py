"""What a live conversation has spent, held against its budget (budget.py):
the finished runs' totals come from the event file, the open runs' from
their latest `usage` lines.  A send is refused once the budget is spent, and
a run that spends it is interrupted at once, like a cancel, and ends `failed`.
Kept by the runtime, on its loop thread; the binding it holds the
spending against is the runtime's, given to each call."""

from __future__ import annotations

from ..binding import changed
from ..checks import budget
from ..errors import HarnessctlError, UsageError
from ..eventfile.state import spent
from ..store import registry
from ..store.bindingfile import write_binding

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Tuple

    from ..eventfile.state import Conversation
    from ..store.address import Address


class Spending:
    def __init__(self, conv: Conversation, addr: Address, debug: Callable[[str], None]) -> None:
        """`addr` is where a changed limit is recorded (the sidecar's binding)."""
        self._conv = conv
        self._addr = addr
        self._debug = debug
        self.run_tokens: Dict[str, int] = {}  # open run -> the tokens its latest `usage` line says it spent
        self.over_budget: Dict[str, str] = {}  # run the budget interrupted -> why

    def running_tokens(self) -> int:
        open_runs = self._conv.open_runs
        return sum(tokens for run_id, tokens in self.run_tokens.items() if run_id in open_runs)

    def spent(self) -> Tuple[int, Optional[float]]:
        """(tokens, cost): the finished runs' from the file, plus the open runs' usage so far."""
        conv = self._conv
        return conv.spent_tokens + self.running_tokens(), conv.spent_cost

    def rebind(self, binding: Dict[str, Any], wanted: Dict[str, Any]) -> Dict[str, Any]:
        """The binding in force once a send gives limits that differ from the
        bound ones: recorded like any binding, then in force (that is how a
        spent budget is raised).  `binding` itself when nothing changes."""
        limits = changed(binding, wanted)
        if not limits:
            return binding
        binding = dict(binding, **limits)
        if "max_cost_usd" in limits:
            budget.check_cost_reported(registry.manifest(binding["adapter"]), binding.get("agent"))
        try:
            write_binding(self._addr, binding)
        except (OSError, HarnessctlError) as e:
            raise HarnessctlError("could not record the new limit (%s); nothing was sent" % e) from None
        return binding

    def check(self, binding: Dict[str, Any]) -> None:
        """Refuse a send once the budget is spent."""
        why = budget.exceeded(binding, *self.spent())
        if why is not None:
            raise UsageError("the budget is spent: %s; raise it on a send (--max-tokens N, --max-cost-usd X) "
                             "to go on with this conversation" % why)

    def usage_seen(self, run_id: Optional[str], usage: Dict[str, Any], binding: Dict[str, Any]) -> bool:
        """A `usage` line of a run (its tokens so far): True when it spent the
        budget, and the run must be interrupted at once, like a cancel (it
        ends `failed`)."""
        if run_id is None or run_id not in self._conv.open_runs:
            return False
        self.run_tokens[run_id] = spent(usage)
        why = budget.exceeded(binding, *self.spent())
        if why is None or run_id in self.over_budget:
            return False
        self.over_budget[run_id] = why
        self._debug("budget: %s; interrupting run %s" % (why, run_id))
        return True

    def run_ended(self, run_id: Optional[str]) -> Optional[str]:
        """A run's result is being written: forget its running count (the result
        counts now); why the budget ended it, if it did."""
        if run_id is None:
            return None
        self.run_tokens.pop(run_id, None)
        return self.over_budget.pop(run_id, None)
