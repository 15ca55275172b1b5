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

What the agent did becomes the activity vocabulary (harnessctl/kit/activity.py);
the shapes behind each mapping (recorded the same way, transcripts activity__*):

* `--include-partial-messages` adds `stream_event` frames whose `api_message_id`
  is the id of the assistant message they build: text and thinking deltas are
  logged from them, so the whole frames that follow (one per content block)
  log only what was not streamed (a sub-agent's text comes whole);
* a Bash tool_result carries no exit code when it succeeds, and starts with
  "Exit code N" (is_error) when the command failed: that N is the exit code;
* Write / Edit results carry `tool_use_result` with `filePath`,
  `structuredPatch` hunks, `originalFile` and (Write) `type` create | update;
* a tool refused by our deny or by Claude's policy has a `tool_result_meta`
  entry whose `permission_decision.decision` is `reject`;
* `model_usage_since_last_result` is the turn's usage per model, sub-agents
  included (`result.usage` leaves them out), with the model's `contextWindow`.

Why one module of this size: each fact above is a handler of the same
receipt and turn state (receipts, consumption, results, control requests,
the schema restart); the pure shapes live in wire.py.
"""

from __future__ import annotations

import json

from harnessctl.kit import ChildBackend, Config, Host, Input, amount, on_handlers

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set, Tuple

FORCED_ARGS = [
    "-p",
    "--input-format", "stream-json",
    "--output-format", "stream-json",
    "--verbose",
    "--replay-user-messages",
    "--permission-prompt-tool", "stdio",
    "--include-partial-messages",
]


def permission_settings(own_files: Tuple[str, str], mode: Optional[str]) -> List[str]:
    """Claude's `--settings`, one only (a second replaces the first):

    * deny rules for the event file and its sidecar, as `.git` is kept from
      codex: under a mode that lets it edit the workspace (acceptEdits,
      bypassPermissions) its file tools still cannot rewrite harnessctl's
      record or binding.  A shell command can (README, Security).  `//`
      starts an absolute path in a rule; Edit covers every file-editing tool;
    * under --mode edit, an ask rule for Bash: acceptEdits alone runs the
      commands it counts as file edits inside the cwd (touch, mkdir, mv, cp,
      rm -rf, `>`) without asking, and in `edit` every command asks."""
    event_file, sidecar = own_files  # Config.own_files
    own = (event_file, sidecar + "/**")
    permissions: Dict[str, Any] = {"deny": ["Edit(/%s)" % path for path in own]}
    if mode == "edit":
        permissions["ask"] = ["Bash"]
    return ["--settings", json.dumps({"permissions": permissions})]


# --mode (harnessctl/checks/policy.py MODES) as Claude's --permission-mode.  Recorded
# differences (README): `default` lets read-only commands run and asks before
# reads outside the cwd; Claude refuses `bypassPermissions` as root unless
# IS_SANDBOX=1 (the start fails with its reason).
PERMISSION_MODES = {"ask": "default", "edit": "acceptEdits", "full": "bypassPermissions"}
# The flags of the user's own arguments that decide what asks, each with the
# number of values it takes (-1: every value up to the next option).  Under a
# bound mode they are left out: Claude takes the last --permission-mode but
# lets --dangerously-skip-permissions win over any, --allowedTools' rules
# let a tool through without asking, and --permission-prompts none refuses
# instead of asking.
MODE_FLAGS = {"--permission-mode": 1, "--dangerously-skip-permissions": 0, "--allowedTools": -1,
              "--allowed-tools": -1, "--permission-prompts": 1}


# The answer's schema is each send's own (send --schema, Config.schema): the
# user's arguments never set one for every run.
SCHEMA_FLAGS = {"--json-schema": 1}


def without_mode_flags(args: List[str], flags: Dict[str, int] = MODE_FLAGS) -> List[str]:
    """The user's arguments without `flags` (in `--flag value` or `--flag=value` form)."""
    kept: List[str] = []
    skip, variadic = 0, False
    for arg in args:
        if skip or (variadic and not arg.startswith("-")):
            skip = max(skip - 1, 0)
            continue
        name, equals, _ = arg.partition("=")
        count = flags.get(name) if name.startswith("--") else None
        if count is None:
            kept.append(arg)
            variadic = False
            continue
        skip, variadic = (0 if equals else max(count, 0)), count < 0
    return kept


SESSION_FILE = "claude-session-id"
DENY_MESSAGE = "The user denied this action."
QUESTION_TOOL = "AskUserQuestion"
HARNESS = "claude"
FILE_TOOLS = ("Edit", "MultiEdit", "Write")  # their tool_use_result holds the change
PLAN_TOOL = "TodoWrite"
INTERRUPT_NOTICE = "[Request interrupted"  # Claude's own user-side notice of an interrupt
SEEN_TOOLS_LIMIT = 256  # tool names remembered until their result (an interrupted tool never has one)


class Run:
    """One of our runs = one Claude turn: its inputs and its message texts."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.inputs: List[str] = []
        self.texts: Dict[str, List[str]] = {}  # assistant message id -> text blocks
        self.streamed: Set[Tuple[str, str]] = set()  # (block type, message id) already logged as deltas
        self.api_error: Optional[str] = None
        self.error_class: Optional[str] = None
        self.context_used: Optional[int] = None  # prompt tokens of the last main-thread API call
        # API message id -> [prompt tokens, cache reads among them, output tokens], as they stream
        self.calls: Dict[str, List[int]] = {}


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
        self._control_seq = 0
        self._init_id: Optional[str] = None
        self._interrupt_ids: Set[str] = set()
        self._answered_ids: Set[str] = set()  # Claude's request ids we answered (their echo is ignored)
        self._pending: Dict[str, Pending] = {}  # input id -> send waiting for its receipt
        self._schema_inputs: Set[str] = set()  # open inputs that brought a schema (send --schema)
        self._active: Optional[Run] = None  # the turn Claude is running
        self._next: Optional[Run] = None  # a run we started while idle, not yet taken by Claude
        self._run_of: Dict[str, Optional[Run]] = {}  # open input id -> run (None: not yet known)
        self._requests: Dict[str, Dict[str, Any]] = {}  # Claude's request id -> what answering it needs
        self._last_total_cost = 0.0
        self._start_error: Optional[str] = None
        self._session_logged = False
        self._model: Optional[str] = None
        self._tools: Dict[str, Tuple[str, Dict[str, Any]]] = {}  # open tool_use id -> (name, input)
        self._declined: Set[str] = set()  # tool_use ids refused (our deny, Claude's policy)

    # -- Backend API ---------------------------------------------------------------

    def start(self) -> None:
        """Spawn (resuming the stored session) and send `initialize` as the
        readiness check: `system/init` only comes once a turn starts."""
        self._reset()
        argv = self.harness_argv(self._arguments())
        if argv is None or not self.spawn_harness(argv):
            return
        self._init_id = self._control_id("init")
        self._write({"type": "control_request", "request_id": self._init_id,
                     "request": {"subtype": "initialize", "hooks": None}})

    def send(self, item: Input) -> None:
        """Write the user line at once; `accepted` follows Claude's receipt.
        Idle means no open run and no input still waiting for attribution:
        only then may a new run be announced (delivery start)."""
        if self.child is None or not self.ready:
            self.host.send_failed(item.input_id, "claude is not running", unavailable=True)
            return
        busy = bool(self._active or self._next or self._run_of or self._pending)
        run = None if busy else Run(self.host.new_run())
        line = {"type": "user", "message": {"role": "user", "content": item.text},
                "parent_tool_use_id": None, "uuid": item.input_id}
        try:
            self._write(line)
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
        if self.child is None:
            return
        request_id = self._control_id("interrupt")
        self._interrupt_ids.add(request_id)
        self._write({"type": "control_request", "request_id": request_id,
                     "request": {"subtype": "interrupt", "cancel_queued": True}})

    def answer(self, token: Any, answer: Any) -> None:
        """Turn a validated reply into Claude's can_use_tool response."""
        request = self._requests.pop(token, None)
        if request is None or self.child is None:
            return
        tool_input = request["input"]
        if request["kind"] == "question":
            answers = {q["question"]: answer[q["id"]] for q in request["questions"] if q["id"] in answer}
            response = {"behavior": "allow", "updatedInput": dict(tool_input, answers=answers)}
        elif answer == "deny":
            response = {"behavior": "deny", "message": DENY_MESSAGE}
            if request["tool_use_id"]:
                self._declined.add(request["tool_use_id"])
        else:
            response = {"behavior": "allow", "updatedInput": tool_input}
            if answer == "allow-session" and request["suggestions"]:
                response["updatedPermissions"] = request["suggestions"]
        self._answered_ids.add(request["claude_id"])
        self._write({"type": "control_response", "response": {
            "subtype": "success", "request_id": request["claude_id"], "response": response}})

    def harness_argv(self, args: List[str]) -> Optional[List[str]]:
        """The user's own arguments lose --json-schema, and under a bound mode
        the flags that would overrule it."""
        argv = super().harness_argv(args)
        if argv is None:
            return argv
        flags = dict(SCHEMA_FLAGS, **MODE_FLAGS) if self.config.mode is not None else SCHEMA_FLAGS
        return argv[:len(args) + 1] + without_mode_flags(argv[len(args) + 1:], flags)

    def before_stop(self) -> None:
        """Closing stdin ends Claude (~40 ms when idle), but a turn and its tools
        would go on after EOF: interrupt it first (SIGTERM mid-run)."""
        if self._active or self._next or self._run_of:
            self.interrupt()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Claude is gone: report why it could not start, if it never did (its
        own reason: the error of its result, else the last line of its stderr,
        e.g. its refusal of bypassPermissions as root).  The
        runtime itself fails the send in flight and every open run, and
        expires pending requests; the next start resumes the session."""
        child, self.child = self.child, None
        if not self.ready:
            said = child.stderr_tail().strip().splitlines() if child is not None else []
            reason = self._start_error or "claude exited (code %s) before it was ready%s" % (
                returncode, ": " + said[-1].strip() if said else "")
            if self.config.mode == "full":  # Claude's refusal names the flag behind the mode
                reason += " (--mode full is --permission-mode bypassPermissions)"
            self.host.start_failed(reason)
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
        if run is not None and run is self._next and self._active is None:
            self._active, self._next = run, None
            return
        if run is not None:
            return
        if self._active is None:
            self._active = Run(self.host.new_run())
        self._attribute(uuid, self._active)

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
        subtype = frame.get("subtype")
        if subtype == "init":
            for uuid in frame.get("user_message_uuids") or []:
                self._on_started(uuid)
            self._on_init(frame)
        elif subtype == "api_retry":
            self.activity.warning(self._active_id(), wire.retry_message(frame), source="api_retry")
        elif subtype in ("task_started", "task_notification", "task_progress", "task_updated"):
            self._on_task(subtype[5:], frame)
        elif subtype == "permission_denied":
            if isinstance(frame.get("tool_use_id"), str):
                self._declined.add(frame["tool_use_id"])
            message = "%s refused by Claude's permission rules: %s" % (frame.get("tool_name") or "a tool",
                                                                        frame.get("message") or "no reason given")
            self.activity.warning(self._active_id(), message, source="permission_denied")
        else:
            self.host.log("native", level="debug", run_id=self._active_id(), frame=wire.slim(frame))

    def _on_init(self, frame: Dict[str, Any]) -> None:
        """Each turn's init: the session line once per harness start."""
        if isinstance(frame.get("model"), str):
            self._model = frame["model"]
        if "msg_lifecycle_v1" not in (frame.get("capabilities") or ["msg_lifecycle_v1"]):
            self.host.log("diagnostic", level="warning",
                          message="this Claude Code lacks msg_lifecycle_v1: attribution may stay unknown")
        if self._session_logged:
            return
        self._session_logged = True
        sandbox = frame.get("sandbox_enabled")
        self.activity.session(wire.text_or_none(frame.get("session_id")), HARNESS,
                              version=wire.text_or_none(frame.get("claude_code_version")), model=self._model,
                              approval_policy=wire.text_or_none(frame.get("permissionMode")),
                              sandbox=None if not isinstance(sandbox, bool) else "enabled" if sandbox else "disabled")

    def _on_task(self, what: str, frame: Dict[str, Any]) -> None:
        """Background work Claude tracks (a sub-agent, a shell): its own kinds,
        `task.started` / `task.progress` / `task.updated` / `task.notification`,
        tied to the tool that spawned it by `tool_id` when Claude names it."""
        keys = ("task_id", "task_type", "description", "status", "summary")
        fields: Dict[str, Any] = {k: frame.get(k) for k in keys if frame.get(k) is not None}
        if isinstance(frame.get("tool_use_id"), str):
            fields["tool_id"] = frame["tool_use_id"]
        if isinstance(frame.get("patch"), dict) and frame["patch"].get("status") is not None:
            fields["status"] = frame["patch"]["status"]
        self.host.log("task." + what, run_id=self._active_id(), **fields)

    def _on_stream_event(self, frame: Dict[str, Any]) -> None:
        """--include-partial-messages: text and thinking deltas as they stream,
        under the id of the assistant message they build (`api_message_id`)."""
        event = wire.as_object(frame.get("event"))
        if event.get("type") == "message_start":
            for uuid in frame.get("user_message_uuids") or []:
                self._on_started(uuid)
        run = self._active
        delta = wire.as_object(event.get("delta"))
        if run is not None and event.get("type") in ("message_start", "message_delta"):
            self._stream_usage(run, frame, event)
        if run is None or event.get("type") != "content_block_delta":
            return
        message_id = wire.text_or_none(frame.get("api_message_id"))
        if message_id is None:
            return
        if delta.get("type") == "text_delta":
            run.streamed.add(("text", message_id))
            self.activity.text(run.run_id, message_id, str(delta.get("text") or ""),
                               parent_tool_id=wire.text_or_none(frame.get("parent_tool_use_id")))
        elif delta.get("type") == "thinking_delta":
            run.streamed.add(("thinking", message_id))
            self.activity.reasoning(run.run_id, str(delta.get("thinking") or ""), form="raw")

    def _on_assistant(self, frame: Dict[str, Any]) -> None:
        for uuid in frame.get("user_message_uuids") or []:
            self._on_started(uuid)
        run = self._active
        message = frame.get("message") or {}
        if run is None:
            self.host.log("native", level="debug", frame=wire.slim(frame))
            return
        if frame.get("is_api_error_message") or message.get("model") == "<synthetic>":
            run.api_error = wire.join_text(message.get("content"))
            run.error_class = wire.error_class(frame)
            self.host.log("native", level="debug", run_id=run.run_id, frame=wire.slim(frame))
            return
        message_id = str(message.get("id") or frame.get("uuid"))
        parent = wire.text_or_none(frame.get("parent_tool_use_id"))
        if parent is None:
            run.context_used = wire.prompt_tokens(message.get("usage")) or run.context_used
        for block in message.get("content") or []:
            kind = block.get("type")
            if kind == "text" and (frame.get("aborted") or parent):
                # cut off by an interrupt (a fragment, EVENT.md), or a sub-agent's: log only
                if ("text", message_id) not in run.streamed:
                    self.activity.text(run.run_id, message_id, str(block.get("text") or ""), parent_tool_id=parent)
            elif kind == "text":
                texts = run.texts.setdefault(message_id, [])
                texts.append(block.get("text", ""))
                self.host.message(run.run_id, message_id, "\n\n".join(t for t in texts if t))
            elif kind == "tool_use" and isinstance(block.get("id"), str):
                self._tool_started(run, block, parent)
            elif kind == "thinking" and ("thinking", message_id) not in run.streamed:
                self.activity.reasoning(run.run_id, str(block.get("thinking") or ""), form="raw")
            elif kind == "redacted_thinking":
                self.activity.reasoning(run.run_id, "", form="redacted")

    def _tool_started(self, run: Run, block: Dict[str, Any], parent: Optional[str]) -> None:
        name = str(block.get("name") or "tool")
        tool_input = wire.as_object(block.get("input"))
        kind, title = wire.tool_kind(name, tool_input)
        if len(self._tools) >= SEEN_TOOLS_LIMIT:
            self._tools.pop(next(iter(self._tools)))
        self._tools[block["id"]] = (name, tool_input)
        if name == PLAN_TOOL:
            entries = wire.plan_entries(tool_input)
            if entries is not None:
                self.activity.plan(run.run_id, entries)
        self.activity.tool_started(run.run_id, block["id"], kind, name, title, input=block.get("input"),
                                   parent_tool_id=parent)

    def _on_user(self, frame: Dict[str, Any]) -> None:
        """Tool results become tool.completed (and file.changed); replays of our
        own inputs are noise; Claude's interrupt notices are warnings."""
        if frame.get("isReplay"):
            return
        content = (frame.get("message") or {}).get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        results = [b for b in blocks if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)]
        for block in results:
            # the frame's tool_use_result belongs to its tool_result when there is only one
            detail = frame.get("tool_use_result") if len(results) == 1 else None
            self._tool_completed(block, detail, frame.get("tool_result_meta"))
        for block in blocks:
            text = block.get("text")
            if block.get("type") != "text" or not isinstance(text, str):
                continue
            if text.startswith(INTERRUPT_NOTICE):
                self.activity.warning(self._active_id(), text, source="interrupt")
            else:
                self.host.log("native", level="debug", run_id=self._active_id(), frame=wire.slim(frame))

    def _tool_completed(self, block: Dict[str, Any], detail: Any, meta: Any) -> None:
        tool_id = block["tool_use_id"]
        name, tool_input = self._tools.pop(tool_id, ("", {}))
        output = wire.join_text(block.get("content"))
        if tool_id in self._declined or wire.rejected(tool_id, meta):
            self._declined.discard(tool_id)
            status = "declined"
        else:
            status = "failed" if block.get("is_error") else "completed"
        exit_code = wire.bash_exit_code(status, output, detail) if name == "Bash" else None
        run_id = self._active_id()
        self.activity.tool_completed(run_id, tool_id, status, exit_code=exit_code, output=output)
        if status == "completed" and name in FILE_TOOLS and isinstance(detail, dict):
            change = wire.file_change(detail, tool_input)
            if change is not None:
                path, kind, diff = change
                self.activity.file_changed(run_id, tool_id, path, kind, diff=diff)

    def _on_result(self, frame: Dict[str, Any]) -> None:
        self._remember_session(frame, persist=bool(frame.get("num_turns")))
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
        status, output, error = wire.outcome(frame, run.api_error)
        turn = wire.turn_usage(frame)
        if turn:
            self._log_usage(run, frame, turn)
        error_class, structured = None, None
        if status == "failed":
            error_class = wire.error_class(frame) or run.error_class or wire.terminal_class(frame)
        if self._schema_inputs.intersection(covered):  # a run its send asked a schema of
            self._schema_inputs.difference_update(covered)
            status, structured, error, error_class = wire.structured(frame, status, error, error_class)
        self.host.result(run.run_id, covered, status, output=output, usage=turn or wire.usage(frame.get("usage")),
                         cost_usd=self._turn_cost(frame), error=error, error_class=error_class,
                         output_json=structured)

    def _stream_usage(self, run: Run, frame: Dict[str, Any], event: Dict[str, Any]) -> None:
        """The run's tokens so far, as each API call's usage streams (its
        prompt at message_start, its output at message_delta, sub-agents'
        calls too): a `usage` line each time, so a budget acts mid-run; the
        result's usage line (_log_usage) is the exact total."""
        message_id = wire.text_or_none(frame.get("api_message_id"))
        if message_id is None:
            return
        if event.get("type") == "message_start":
            usage = wire.as_object(wire.as_object(event.get("message")).get("usage"))
            cache_read = usage.get("cache_read_input_tokens")
            run.calls[message_id] = [wire.prompt_tokens(usage) or 0, cache_read if isinstance(cache_read, int) else 0,
                                     0]
        output = wire.as_object(event.get("usage")).get("output_tokens")
        if message_id in run.calls and isinstance(output, int):
            run.calls[message_id][2] = output
        prompt, cached, out = (sum(call[i] for call in run.calls.values()) for i in range(3))
        self.activity.usage(run.run_id, input_tokens=prompt, cached_input_tokens=cached, output_tokens=out,
                            reasoning_tokens=None, context_window=None, context_used=run.context_used)

    def _log_usage(self, run: Run, frame: Dict[str, Any], turn: Dict[str, int]) -> None:
        """The run's tokens in the vocabulary: input counts every prompt token
        (cache reads and writes included, as in the other harnesses), cached
        the cache reads among them; Claude reports no separate reasoning count
        (thinking is part of output)."""
        cache_read = turn.get("cache_read_input_tokens", 0)
        prompt = turn.get("input_tokens", 0) + cache_read + turn.get("cache_creation_input_tokens", 0)
        self.activity.usage(run.run_id, input_tokens=prompt, cached_input_tokens=cache_read,
                            output_tokens=turn.get("output_tokens"), reasoning_tokens=None,
                            context_window=wire.context_window(frame, self._model), context_used=run.context_used)

    def _result_run(self, uuids: List[str]) -> Optional[Run]:
        for uuid in uuids:
            if self._run_of.get(uuid) is not None:
                return self._run_of[uuid]
        if self._active is not None:
            return self._active
        return Run(self.host.new_run()) if uuids else None

    def _on_control_request(self, frame: Dict[str, Any]) -> None:
        request = frame.get("request") or {}
        claude_id = frame.get("request_id")
        if request.get("subtype") != "can_use_tool" or not isinstance(claude_id, str):
            self._write({"type": "control_response", "response": {
                "subtype": "error", "request_id": claude_id,
                "error": "harnessctl does not support %s" % request.get("subtype")}})
            return
        tool = str(request.get("tool_name") or "tool")
        tool_input = wire.as_object(request.get("input"))
        subject = wire.permission_subject(tool, tool_input)
        entry: Dict[str, Any] = {"claude_id": claude_id, "input": tool_input, "kind": "permission",
                                 "suggestions": request.get("permission_suggestions") or [], "questions": [],
                                 "tool_use_id": wire.text_or_none(request.get("tool_use_id"))}
        if tool == QUESTION_TOOL and isinstance(tool_input.get("questions"), list):
            entry["kind"] = "question"
            entry["questions"] = wire.questions(tool_input["questions"])
            self.host.request(self._active_id(), "question", wire.question_message(entry["questions"]),
                              details=dict(subject, questions=entry["questions"]), token=claude_id)
        else:
            entry["suggestions"] = wire.session_rules(entry["suggestions"])
            if request.get("suppress_always_allow_rule") or request.get("requires_user_interaction"):
                entry["suggestions"] = []  # Claude must not offer "don't ask again" for this ask
            options = ["allow", "deny"] + (["allow-session"] if entry["suggestions"] else [])
            details = dict(subject, input=tool_input)
            for key in ("description", "blocked_path", "decision_reason", "tool_use_id"):
                if request.get(key) is not None:
                    details[key] = request[key]
            self.host.request(self._active_id(), "permission", wire.permission_message(tool, request),
                              options=options, details=details, token=claude_id)
        self._requests[claude_id] = entry

    def _on_control_cancel_request(self, frame: Dict[str, Any]) -> None:
        claude_id = str(frame.get("request_id"))
        if self._requests.pop(claude_id, None) is not None:
            self.host.request_closed(claude_id)

    def _on_control_response(self, frame: Dict[str, Any]) -> None:
        response = frame.get("response") or {}
        request_id = response.get("request_id")
        if request_id in self._answered_ids:
            self._answered_ids.discard(request_id)  # the echo of our own answer
            return
        if request_id == self._init_id:
            self._on_initialized(response)
        elif request_id in self._interrupt_ids:
            self._interrupt_ids.discard(request_id)
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

    # -- helpers ----------------------------------------------------------------------

    def _arguments(self) -> List[str]:
        args = FORCED_ARGS + permission_settings(self.config.own_files, self.config.mode)
        session_id = self._stored_session()
        fork_from = None if session_id else self.load_fork(SESSION_FILE)
        if session_id:
            args += ["--resume", session_id]
        elif fork_from:  # its own session id is saved after its first turn, as always
            args += ["--resume", fork_from, "--fork-session"]
        if self.config.model:
            args += ["--model", self.config.model]
        if self.config.mode:
            args += ["--permission-mode", PERMISSION_MODES[self.config.mode]]
        if self.config.schema is not None:
            args += ["--json-schema", json.dumps(self.config.schema, separators=(",", ":"))]
        return args

    def _control_id(self, prefix: str) -> str:
        self._control_seq += 1
        return "harnessctl-%s-%d" % (prefix, self._control_seq)

    def _active_id(self) -> Optional[str]:
        return self._active.run_id if self._active else None

    def _write(self, frame: Dict[str, Any]) -> None:
        """Write one validated JSON line: a malformed line would kill Claude."""
        line = json.dumps(frame, ensure_ascii=True, separators=(",", ":"))
        if "\n" in line or "\r" in line or json.loads(line) != frame:
            raise ValueError("refusing to write an invalid stdin line")
        if frame.get("type") not in ("user", "control_request", "control_response"):
            raise ValueError("unknown stdin line type %r" % frame.get("type"))
        if frame["type"] == "user" and not (isinstance(frame["message"]["content"], str)
                                            and frame["message"]["content"].strip()):
            raise ValueError("empty user text")
        if self.child is not None:
            self.child.write_line(line)

    def _turn_cost(self, frame: Dict[str, Any]) -> Optional[float]:
        """Claude's total_cost_usd is per process; the per-turn figure is
        model_usage_since_last_result (or the difference of the totals)."""
        total = amount(frame.get("total_cost_usd"))  # a finite number or None, whatever Claude sent
        since = frame.get("model_usage_since_last_result")
        cost: Optional[float] = None
        if isinstance(since, dict):
            cost = amount(sum(amount(v.get("costUSD")) or 0.0 for v in since.values() if isinstance(v, dict)))
        elif total is not None:
            cost = amount(max(0.0, total - self._last_total_cost))
        if total is not None:
            self._last_total_cost = total
        return round(cost, 8) if cost is not None else None

    # session id in the sidecar, for --resume after an idle exit or a crash
    def _stored_session(self) -> Optional[str]:
        return self.load_resume(SESSION_FILE)

    def _remember_session(self, frame: Dict[str, Any], persist: bool) -> None:
        """Store the session id once a turn ended: only then is the conversation
        surely on disk (Claude killed during its first turn leaves none, and
        `--resume` of it would fail with "No conversation found")."""
        session_id = frame.get("session_id")
        if not persist or not isinstance(session_id, str) or not session_id:
            return
        self.save_resume(SESSION_FILE, session_id)
