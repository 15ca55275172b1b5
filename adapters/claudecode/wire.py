"""Pure helpers that turn Claude Code's stream-json shapes into harnessctl's:
each a small function of its input (every shape recorded from Claude Code
2.1.332; the transcripts in tests/support/claudecode_support/transcripts)."""

from __future__ import annotations

import re

from harnessctl.kit import permission_subject as subject
from harnessctl.kit import unified_diff

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
MODEL_USAGE_KEYS = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
                    "cacheCreationInputTokens": "cache_creation_input_tokens",
                    "cacheReadInputTokens": "cache_read_input_tokens"}
# Claude's tool names -> the vocabulary's tool kinds (activity.TOOL_KINDS); others are "other"
TOOL_KINDS = {
    "Bash": "command",
    "Edit": "file_change", "MultiEdit": "file_change", "Write": "file_change", "NotebookEdit": "file_change",
    "Read": "read",
    "Grep": "search", "Glob": "search", "LS": "search",
    "WebSearch": "web_search", "WebFetch": "web_search",
    "Task": "subagent", "Agent": "subagent",
}
PLAN_STATUSES = ("pending", "in_progress", "completed")
EXIT_CODE = re.compile(r"Exit code (-?\d+)")  # how a failed Bash tool_result begins (recorded)


def as_object(value: Any) -> Dict[str, Any]:
    """A JSON object from the wire, or {} for anything else."""
    return value if isinstance(value, dict) else {}


def join_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "\n".join(parts)


def slim(frame: Dict[str, Any]) -> Dict[str, Any]:
    """A native frame for the log without its bulky lists."""
    bulky = ("tools", "slash_commands", "skills", "plugins", "agents", "mcp_servers", "capabilities",
             "modelUsage", "model_usage_since_last_result", "subagent_stats")
    return {k: v for k, v in frame.items() if k not in bulky}


