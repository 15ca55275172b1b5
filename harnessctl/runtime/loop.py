"""The runtime's one thread: jobs posted from other threads, and timers.

Everything that changes the runtime's state runs here, one job at a time:
socket handler threads and harness reader threads only post jobs, so neither
the runtime nor an adapter needs a lock of its own.  The loop sleeps on a
condition until a job or the next timer is due, so an idle runtime costs
no CPU.

Commands (jobs posted with an owner, their reply slot) go first: a harness
that floods the loop with lines (twenty thousand messages, each fsynced)
must not make `status` or `cancel` wait behind all of them.  A long batch
of lines also lets them in between its lines (`run_commands`).  Jobs of
each kind keep their order.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections import deque

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, List, Optional, Tuple

    Job = Tuple[Callable[[], None], Any]
    Timer = Tuple[float, int, Callable[[], None]]

LONGEST_SLEEP = 3600.0


class Loop:
    def __init__(self, on_error: Callable[[str], None]) -> None:
        """`on_error(traceback)` hears of a job that raised: a bug in one job
        (adapter code, mostly) is logged and never stops the loop."""
        # reentrant: the SIGTERM handler posts from the loop thread itself, maybe while it holds the lock
        self._ready = threading.Condition(threading.RLock())
        self._commands: Deque[Job] = deque()  # jobs with an owner: served first
        self._jobs: Deque[Job] = deque()
        self._timers: List[Timer] = []
        self._ids = itertools.count()
        self._on_error = on_error

    def post(self, fn: Callable[[], None], owner: Any = None) -> None:
        """Run `fn` on the loop thread (safe from any thread).  `owner` is handed
        back by `drain` if the job never ran (a command's reply slot); a job
        with an owner is a command, and runs before the other jobs waiting."""
        with self._ready:
            (self._jobs if owner is None else self._commands).append((fn, owner))
            self._ready.notify()

    def call_later(self, seconds: float, fn: Callable[[], None]) -> Timer:
        """Run `fn` on the loop in `seconds`; the timer, for `cancel`."""
        timer = (time.monotonic() + seconds, next(self._ids), fn)
        heapq.heappush(self._timers, timer)
        return timer

    def cancel(self, timer: Timer) -> None:
        """Forget a timer not due yet: an idle loop must not wake for what no longer matters."""
        if timer in self._timers:
            self._timers.remove(timer)
            heapq.heapify(self._timers)

    def wake_on_signals(self) -> None:
        """Let a signal the kernel hands to another thread end the loop's
        sleep (call on the loop's thread, the main one).  Python runs a
        signal's handler on the main thread only, between two bytecodes,
        and an idle loop sleeps until its deadline: without this, a SIGTERM
        taken by the socket's thread would wait that long.  The C handler
        writes to a pipe (signal.set_wakeup_fd) whatever thread takes it;
        one thread reads the pipe and posts an empty job."""
        import signal

        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)

        def relay() -> None:
            while os.read(read, 512):
                self.post(lambda: None)

        threading.Thread(target=relay, name="signals", daemon=True).start()

    def run_once(self, deadline: Optional[float]) -> None:
        """Wait for the next job, the next timer or `deadline` (monotonic), then
        run the job and every timer that is due."""
        due = self._timers[0][0] if self._timers else None
        if deadline is not None:
            due = deadline if due is None else min(due, deadline)
        timeout = LONGEST_SLEEP if due is None else max(0.0, due - time.monotonic())
        with self._ready:
            if not (self._commands or self._jobs):
                self._ready.wait(timeout)
            job = self._take()
        if job is not None:
            self.guard(job[0])
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            self.guard(heapq.heappop(self._timers)[2])

    def guard(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            import traceback

            self._on_error(traceback.format_exc())

    def run_commands(self) -> None:
        """Run the commands waiting now, from inside a long job (between the
        lines of a harness's batch): they need not wait for its end."""
        while self._commands:  # a racy look is fine: a command posted just now runs after this job
            with self._ready:
                job = self._commands.popleft() if self._commands else None
            if job is not None:
                self.guard(job[0])

    def drain(self) -> List[Any]:
        """Forget the jobs that have not run; the owners they were posted with."""
        with self._ready:
            owners = [owner for _, owner in list(self._commands) + list(self._jobs) if owner is not None]
            self._commands.clear()
            self._jobs.clear()
        return owners

    def _take(self) -> Optional[Job]:
        """The next job, commands first (call with the lock held)."""
        if self._commands:
            return self._commands.popleft()
        if self._jobs:
            return self._jobs.popleft()
        return None
