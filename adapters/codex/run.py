"""One codex turn as harnessctl keeps it: a run, what codex said of it so far
(usage, output, error, its final turn) and the steers still on their way.
turns.py makes them; items.py and asking.py read and fill them."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set


class Run:
    """One codex turn = one harnessctl run."""

    def __init__(self, run_id: str, turn_id: str, input_ids: List[str]) -> None:
        self.run_id = run_id
        self.turn_id = turn_id
        self.input_ids = list(input_ids)
        self.usage: Optional[Dict[str, int]] = None
        self.output = ""
        self.client_ids: Set[str] = set()  # our input ids codex showed as userMessage items
        self.error: Optional[Dict[str, Any]] = None  # the last `error` notification's TurnError
        self.steerable = True  # False once codex said its turn takes no steer (review / compact)
        self.final: Optional[Dict[str, Any]] = None  # turn/completed's turn, once seen
        self.steering = 0  # turn/steer requests in flight for this turn
        self.interrupting = False