def text_or_none(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def tool_kind(name: str, tool_input: Dict[str, Any]) -> Tuple[str, str]:
    """(vocabulary kind, title) of a Claude tool call: the command, the path,
    the pattern, the query, server.tool, or the tool's name."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        _, server, tool = name.split("__", 2)
        return "mcp", "%s.%s" % (server, tool)
    kind = TOOL_KINDS.get(name, "other")
    keys = {"command": ("command",), "file_change": ("file_path", "notebook_path"), "read": ("file_path",),
            "search": ("pattern", "path"), "web_search": ("query", "url"), "subagent": ("description", "prompt")}
    for key in keys.get(kind, ()):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return kind, value
    return kind, name


def permission_subject(name: str, tool_input: Dict[str, Any]) -> Dict[str, Any]:
    """What a can_use_tool prompt is about, in the fields policy rules match
    (activity.permission_subject): the tool's kind with Claude's name for it,
    Bash's command, the file an editing tool changes, server.tool of an MCP tool."""
    kind, title = tool_kind(name, tool_input)
    command = text_or_none(tool_input.get("command")) if kind == "command" else None
    path = text_or_none(tool_input.get("file_path") or tool_input.get("notebook_path"))
    return subject(kind, name=name, command=command, paths=[path] if path and kind == "file_change" else None,
                   mcp_tool=title if kind == "mcp" else None)


def plan_entries(tool_input: Dict[str, Any]) -> Optional[List[Tuple[str, str]]]:
    """TodoWrite's todos as plan entries (content, status); activeForm, the
    present-tense wording of the same item, is left out."""
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if isinstance(todo, dict) and isinstance(todo.get("content"), str):
            status = todo.get("status")
            entries.append((todo["content"], status if status in PLAN_STATUSES else "pending"))
    return entries


def bash_exit_code(status: str, output: str, detail: Any) -> Optional[int]:
    """A Bash call's exit code as far as Claude tells it: 0 when it succeeded
    in the foreground, N when the failed result begins "Exit code N", else None
    (refused, interrupted, sent to the background, or killed without a code)."""
    if status == "completed":
        if isinstance(detail, dict) and (detail.get("backgroundTaskId") or detail.get("interrupted")):
            return None
        return 0
    if status == "failed":
        found = EXIT_CODE.match(output.lstrip())
        if found:
            return int(found.group(1))
    return None


def file_change(detail: Dict[str, Any], tool_input: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
    """(path, add | update, unified diff) of an Edit / MultiEdit / Write result."""
    path = detail.get("filePath") or tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    original = detail.get("originalFile")
    created = detail.get("type") == "create" or (original is None and detail.get("type") is not None)
    hunks = detail.get("structuredPatch")
    if isinstance(hunks, list) and hunks:
        diff = patch_diff(path, hunks, created)
    else:
        content = detail.get("content")
        diff = unified_diff(path, None if created else str(original or ""),
                            content if isinstance(content, str) else "")
    return path, "add" if created else "update", diff


def patch_diff(path: str, hunks: List[Any], created: bool) -> str:
    """A unified diff from Claude's structuredPatch hunks (jsdiff's shape)."""
    name = path.lstrip("/")
    out = ["--- %s\n" % ("/dev/null" if created else "a/" + name), "+++ b/%s\n" % name]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        out.append("@@ -%s,%s +%s,%s @@\n" % (hunk.get("oldStart"), hunk.get("oldLines"),
                                             hunk.get("newStart"), hunk.get("newLines")))
        out.extend("%s\n" % line for line in hunk.get("lines") or [] if isinstance(line, str))
    return "".join(out)


def rejected(tool_id: str, meta: Any) -> bool:
    """Whether tool_result_meta says a permission decision refused the tool."""
    for item in meta if isinstance(meta, list) else []:
        if isinstance(item, dict) and item.get("id") == tool_id:
            return as_object(item.get("permission_decision")).get("decision") == "reject"
    return False


def retry_message(frame: Dict[str, Any]) -> str:
    status = frame.get("error_status")
    return "API request failed (%s%s); retry %s of %s in %s ms" % (
        "HTTP %s, " % status if status is not None else "", frame.get("error") or "unknown error",
        frame.get("attempt"), frame.get("max_retries"), frame.get("retry_delay_ms"))


def prompt_tokens(usage: Any) -> Optional[int]:
    """Tokens of one API call's prompt: how much of the context it filled."""
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    return sum(c for c in counts if isinstance(c, int)) or None


def turn_usage(frame: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """The turn's tokens summed over models from model_usage_since_last_result
    (sub-agents included; costUSD comes from the same entries)."""
    since = frame.get("model_usage_since_last_result")
    if not isinstance(since, dict):
        return None
    totals = {key: 0 for key in MODEL_USAGE_KEYS.values()}
    for entry in since.values():
        for source, key in MODEL_USAGE_KEYS.items():
            value = entry.get(source) if isinstance(entry, dict) else None
            if isinstance(value, int):
                totals[key] += value
    return totals


def context_window(frame: Dict[str, Any], model: Optional[str]) -> Optional[int]:
    """The main model's context window (modelUsage), else the largest listed."""
    usage = as_object(frame.get("modelUsage") or frame.get("model_usage_since_last_result"))
    entry = usage.get(model) if model else None
    entries = [entry] if isinstance(entry, dict) else [e for e in usage.values() if isinstance(e, dict)]
    windows = [int(e["contextWindow"]) for e in entries if isinstance(e.get("contextWindow"), int)]
    return max(windows) if windows else None


def error_class(frame: Dict[str, Any]) -> Optional[str]:
    """The typed name of an API failure: the API's own error type (e.g.
    overloaded_error, authentication_error), else Claude's class of it
    (e.g. connection_failed)."""
    for key in ("api_error_type", "api_error"):
        if isinstance(frame.get(key), str) and frame[key]:
            return str(frame[key])
    return None


def terminal_class(frame: Dict[str, Any]) -> Optional[str]:
    """Claude's terminal_reason of a failed turn that was not an API error."""
    reason = frame.get("terminal_reason")
    return reason if isinstance(reason, str) and reason not in ("completed", "api_error") else None


def usage(usage: Any) -> Optional[Dict[str, int]]:
    if not isinstance(usage, dict):
        return None
    return {k: usage[k] for k in USAGE_KEYS if isinstance(usage.get(k), int)}


def outcome(frame: Dict[str, Any], api_error: Optional[str]) -> Tuple[str, str, Optional[str]]:
    """(status, output, error) from is_error + terminal_reason, never subtype."""
    reason = frame.get("terminal_reason")
    result = frame.get("result")
    text = result if isinstance(result, str) else ""
    if isinstance(reason, str) and reason.startswith("aborted"):
        return "cancelled", text, None
    if frame.get("is_error"):
        errors = [str(e) for e in frame.get("errors") or []]
        error = "; ".join(errors) or text or api_error or "claude: %s" % (reason or frame.get("subtype"))
        status = frame.get("api_error_status")
        if status and str(status) not in error:
            error = "%s (HTTP %s)" % (error, status)
        return "failed", "", error
    return "completed", text, None


def structured(frame: Dict[str, Any], status: str, error: Optional[str],
               error_class: Optional[str]) -> Tuple[str, Any, Optional[str], Optional[str]]:
    """(status, output_json, error, error_class) of a result under --json-schema.
    Claude validates what the model gives its StructuredOutput tool and puts it
    in `structured_output`; a run that ends without one (the model answered in
    prose even after Claude's one reminder, as recorded) did not honour the
    schema, whatever its text; so did one Claude ended after too many invalid tries."""
    if frame.get("subtype") == "error_max_structured_output_retries":
        return "failed", None, error or "claude: too many answers that did not fit the schema", "schema"
    if status != "completed":
        return status, None, error, error_class
    value = frame.get("structured_output")
    if value is None:
        return "failed", None, "claude ended the run without a structured answer (its StructuredOutput tool)", "schema"
    return status, value, error, error_class


def questions(raw: List[Any]) -> List[Dict[str, Any]]:
    out = []
    for index, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            continue
        question: Dict[str, Any] = {"id": "q%d" % index, "question": item["question"]}
        labels = [o.get("label") for o in item.get("options") or [] if isinstance(o, dict) and o.get("label")]
        if labels:
            question["options"] = labels
        if item.get("multiSelect"):
            question["multi_select"] = True
        out.append(question)
    return out


def session_rules(suggestions: List[Any]) -> List[Dict[str, Any]]:
    """The "always allow this" rules Claude suggests, kept for this session only
    (Claude suggests saving them to the project's local settings file)."""
    out = []
    for item in suggestions:
        if isinstance(item, dict) and item.get("type") == "addRules" and item.get("behavior") == "allow":
            out.append(dict(item, destination="session"))
    return out


def question_message(questions: List[Dict[str, Any]]) -> str:
    return " / ".join(q["question"] for q in questions) or "Claude asks a question"


def permission_message(tool: str, request: Dict[str, Any]) -> str:
    tool_input = as_object(request.get("input"))
    detail = tool_input.get("command") or tool_input.get("file_path") or request.get("description") or ""
    return ("Claude wants to use %s: %s" % (tool, detail)).rstrip(": ") if detail else "Claude wants to use %s" % tool
