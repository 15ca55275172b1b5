"""The runtime process: one per event file, detached, spawned by `send`.

It holds the sidecar's runtime lock and the event file's own lock for life
(locks.py), serves commands on a local socket, owns the adapter's backend (and
through it the harness), and is the only writer of the event file while it
lives.  `Runtime` is the command state machine; it ties together the parts
that each do one job:

* loop.py: the one thread everything runs on, and its timers;
* server.py: the socket, one thread per command, and their reply slots;
* writer.py: the critical writes, the disk-full queue, the logs;
* watches.py: the `wait` commands held open;
* supervisor.py: the harness, its backend and child process;
* host.py: what the adapter sees, its reports turned into events.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque

from . import (answers, budget, hookrunner, ipc, knobs, locks, pidfile, policy, private, proc, registry, snapshot,
               structured, trusted)
from .address import Address, check_binding, open_event_file, read_binding, write_binding
from .backend import Input
from .errors import HarnessctlError, OutcomeUnknownError, StateError, UnavailableError, UsageError
from .eventlog import EventLog, timestamp
from .host import AdapterHost, new_id
from .loop import Loop
from .runtimelog import RuntimeLog
from .server import CommandServer, Waiter, identity
from .state import LOST, close_open_work, spent, status_line, status_report
from .supervisor import READY, STARTING, STOPPED, Supervisor
from .watches import Watches
from .writer import EventWriter

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Deque, Dict, List, Optional, Tuple

# How often the runtime checks that its path still names its file and its
# socket is still its own: one that cannot be reached stops, so that the
# file's next writer does not wait for it.
REACHABLE_CHECK = 1.0
# Seconds a harness gets to end a cancelled run before it is stopped (HARNESSCTL_CANCEL_GRACE).
CANCEL_GRACE = 15.0


class Runtime:
    def __init__(self, addr: Address, binding: Dict[str, Any], env: Dict[str, str], log: RuntimeLog,
                 event_fd: int, sock: Any) -> None:
        """`event_fd` is the event file, locked (we are its one writer);
        `sock` our listening socket, so that commands queue from the start."""
        self.addr = addr
        self.binding = binding
        self.env = env
        self.log = log
        self.debug_enabled = env.get("HARNESSCTL_DEBUG") == "1"
        self.idle_timeout = knobs.seconds(env, "HARNESSCTL_IDLE_TIMEOUT", 60.0)
        self.timeout = knobs.seconds(env, "HARNESSCTL_TIMEOUT", 30.0)
        self.cancel_grace = knobs.seconds(env, "HARNESSCTL_CANCEL_GRACE", CANCEL_GRACE)
        self.loop = Loop(on_error=lambda trace: self.debug("error in job:\n" + trace))
        self.conv = snapshot.load(addr)[0]
        self.writer = EventWriter(EventLog(event_fd, addr.path, self.conv.seq), self.conv, self.loop.call_later,
                                  self.debug)
        self.server = CommandServer(sock, addr.socket, self.timeout, self._submit, self.debug)
        self.sidecar_identity = identity(addr.sidecar)
        self.watches = Watches(self.conv, self.writer, self.status)
        self.supervisor = Supervisor(self, self.loop, addr.sidecar, addr.harness_pid, log)
        self.host = AdapterHost(self)
        self.hooks = hookrunner.Hooks(self)
        self.waiting: Deque[Tuple[Input, Waiter]] = deque()
        self.in_flight: Optional[Tuple[Input, Waiter]] = None
        self.cancelling = False
        self.cancel_after_accept = False
        self.cancel_token: object = None  # the cancel whose grace period is running
        self.idle_since: Optional[float] = time.monotonic()
        self.stopping = False
        self.run_tokens: Dict[str, int] = {}  # open run -> the tokens its latest `usage` line says it spent
        self.over_budget: Dict[str, str] = {}  # run the budget interrupted -> why

    # -- the loop -------------------------------------------------------------

    def begin(self) -> None:
        """Recover what a lost predecessor left open, and start the harness at
        once: the send that spawned us is on its way.  (A harness that takes
        the answer's schema on its command line waits for that send, which
        may bring one: Backend.SCHEMA_PER_PROCESS.)"""
        pidfile.kill_leftover(self.addr.harness_pid)
        self.writer.write_all(close_open_work(self.conv, LOST))
        self._written()  # what a lost predecessor left open runs no hook: a live runtime's events do
        self.hooks.arm()
        warning = trusted.inside_workspace(self.addr.path, self.binding["cwd"]) if self.conv.seq == 0 else None
        if warning is not None:  # once, in a new file (the first send also says it on stderr)
            self.host.log("diagnostic", "warning", message=warning)
        self.loop.call_later(REACHABLE_CHECK, self._check_reachable)
        if not registry.backend_class(self.binding["adapter"]).SCHEMA_PER_PROCESS:
            self._start_harness()

    def serve(self) -> None:
        while not self.stopping:
            self.loop.run_once(None if self.idle_since is None else self.idle_since + self.idle_timeout)
            self._written()
            self._check_idle()

    def _written(self) -> None:
        """Tell the watches what this pass appended (also with none open: a
        wait may come next for a result just written)."""
        events = self.writer.take_written()
        if events:
            self.watches.written(events)
            self.hooks.written(events)

    def _is_idle(self) -> bool:
        return not (self.conv.is_busy() or self.waiting or self.in_flight or self.supervisor.state == STARTING
                    or self.writer.may_pass())

    def _check_idle(self) -> None:
        if not self._is_idle() or self.hooks.busy():  # an idle exit waits for the hooks (each has a timeout)
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = time.monotonic()
        elif time.monotonic() >= self.idle_since + self.idle_timeout:
            self.shutdown("idle")

    def _check_reachable(self) -> None:
        """Stop once no command can reach us for this file: the path names
        another file (or none), or the sidecar or our socket was removed or
        replaced.  The file's next writer is waiting for our lock."""
        if self.writer.events.replaced():
            self.shutdown("the event file was moved, removed or replaced")
        elif identity(self.addr.sidecar) != self.sidecar_identity or not self.server.is_ours():
            self.shutdown("the sidecar or the socket was removed or replaced")
        else:
            self.watches.drop_hung_up()
            self.loop.call_later(REACHABLE_CHECK, self._check_reachable)

    # -- commands -------------------------------------------------------------

    def _submit(self, request: List[str], waiter: Waiter) -> None:
        """From a handler thread: run the command on the loop thread."""
        self.loop.post(lambda: self._dispatch(request, waiter), owner=waiter)

    def _dispatch(self, request: List[str], waiter: Waiter) -> None:
        """Fields as ipc.py encodes them: send TEXT CWD MODEL ADAPTER AGENT MODE RULES SCHEMA ON_REQUEST
        ON_RESULT MAX_TOKENS MAX_COST_USD | status | cancel |
        reply ID ANSWER |
        wait INPUT_ID (empty: the conversation)."""
        op = request[0]
        if self.writer.events.replaced():
            waiter.retry()  # a new runtime serves the file now at the path (or refuses a foreign one)
            self.shutdown("the event file was removed or replaced")
            return
        try:
            if op == "send" and len(request) == 13:
                wanted = {"cwd": request[2] or None, "model": request[3] or None, "adapter": request[4] or None,
                          "agent": request[5] or None, "mode": request[6] or None,
                          "rules": policy.from_field(request[7]), "on_request": request[9] or None,
                          "on_result": request[10] or None, "max_tokens": int(request[11]) if request[11] else None,
                          "max_cost_usd": float(request[12]) if request[12] else None}
                check_binding(self.binding, wanted)
                item = Input(new_id(), request[1], self._schema(request[8]))
                self._rebind(budget.changes(self.binding, wanted))
                why = budget.exceeded(self.binding, *self.spent())
                if why is not None:
                    raise UsageError("the budget is spent: %s; raise it on a send (--max-tokens N, --max-cost-usd X) "
                                     "to go on with this conversation" % why)
                self.waiting.append((item, waiter))
                self._pump()
            elif op == "status":
                waiter.ok(status_line(self.status()))
            elif op == "cancel":
                self._cancel()
                waiter.ok()
            elif op == "reply" and len(request) == 3:
                self._reply(request[1], request[2])
                waiter.ok()
            elif op == "wait" and len(request) == 2:
                self.watches.add(request[1] or None, waiter)
            else:
                waiter.fail(HarnessctlError("malformed request %r" % op))
        except HarnessctlError as e:
            waiter.fail(e)
        except Exception as e:
            import traceback

            self.debug("error handling %s:\n%s" % (op, traceback.format_exc()))
            waiter.fail(HarnessctlError("internal error in the runtime: %s" % e))

    def _rebind(self, limits: Dict[str, Any]) -> None:
        """A send changed the bound limits: recorded like any binding, then in force."""
        if not limits:
            return
        binding = dict(self.binding, **limits)
        if "max_cost_usd" in limits:
            budget.check_cost_reported(registry.manifest(binding["adapter"]), binding.get("agent"))
        try:
            write_binding(self.addr, binding)
        except (OSError, HarnessctlError) as e:
            raise HarnessctlError("could not record the new limit (%s); nothing was sent" % e) from None
        self.binding = binding

    def _schema(self, field: str) -> Optional[Dict[str, Any]]:
        """A send's schema (structured.py), refused where the harness cannot
        promise it, and while a run is going or about to start: that run's
        answer is asked for already, and this send would only steer it."""
        schema = structured.from_field(field)
        if schema is None:
            return None
        structured.check_claimed(registry.manifest(self.binding["adapter"]), self.binding.get("agent"))
        if self.conv.is_busy() or self.in_flight or self.waiting:
            raise UsageError("--schema: a run is going on %s and its answer cannot change schema: wait for it "
                             "(harnessctl wait FILE) and send again, or send without --schema to steer it"
                             % self.addr.path)
        return schema

    def status(self) -> Dict[str, Any]:
        last = self.supervisor.last_activity
        return status_report(self.conv, self.binding, alive=True, cancelling=self.cancelling,
                             last_activity=timestamp(last) if last else None, running_tokens=self._running_tokens())

    # -- the budget (budget.py) --------------------------------------------------

    def _running_tokens(self) -> int:
        return sum(tokens for run_id, tokens in self.run_tokens.items() if run_id in self.conv.open_runs)

    def spent(self) -> Tuple[int, Optional[float]]:
        """(tokens, cost): the finished runs' from the file, plus the open runs' usage so far."""
        return self.conv.spent_tokens + self._running_tokens(), self.conv.spent_cost

    def usage_seen(self, run_id: Optional[str], usage: Dict[str, Any]) -> None:
        """A `usage` line of a run (its tokens so far): a run that spends the
        budget is interrupted at once, like a cancel, and ends `failed`."""
        if run_id is None or run_id not in self.conv.open_runs:
            return
        self.run_tokens[run_id] = spent(usage)
        why = budget.exceeded(self.binding, *self.spent())
        if why is not None and run_id not in self.over_budget:
            self.over_budget[run_id] = why
            self.debug("budget: %s; interrupting run %s" % (why, run_id))
            # the adapter is reporting from inside one of its methods: it hears the cancel after it returned
            self.loop.call_later(0, lambda: self._cancel() if run_id in self.conv.open_runs else None)

    def run_ended(self, run_id: Optional[str]) -> Optional[str]:
        """A run's result is being written: forget its running count (the result
        counts now); why the budget ended it, if it did."""
        if run_id is None:
            return None
        self.run_tokens.pop(run_id, None)
        return self.over_budget.pop(run_id, None)

    def _cancel(self) -> None:
        if not (self.conv.is_busy() or self.in_flight):
            return
        if not self.cancelling:  # a second cancel does not put the deadline off
            token = self.cancel_token = object()
            self.loop.call_later(self.cancel_grace, lambda: self._cancel_overdue(token))
        self.cancelling = True
        if self.in_flight:
            self.cancel_after_accept = True
        self._interrupt()

    def _cancel_overdue(self, token: object) -> None:
        """The harness ignored the cancel for the grace period: stop it and end
        what is open `cancelled` (the caller asked for that), so a run never stays
        `cancelling` for good and the runtime can idle out.  The next send starts
        the harness again, resuming its conversation."""
        if token is not self.cancel_token or not self.cancelling or not self.conv.is_busy():
            return
        message = "the harness did not end the run within %g s of the cancel: it was stopped" % self.cancel_grace
        self.debug(message)
        self.supervisor.drop()
        if self.in_flight:
            self.host.send_failed(self.in_flight[0].input_id, message, unavailable=True)
        self.writer.write_all([self._cancelled(e) if e["type"] == "result" else e
                               for e in close_open_work(self.conv, message)])
        self.host.forget_requests()
        self.cancelling = False
        self._pump()

    def _cancelled(self, result: Dict[str, Any]) -> Dict[str, Any]:
        """A result the cancel grace ended: `cancelled`, or `failed` when the budget asked for the cancel."""
        why = self.run_ended(result["run_id"])
        if why is None:
            return dict(result, status="cancelled")
        return dict(result, status="failed", error="%s: the run was interrupted" % why, error_class=budget.CLASS)

    def _interrupt(self, only_if_busy: bool = True) -> None:
        backend = self.supervisor.backend
        if self.supervisor.state == READY and backend is not None and (self.conv.is_busy() or not only_if_busy):
            backend.interrupt()

    def _reply(self, request_id: str, answer: str) -> None:
        request = self.conv.pending.get(request_id)
        if request is None:
            state = self.conv.closed_requests.get(request_id)
            if state:
                raise StateError("%s is already %s" % (request_id, state))
            raise StateError("unknown request id %s" % request_id)
        value = answers.validate(request, answer)
        backend = self.supervisor.backend
        if self.supervisor.state != READY or backend is None:
            raise StateError("%s can no longer be answered: the harness is gone" % request_id)
        try:  # on disk first: `reply` exits 0 only once its answer is in the file (README)
            self.writer.write(dict(request, state="replied", answer=value, by="reply"), now=True)
        except OSError as e:
            raise HarnessctlError("could not record the answer in the event file (%s); the harness was not "
                                  "answered: reply again once the file can be written" % e.strerror) from None
        backend.answer(self.host.take_token(request_id), answers.for_agent(request, value))

    def decide(self, request: Dict[str, Any]) -> Optional[Tuple[str, Dict[str, str]]]:
        """The bound policy's answer to a permission request (policy.py), or
        None: it waits for `reply`."""
        return policy.decide(self.binding, request, (self.addr.path, self.addr.sidecar))

    def answer_by_policy(self, request: Dict[str, Any], value: str, why: Dict[str, str]) -> None:
        """A permission request the policy decided was just written: its answer
        is fsynced first (with the request), as a reply's is; the harness hears
        it once the adapter has returned from asking (a timer due at once:
        this loop pass)."""
        request_id = request["request_id"]
        try:
            self.writer.write(dict(request, state="replied", answer=value, **why), now=True)
        except OSError as e:
            self.debug("%s stays pending: its answer by the policy could not be written (%s)"
                       % (request_id, e.strerror))
            return
        self.loop.call_later(0, lambda: self._answer_decided(request_id, answers.for_agent(request, value)))

    def _answer_decided(self, request_id: str, value: Any) -> None:
        backend = self.supervisor.backend
        if self.host.is_asking(request_id) and self.supervisor.state == READY and backend is not None:
            backend.answer(self.host.take_token(request_id), value)

    # -- sends ----------------------------------------------------------------

    def _pump(self) -> None:
        """Hand the next waiting send to the backend: one at a time."""
        if self.in_flight or not self.waiting or self.stopping:
            return
        if self.supervisor.state == STOPPED:
            self._start_harness()
            return
        backend = self.supervisor.backend
        if self.supervisor.state != READY or backend is None:
            return
        schema = self.waiting[0][0].schema
        if backend.SCHEMA_PER_PROCESS and schema != backend.config.schema and not self.conv.is_busy():
            self.debug("restarting the harness: the next input asks for %s" % ("another schema" if schema else "none"))
            self.supervisor.stop()
            self._start_harness()
            return
        item, waiter = self.waiting.popleft()
        self.in_flight = (item, waiter)
        self.host.expect(item)
        generation = self.supervisor.generation
        self.loop.call_later(self.timeout, lambda: self._send_timed_out(item.input_id, generation))
        try:
            backend.send(item)
        except Exception as e:
            import traceback

            self.debug("backend.send failed:\n" + traceback.format_exc())
            self.host.send_failed(item.input_id, "adapter error: %s" % e)

    def _send_timed_out(self, input_id: str, generation: int) -> None:
        if self.in_flight and self.in_flight[0].input_id == input_id and generation == self.supervisor.generation:
            self.in_flight[1].fail(OutcomeUnknownError(
                "the harness did not confirm the input within %g s; it may still be accepted: "
                "read the event file before retrying" % self.timeout))
            self.in_flight = None
            self._pump()

    def finish_send(self, input_id: str, error: Optional[HarnessctlError], interrupt: bool = False) -> None:
        """The send in flight is accepted (error None) or failed; `interrupt`:
        the harness may have its input although it failed here."""
        if self.in_flight and self.in_flight[0].input_id == input_id:
            waiter = self.in_flight[1]
            self.in_flight = None
            if error is None:
                waiter.ok(input_id)
            else:
                waiter.fail(error)
            if self.cancel_after_accept:
                self.cancel_after_accept = False
                interrupt = interrupt or error is None
        if interrupt:
            self._interrupt(only_if_busy=False)
        self._pump()

    def settled(self) -> None:
        """A run ended: a cancel in progress is over once nothing is open."""
        if not self.conv.is_busy():
            self.cancelling = False
            self.cancel_token = None

    def _fail_waiting(self, error: HarnessctlError) -> None:
        while self.waiting:
            self.waiting.popleft()[1].fail(error)

    # -- the harness ----------------------------------------------------------

    def _start_harness(self) -> None:
        schema = self.waiting[0][0].schema if self.waiting else None
        self.supervisor.start(self.host, self.binding, self.env, self.debug_enabled, self.timeout * 0.8, schema)

    def harness_ready(self) -> None:
        if self.supervisor.ready():
            self._pump()

    def harness_refused(self, error: HarnessctlError) -> None:
        """The start failed: the waiting sends exit 5 (or 2 for a sidecar file
        the adapter refused to trust).  Once a send has heard that, a runtime
        with no harness and no open work exits at once: the send that follows
        the error's advice (a fixed PATH or HARNESSCTL_ACP_*_CMD) starts a new
        runtime with its own environment, instead of this one failing alike.
        (A start that fails before any send waits is tried again by the send
        that comes: the spawning one is on its way.)"""
        told = bool(self.waiting)
        self._fail_waiting(error)
        if told and self._is_idle():
            self.shutdown("the harness could not start: %s" % error)

    def harness_exited(self, while_starting: bool, returncode: Optional[int]) -> None:
        if self.stopping:  # its backend said it could not start, and we stopped for that
            return
        message = "the harness exited unexpectedly (exit code %s); see %s" % (returncode, self.addr.runtime_log)
        if while_starting:
            self.harness_refused(UnavailableError(message))
            if self.stopping:
                return
        if self.in_flight:
            self.host.send_failed(self.in_flight[0].input_id, message, unavailable=True)
        self.writer.write_all(close_open_work(self.conv, message))
        self.host.forget_requests()
        self.cancelling = False
        self._pump()

    def debug(self, text: str) -> None:
        self.log.write(("%s %s\n" % (timestamp(), text.rstrip("\n"))).encode("utf-8", "replace"))

    # -- the end --------------------------------------------------------------

    def shutdown(self, reason: str) -> None:
        """Stop taking commands, stop the harness, record what ends with us.
        Once only: a SIGTERM may arrive in the loop pass that reached the idle deadline."""
        if self.stopping:
            return
        self.debug("shutting down: %s" % reason)
        self.stopping = True
        self.hooks.stop()  # running hooks are killed; what is written from now on runs none
        self.server.stop()
        self.supervisor.stop()
        if self.in_flight:
            self.in_flight[1].fail(OutcomeUnknownError("the runtime stopped (%s) while confirming the input" % reason))
        self._fail_waiting(UnavailableError("the runtime stopped (%s); send again" % reason))
        ended = "the runtime stopped (%s) before the run ended" % reason
        self.loop.guard(lambda: self.writer.write_all(close_open_work(self.conv, ended)))
        self._written()
        self.watches.retry_all()  # their lines could not be written here: the command recovers
        for waiter in self.loop.drain():  # commands that reached us after we stopped listening
            waiter.retry()
        self.server.join(2)
        self._close_file()

    def _close_file(self) -> None:
        """Write what a full disk held back if we can, and leave a snapshot of
        exactly what we wrote (the next writer may append at once)."""
        writer = self.writer
        try:
            writer.write_unwritten()
        except OSError as e:  # the file keeps that work open: the next command applies the lost-runtime rule
            self.debug("%d events could not be written (%s)" % (len(writer.unwritten), e.strerror))
        replaced = writer.events.replaced()
        writer.events.flush_logs()
        covered = os.fstat(writer.events.fd).st_size  # while we are the writer
        writer.events.close()
        self.conv.seq = writer.events.seq  # log lines written after the last critical event count too
        if not (replaced or writer.unwritten):  # the snapshot must describe the file at the path
            snapshot.save(self.addr, self.conv, covered, self.binding)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the detached runtime: `... runtime EVENT_FILE READY_FD DEADLINE GO_FD`
    (DEADLINE: time.monotonic() by which the spawning send must hear from us).

    It starts only once its spawner says `go` on GO_FD (spawn.Starter: the
    spawner binds the file meanwhile); at end of file it exits untouched.  It
    tells its spawner on READY_FD: `ok`, `busy` (another runtime lives in this
    sidecar), or `CODE MESSAGE`, the exit code and line for the command."""
    argv = sys.argv[1:] if argv is None else argv
    addr, ready_fd, spawner_deadline = Address(argv[0]), int(argv[1]), float(argv[2])
    _close_inherited((0, 1, 2, ready_fd, int(argv[3])))
    _raise_fd_limit()
    if not _told_to_go(int(argv[3])):
        return 0
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")  # never pin the caller's directory (the harness gets the bound cwd)
    env = dict(os.environ)
    try:
        private.check_dir(addr.sidecar)  # before writing anything into it
        log = _open_log(addr)
    except HarnessctlError as e:
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    log.capture_stderr()
    try:
        runtime = _start(addr, env, log, spawner_deadline)
    except HarnessctlError as e:
        sys.stderr.write("%s\n" % e)
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    except Exception as e:
        import traceback

        sys.stderr.write(traceback.format_exc())
        return _ready(ready_fd, "5 the runtime failed to start: %s (see %s)" % (e, addr.runtime_log))
    if runtime is None:
        return _ready(ready_fd, "busy")
    signal.signal(signal.SIGTERM, lambda *_: runtime.loop.post(lambda: runtime.shutdown("SIGTERM")))
    _ready(ready_fd, "ok")
    runtime.serve()
    return 0


def _start(addr: Address, env: Dict[str, str], log: RuntimeLog, spawner_deadline: float) -> Optional[Runtime]:
    """Take the sidecar's lock, become the event file's one writer, listen
    (commands queue in the backlog from now on, even while a long file is
    folded), then recover and start the harness.  None if another runtime
    lives in this sidecar.  Waits for the locks end early enough that the
    spawning send still hears why."""
    timeout = knobs.seconds(env, "HARNESSCTL_TIMEOUT", 30.0)
    deadline = min(time.monotonic() + timeout * 0.8, spawner_deadline - min(0.2, timeout * 0.1))
    if locks.wait_lock(addr.runtime_lock, deadline) is None:
        return None
    event_fd = open_event_file(addr, os.O_RDWR | os.O_APPEND)
    if not locks.lock_fd(event_fd, deadline):
        raise UnavailableError("%s is being written by another runtime (was it renamed or hard-linked while in "
                               "use?); send to the name that runtime was started for, or retry once it has exited"
                               % addr.path)
    binding = read_binding(addr)
    if binding is None:
        raise UnavailableError("%s has no binding: send again" % addr.path)
    server = ipc.listen(addr.socket)
    try:
        runtime = Runtime(addr, binding, env, log, event_fd, server)
        runtime.server.start()  # every thread before `ok` (ulimit -u): after it, a failure has no one to tell
        runtime.begin()
    except BaseException:
        server.close()
        os.unlink(addr.socket)
        raise
    return runtime


def _close_inherited(keep: Tuple[int, ...]) -> None:
    """Close every descriptor but ours: posix_spawn hands us each non-CLOEXEC
    descriptor of the send that started us (a cron script's `flock` fd 9, a
    pipe whose reader waits for end of file), and we must not keep those for
    our whole life."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: nothing to go by
        return
    for name in names:
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the directory listing's own descriptor, gone already
                pass


def _raise_fd_limit() -> None:
    """Every `wait` held open is a descriptor: take all the hard limit allows
    (an agent team may run thousands of waiters; the common soft limit is
    1024).  The harness gets the caller's soft limit back (proc.py)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        return
    proc.CHILD_NOFILE = (soft, hard)


def _told_to_go(fd: int) -> bool:
    """Block until the spawner says `go` (True) or closes the pipe (False)."""
    try:
        word = os.read(fd, 16)
        os.close(fd)
    except OSError:
        return False
    return word == b"go\n"


def _ready(fd: int, word: str) -> int:
    try:
        os.write(fd, (word + "\n").encode("utf-8", "replace"))
        os.close(fd)
    except OSError:
        pass
    return 0 if word == "ok" else 1


def _open_log(addr: Address) -> RuntimeLog:
    """The runtime log: our diagnostics and the harness's stderr, capped
    (runtimelog.py)."""
    try:
        return RuntimeLog(addr.runtime_log)
    except OSError as e:
        raise private.cannot("open the runtime log", addr.runtime_log, e) from None


if __name__ == "__main__":
    sys.exit(main())
