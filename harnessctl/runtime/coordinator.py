"""The runtime process: one per event file, detached, spawned by `send`.

It holds the sidecar's runtime lock and the event file's own lock for life
(locks.py), serves commands on a local socket, owns the adapter's backend (and
through it the harness), and is the only writer of the event file while it
lives.  `Runtime` is the command state machine and the coordinator: what one
part's news means for the others is written here once, as named moments
(`send_confirmed`, `request_arrived`, `run_ended`, `harness_gone`, ...).
Each part is given only what it needs, and none knows `Runtime`:

* loop.py: the one thread everything runs on, and its timers;
* server.py: the socket, one thread per command, and their reply slots;
* requests.py: each command's request handed to the part that serves it;
* writer.py: the critical writes, the disk-full queue, the logs;
* watches.py: the `wait` commands held open;
* lifetime.py: when the runtime ends by itself, and the file it leaves;
* reachwatch.py: what tells an idle runtime, through inotify, that it may be unreachable;
* supervisor.py: the harness, its backend and child process;
* host.py: what the adapter sees, its reports turned into events and moments;
* sends.py: the sends waiting, the one the harness is confirming, and those held for the next run;
* cancel.py: `cancel`, and its grace period;
* replies.py: the answers to the harness's requests, a `reply`'s or the policy's;
* spending.py: what the conversation spent, held against its budget;
* hookrunner.py: the hooks.

Its process's start-up, from exec to `serve`, is main.py.
"""

from __future__ import annotations

from .. import knobs
from ..binding import check_binding
from ..errors import HarnessctlError, UnavailableError
from ..eventfile import snapshot
from ..eventfile.eventlog import EventLog, timestamp
from ..eventfile.state import LOST, close_open_work, status_report
from ..kit.backend import Input
from ..store import pidfile, registry, trusted
from ..store.address import Address
from . import cancel, hookrunner
from .host import AdapterHost, new_id
from .lifetime import Lifetime, close_file
from .loop import Loop
from .replies import Replies
from .requests import Requests
from .sends import Sends
from .server import CommandServer, Waiter
from .spending import Spending
from .supervisor import STARTING, Supervisor
from .watches import Watches
from .writer import EventWriter

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .runtimelog import RuntimeLog


