"""How the runtime runs the hooks (hooks.py) a file is bound to.

The runtime runs hooks fire-and-forget (docs/PROTOCOL-POLICY.md, section 19): its
loop thread only hands the event line over; a worker thread per running hook
starts it in a session of its own, writes the line to its stdin and waits for
it, at most HARNESSCTL_HOOK_TIMEOUT seconds, after which its whole process
group is killed.  At most RUNNING run at once, QUEUED more wait, and beyond
that a hook is dropped.  What goes wrong (killed, exit code, no such command,
dropped) is a `diagnostic` in the event file, written on the loop thread
(`loop.post`); a hook's stdout goes to /dev/null and its stderr to the runtime
log.  The event line reaches the hook on stdin only: it is the agent's text,
and never lands in the hook's argv or environment."""

from __future__ import annotations

import threading
from collections import deque

from ..checks.hooks import argv
from ..errors import UsageError
from ..fields import HOOKS

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, Dict, Iterable, Optional, Set, Tuple

    from ..store.address import Address
    from .loop import Loop

RUNNING = 4  # hooks running at once
QUEUED = 64  # hooks waiting for one of those; beyond that one is dropped
TIMEOUT = 30.0  # seconds a hook may run (HARNESSCTL_HOOK_TIMEOUT)


class Job:
    """One hook to run: which (`on_request`/`on_result`), for which event."""

    __slots__ = ("key", "event", "line")

    def __init__(self, key: str, event: Dict[str, Any], line: bytes) -> None:
        self.key = key
        self.event = event  # as written: type, ts, seq, ...
        self.line = line  # exactly the line in the file, with its newline

    @property
    def name(self) -> str:
        return next(field.flag for field in HOOKS if field.name == self.key)

    def about(self) -> str:
        """Which event the hook ran for, in words."""
        event = self.event
        if event["type"] == "request":
            return "request %s (seq %s)" % (event.get("request_id"), event.get("seq"))
        return "the %s result of run %s (seq %s)" % (event.get("status"), event.get("run_id"), event.get("seq"))


