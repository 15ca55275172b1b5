"""The runtime process: one per event file, detached, spawned by `send`.

It holds the sidecar's runtime lock and the event file's own lock for life
(locks.py), serves commands on a local socket, owns the adapter's backend (and
through it the harness), and is the only writer of the event file while it
lives.  Everything that changes state runs on ONE thread, the loop in
`Runtime.serve`: socket handler threads and harness reader threads only post
jobs to its queue, so neither the runtime nor any adapter needs a lock of its
own.  The loop sleeps in `queue.get` until a job or the next timer is due: an
idle runtime wakes once a second to check it can still be reached, and
otherwise costs no CPU.
"""

from __future__ import annotations

import heapq
import itertools
import os
import queue
import select
import signal
import sys
import threading
import time
from collections import deque

from . import answers, ipc, knobs, locks, pidfile, private, registry, snapshot
from .address import Address, check_binding, open_event_file, read_binding
from .backend import Config, Host, Input
from .errors import HarnessctlError, OutcomeUnknownError, StateError, UnavailableError
from .eventlog import EventLog, encode, timestamp
from .proc import Process
from .state import LOST, close_open_work, result_event, status_line, status_report

TYPE_CHECKING = False  # typing is not imported at run time: a first send waits for our start-up
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

LOG_FLUSH_DELAY = 0.1
# How often the runtime checks that its path still names its file and its
# socket is still its own: one that cannot be reached stops, so that the
# file's next writer does not wait for it.
REACHABLE_CHECK = 1.0
# How long events that a full disk held back keep the runtime from idling
# out: space may come back; a file size limit or a read-only file never passes.
UNWRITTEN_GRACE = 600.0
RETRYABLE_WRITE_ERRNOS = (28, 122)  # ENOSPC, EDQUOT
RESULT_STATUSES = ("completed", "cancelled", "failed")
# The lines of the latest results, kept for a `wait` that arrives just after
# its input's result (a `send --wait` on a quick run): it is answered without
# reading the file.  Small ones only: this is a shortcut, the file is the truth.
RECENT_RESULTS = 16
RECENT_RESULT_BYTES = 65536
DELIVERIES = ("start", "steer", "queued")


class Waiter:
    """The reply slot of one command connection: the encoded response."""

    def __init__(self, conn: Any = None) -> None:
        self._done = threading.Event()
        self.response = b""
        self.conn = conn

    def hung_up(self) -> bool:
        """True once the command closed its end (Ctrl-C, --timeout): it
        shut down only its sending side while it still waits for us."""
        poller = select.poll()
        poller.register(self.conn.fileno(), select.POLLHUP)
        return bool(poller.poll(0))

    def reply(self, response: bytes) -> None:
        if not self._done.is_set():
            self.response = response
            self._done.set()

    def ok(self, text: str = "") -> None:
        self.reply(ipc.encode_response(0, text))

    def fail(self, error: HarnessctlError) -> None:
        self.reply(ipc.encode_response(error.exit_code, str(error)))

    def retry(self) -> None:
        self.reply(ipc.RETRY.encode())

    def wait(self) -> bytes:
        self._done.wait()
        return self.response


