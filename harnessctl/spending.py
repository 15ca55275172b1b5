"""What a live conversation has spent, held against its budget (budget.py):
the finished runs' totals come from the event file, the open runs' from
their latest `usage` lines.  A send is refused once the budget is spent, and
a run that spends it is interrupted at once, like a cancel, and ends `failed`.
Kept by the runtime, on its loop thread."""

from __future__ import annotations

from . import budget, registry
from .binding import write_binding
from .errors import HarnessctlError, UsageError
from .state import spent

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .runtime import Runtime


class Spending:
    def __init__(self, runtime: Runtime) -> None:
        """`runtime` provides conv, binding (replaced by `rebind`), addr, loop,
        cancel and debug."""
        self._runtime = runtime
        self.run_tokens: Dict[str, int] = {}  # open run -> the tokens its latest `usage` line says it spent
        self.over_budget: Dict[str, str] = {}  # run the budget interrupted -> why

    def running_tokens(self) -> int:
        open_runs = self._runtime.conv.open_runs
        return sum(tokens for run_id, tokens in self.run_tokens.items() if run_id in open_runs)

    def spent(self) -> Tuple[int, Optional[float]]:
        """(tokens, cost): the finished runs' from the file, plus the open runs' usage so far."""
        conv = self._runtime.conv
        return conv.spent_tokens + self.running_tokens(), conv.spent_cost

    def rebind(self, wanted: Dict[str, Any]) -> None:
        """A send gives limits that differ from the bound ones: recorded like
        any binding, then in force (that is how a spent budget is raised)."""
        runtime = self._runtime
        limits = budget.changes(runtime.binding, wanted)
        if not limits:
            return
        binding = dict(runtime.binding, **limits)
        if "max_cost_usd" in limits:
            budget.check_cost_reported(registry.manifest(binding["adapter"]), binding.get("agent"))
        try:
            write_binding(runtime.addr, binding)
        except (OSError, HarnessctlError) as e:
            raise HarnessctlError("could not record the new limit (%s); nothing was sent" % e) from None
        runtime.binding = binding

    def check(self) -> None:
        """Refuse a send once the budget is spent."""
        why = budget.exceeded(self._runtime.binding, *self.spent())
        if why is not None:
            raise UsageError("the budget is spent: %s; raise it on a send (--max-tokens N, --max-cost-usd X) "
                             "to go on with this conversation" % why)

    def usage_seen(self, run_id: Optional[str], usage: Dict[str, Any]) -> None:
        """A `usage` line of a run (its tokens so far): a run that spends the
        budget is interrupted at once, like a cancel, and ends `failed`."""
        runtime = self._runtime
        if run_id is None or run_id not in runtime.conv.open_runs:
            return
        self.run_tokens[run_id] = spent(usage)
        why = budget.exceeded(runtime.binding, *self.spent())
        if why is not None and run_id not in self.over_budget:
            self.over_budget[run_id] = why
            runtime.debug("budget: %s; interrupting run %s" % (why, run_id))
            # the adapter is reporting from inside one of its methods: it hears the cancel after it returned
            runtime.loop.call_later(0, lambda: runtime.cancel.request() if run_id in runtime.conv.open_runs else None)

    def run_ended(self, run_id: Optional[str]) -> Optional[str]:
        """A run's result is being written: forget its running count (the result
        counts now); why the budget ended it, if it did."""
        if run_id is None:
            return None
        self.run_tokens.pop(run_id, None)
        return self.over_budget.pop(run_id, None)
