"""Claude Code adapter: one long-lived `claude -p` speaking stream-json.

Wire facts this relies on (recorded from the real Claude Code 2.1.332 against a loopback
Messages API mock):

* every stdin user line that carries a `uuid` gets a `command_lifecycle`
  `queued` receipt within milliseconds; that receipt is our `accepted`;
* `command_lifecycle` `started` for U means "U is consumed by the turn whose
  result comes next": while a turn runs, U was folded into it; when none runs,
  U starts a new turn (possibly together with other waiting inputs, which get
  their own `started` before that turn's result).  Each turn's `system/init`
  repeats the uuids that started it.  Only these confirmations set a run id:
  attribution is never guessed from ordering;
* `result.user_message_uuids` lists every input a turn consumed;
  `is_error` + `terminal_reason` say how it ended (`subtype` does not);
* an `interrupt` control request with `cancel_queued` aborts the turn and
  drops queued inputs (listed in the response's `cancelled`);
* one malformed stdin line kills the process, so every line is validated;
* `--resume SRC --fork-session` starts a new session holding SRC's history,
  from any cwd (a file `harnessctl fork` made, until it has its own session);
  an unknown SRC ends Claude before it answers `initialize`.

What the agent did becomes the activity vocabulary in messages.py (the
shapes behind each mapping are listed there); what Claude asks (its
can_use_tool prompts) becomes requests in asking.py; the pure shapes, its
arguments and its stdin lines live in wire.py.  This module holds the
process and the state its turns share: receipts, consumption, results,
control requests, the schema restart.
"""

from __future__ import annotations

from harnessctl.kit import ChildBackend, Config, Host, Input, on_handlers

from . import wire
from .control import Control
from .messages import Messages, Run

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set

SESSION_FILE = "claude-session-id"


class Pending:
    """A send written to Claude and waiting for its `queued` receipt."""

    def __init__(self, item: Input, delivery: str, run: Optional[Run]) -> None:
        self.item = item
        self.delivery = delivery
        self.run = run


