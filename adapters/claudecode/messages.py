"""What Claude did, from its stream-json messages, in the activity vocabulary
(harnessctl/kit/activity.py): text and thinking, streamed and whole; tool
calls and their results, with exit codes, diffs and plans; usage and cost;
the session line, retries, refusals and background tasks; and each turn's
result.  The backend (backend.py) decides which run a message belongs to;
this holds what the runs' messages build: their texts, open tools, usage.

The shapes behind each mapping (recorded from the real Claude Code 2.1.332
against a loopback Messages API mock, transcripts activity__*):

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
"""

from __future__ import annotations

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set, Tuple

    from harnessctl.kit import Activity, Host

HARNESS = "claude"
FILE_TOOLS = ("Edit", "MultiEdit", "Write")  # their tool_use_result holds the change
PLAN_TOOL = "TodoWrite"
INTERRUPT_NOTICE = "[Request interrupted"  # Claude's own user-side notice of an interrupt
SEEN_TOOLS_LIMIT = 256  # tool names remembered until their result (an interrupted tool never has one)
TASKS = ("task_started", "task_notification", "task_progress", "task_updated")  # system subtypes


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


class Messages:
    """Turns one Claude process's stream-json messages into host calls."""

    def __init__(self, host: Host, activity: Activity) -> None:
        self.host = host
        self.activity = activity
        self.model: Optional[str] = None
        self.session_logged = False
        self.tools: Dict[str, Tuple[str, Dict[str, Any]]] = {}  # open tool_use id -> (name, input)
        self.declined: Set[str] = set()  # tool_use ids refused (our deny, Claude's policy)
        self.last_total_cost = 0.0  # Claude's total_cost_usd, which counts since its process began

    # -- system ---------------------------------------------------------------------

    def on_system(self, run_id: Optional[str], frame: Dict[str, Any]) -> None:
        subtype = frame.get("subtype")
        if subtype == "init":
            self._on_init(frame)
        elif subtype == "api_retry":
            self.activity.warning(run_id, wire.retry_message(frame), source="api_retry")
        elif subtype in TASKS:
            self._on_task(run_id, subtype[5:], frame)
        elif subtype == "permission_denied":
            if isinstance(frame.get("tool_use_id"), str):
                self.declined.add(frame["tool_use_id"])
            message = "%s refused by Claude's permission rules: %s" % (frame.get("tool_name") or "a tool",
                                                                        frame.get("message") or "no reason given")
            self.activity.warning(run_id, message, source="permission_denied")
        else:
            self.host.log("native", level="debug", run_id=run_id, frame=wire.slim(frame))

    def _on_init(self, frame: Dict[str, Any]) -> None:
        """Each turn's init: the session line once per harness start."""
        if isinstance(frame.get("model"), str):
            self.model = frame["model"]
        if "msg_lifecycle_v1" not in (frame.get("capabilities") or ["msg_lifecycle_v1"]):
            self.host.log("diagnostic", level="warning",
                          message="this Claude Code lacks msg_lifecycle_v1: attribution may stay unknown")
        if self.session_logged:
            return
        self.session_logged = True
        sandbox = frame.get("sandbox_enabled")
        self.activity.session(wire.text_or_none(frame.get("session_id")), HARNESS,
                              version=wire.text_or_none(frame.get("claude_code_version")), model=self.model,
                              approval_policy=wire.text_or_none(frame.get("permissionMode")),
                              sandbox=None if not isinstance(sandbox, bool) else "enabled" if sandbox else "disabled")

    def _on_task(self, run_id: Optional[str], what: str, frame: Dict[str, Any]) -> None:
        """Background work Claude tracks (a sub-agent, a shell): its own kinds,
        `task.started` / `task.progress` / `task.updated` / `task.notification`,
        tied to the tool that spawned it by `tool_id` when Claude names it."""
        keys = ("task_id", "task_type", "description", "status", "summary")
        fields: Dict[str, Any] = {k: frame.get(k) for k in keys if frame.get(k) is not None}
        if isinstance(frame.get("tool_use_id"), str):
            fields["tool_id"] = frame["tool_use_id"]
        if isinstance(frame.get("patch"), dict) and frame["patch"].get("status") is not None:
            fields["status"] = frame["patch"]["status"]
        self.host.log("task." + what, run_id=run_id, **fields)

    # -- assistant ------------------------------------------------------------------

    def on_stream_event(self, run: Optional[Run], frame: Dict[str, Any]) -> None:
        """--include-partial-messages: text and thinking deltas as they stream,
        under the id of the assistant message they build (`api_message_id`)."""
        event = wire.as_object(frame.get("event"))
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

    def on_assistant(self, run: Optional[Run], frame: Dict[str, Any]) -> None:
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
        if len(self.tools) >= SEEN_TOOLS_LIMIT:
            self.tools.pop(next(iter(self.tools)))
        self.tools[block["id"]] = (name, tool_input)
        if name == PLAN_TOOL:
            entries = wire.plan_entries(tool_input)
            if entries is not None:
                self.activity.plan(run.run_id, entries)
        self.activity.tool_started(run.run_id, block["id"], kind, name, title, input=block.get("input"),
                                   parent_tool_id=parent)

    # -- user -----------------------------------------------------------------------

    def on_user(self, run_id: Optional[str], frame: Dict[str, Any]) -> None:
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
            self._tool_completed(run_id, block, detail, frame.get("tool_result_meta"))
        for block in blocks:
            text = block.get("text")
            if block.get("type") != "text" or not isinstance(text, str):
                continue
            if text.startswith(INTERRUPT_NOTICE):
                self.activity.warning(run_id, text, source="interrupt")
            else:
                self.host.log("native", level="debug", run_id=run_id, frame=wire.slim(frame))

    def _tool_completed(self, run_id: Optional[str], block: Dict[str, Any], detail: Any, meta: Any) -> None:
        tool_id = block["tool_use_id"]
        name, tool_input = self.tools.pop(tool_id, ("", {}))
        output = wire.join_text(block.get("content"))
        if tool_id in self.declined or wire.rejected(tool_id, meta):
            self.declined.discard(tool_id)
            status = "declined"
        else:
            status = "failed" if block.get("is_error") else "completed"
        exit_code = wire.bash_exit_code(status, output, detail) if name == "Bash" else None
        self.activity.tool_completed(run_id, tool_id, status, exit_code=exit_code, output=output)
        if status == "completed" and name in FILE_TOOLS and isinstance(detail, dict):
            change = wire.file_change(detail, tool_input)
            if change is not None:
                path, kind, diff = change
                self.activity.file_changed(run_id, tool_id, path, kind, diff=diff)

    # -- result and usage -----------------------------------------------------------

    def on_result(self, run: Run, covered: List[str], frame: Dict[str, Any], schema: bool) -> None:
        """The turn's `result` for the inputs it `covered`: how it ended (under
        a send's --schema, with its structured answer), its usage and cost."""
        status, output, error = wire.outcome(frame, run.api_error)
        turn = wire.turn_usage(frame)
        if turn:
            self._log_usage(run, frame, turn)
        error_class, structured = None, None
        if status == "failed":
            error_class = wire.error_class(frame) or run.error_class or wire.terminal_class(frame)
        if schema:
            status, structured, error, error_class = wire.structured(frame, status, error, error_class)
        cost, self.last_total_cost = wire.turn_cost(frame, self.last_total_cost)
        self.host.result(run.run_id, covered, status, output=output, usage=turn or wire.usage(frame.get("usage")),
                         cost_usd=cost, error=error, error_class=error_class, output_json=structured)

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
                            context_window=wire.context_window(frame, self.model), context_used=run.context_used)