class Runtime(Host):
    def __init__(self, addr: Address, binding: Dict[str, Any], env: Dict[str, str], log_fd: int,
                 event_fd: int, server: Any) -> None:
        """`event_fd` is the event file, locked (we are its one writer);
        `server` our listening socket, so that commands queue from the start."""
        self.addr = addr
        self.binding = binding
        self.env = env
        self.log_fd = log_fd
        self.debug_enabled = env.get("HARNESSCTL_DEBUG") == "1"
        self.idle_timeout = knobs.seconds(env, "HARNESSCTL_IDLE_TIMEOUT", 60.0)
        self.timeout = knobs.seconds(env, "HARNESSCTL_TIMEOUT", 30.0)
        self.jobs: "queue.Queue[Tuple[str, Any, Any]]" = queue.Queue()
        self.timers: List[Tuple[float, int, Callable[[], None]]] = []
        self.timer_ids = itertools.count()
        self.conv = snapshot.load(addr)[0]
        self.events = EventLog(event_fd, addr.path, self.conv.seq)
        self.server = server
        self.socket_identity = _identity(addr.socket)
        self.sidecar_identity = _identity(addr.sidecar)
        self.last_activity: Optional[float] = None  # time.time() of the harness's last line
        self.waiting: Deque[Tuple[Input, Waiter]] = deque()
        self.in_flight: Optional[Tuple[Input, Waiter]] = None
        self.texts: Dict[str, Tuple[str, str]] = {}  # input_id -> (text, delivery) until attributed
        self.harness = "stopped"  # stopped / starting / ready
        self.generation = 0  # bumped whenever the harness goes away: stale callbacks are ignored
        self.backend: Any = None
        self.child: Optional[Process] = None
        self.recorded_pid: Optional[int] = None  # the harness pid in FILE.d/harness.pid
        self.cancelling = False
        self.cancel_after_accept = False
        self.flush_scheduled = False
        self.idle_since: Optional[float] = time.monotonic()
        self.stopping = False
        self.intake = threading.Lock()  # orders "request queued" against "stopped listening"
        self.connections: set = set()  # handler threads, joined at exit so every reply is sent
        self.unwritten: Deque[Dict[str, Any]] = deque()  # critical events a full disk held back, in order
        self.unwritten_since = 0.0  # when the first of them failed
        self.unwritten_errno: Optional[int] = None
        self.watches: List[Tuple[Optional[str], Waiter]] = []  # `wait` commands: (input id or None, reply slot)
        self.written: List[Dict[str, Any]] = []  # critical events appended since the watches were last checked
        self.recent: Dict[str, Dict[str, Any]] = {}  # input id -> its result, for the latest few results

    # -- the loop -------------------------------------------------------------

    def post(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop thread (safe from any thread)."""
        self.jobs.put(("call", fn, None))

    def begin(self) -> None:
        """Recover what a lost predecessor left open, and start the harness at
        once: the send that spawned us is on its way."""
        pidfile.kill_leftover(self.addr.harness_pid)
        self._write_all(close_open_work(self.conv, LOST))
        self.call_later(REACHABLE_CHECK, self._check_reachable)
        self._start_harness()

    def serve(self) -> None:
        threading.Thread(target=self._accept_loop, daemon=True).start()
        while not self.stopping:
            try:
                kind, payload, waiter = self.jobs.get(timeout=self._sleep_time())
            except queue.Empty:
                kind = None
            if kind == "call":
                self._guard(payload)
            elif kind == "request":
                self._dispatch(payload, waiter)
            self._run_due_timers()
            if self.written:
                self._answer_watches()  # also with no watch: a wait may come for a result just written
            self._check_idle()

    def _sleep_time(self) -> float:
        deadline = self.timers[0][0] if self.timers else None
        if self.idle_since is not None:
            idle_deadline = self.idle_since + self.idle_timeout
            deadline = idle_deadline if deadline is None else min(deadline, idle_deadline)
        return 3600.0 if deadline is None else max(0.0, deadline - time.monotonic())

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, _, callback = heapq.heappop(self.timers)
            self._guard(callback)

    def _is_idle(self) -> bool:
        return not (self.conv.is_busy() or self.waiting or self.in_flight or self.harness == "starting"
                    or self._unwritten_may_pass())

    def _unwritten_may_pass(self) -> bool:
        """Held-back events keep us alive while the disk may get space again,
        never for good: a runtime that cannot write its file still exits."""
        return bool(self.unwritten) and self.unwritten_errno in RETRYABLE_WRITE_ERRNOS and (
            time.monotonic() < self.unwritten_since + UNWRITTEN_GRACE)

    def _check_reachable(self) -> None:
        """Stop once no command can reach us for this file: the path names
        another file (or none), or the sidecar or our socket was removed or
        replaced.  The file's next writer is waiting for our lock."""
        if self.events.replaced():
            self.shutdown("the event file was moved, removed or replaced")
        elif (_identity(self.addr.sidecar), _identity(self.addr.socket)) != (self.sidecar_identity,
                                                                            self.socket_identity):
            self.shutdown("the sidecar or the socket was removed or replaced")
        else:
            self._drop_hung_up_watches()
            self.call_later(REACHABLE_CHECK, self._check_reachable)

    def _check_idle(self) -> None:
        if not self._is_idle():
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = time.monotonic()
        elif time.monotonic() >= self.idle_since + self.idle_timeout:
            self.shutdown("idle")

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        """Run adapter code; a bug in it is logged, never kills the runtime."""
        try:
            fn(*args)
        except Exception:
            self.debug("error in job:\n" + _traceback())

    # -- commands -------------------------------------------------------------

    def _accept_loop(self) -> None:
        """Accept until shutdown, whatever accept() says: out of descriptors
        (EMFILE) or memory, a connection reset in the backlog.  The waiting
        connections stay in the backlog until a descriptor is free again."""
        failing = False
        while not self.stopping:
            try:
                conn = ipc.accept(self.server)
            except OSError as e:
                if self.stopping:
                    return
                if not failing:
                    self.debug("accept failed (%s); retrying until it works again" % e.strerror)
                failing = True
                time.sleep(0.05)
                continue
            failing = False
            thread = threading.Thread(target=self._serve_connection, args=(conn,), daemon=True)
            self.connections.add(thread)
            try:
                thread.start()
            except RuntimeError:  # no thread for it now: the command retries or times out
                self.connections.discard(thread)
                conn.close()

    def _serve_connection(self, conn: Any) -> None:
        try:
            self._answer(conn)
        finally:
            conn.close()
            self.connections.discard(threading.current_thread())

    def _answer(self, conn: Any) -> None:
        try:
            if ipc.peer_uid(conn) != os.getuid():
                return
            conn.settimeout(self.timeout)
            request = ipc.decode_fields(ipc.read_all(conn))
        except (OSError, ValueError):
            return
        if not request:
            return
        waiter = Waiter(conn)
        with self.intake:
            if self.stopping:
                waiter.retry()
            else:
                self.jobs.put(("request", request, waiter))
        response = waiter.wait()
        try:
            ipc.send_all(conn, response)
        except OSError:
            pass

    def _dispatch(self, request: List[str], waiter: Waiter) -> None:
        """Fields as ipc.py encodes them: send TEXT CWD MODEL ADAPTER | status | cancel | reply ID ANSWER |
        wait INPUT_ID (empty: the conversation)."""
        op = request[0]
        if self.events.replaced():
            waiter.retry()  # a new runtime serves the file now at the path (or refuses a foreign one)
            self.shutdown("the event file was removed or replaced")
            return
        try:
            if op == "send" and len(request) == 5:
                wanted = {"cwd": request[2] or None, "model": request[3] or None, "adapter": request[4] or None}
                check_binding(self.binding, wanted)
                self.waiting.append((Input(new_id(), request[1]), waiter))
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
                self._watch(request[1] or None, waiter)
            else:
                waiter.fail(HarnessctlError("malformed request %r" % op))
        except HarnessctlError as e:
            waiter.fail(e)
        except Exception as e:
            self.debug("error handling %s:\n%s" % (op, _traceback()))
            waiter.fail(HarnessctlError("internal error in the runtime: %s" % e))

    def status(self) -> Dict[str, Any]:
        return status_report(self.conv, self.binding, alive=True, cancelling=self.cancelling,
                             last_activity=timestamp(self.last_activity) if self.last_activity else None)

    def _cancel(self) -> None:
        if not (self.conv.is_busy() or self.in_flight):
            return
        self.cancelling = True
        if self.in_flight:
            self.cancel_after_accept = True
        if self.harness == "ready" and self.conv.is_busy():
            self.backend.interrupt()

    def _reply(self, request_id: str, answer: str) -> None:
        request = self.conv.pending.get(request_id)
        if request is None:
            state = self.conv.closed_requests.get(request_id)
            if state:
                raise StateError("%s is already %s" % (request_id, state))
            raise StateError("unknown request id %s" % request_id)
        value = answers.validate(request, answer)
        if self.harness != "ready":
            raise StateError("%s can no longer be answered: the harness is gone" % request_id)
        try:  # on disk first: `reply` exits 0 only once its answer is in the file (README)
            self._write(dict(request, state="replied", answer=value), now=True)
        except OSError as e:
            raise HarnessctlError("could not record the answer in the event file (%s); the harness was not "
                                  "answered: reply again once the file can be written" % e.strerror) from None
        self.backend.answer(request_id, value)

    # -- waits ----------------------------------------------------------------
    #
    # A `wait` command's connection stays open until what it waits for is in
    # the file: the loop checks the open watches after every pass that wrote a
    # critical event, so a waiter hears within the pass that wrote its line and
    # costs nothing in between.  The response is `KIND LINE`: a result's status
    # and the result line, `request` and the pending request line, `status`
    # and the status line, or `done`: not open here, the line is in the file.

    def _watch(self, input_id: Optional[str], waiter: Waiter) -> None:
        answer = self._watch_answer(input_id, {})
        if answer is None:
            self.watches.append((input_id, waiter))
        else:
            waiter.ok(answer)

    def _answer_watches(self) -> None:
        written, self.written = self.written, []
        results = {i: e for e in written if e["type"] == "result" for i in e.get("input_ids") or ()}
        self._remember(results)
        still = []
        for input_id, waiter in self.watches:
            answer = self._watch_answer(input_id, results)
            if answer is None:
                still.append((input_id, waiter))
            else:
                waiter.ok(answer)
        self.watches = still

    def _watch_answer(self, input_id: Optional[str], results: Dict[str, Dict[str, Any]]) -> Optional[str]:
        """What the waiter is told now, or None while it must wait."""
        if input_id is None:
            report = self.status()
            return None if report["state"] in ("running", "cancelling") else "status " + status_line(report)
        result = results.get(input_id) or self.recent.get(input_id)
        if result is not None:
            return "%s %s" % (result["status"], _line(result))
        if not self._is_open(input_id):
            return "done"
        run_id = self.conv.open_inputs.get(input_id)
        for request in self.conv.pending.values():
            if run_id is not None and request.get("run_id") == run_id and "seq" in request:  # in the file
                return "request " + _line(request)
        return None

    def _remember(self, results: Dict[str, Dict[str, Any]]) -> None:
        for input_id, result in results.items():
            if len(result.get("output") or "") <= RECENT_RESULT_BYTES:
                self.recent[input_id] = result
        while len(self.recent) > RECENT_RESULTS:
            del self.recent[next(iter(self.recent))]

    def _is_open(self, input_id: str) -> bool:
        """Open until its result is in the file (not only held back by a full disk)."""
        return input_id in self.conv.open_inputs or any(
            e["type"] == "result" and input_id in (e.get("input_ids") or ()) for e in self.unwritten)

    def _drop_hung_up_watches(self) -> None:
        """Forget waiters whose command went away, so a script that waits with
        --timeout in a loop leaves nothing behind."""
        for watch in [w for w in self.watches if w[1].hung_up()]:
            self.watches.remove(watch)
            watch[1].reply(b"")

    # -- sends ----------------------------------------------------------------

    def _pump(self) -> None:
        """Hand the next waiting send to the backend: one at a time."""
        if self.in_flight or not self.waiting or self.stopping:
            return
        if self.harness == "stopped":
            self._start_harness()
            return
        if self.harness != "ready":
            return
        item, waiter = self.waiting.popleft()
        self.in_flight = (item, waiter)
        self.texts[item.input_id] = (item.text, "")
        generation = self.generation
        self.call_later(self.timeout, lambda: self._send_timed_out(item.input_id, generation))
        try:
            self.backend.send(item)
        except Exception as e:
            self.debug("backend.send failed:\n" + _traceback())
            self.send_failed(item.input_id, "adapter error: %s" % e)

    def _send_timed_out(self, input_id: str, generation: int) -> None:
        if self.in_flight and self.in_flight[0].input_id == input_id and generation == self.generation:
            self.in_flight[1].fail(OutcomeUnknownError(
                "the harness did not confirm the input within %g s; it may still be accepted: "
                "read the event file before retrying" % self.timeout))
            self.in_flight = None
            self._pump()

    def _finish_send(self, input_id: str, error: Optional[HarnessctlError]) -> None:
        if self.in_flight and self.in_flight[0].input_id == input_id:
            waiter = self.in_flight[1]
            self.in_flight = None
            if error is None:
                waiter.ok(input_id)
            else:
                waiter.fail(error)
            if self.cancel_after_accept:
                self.cancel_after_accept = False
                if error is None and self.harness == "ready":
                    self.backend.interrupt()
        self._pump()

    def _fail_waiting(self, error: HarnessctlError) -> None:
        while self.waiting:
            self.waiting.popleft()[1].fail(error)

    # -- the harness ----------------------------------------------------------

    def _start_harness(self) -> None:
        self.harness = "starting"
        self.generation += 1
        generation = self.generation
        self.call_later(self.timeout * 0.8, lambda: self._start_timed_out(generation))
        config = Config(cwd=self.binding["cwd"], model=self.binding.get("model"), sidecar=self.addr.sidecar,
                        env=dict(self.env), debug=self.debug_enabled)
        try:
            self.backend = registry.backend_class(self.binding["adapter"])(self, config)
            self.backend.start()
        except HarnessctlError as e:  # e.g. private.py refused one of the adapter's sidecar files
            self.debug("backend.start refused: %s" % e)
            self._start_refused(e)
        except Exception as e:
            self.debug("backend.start failed:\n" + _traceback())
            self.start_failed(str(e))

    def _start_timed_out(self, generation: int) -> None:
        if generation == self.generation and self.harness == "starting":
            self.start_failed("the harness did not become ready within %g s" % (self.timeout * 0.8))

    def _drop_harness(self) -> None:
        """Forget the current harness; callbacks from it are ignored from now on."""
        self.generation += 1
        self.harness = "stopped"
        self.backend = None
        if self.child is not None:
            self.child.kill()
            self.child.wait(5)
            self.child = None
        if self.recorded_pid is not None:
            pidfile.forget(self.addr.harness_pid, self.recorded_pid)
            self.recorded_pid = None

    def _child_lines(self, generation: int, lines: List[str]) -> None:
        self.last_activity = time.time()
        for line in lines:
            if generation != self.generation or self.backend is None:
                return  # a line before this one ended the harness
            self._guard(self.backend.on_line, line)

    def _child_exit(self, generation: int, returncode: Optional[int]) -> None:
        if generation != self.generation:
            return
        was = self.harness
        backend = self.backend
        self.child = None
        try:
            if backend is not None:
                backend.on_exit(returncode)
        finally:
            self._drop_harness()
        message = "the harness exited unexpectedly (exit code %s); see %s" % (returncode, self.addr.runtime_log)
        if was == "starting":
            self._fail_waiting(UnavailableError(message))
        if self.in_flight:
            self.send_failed(self.in_flight[0].input_id, message, unavailable=True)
        self._write_all(close_open_work(self.conv, message))
        self.cancelling = False
        self._pump()

    # -- Host: what the backend calls -----------------------------------------

    def spawn(self, argv: Sequence[str], env: Dict[str, str], cwd: str) -> Process:
        generation = self.generation
        self.child = Process(
            argv, env, cwd, self.log_fd,
            on_lines=lambda lines: self.post(lambda: self._child_lines(generation, lines)),
            on_exit=lambda code: self.post(lambda: self._child_exit(generation, code)),
        )
        self.recorded_pid = self.child.pid
        pidfile.record(self.addr.harness_pid, self.child.pid)
        self.debug("started harness pid %d: %s" % (self.child.pid, " ".join(argv)))
        return self.child

    def call_later(self, seconds: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self.timers, (time.monotonic() + seconds, next(self.timer_ids), callback))

    def ready(self) -> None:
        if self.harness == "starting":
            self.harness = "ready"
            self._pump()

    def start_failed(self, message: str) -> None:
        self._start_refused(UnavailableError(message))

    def _start_refused(self, error: HarnessctlError) -> None:
        """The waiting sends fail with `error`: exit 5, or 2 for a sidecar
        file the adapter refused to trust."""
        if self.harness == "starting":
            self._drop_harness()
            self._fail_waiting(error)

    def new_run(self) -> str:
        return new_id()

    def accepted(self, input_id: str, delivery: str, run_id: Optional[str]) -> None:
        if delivery not in DELIVERIES:
            self._broken_contract("accepted() with delivery %r (allowed: %s)" % (delivery, ", ".join(DELIVERIES)),
                                  input_id)
            return
        text = self.texts.pop(input_id, ("", ""))[0]
        try:
            self._write({"type": "accepted", "input_id": input_id, "text": text, "delivery": delivery,
                         "run_id": run_id}, now=True)
        except OSError as e:
            self._finish_send(input_id, HarnessctlError(
                "could not record the input in the event file (%s); the harness may have seen it" % e.strerror))
            if self.harness == "ready":
                self.backend.interrupt()
            return
        if run_id is None:
            self.texts[input_id] = (text, delivery)
        self._finish_send(input_id, None)

    def attributed(self, input_id: str, run_id: str) -> None:
        if input_id in self.conv.open_inputs and self.conv.open_inputs[input_id] is None:
            text, delivery = self.texts.pop(input_id, ("", "steer"))
            self._write({"type": "accepted", "input_id": input_id, "text": text, "delivery": delivery,
                         "run_id": run_id})

    def send_failed(self, input_id: str, message: str, unavailable: bool = False) -> None:
        self.texts.pop(input_id, None)
        self._finish_send(input_id, UnavailableError(message) if unavailable else HarnessctlError(message))

    def message(self, run_id: str, message_id: str, text: str, role: str = "assistant") -> None:
        self._write({"type": "message", "run_id": run_id, "message_id": message_id, "role": role, "text": text})

    def request(self, run_id: Optional[str], kind: str, message: str, options: Optional[List[str]] = None,
                details: Optional[Dict[str, Any]] = None) -> str:
        request_id = "req-%d" % (self.conv.request_count + 1)
        event = {"type": "request", "run_id": run_id, "request_id": request_id, "state": "pending",
                 "kind": kind, "message": message, "options": list(options or [])}
        event.update(details or {})
        self._write(event)
        return request_id

    def request_closed(self, request_id: str) -> None:
        request = self.conv.pending.get(request_id)
        if request is not None:
            self._write(dict(request, state="expired"))

    def result(self, run_id: Optional[str], input_ids: Sequence[str], status: str, output: str = "",
               usage: Optional[Dict[str, Any]] = None, cost_usd: Optional[float] = None,
               error: Optional[str] = None) -> None:
        if status not in RESULT_STATUSES:
            self._broken_contract("result() with status %r (allowed: %s)" % (status, ", ".join(RESULT_STATUSES)))
            status, error = "failed", "the %s adapter reported an invalid result status %r" % (
                self.binding["adapter"], status)
        covered = [i for i in input_ids if i in self.conv.open_inputs]
        if len(covered) != len(input_ids):
            self.debug("result for run %s: ignoring inputs that are not open: %s"
                       % (run_id, [i for i in input_ids if i not in covered]))
        for input_id in covered:
            self.texts.pop(input_id, None)
        # Requests expire before the result is written: a reader that sees the
        # result sees everything about the run settled.
        for request in [r for r in self.conv.pending.values() if r.get("run_id") in (run_id, None)]:
            self._write(dict(request, state="expired"))
        self._write(result_event(run_id, covered, status, output, usage, cost_usd, error))
        if not self.conv.is_busy():
            self.cancelling = False

    def log(self, kind: str, level: str = "info", run_id: Optional[str] = None, **fields: Any) -> None:
        event: Dict[str, Any] = {"type": "log", "level": level, "kind": kind}
        if run_id is not None:
            event["run_id"] = run_id
        event.update(fields)
        self.events.log(event)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.call_later(LOG_FLUSH_DELAY, self._flush_logs)

    def _broken_contract(self, what: str, input_id: Optional[str] = None) -> None:
        """An adapter bug: said in runtime.log and the event file, and the send
        it concerns fails at once (exit 1) instead of waiting for a receipt."""
        message = "the %s adapter broke the backend contract: %s" % (self.binding["adapter"], what)
        self.debug(message)
        self.log("diagnostic", level="error", message=message)
        if input_id is not None:
            self.texts.pop(input_id, None)
            self._finish_send(input_id, HarnessctlError(message))

    def _flush_logs(self) -> None:
        self.flush_scheduled = False
        self.events.flush_logs()

    def debug(self, text: str) -> None:
        line = "%s %s\n" % (timestamp(), text.rstrip("\n"))
        try:
            os.write(self.log_fd, line.encode("utf-8", "replace"))
        except OSError:
            pass

    # -- writing --------------------------------------------------------------

    def _write(self, event: Dict[str, Any], now: bool = False) -> None:
        """Append a critical event and fold it in.  When the file cannot take it
        (disk full) it waits in `unwritten`, in order, retried every second, so
        the file catches up once there is space again.  With `now` (an
        `accepted`, on disk before its send exits 0) the OSError is raised."""
        try:
            self._write_unwritten()
            self.conv.apply(self._append(event))
        except OSError as e:
            if now:
                raise
            if not self.unwritten:
                self.debug("cannot write the event file (%s); retrying every second" % e.strerror)
                self.unwritten_since, self.unwritten_errno = time.monotonic(), e.errno
                self.call_later(1.0, self._retry_unwritten)
            self.unwritten.append(event)
            self.conv.apply(event)

    def _append(self, event: Dict[str, Any]) -> Dict[str, Any]:
        full = self.events.append(event)
        self.written.append(full)
        return full

    def _write_unwritten(self) -> None:
        while self.unwritten:
            self.conv.seq = self._append(self.unwritten[0])["seq"]
            self.unwritten.popleft()

    def _retry_unwritten(self) -> None:
        try:
            self._write_unwritten()
        except OSError as e:
            self.unwritten_errno = e.errno
            self.call_later(1.0, self._retry_unwritten)

    def _write_all(self, events: List[Dict[str, Any]]) -> None:
        for event in events:
            self._write(event)

    # -- the end --------------------------------------------------------------

    def shutdown(self, reason: str) -> None:
        """Stop taking commands, stop the harness, record what ends with us.
        Once only: a SIGTERM may arrive in the loop pass that reached the idle deadline."""
        if self.stopping:
            return
        self.debug("shutting down: %s" % reason)
        with self.intake:
            self.stopping = True
        self.server.close()
        if _identity(self.addr.socket) == self.socket_identity:  # never a successor's socket
            try:
                os.unlink(self.addr.socket)
            except OSError:
                pass
        if self.backend is not None:
            self._guard(self.backend.stop)
        self._drop_harness()
        if self.in_flight:
            self.in_flight[1].fail(OutcomeUnknownError("the runtime stopped (%s) while confirming the input" % reason))
        self._fail_waiting(UnavailableError("the runtime stopped (%s); send again" % reason))
        ended = "the runtime stopped (%s) before the run ended" % reason
        self._guard(lambda: self._write_all(close_open_work(self.conv, ended)))
        self._answer_watches()
        for _, waiter in self.watches:  # their lines could not be written here: the command recovers
            waiter.retry()
        self._drain_requests()
        deadline = time.monotonic() + 2
        for thread in list(self.connections):
            thread.join(max(0.0, deadline - time.monotonic()))
        try:
            self._write_unwritten()
        except OSError as e:  # the file keeps that work open: the next command applies the lost-runtime rule
            self.debug("%d events could not be written (%s)" % (len(self.unwritten), e.strerror))
        replaced = self.events.replaced()
        self.events.flush_logs()
        covered = os.fstat(self.events.fd).st_size  # while we are the writer: the next one may append at once
        self.events.close()
        self.conv.seq = self.events.seq  # log lines written after the last critical event count too
        if not (replaced or self.unwritten):  # the snapshot must describe the file at the path
            snapshot.save(self.addr, self.conv, covered, self.binding)

    def _drain_requests(self) -> None:
        """Commands that reached us after we stopped listening are told to retry."""
        while True:
            try:
                kind, _, waiter = self.jobs.get_nowait()
            except queue.Empty:
                return
            if kind == "request":
                waiter.retry()


def new_id() -> str:
    """A random (version 4) UUID string; the uuid module would cost the
    long-lived runtime a megabyte of RSS for this one line."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def _line(event: Dict[str, Any]) -> str:
    """An event exactly as its line in the file, without the newline."""
    return encode(event)[:-1].decode("utf-8")


def _traceback() -> str:
    """The current exception's traceback, imported only when something broke."""
    import traceback

    return traceback.format_exc()


def _identity(path: str) -> Optional[Tuple[int, int]]:
    """(st_dev, st_ino) of `path` itself, or None if it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the detached runtime: `... runtime EVENT_FILE READY_FD DEADLINE`
    (DEADLINE: time.monotonic() by which the spawning send must hear from us).

    It tells its spawner on READY_FD: `ok`, `busy` (another runtime lives in
    this sidecar), or `CODE MESSAGE`, the exit code and line for the command."""
    argv = sys.argv[1:] if argv is None else argv
    addr, ready_fd, spawner_deadline = Address(argv[0]), int(argv[1]), float(argv[2])
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")  # never pin the caller's directory (the harness gets the bound cwd)
    env = dict(os.environ)
    try:
        private.check_dir(addr.sidecar)  # before writing anything into it
        log_fd = _open_log(addr)
    except HarnessctlError as e:
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    os.dup2(log_fd, 2)
    try:
        runtime = _start(addr, env, log_fd, spawner_deadline)
    except HarnessctlError as e:
        sys.stderr.write("%s\n" % e)
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    except Exception as e:
        sys.stderr.write(_traceback())
        return _ready(ready_fd, "5 the runtime failed to start: %s (see %s)" % (e, addr.runtime_log))
    if runtime is None:
        return _ready(ready_fd, "busy")
    signal.signal(signal.SIGTERM, lambda *_: runtime.post(lambda: runtime.shutdown("SIGTERM")))
    _ready(ready_fd, "ok")
    runtime.serve()
    return 0


def _start(addr: Address, env: Dict[str, str], log_fd: int, spawner_deadline: float) -> Optional[Runtime]:
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
    server = ipc.listen(addr.socket)
    try:
        runtime = Runtime(addr, read_binding(addr), env, log_fd, event_fd, server)
        runtime.begin()
    except BaseException:
        server.close()
        os.unlink(addr.socket)
        raise
    return runtime


def _ready(fd: int, word: str) -> int:
    try:
        os.write(fd, (word + "\n").encode("utf-8", "replace"))
        os.close(fd)
    except OSError:
        pass
    return 0 if word == "ok" else 1


def _open_log(addr: Address) -> int:
    """The runtime log: our diagnostics and the harness's stderr.  Rotated once
    at start when large, so it never grows without bound."""
    path = addr.runtime_log
    try:
        if os.lstat(path).st_size > 4 * 1024 * 1024:
            os.replace(path, path + ".1")
    except OSError:
        pass
    try:
        return private.open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "runtime log")
    except OSError as e:
        raise private.cannot("open the runtime log", path, e) from None


if __name__ == "__main__":
    sys.exit(main())
