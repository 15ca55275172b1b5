"""Pure helpers that turn codex app-server wire shapes into harnessctl shapes.

Kept apart from the backend's state machine so each mapping is a small
function of its input (every shape as recorded from codex 0.171.0).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

# reply option -> codex decision (approvals)
DECISIONS = {
    "allow": "accept",
    "deny": "decline",
    "allow-session": "acceptForSession",
    "cancel": "cancel",
}
PERMISSION_OPTIONS = list(DECISIONS)

# turn/steer errors that mean "the turn already ended", so the input starts a new run
STEER_RACE_ERRORS = ("no active turn to steer", "expected active turn id")

USAGE_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("cachedInputTokens", "cached_input_tokens"),
    ("outputTokens", "output_tokens"),
    ("reasoningOutputTokens", "reasoning_output_tokens"),
    ("totalTokens", "total_tokens"),
)


def text_input(text: str) -> List[Dict[str, Any]]:
    """A turn/start or turn/steer `input` carrying one text."""
    return [{"type": "text", "text": text, "text_elements": []}]


def add_usage(total: Optional[Dict[str, int]], last: Dict[str, Any]) -> Dict[str, int]:
    """Accumulate one model response's `tokenUsage.last` into a run's usage.

    codex's `total` counts the whole thread, so a run's usage is the sum of the
    `last` blocks emitted during its turn."""
    out = dict(total or {})
    for native, ours in USAGE_FIELDS:
        value = last.get(native)
        if isinstance(value, int):
            out[ours] = out.get(ours, 0) + value
    return out


def error_text(error: Any) -> str:
    """The human text of a codex turn error / error notification."""
    if not isinstance(error, dict):
        return str(error) if error else "codex reported a failure"
    message = str(error.get("message") or "codex reported a failure")
    details = error.get("additionalDetails")
    if details and str(details) not in message:
        message = "%s (%s)" % (message, details)
    return message


def rpc_error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)


def command_request(params: Dict[str, Any]) -> Dict[str, Any]:
    """item/commandExecution/requestApproval -> host.request arguments."""
    command = params.get("command") or ""
    reason = params.get("reason")
    message = "Run command: %s" % command
    if reason:
        message += " (%s)" % reason
    details = {
        "tool": "command",
        "input": {
            "command": command,
            "cwd": params.get("cwd"),
            "reason": reason,
            "command_actions": params.get("commandActions"),
        },
    }
    return {"message": message, "details": details}


def file_change_request(params: Dict[str, Any], changes: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    """item/fileChange/requestApproval + the `changes` remembered from item/started
    (the approval params carry no diff)."""
    changes = changes or []
    paths = [str(c.get("path")) for c in changes if isinstance(c, dict)]
    message = "Apply file changes: %s" % (", ".join(paths) if paths else "(unknown files)")
    reason = params.get("reason")
    if reason:
        message += " (%s)" % reason
    details = {
        "tool": "file_change",
        "input": {
            "changes": [_change(c) for c in changes if isinstance(c, dict)],
            "reason": reason,
            "grant_root": params.get("grantRoot"),
        },
    }
    return {"message": message, "details": details}


def _change(change: Dict[str, Any]) -> Dict[str, Any]:
    kind = change.get("kind")
    if isinstance(kind, dict):
        kind = kind.get("type")
    return {"path": change.get("path"), "kind": kind, "diff": change.get("diff")}


def question_request(params: Dict[str, Any]) -> Dict[str, Any]:
    """item/tool/requestUserInput -> a question request (labels as options)."""
    questions = []
    for q in params.get("questions") or []:
        if not isinstance(q, dict):
            continue
        entry: Dict[str, Any] = {"id": str(q.get("id")), "question": str(q.get("question") or "")}
        labels = [str(o.get("label")) for o in q.get("options") or [] if isinstance(o, dict)]
        if labels:
            entry["options"] = labels
        for native, ours in (("header", "header"), ("isOther", "allow_other"), ("isSecret", "secret")):
            if native in q:
                entry[ours] = q[native]
        questions.append(entry)
    if len(questions) == 1:
        message = questions[0]["question"]
    else:
        message = "Codex asks %d questions" % len(questions)
    return {"message": message, "details": {"questions": questions}}


def question_answer(answer: Any) -> Dict[str, Any]:
    """{question id: text} -> the requestUserInput response."""
    if not isinstance(answer, dict):
        answer = {}
    out = {}
    for qid, value in answer.items():
        values = value if isinstance(value, list) else [value]
        out[str(qid)] = {"answers": [str(v) for v in values]}
    return {"answers": out}


def tool_started(item: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Log fields for item/started of a tool-like item (None for messages)."""
    kind = item.get("type")
    if kind == "commandExecution":
        return {"tool": "command", "item_id": item.get("id"), "command": item.get("command"),
                "cwd": item.get("cwd")}
    if kind == "fileChange":
        return {"tool": "file_change", "item_id": item.get("id"),
                "changes": [_change(c) for c in item.get("changes") or [] if isinstance(c, dict)]}
    if kind in (None, "userMessage", "agentMessage", "reasoning"):
        return None
    return {"tool": kind, "item_id": item.get("id")}


def tool_completed(item: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    fields = tool_started(item)
    if fields is None:
        return None
    fields.pop("changes", None)
    fields["status"] = item.get("status")
    if item.get("type") == "commandExecution":
        fields["exit_code"] = item.get("exitCode")
        output = item.get("aggregatedOutput")
        if output:
            fields["output"] = output[-4000:]
    return fields