class Runtime:
    def __init__(self, addr: Address, binding: Dict[str, Any], env: Dict[str, str], log: RuntimeLog,
                 event_fd: int, sock: Any) -> None:
        """`event_fd` is the event file, locked (we are its one writer);
        `sock` our listening socket, so that commands queue from the start."""
        self.addr = addr
        self.binding = binding
        self.env = env
        self.log = log
        self.debug = log.debug
        self.debug_enabled = env.get("HARNESSCTL_DEBUG") == "1"
        self.timeout = knobs.seconds(env, "HARNESSCTL_TIMEOUT", 30.0)
        self.loop = Loop(on_error=lambda trace: self.debug("error in job:\n" + trace))
        self.conv = snapshot.load(addr)[0]
        self.writer = EventWriter(EventLog(event_fd, addr.path, self.conv.seq), self.conv, self.loop.call_later,
                                  self.debug)
        self.watches = Watches(self.conv, self.writer, self.status, self.loop.call_later)
        self.supervisor = Supervisor(self, self.loop, addr.sidecar, addr.harness_pid, log.write)
        self.host = AdapterHost(self.conv, self.writer, self.loop, self.supervisor, binding["adapter"], self)
        self.hooks = hookrunner.Hooks(binding, env, addr, log.fd, self.loop, self.diagnostic, self.debug)
        self.sends = Sends(self.conv, self.supervisor, self.host, self.loop, self.timeout, addr.path,
                           self.start_harness, self.debug)
        self.cancel = cancel.Cancel(self.sends.run_going, self.supervisor, self.loop,
                                    knobs.seconds(env, "HARNESSCTL_CANCEL_GRACE", cancel.GRACE), self.cancel_overdue)
        self.replies = Replies(self.conv, self.writer, self.supervisor, self.host, self.loop,
                               (addr.path, addr.sidecar), self.debug)
        self.spending = Spending(self.conv, addr, self.debug)
        requests = Requests(addr.path, self.writer.events, self.loop, self.sends, self.replies, self.watches, self,
                            self.debug)
        self.server = CommandServer(sock, addr.socket, self.timeout, requests.submit, self.debug)
        self.lifetime = Lifetime(knobs.seconds(env, "HARNESSCTL_IDLE_TIMEOUT", 60.0), addr, self.writer.events,
                                 self.server, self.loop, self.shutdown)
        self.stopping = False

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
            self.diagnostic(warning)
        self.lifetime.watch_reachable()
        if not registry.backend_class(self.binding["adapter"]).SCHEMA_PER_PROCESS:
            self.start_harness()

    def serve(self) -> None:
        while not self.stopping:
            self.loop.run_once(self.lifetime.deadline())
            self._written()
            self.lifetime.check_idle(self._is_idle() and not self.hooks.busy())  # an idle exit waits for the hooks

    def _written(self) -> None:
        """Tell the watches what this pass appended (also with none open: a
        wait may come next for a result just written)."""
        events = self.writer.take_written()
        if events:
            self.watches.written(events)
            self.hooks.written(events)
        if self.writer.events.take_warned():
            self.watches.warned()

    def _is_idle(self) -> bool:
        return not (self.conv.is_busy() or self.sends.pending() or self.supervisor.state == STARTING
                    or self.writer.may_pass())

    # -- commands -------------------------------------------------------------

    def send(self, text: str, schema: str, wanted: Dict[str, Any], deliver: Optional[str], waiter: Waiter) -> None:
        """A send: checked against the binding, which only its limits may change."""
        check_binding(self.binding, wanted)
        item = Input(new_id(), text, self.sends.schema(schema, self.binding, hold=deliver is not None))
        self.binding = self.spending.rebind(self.binding, wanted)  # the one place the binding changes
        self.spending.check(self.binding)
        if deliver == "interrupt":
            self.cancel_run(item.input_id)  # what runs and what is held ends; this input starts the next run
        self.sends.add(item, waiter, hold=deliver is not None)

    def status(self) -> Dict[str, Any]:
        last = self.supervisor.last_activity
        return status_report(self.conv, self.binding, alive=True, cancelling=self.cancel.cancelling,
                             last_activity=timestamp(last) if last else None,
                             running_tokens=self.spending.running_tokens())

    # -- moments: what one part's news means for the others ---------------------

    def send_confirmed(self, input_id: str, error: Optional[HarnessctlError], interrupt: bool = False) -> None:
        """The send in flight was accepted (error None) or failed: its command
        hears it, a cancel that came meanwhile reaches the harness (or one
        that may have the input although it failed: `interrupt`), and the next
        send goes."""
        if self.sends.confirm(input_id, error):
            interrupt = self.cancel.confirmed(error is None) or interrupt
        if interrupt:
            self.cancel.interrupt(only_if_busy=False)
        self.sends.pump()

    def request_arrived(self, kind: str, request: Dict[str, Any]) -> Optional[Tuple[str, Dict[str, str]]]:
        """The harness asks: the bound policy's answer to a permission or a mode switch, or None (a reply answers)."""
        return self.replies.decide(self.binding, request) if kind in ("permission", "mode") else None

    def request_recorded(self, request: Dict[str, Any], decision: Optional[Tuple[str, Dict[str, str]]]) -> None:
        """A request was written: the policy's answer goes to the harness, or its line runs --on-request."""
        if decision is not None:
            self.replies.by_policy(request, *decision)
        else:
            self.hooks.parked(request["request_id"])

    def run_ending(self, run_id: Optional[str]) -> Optional[str]:
        """A run's result is being written: why the budget ended it, if it did."""
        return self.spending.run_ended(run_id)

    def run_ended(self) -> None:
        """A run (or held inputs) ended: a cancel may be over, and a held input may start its run
        (once the adapter, which is reporting from inside one of its methods, has returned)."""
        self.cancel.settled()
        if self.sends.held:
            self.loop.call_later(0, self.sends.pump)

    def usage_reported(self, run_id: Optional[str], usage: Dict[str, Any]) -> None:
        """A run that spent the budget is interrupted at once, like a cancel."""
        if self.spending.usage_seen(run_id, usage, self.binding):
            # the adapter is reporting from inside one of its methods: it hears the cancel after it returned
            self.loop.call_later(0, lambda: self.cancel_run() if run_id in self.conv.open_runs else None)

    def cancel_run(self, interrupting: Optional[str] = None) -> None:
        """`cancel FILE`, the budget, or `send --interrupt` (`interrupting`: its input id)."""
        self.sends.drop_held(interrupting)
        self.cancel.request(sending=self.sends.in_flight is not None)

    def diagnostic(self, message: str, level: str = "warning", **fields: Any) -> None:
        self.host.log("diagnostic", level, message=message, **fields)

    # -- the harness ----------------------------------------------------------

    def start_harness(self) -> None:
        """Start the harness, once a forked file's source has not moved on (eventfile.lineage.moved_on)."""
        if self.conv.inputs_seen == 0:
            from ..eventfile.lineage import moved_on

            why = moved_on(self.addr, registry.backend_class(self.binding["adapter"]).RESUME_FILE)
            if why is not None:
                self.harness_refused(UnavailableError(why))
                return
        self.supervisor.start(self.host, self.binding, self.env, self.debug_enabled, self.timeout * 0.8,
                              self.sends.next_schema())

    def harness_ready(self) -> None:
        if self.supervisor.ready():
            self.sends.pump()

    def harness_refused(self, error: HarnessctlError) -> None:
        """The start failed: the waiting sends exit 5 (or 2 for a sidecar file
        the adapter refused to trust).  Once a send has heard that, a runtime
        with no harness and no open work exits at once: the send that follows
        the error's advice (a fixed PATH or HARNESSCTL_ACP_*_CMD) starts a new
        runtime with its own environment, instead of this one failing alike.
        (A start that fails before any send waits is tried again by the send
        that comes: the spawning one is on its way.)"""
        told = bool(self.sends.waiting)
        self.sends.fail_waiting(error)
        self.sends.fail_held(error)
        if told and self._is_idle():
            self.shutdown("the harness could not start: %s" % error)

    def harness_exited(self, while_starting: bool, returncode: Optional[int], said: str) -> None:
        """The harness is gone.  `said` (kit.backend.stderr_words) is what the
        message quotes of its stderr: its own reason for exiting, which the
        send that fails or the run that ends must show, not only the log."""
        if self.stopping:  # its backend said it could not start, and we stopped for that
            return
        message = "the harness exited unexpectedly (exit code %s)%s; see %s" % (returncode, said,
                                                                               self.addr.runtime_log)
        if while_starting:
            self.harness_refused(UnavailableError(message))
            if self.stopping:
                return
        self.harness_gone(message)

    def cancel_overdue(self, message: str) -> None:
        """The harness ignored a cancel for the grace period: it is stopped,
        and what is open ends `cancelled` (the caller asked for that)."""
        self.debug(message)
        self.supervisor.drop()
        self.harness_gone(message, cancelled=True)

    def harness_gone(self, message: str, cancelled: bool = False) -> None:
        """The harness is gone: the send it was confirming fails, what is open
        ends with `message` (its runs `cancelled`, or `failed` where the
        budget asked for the cancel), none of its requests will be answered,
        and the next send starts a new harness, resuming the conversation."""
        if self.sends.in_flight:
            self.host.send_failed(self.sends.in_flight[0].input_id, message, unavailable=True)
        ended = close_open_work(self.conv, message, keep=self.sends.held_ids())
        if cancelled:
            ended = [cancel.cancelled(e, self.spending.run_ended(e["run_id"])) if e["type"] == "result" else e
                     for e in ended]
        self.writer.write_all(ended)
        self.host.forget_requests()
        self.cancel.over()
        self.sends.pump()

    # -- the end --------------------------------------------------------------

    def shutdown(self, reason: str) -> None:
        """Stop taking commands, stop the harness, record what ends with us.
        Once only: a SIGTERM may arrive in the loop pass that reached the idle deadline."""
        if self.stopping:
            return
        self.debug("shutting down: %s" % reason)
        self.stopping = True
        self.lifetime.close()
        self.sends.close()
        self.hooks.stop()  # running hooks are killed; what is written from now on runs none
        self.server.stop()
        self.supervisor.stop()
        self.sends.stop(reason)
        ended = "the runtime stopped (%s) before the run ended" % reason
        self.loop.guard(lambda: self.writer.write_all(close_open_work(self.conv, ended)))
        self._written()
        self.watches.retry_all()  # their lines could not be written here: the command recovers
        for waiter in self.loop.drain():  # commands that reached us after we stopped listening
            waiter.retry()
        self.server.join()
        close_file(self.writer, self.conv, self.addr, self.binding, self.debug)
