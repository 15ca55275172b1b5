"""The runtime's one thread: jobs posted from other threads, and timers.

Everything that changes the runtime's state runs here, one job at a time:
socket handler threads and harness reader threads only post jobs, so neither
the runtime nor an adapter needs a lock of its own.  The loop sleeps in
`queue.get` until a job or the next timer is due, so an idle runtime costs
no CPU.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import time

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional, Tuple

LONGEST_SLEEP = 3600.0


class Loop:
    def __init__(self, on_error: Callable[[str], None]) -> None:
        """`on_error(traceback)` hears of a job that raised: a bug in one job
        (adapter code, mostly) is logged and never stops the loop."""
        self._jobs: "queue.Queue[Tuple[Callable[[], None], Any]]" = queue.Queue()
        self._timers: List[Tuple[float, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._on_error = on_error

    def post(self, fn: Callable[[], None], owner: Any = None) -> None:
        """Run `fn` on the loop thread (safe from any thread).  `owner` is handed
        back by `drain` if the job never ran (a command's reply slot)."""
        self._jobs.put((fn, owner))

    def call_later(self, seconds: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (time.monotonic() + seconds, next(self._ids), fn))

    def run_once(self, deadline: Optional[float]) -> None:
        """Wait for the next job, the next timer or `deadline` (monotonic), then
        run the job and every timer that is due."""
        due = self._timers[0][0] if self._timers else None
        if deadline is not None:
            due = deadline if due is None else min(due, deadline)
        timeout = LONGEST_SLEEP if due is None else max(0.0, due - time.monotonic())
        try:
            fn, _ = self._jobs.get(timeout=timeout)
        except queue.Empty:
            pass
        else:
            self.guard(fn)
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            self.guard(heapq.heappop(self._timers)[2])

    def guard(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            import traceback

            self._on_error(traceback.format_exc())

    def drain(self) -> List[Any]:
        """Forget the jobs that have not run; the owners they were posted with."""
        owners = []
        while True:
            try:
                owners.append(self._jobs.get_nowait()[1])
            except queue.Empty:
                return [owner for owner in owners if owner is not None]