class ClaudeCodeBackend(ChildBackend):
    """harnessctl Backend over `claude -p --input-format stream-json ...`."""

    RESUME_FILE = SESSION_FILE  # the conversation handle `fork` copies (kit/backend.py)
    SCHEMA_PER_PROCESS = True  # --json-schema is a process flag (Backend.SCHEMA_PER_PROCESS)

    KEY = "type"
    HANDLERS = on_handlers("command_lifecycle", "system", "assistant", "user", "result", "stream_event",
                           "control_request", "control_cancel_request", "control_response")

    def __init__(self, host: Host, config: Config) -> None:
        super().__init__(host, config)
        self._reset()

    # -- state -------------------------------------------------------------------

    def _reset(self) -> None:
        """Forget everything about the current Claude process."""
        self.ready = False
        self._pending: Dict[str, Pending] = {}  # input id -> send waiting for its receipt
        self._schema_inputs: Set[str] = set()  # open inputs that brought a schema (send --schema)
        self._active: Optional[Run] = None  # the turn Claude is running
        self._next: Optional[Run] = None  # a run we started while idle, not yet taken by Claude
        self._run_of: Dict[str, Optional[Run]] = {}  # open input id -> run (None: not yet known)
        self._start_error: Optional[str] = None
        self.messages = Messages(self.host, self.activity)  # stream-json -> activity
        self.control = Control(self.host, self._write, self.messages.declined)  # control requests, both ways

    def _active_id(self) -> Optional[str]:
        return self._active.run_id if self._active else None

    def _write(self, frame: Dict[str, Any]) -> None:
        line = wire.stdin_line(frame)  # raises ValueError for a line that would kill Claude
        if self.child is not None:
            self.child.write_line(line)

    # -- Backend API ---------------------------------------------------------------

    def start(self) -> None:
        """Spawn (resuming the stored session) and send `initialize` as the
        readiness check: `system/init` only comes once a turn starts."""
        self._reset()
        session_id = self.load_resume(SESSION_FILE)  # kept in the sidecar after an idle exit or a crash
        fork_from = None if session_id else self.load_fork(SESSION_FILE)
        argv = self.harness_argv(wire.arguments(self.config, session_id, fork_from))
        if argv is None or not self.spawn_harness(argv):
            return
        self.control.initialize()

    def send(self, item: Input) -> None:
        """Write the user line at once; `accepted` follows Claude's receipt.
        Idle means no open run and no input still waiting for attribution:
        only then may a new run be announced (delivery start)."""
        if self.child is None or not self.ready:
            self.host.send_failed(item.input_id, "claude is not running", unavailable=True)
            return
        busy = bool(self._active or self._next or self._run_of or self._pending)
        run = None if busy else Run(self.host.new_run())
        try:
            self._write(wire.user_line(item.input_id, item.text))
        except ValueError as exc:
            self.host.send_failed(item.input_id, "cannot encode the input for claude: %s" % exc)
            return
        if run is not None:
            run.inputs.append(item.input_id)
        self._pending[item.input_id] = Pending(item, "steer" if busy else "start", run)
        if item.schema is not None:
            self._schema_inputs.add(item.input_id)

    def interrupt(self) -> None:
        """Abort the turn and drop queued inputs; results follow from Claude."""
        if self.child is not None:
            self.control.interrupt()

    def answer(self, token: Any, answer: Any) -> None:
        """A validated reply to one of Claude's can_use_tool prompts (control.py)."""
        if self.child is not None:
            self.control.answer(token, answer)

    def harness_argv(self, args: List[str]) -> Optional[List[str]]:
        """Without the user's flags that would overrule a send's schema or the bound mode."""
        argv = super().harness_argv(args)
        return None if argv is None else wire.without_user_flags(argv, len(args) + 1, self.config.mode)

    def before_stop(self) -> None:
        """Closing stdin ends Claude (~40 ms when idle), but a turn and its tools
        would go on after EOF: interrupt it first (SIGTERM mid-run)."""
        if self._active or self._next or self._run_of:
            self.interrupt()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Claude is gone: report why it could not start, if it never did
        (wire.start_failure).  The runtime itself fails the send in flight
        and every open run, and expires pending requests; the next start
        resumes the session."""
        child, self.child = self.child, None
        if not self.ready:
            stderr = child.stderr_tail() if child is not None else ""
            self.host.start_failed(wire.start_failure(self._start_error, returncode, stderr, self.config.mode))
        self._reset()

    # -- Claude's output ----------------------------------------------------------

    def on_unhandled(self, frame: Dict[str, Any]) -> None:
        if frame.get("type") != "keep_alive":
            self.host.log("native", level="debug", frame=wire.slim(frame))

    def _on_command_lifecycle(self, frame: Dict[str, Any]) -> None:
        uuid = frame.get("command_uuid")
        state = frame.get("state")
        if state == "queued":
            self._on_receipt(uuid)
        elif state == "started":
            self._on_receipt(uuid)  # defensive: a started without queued still means Claude has it
            self._on_started(uuid)
        elif state == "cancelled":
            self._cancel_unstarted(uuid)

    def _on_receipt(self, uuid: Optional[str]) -> None:
        """Claude has the input: write `accepted` (even after the sender timed
        out: exit 6 promised only that the input MAY have been accepted)."""
        pending = self._pending.pop(str(uuid), None)
        if pending is None:
            return
        input_id = pending.item.input_id  # the uuid we wrote on its line (str(uuid) found it)
        run = pending.run
        self._run_of[input_id] = run
        if run is not None:
            self._next = run
        self.host.accepted(input_id, pending.delivery, run.run_id if run else None)

    def _on_started(self, uuid: Optional[str]) -> None:
        """Claude took `uuid` into a turn: the active one, or a new one."""
        if uuid not in self._run_of:
            return
        run = self._run_of[uuid]
        if run is None:
            if self._active is None:
                self._active = Run(self.host.new_run())
            self._attribute(uuid, self._active)
        elif run is self._next and self._active is None:
            self._active, self._next = run, None

    def _on_started_all(self, frame: Dict[str, Any]) -> None:
        """The uuids a turn's first frames repeat (its init, its first API
        call, its assistant messages): each was taken into that turn."""
        for uuid in frame.get("user_message_uuids") or []:
            self._on_started(uuid)

    def _attribute(self, uuid: str, run: Run) -> None:
        run.inputs.append(uuid)
        self._run_of[uuid] = run
        self.host.attributed(uuid, run.run_id)

    def _cancel_unstarted(self, uuid: Optional[str]) -> None:
        """An input Claude dropped before running it gets its own cancelled
        result; no run consumed it, so (like the core's failed results for
        unclaimed inputs) its run_id stays null.  The starting input of an
        aborted turn is also reported cancelled, after that turn's result: by
        then it is no longer open, so nothing happens."""
        if uuid not in self._run_of:
            return
        run = self._run_of[uuid]
        if run is not None and run is self._active:
            return  # its turn's result covers it
        del self._run_of[uuid]
        if run is not None and run is self._next:
            self._next = None
        self.host.result(run.run_id if run else None, [uuid], "cancelled")

    def _on_system(self, frame: Dict[str, Any]) -> None:
        if frame.get("subtype") == "init":
            self._on_started_all(frame)
        self.messages.on_system(self._active_id(), frame)

    def _on_stream_event(self, frame: Dict[str, Any]) -> None:
        if wire.as_object(frame.get("event")).get("type") == "message_start":
            self._on_started_all(frame)
        self.messages.on_stream_event(self._active, frame)

    def _on_assistant(self, frame: Dict[str, Any]) -> None:
        self._on_started_all(frame)
        self.messages.on_assistant(self._active, frame)

    def _on_user(self, frame: Dict[str, Any]) -> None:
        self.messages.on_user(self._active_id(), frame)

    def _on_result(self, frame: Dict[str, Any]) -> None:
        """A turn ended.  Only now is its session id stored: Claude killed during
        its first turn leaves no conversation, and `--resume` of it would fail
        with "No conversation found"."""
        session_id = wire.text_or_none(frame.get("session_id"))
        if frame.get("num_turns") and session_id:
            self.save_resume(SESSION_FILE, session_id)
        if not self.ready:
            self._start_error = "; ".join(frame.get("errors") or []) or "claude refused to start a session"
            return
        uuids = [u for u in frame.get("user_message_uuids") or [] if u in self._run_of]
        run = self._result_run(uuids)
        if run is None:
            self.host.log("native", level="debug", frame=wire.slim(frame))
            return
        for uuid in uuids:
            if self._run_of.get(uuid) is not run:
                self._attribute(uuid, run)
        covered = uuids + [u for u in run.inputs if u not in uuids]
        for uuid in covered:
            self._run_of.pop(uuid, None)
        if run is self._active:
            self._active = None
        if run is self._next:
            self._next = None
        schema = bool(self._schema_inputs.intersection(covered))  # a run its send asked a schema of
        self._schema_inputs.difference_update(covered)
        self.messages.on_result(run, covered, frame, schema)

    def _result_run(self, uuids: List[str]) -> Optional[Run]:
        for uuid in uuids:
            if self._run_of.get(uuid) is not None:
                return self._run_of[uuid]
        if self._active is not None:
            return self._active
        return Run(self.host.new_run()) if uuids else None

    def _on_control_request(self, frame: Dict[str, Any]) -> None:
        self.control.on_request(self._active_id(), frame)

    def _on_control_cancel_request(self, frame: Dict[str, Any]) -> None:
        self.control.on_cancel(frame)

    def _on_control_response(self, frame: Dict[str, Any]) -> None:
        ours, response = self.control.on_response(frame)
        if ours == "initialize":
            self._on_initialized(response)
        elif ours == "interrupt":
            for uuid in (response.get("response") or {}).get("cancelled") or []:
                self._cancel_unstarted(uuid)

    def _on_initialized(self, response: Dict[str, Any]) -> None:
        if response.get("subtype") != "success":
            self._start_error = "claude refused to initialize: %s" % response.get("error")
            if self.child is not None:
                self.child.kill()
            return
        if not self.ready:
            self.ready = True
            self.host.ready()
