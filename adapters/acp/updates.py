"""What an ACP agent did, from its `session/update` notifications, in the
activity vocabulary (harnessctl/kit/activity.py): message chunks and their
`message` snapshots, thoughts, tool calls with their streamed output, exit
codes and diffs, plans, usage, notices and context compactions.  The backend (backend.py) owns the runs'
lives; this holds what a run's updates build (its messages and open tools)
and what its prompt's answer makes of it (Run.outcome)."""

from __future__ import annotations

from harnessctl.kit import Activity, Host, unified_diff

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set, Tuple

OPEN_TOOLS_LIMIT = 256  # tools remembered while open (an interrupted tool never completes)
DONE_TOOLS_LIMIT = 4096  # finished tools a run remembers, so a late update does not start one again


class Run:
    """One session/prompt = one harnessctl run."""

    def __init__(self, run_id: str, input_ids: List[str], cost_base: Optional[float]) -> None:
        self.run_id = run_id
        self.input_ids = list(input_ids)
        self.prompt_id: Any = None  # the JSON-RPC id of its session/prompt
        self.response: Optional[Dict[str, Any]] = None  # {"result": ...} or {"error": ...} once answered
        self.steering = 0  # _session/steering requests in flight into this run
        self.messages: Dict[str, List[str]] = {}  # message id -> its text chunks, in order
        self.message_id: Optional[str] = None  # the message text chunks go to
        self.unnamed = 0  # messages the agent gave no messageId (gemini)
        self.context: Dict[str, Optional[int]] = {}  # the last usage_update: context_used, context_window
        self.cost_base = cost_base  # the session's cumulative cost when the run began
        self.cost: Optional[float] = None  # the last cumulative cost seen during the run
        self.cancelled = False  # session/cancel sent for it: any answer ends it cancelled
        self.unnamed_paragraph: Optional[str] = None  # text held until we know it is no warning
        self.done_tools: Set[str] = set()  # the tools it completed: a later update never reopens one
        self.progressed = False  # the agent showed it works on it: text, a thought, a tool, a plan, a request
        self.said: Optional[str] = None  # the last error the agent reported while it runs (codex-acp's retries)
        self.stalled: Optional[str] = None  # why harnessctl gave up on it (no progress): it ends `failed`

    def outcome(self) -> Tuple[str, Optional[str], Optional[str]]:
        """(status, error, error class) of the run, once its prompt is answered:
        cancelled whatever the agent answered a cancel with, failed when given
        up for no progress, else what the answer says."""
        assert self.response is not None
        error = self.response.get("error")
        if error is not None and self.cancelled:
            return "cancelled", None, None
        if self.stalled:
            return "failed", self.stalled, "no_progress"
        if error is not None:
            return "failed", wire.rpc_error_text(error), wire.rpc_error_class(error)
        return wire.outcome(self.response["result"].get("stopReason"))

    def spent(self) -> Optional[float]:
        """What the run cost, from the session's cumulative cost (None: never reported)."""
        return None if self.cost is None else round(max(0.0, self.cost - (self.cost_base or 0.0)), 8)

    def output(self) -> str:
        """The text of its last message (the reply)."""
        return "".join(self.messages[list(self.messages)[-1]]) if self.messages else ""


class Tool:
    """A tool call as the agent has described it so far."""

    def __init__(self, run_id: str, update: Dict[str, Any]) -> None:
        self.run_id = run_id
        self.own_name = wire.tool_name(update)  # None: the agent did not name it (a codex escalation)
        self.name = self.own_name or str(update.get("kind") or "tool")
        self.kind = wire.tool_kind(update.get("kind"), self.name)
        self.title = str(update.get("title") or self.name)
        self.input: Any = update.get("rawInput")
        self.content: Any = update.get("content")
        self.declined = False

    def merge(self, update: Dict[str, Any]) -> None:
        name = wire.text_or_none(update.get("name"))  # ACP v1: an update may name the tool
        if name:
            self.own_name = self.name = name
        if update.get("kind"):
            self.kind = wire.tool_kind(update["kind"], self.name)
        if isinstance(update.get("title"), str) and update["title"]:
            self.title = update["title"]
        if update.get("rawInput"):
            self.input = update["rawInput"]
        if isinstance(update.get("content"), list) and update["content"]:
            self.content = update["content"]