class Hooks:
    """The runtime's hooks.  Every method but the workers' runs on the loop
    thread; the lock guards what the workers share with it."""

    def __init__(self, binding: Dict[str, Any], env: Dict[str, str], addr: Address, stderr_fd: int, loop: Loop,
                 diagnostic: Callable[..., None], debug: Callable[[str], None]) -> None:
        """`binding` gives the hooks and their cwd (a later send cannot change
        those: address.check_binding); a hook's stderr goes to `stderr_fd`
        (the runtime log); `diagnostic(message, **fields)` writes what went
        wrong into the event file."""
        from .. import knobs

        self._binding = binding
        self._env = env
        self._addr = addr
        self._stderr_fd = stderr_fd
        self._loop = loop
        self._note = diagnostic
        self._debug = debug
        try:
            self.timeout = knobs.seconds(env, "HARNESSCTL_HOOK_TIMEOUT", TIMEOUT)
        except UsageError:  # refused by the send that spawned us (spawn.py); never here
            self.timeout = TIMEOUT
        self._lock = threading.Lock()
        self._queue: Deque[Job] = deque()
        self._running = 0  # worker threads
        self._children: Dict[int, Any] = {}  # pid -> Popen of the hooks running now
        self._parked: Set[str] = set()  # request ids the policy left for a reply, until their line is written
        self._armed = False  # recovery is over: the events written from now on are this runtime's own
        self._stopped = False

    # -- the loop thread ----------------------------------------------------------------------------

    def arm(self) -> None:
        """What the runtime writes from now on runs hooks (not the results and
        expiries with which it closed what a lost predecessor left open)."""
        self._armed = True

    def parked(self, request_id: str) -> None:
        """`request_id` was written pending and no rule answered it: its line runs --on-request."""
        if self._binding.get("on_request"):
            self._parked.add(request_id)

    def written(self, events: Iterable[Dict[str, Any]]) -> None:
        """The critical events just appended to the file, as written."""
        for event in events:
            if event["type"] == "request" and event.get("request_id") in self._parked:
                self._parked.discard(event["request_id"])
                if event.get("state") == "pending":
                    self._submit("on_request", event)
            elif event["type"] == "result":
                self._submit("on_result", event)

    def busy(self) -> bool:
        """Hooks are running or waiting: the runtime does not idle out meanwhile."""
        with self._lock:
            return bool(self._running or self._queue)

    def stop(self) -> None:
        """The runtime stops: the waiting hooks are dropped, the running ones
        killed (their process groups), and none is started from now on."""
        with self._lock:
            self._stopped = True
            dropped = len(self._queue)
            self._queue.clear()
            children = list(self._children.values())
        from ..store.pidfile import kill_group

        for child in children:
            kill_group(child.pid)
        if children or dropped:
            self._debug("the runtime stops: %d running hooks killed, %d waiting ones dropped"
                                % (len(children), dropped))

    def _submit(self, key: str, event: Dict[str, Any]) -> None:
        if not self._armed or self._stopped or not self._binding.get(key):
            return
        from ..eventfile.eventlog import encode

        job = Job(key, event, encode(event))
        with self._lock:
            start = self._running < RUNNING
            if start:
                self._running += 1
            elif len(self._queue) < QUEUED:
                self._queue.append(job)
                return
        if not start:
            self._diagnostic(job, "was dropped: %d hooks are running and %d waiting" % (RUNNING, QUEUED))
            return
        try:
            threading.Thread(target=self._work, args=(job,), daemon=True).start()
        except threading.ThreadError as e:  # no thread (ulimit -u)
            with self._lock:
                self._running -= 1
            self._diagnostic(job, "could not be started: %s" % e, error=str(e))

    def _diagnostic(self, job: Job, what: str, **fields: Any) -> None:
        """A hook that went wrong, in the event file (and the runtime log)."""
        message = "the %s hook for %s %s" % (job.name, job.about(), what)
        self._debug(message)
        event = job.event
        ids = {"request_id": event["request_id"]} if event["type"] == "request" else {}
        self._note(message, run_id=event.get("run_id"), hook=job.key, event_seq=event.get("seq"),
                   **dict(ids, **fields))

    # -- the workers --------------------------------------------------------------------------------

    def _work(self, job: Optional[Job]) -> None:
        """Run `job`, then those waiting, one after the other; each outcome is
        posted to the loop once this worker's count is right (an idle check
        that follows sees it)."""
        while job is not None:
            try:
                outcome = self._run(job)
            except Exception as e:  # a bug here must not leave the count up for good
                outcome = ("could not be run: %s" % e, {"error": str(e)})
            with self._lock:
                done, job = job, (self._queue.popleft() if self._queue and not self._stopped else None)
                if job is None:
                    self._running -= 1
            self._report(done, outcome)

    def _report(self, job: Job, outcome: Optional[Tuple[str, Dict[str, Any]]]) -> None:
        if outcome is None:
            self._loop.post(lambda: None)  # wakes the loop for its idle check
        else:
            what, fields = outcome
            self._loop.post(lambda: None if self._stopped else self._diagnostic(job, what, **fields))

    def _run(self, job: Job) -> Optional[Tuple[str, Dict[str, Any]]]:
        """Run one hook to its end; None when it succeeded (or the runtime
        stopped), else what went wrong and the fields that say it."""
        import subprocess

        from ..store.pidfile import kill_group
        from .proc import preparer

        prepare = preparer(session=True)  # its own session: its process group is killed at its timeout

        command = self._binding[job.key]
        words = argv(command, job.name)
        env = dict(self._env, HARNESSCTL_FILE=self._addr.path, HARNESSCTL_EVENT=job.event["type"])
        try:
            child = subprocess.Popen(words, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr_fd,
                                     cwd=self._binding["cwd"], env=env, close_fds=True, preexec_fn=prepare)
        except OSError as e:
            where = e.filename if e.filename is not None else words[0]  # the cwd, when that is what is missing
            return ("could not be started: %s: %s (see %s)" % (where, e.strerror, self._addr.runtime_log),
                    {"error": e.strerror})
        with self._lock:
            if self._stopped:
                kill_group(child.pid)
            else:
                self._children[child.pid] = child
        self._debug("the %s hook for %s started (%s, pid %d)" % (job.name, job.about(), words[0], child.pid))
        try:
            try:
                child.communicate(job.line, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                kill_group(child.pid)
                child.wait()
                return ("was killed after %g s (HARNESSCTL_HOOK_TIMEOUT)%s" % (self.timeout, self._stderr_at()),
                        {"timeout": self.timeout})
        finally:
            with self._lock:
                self._children.pop(child.pid, None)
        if self._stopped:
            return None
        if child.returncode != 0:
            code = child.returncode
            what = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
            return (what + self._stderr_at(), {"exit_code": code})
        self._debug("the %s hook for %s succeeded" % (job.name, job.about()))
        return None

    def _stderr_at(self) -> str:
        """Where a hook that ran and went wrong said why: the user reads the
        diagnostic in the event file, and its stderr is only in the runtime log."""
        return "; its stderr went to %s" % self._addr.runtime_log