class Updates:
    """Turns one agent's session/update notifications into host calls."""

    HANDLERS = {
        "agent_message_chunk": "_on_message_chunk",
        "agent_thought_chunk": "_on_thought_chunk",
        "tool_call": "_on_tool_call",
        "tool_call_update": "_on_tool_call",
        "plan": "_on_plan",
        "usage_update": "_on_usage_update",
    }  # user_message_chunk, available_commands_update, config_option_update, current_mode_update,
    # session_info_update and anything new: `native` at debug
    ANY_TIME = {  # with or without a run (claude-agent-acp compacts an idle session)
        "notice": "_on_notice",
        "compaction_update": "_on_compaction",
        "compaction_summary_chunk": "_on_compaction_chunk",
    }
    SUMMARIES_LIMIT = 16  # compactions whose streamed summary is kept until they end

    def __init__(self, host: Host, activity: Activity, cwd: str) -> None:
        self.host = host
        self.activity = activity
        self.cwd = cwd
        self.elsewhere: Optional[str] = None  # the other directory the agent said it works in
        self.tools: Dict[str, Tool] = {}  # open tool calls by toolCallId
        self.cost: Optional[float] = None  # the session's cumulative cost, as last reported
        self.summaries: Dict[str, str] = {}  # compaction id -> its summary streamed so far

    def on_update(self, run: Optional[Run], update: Dict[str, Any], msg: Dict[str, Any]) -> None:
        """One session/update of the run going on (none: it is only logged,
        but for notices and compactions, which need no run)."""
        kind = str(update.get("sessionUpdate"))
        if kind in self.ANY_TIME:
            if run is not None:
                run.progressed = run.progressed or kind != "notice"  # a notice may say it cannot go on
            getattr(self, self.ANY_TIME[kind])(run.run_id if run else None, update)
            return
        handler = self.HANDLERS.get(kind)
        if handler is None or run is None:
            if run is not None and kind == "session_info_update":
                run.said = wire.agent_error(update) or run.said
            self.host.log("native", level="debug", run_id=run.run_id if run else None, data=msg)
        else:
            getattr(self, handler)(run, update)

    def _on_notice(self, run_id: Optional[str], update: Dict[str, Any]) -> None:
        self.notice(run_id, *wire.notice(update))

    def notice(self, run_id: Optional[str], severity: str, text: str) -> None:
        """A notice is never the reply: a warning or an error is a `warning`
        line (so a waiting send prints it), anything else a `notice` line."""
        if severity == "info":
            self.host.log("notice", "info", run_id, message=text, severity=severity)
        else:
            self.activity.warning(run_id, text, source="notice" if severity == "warning" else "error_notice")

    def declined(self, tool_id: Optional[str]) -> None:
        """We refused the tool's permission: it ends `declined` whatever the agent says."""
        if tool_id in self.tools:
            self.tools[tool_id].declined = True

    def end_tools(self, run: Run) -> None:
        """Forget the run's open tools; one refused by our deny that the agent
        never ended (gemini sends nothing after a reject) is declined."""
        for tool_id, tool in [(k, t) for k, t in self.tools.items() if t.run_id == run.run_id]:
            del self.tools[tool_id]
            if tool.declined:
                self.activity.tool_completed(run.run_id, tool_id, "declined", None, "", tool=tool.kind,
                                             name=tool.name, title=tool.title)

    def log_usage(self, run: Run, usage: Optional[Dict[str, int]]) -> None:
        usage = usage or {}
        self.activity.usage(run.run_id, input_tokens=usage.get("input_tokens"),
                            cached_input_tokens=usage.get("cached_input_tokens"),
                            output_tokens=usage.get("output_tokens"), reasoning_tokens=usage.get("reasoning_tokens"),
                            context_window=run.context.get("context_window"),
                            context_used=run.context.get("context_used"))

    def close_message(self, run: Run) -> None:
        """The message text chunks went to is complete: its snapshot."""
        self._release_paragraph(run, None)
        message_id = run.message_id
        run.message_id = None
        if message_id is not None and message_id in run.messages:
            self.host.message(run.run_id, message_id, "".join(run.messages[message_id]))

    def cut_message(self, run: Run) -> None:
        """A steer or a cancel cut off the message being streamed: as with every
        adapter (EVENT.md), it is never a `message`; its fragments stay in log."""
        self._release_paragraph(run, None)
        if run.message_id is not None:
            run.messages.pop(run.message_id, None)
            run.message_id = None

    def _on_message_chunk(self, run: Run, update: Dict[str, Any]) -> None:
        content = wire.as_object(update.get("content"))
        text = content.get("text")
        if content.get("type") != "text" or not isinstance(text, str):
            self.host.log("native", level="debug", run_id=run.run_id, data=update)
            return
        severity = wire.notice_chunk(update)
        if severity is not None:  # claude-agent-acp's notice as text (a client without `session.notices`)
            self.notice(run.run_id, severity, wire.cut(text.strip()))
            return
        message_id = wire.text_or_none(update.get("messageId"))
        self._release_paragraph(run, message_id)
        if message_id is None and not self._unnamed_open(run) and text.endswith("\n\n"):
            run.unnamed_paragraph = text  # a warning, if a named message follows
            return
        self._text(run, message_id, text)

    def _release_paragraph(self, run: Run, next_id: Optional[str]) -> None:
        """An agent's warning has a shape, not a wording: a whole paragraph
        with no messageId just before the agent's named message (codex-acp
        sends codex's warnings so).  Anything else it was is message text."""
        held, run.unnamed_paragraph = run.unnamed_paragraph, None
        if held is None:
            return
        if next_id is not None:
            self.activity.warning(run.run_id, held.strip(), source="agent_message")
        else:
            self._text(run, None, held)

    def _unnamed_open(self, run: Run) -> bool:
        current = run.message_id
        return current is not None and current.startswith(run.run_id + ":")

    def _text(self, run: Run, message_id: Optional[str], text: str) -> None:
        if message_id is None:  # gemini: one message per stretch of text between tool calls
            if run.message_id is not None and self._unnamed_open(run):
                message_id = run.message_id
            else:
                run.unnamed += 1
                message_id = "%s:%d" % (run.run_id, run.unnamed)
        run.progressed = True
        if message_id != run.message_id:
            self.close_message(run)
            run.message_id = message_id
        run.messages.setdefault(message_id, []).append(text)
        self.activity.text(run.run_id, message_id, text)

    def _on_thought_chunk(self, run: Run, update: Dict[str, Any]) -> None:
        content = wire.as_object(update.get("content"))
        if content.get("type") == "text":
            run.progressed = True
            self.activity.reasoning(run.run_id, str(content.get("text") or ""), "raw")

    def _on_tool_call(self, run: Run, update: Dict[str, Any]) -> None:
        tool_id = wire.text_or_none(update.get("toolCallId"))
        if tool_id is None or tool_id in run.done_tools:  # cline re-sends a tool it ended: one tool, one start
            self.host.log("native", level="debug", run_id=run.run_id, data=update)
            return
        self.close_message(run)
        run.progressed = True
        tool = self.tool(run, tool_id, update)
        self._check_cwd(run, update)
        output = wire.terminal_output(update)
        if output:
            self.activity.tool_output(run.run_id, tool_id, output)
        status = update.get("status")
        if status in ("completed", "failed"):
            self._tool_done(run, tool_id, tool, str(status), update)

    def tool(self, run: Run, tool_id: str, update: Dict[str, Any]) -> Tool:
        """The tool, started (tool.started) the first time the agent names it:
        gemini sends no tool_call before a permission request."""
        tool = self.tools.get(tool_id)
        if tool is None:
            tool = Tool(run.run_id, update)
            if len(self.tools) >= OPEN_TOOLS_LIMIT:
                self.tools.pop(next(iter(self.tools)))
            self.tools[tool_id] = tool
            self.activity.tool_started(run.run_id, tool_id, tool.kind, tool.name, tool.title, tool.input)
        else:
            tool.merge(update)
        return tool

    def _check_cwd(self, run: Run, update: Dict[str, Any]) -> None:
        """Say once when the agent runs a tool in a directory other than the
        session's cwd (openclaw works in its gateway's workspace): the files it
        changes are not where the caller looks."""
        where = wire.tool_cwd(update)
        if where is None or len(where) > 4096 or where == self.elsewhere or wire.inside(self.cwd, where):
            return
        self.elsewhere = where
        self.host.log("diagnostic", "warning", run_id=run.run_id, message="the ACP agent works in %s, not in the "
                      "session's cwd %s: its tools do not see or change the files there" % (where, self.cwd))

    def _tool_done(self, run: Run, tool_id: str, tool: Tool, status: str, update: Dict[str, Any]) -> None:
        del self.tools[tool_id]
        if len(run.done_tools) < DONE_TOOLS_LIMIT:
            run.done_tools.add(tool_id)
        if status == "failed" and (tool.declined or wire.declined(update)):
            status = "declined"
        output = wire.raw_output(update)  # else the streamed tail activity.py kept
        self.activity.tool_completed(run.run_id, tool_id, status, wire.exit_code(update), output,
                                     tool=tool.kind, name=tool.name, title=tool.title)
        if status == "completed":
            for path, change, old, new in wire.diffs(tool.content):
                self.activity.file_changed(run.run_id, tool_id, path, change,
                                           unified_diff(path, old, None if change == "delete" else new))

    def _on_plan(self, run: Run, update: Dict[str, Any]) -> None:
        run.progressed = True
        self.activity.plan(run.run_id, wire.plan_entries(update))

    def _on_compaction(self, run_id: Optional[str], update: Dict[str, Any]) -> None:
        """A `compaction` line per status the agent reports; a failed one is a
        `warning` with its error.  Its summary (given whole, or streamed as
        chunks before) goes with the end."""
        compaction_id = wire.cut(wire.text_or_none(update.get("compactionId")) or "", 256)
        status = wire.cut(wire.text_or_none(update.get("status")) or "in_progress", 64)
        streamed = self.summaries.pop(compaction_id, "") if status != "in_progress" else ""
        summary = wire.content_text(update.get("summary")) or streamed
        if status == "failed":
            error = wire.text_or_none(update.get("error")) or "no reason given"
            self.activity.warning(run_id, "context compaction failed: %s" % wire.cut(error), source="compaction")
            return
        fields = {"summary": summary} if summary and status == "completed" else {}
        self.host.log("compaction", "info", run_id, compaction_id=compaction_id, status=status, **fields)

    def _on_compaction_chunk(self, run_id: Optional[str], update: Dict[str, Any]) -> None:
        compaction_id = wire.cut(wire.text_or_none(update.get("compactionId")) or "", 256)
        if compaction_id not in self.summaries and len(self.summaries) >= self.SUMMARIES_LIMIT:
            self.summaries.pop(next(iter(self.summaries)))
        text = wire.content_text([update.get("content")])
        self.summaries[compaction_id] = wire.cut(self.summaries.get(compaction_id, "") + text)

    def _on_usage_update(self, run: Run, update: Dict[str, Any]) -> None:
        used, size = update.get("used"), update.get("size")
        run.context = {"context_used": used if isinstance(used, int) else None,
                       "context_window": size if isinstance(size, int) else None}
        cost = wire.cost(update)
        if cost is not None:
            self.cost = run.cost = cost
            if run.cost_base is None:
                run.cost_base = 0.0
        self.activity.usage(run.run_id, **run.context)

