"""Pure helpers that turn codex app-server wire shapes into harnessctl shapes.

Kept apart from the backend's state machine so each mapping is a small
function of its input (every shape as recorded from codex 0.171.0, and the
app-server JSON schema that binary generates).
"""

from __future__ import annotations

import json
import re
import shlex

from harnessctl.kit import unified_diff

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

# turn/steer errors that mean "the turn already ended", so the input starts a new run.
# codex 0.171.0 sends them as a bare -32600 with this text and no typed data (as recorded).
STEER_RACE_ERRORS = ("no active turn to steer", "expected active turn id")

USAGE_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("cachedInputTokens", "cached_input_tokens"),
    ("outputTokens", "output_tokens"),
    ("reasoningOutputTokens", "reasoning_output_tokens"),
    ("totalTokens", "total_tokens"),
)

# ThreadItem types that are no tool: messages, reasoning, plan text and turn markers
NOT_TOOLS = ("userMessage", "agentMessage", "reasoning", "plan", "hookPrompt", "enteredReviewMode",
             "exitedReviewMode", "contextCompaction")

# codex item status -> tool.completed status (anything else: completed)
TOOL_STATUSES = {"completed": "completed", "failed": "failed", "declined": "declined", "interrupted": "failed",
                 "errored": "failed"}

PLAN_STATUSES = {"pending": "pending", "inProgress": "in_progress", "completed": "completed"}

# codex's start-up warning (stderr) when it could not put its helpers (codex-linux-sandbox,
# apply_patch) on PATH; 0.171.0: "WARNING: proceeding, even though we could not create PATH
# aliases: Refusing to create helper binaries under temporary dir "/tmp" (codex_home: ...)"
HELPERS_REFUSED = re.compile(r"could not (?:create PATH aliases|update PATH): (.+)")

# `/bin/bash -c 'CMD'` (also sh/zsh, -lc): codex's wrapper around the model's command
SHELL = re.compile(r"^(?:/usr)?(?:/bin/)?(?:ba|z)?sh$")

# Config.mode -> (approvalPolicy, the thread's `sandbox`, a turn's `sandboxPolicy`).
# codex has no policy that lets edits through and asks for commands (its
# `granular` policy only turns some prompts into refusals), so `edit` runs as
# `ask` and the backend accepts the file changes inside the cwd itself.  As
# recorded from 0.171.0: `untrusted` asks for every patch and every command,
# read-only ones (ls, cat, pwd) too, and runs an approved command outside the
# sandbox; config.toml refuses `untrusted` ("no longer supported") while
# app-server still takes it.  `never` + danger-full-access asks for nothing.
MODES = {
    "ask": ("untrusted", "workspace-write", {"type": "workspaceWrite"}),
    "edit": ("untrusted", "workspace-write", {"type": "workspaceWrite"}),
    "full": ("never", "danger-full-access", {"type": "dangerFullAccess"}),
}


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


def usage_fields(run_usage: Dict[str, int], token_usage: Dict[str, Any]) -> Dict[str, Optional[int]]:
    """The `usage` log line's counts: the run's sums so far, the model's context
    window, and the context the last response filled (its `totalTokens`: what
    codex itself counts as in the context window)."""
    last = token_usage.get("last")
    used = last.get("totalTokens") if isinstance(last, dict) else None
    window = token_usage.get("modelContextWindow")
    return {
        "input_tokens": run_usage.get("input_tokens"),
        "cached_input_tokens": run_usage.get("cached_input_tokens"),
        "output_tokens": run_usage.get("output_tokens"),
        "reasoning_tokens": run_usage.get("reasoning_output_tokens"),
        "context_window": window if isinstance(window, int) else None,
        "context_used": used if isinstance(used, int) else None,
    }


# -- errors ----------------------------------------------------------------------------


def error_text(error: Any) -> str:
    """The human text of a codex turn error / error notification."""
    if not isinstance(error, dict):
        return str(error) if error else "codex reported a failure"
    message = str(error.get("message") or "codex reported a failure")
    details = error.get("additionalDetails")
    if details and str(details) not in message:
        message = "%s (%s)" % (message, details)
    return message


def error_class(info: Any) -> Optional[str]:
    """A `codexErrorInfo` as its variant name: "usageLimitExceeded" as is,
    {"httpConnectionFailed": {...}} as "httpConnectionFailed"."""
    if isinstance(info, str) and info:
        return info
    if isinstance(info, dict) and len(info) == 1:
        return str(next(iter(info)))
    return None


def rpc_error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)


def rpc_error_class(error: Any) -> Optional[str]:
    """The typed class a JSON-RPC error carries in `data.codexErrorInfo`, if any."""
    data = error.get("data") if isinstance(error, dict) else None
    return error_class(data.get("codexErrorInfo")) if isinstance(data, dict) else None


def steer_refusal(error: Any) -> str:
    """Why codex refused a turn/steer: "not_steerable" (typed
    `activeTurnNotSteerable`: a review or compact turn runs and takes no steer),
    "ended" (the turn ended before the steer arrived: codex says so only in
    text), or "refused" (anything else)."""
    if rpc_error_class(error) == "activeTurnNotSteerable":
        return "not_steerable"
    text = rpc_error_text(error)
    return "ended" if any(marker in text for marker in STEER_RACE_ERRORS) else "refused"


def turn_result(turn: Dict[str, Any], said: Optional[Dict[str, Any]],
                output: str) -> Tuple[str, str, Optional[str], Optional[str]]:
    """(status, output, error, error class) of turn/completed's turn: a failure is the turn's own error,
    else the last `error` notification's (`said`); the output the streamed reply, else the last agentMessage."""
    native: Any = turn.get("status")  # any JSON value: one we do not know (or no string) means failed
    known = native if isinstance(native, str) else ""
    status = {"completed": "completed", "interrupted": "cancelled"}.get(known, "failed")
    error = kind = None
    if status == "failed":
        failure = turn.get("error") if isinstance(turn.get("error"), dict) else said
        error = error_text(failure) if failure else "codex ended the turn with status %s" % native
        kind = error_class((failure or {}).get("codexErrorInfo"))
        if kind is None and said:
            kind = error_class(said.get("codexErrorInfo"))
    items = turn.get("items")
    for item in items if isinstance(items, list) and not output else []:
        if isinstance(item, dict) and item.get("type") == "agentMessage":
            output = item.get("text") or output
    return status, output or "", error, kind


# -- tools -------------------------------------------------------------------------------


def command_title(command: str) -> str:
    """The command a person reads and a rule matches: codex's `/bin/bash -c
    '...'` wrapper removed (unquoted as the shell would), else the command
    whole.  Rules see exactly this, so a quote inside cannot hide an `rm`."""
    try:
        words = shlex.split(command or "")
    except ValueError:
        return command or ""
    if len(words) == 3 and SHELL.match(words[0]) and words[1] in ("-c", "-lc"):
        return words[2]
    return command or ""


def tool_info(item: Dict[str, Any]) -> Optional[Tuple[str, str, str, Any]]:
    """(tool kind, codex's name, title, input) of a tool-like ThreadItem; None
    for messages, reasoning and markers."""
    kind = item.get("type")
    if not isinstance(kind, str) or kind in NOT_TOOLS:
        return None
    if kind == "commandExecution":
        command = str(item.get("command") or "")
        return "command", kind, command_title(command), {"command": command, "cwd": item.get("cwd")}
    if kind == "fileChange":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        paths = ", ".join(str(c.get("path")) for c in changes)
        return "file_change", kind, paths or "file changes", {"changes": [change_of(c) for c in changes]}
    if kind == "mcpToolCall":
        name = "%s.%s" % (item.get("server"), item.get("tool"))
        return "mcp", name, name, item.get("arguments")
    if kind == "webSearch":
        action = as_object(item.get("action"))
        title = item.get("query") or action.get("query") or action.get("url") or "web search"
        return "web_search", kind, str(title), {"query": item.get("query"), "action": item.get("action")}
    if kind == "collabAgentToolCall":
        tool = str(item.get("tool") or kind)
        prompt = item.get("prompt")
        title = "%s: %s" % (tool, prompt) if prompt else tool
        return "subagent", tool, title, {"prompt": prompt, "model": item.get("model"),
                                          "receiver_thread_ids": item.get("receiverThreadIds")}
    if kind == "subAgentActivity":
        return "subagent", kind, "%s %s" % (item.get("agentPath"), item.get("kind")), \
            {"agent_thread_id": item.get("agentThreadId"), "model": item.get("model")}
    if kind == "dynamicToolCall":
        name = ".".join(str(p) for p in (item.get("namespace"), item.get("tool")) if p)
        return "other", name or kind, name or kind, item.get("arguments")
    if kind == "imageView":
        return "read", kind, str(item.get("path")), {"path": item.get("path")}
    if kind == "imageGeneration":
        return "other", kind, str(item.get("revisedPrompt") or "image generation"), \
            {"revised_prompt": item.get("revisedPrompt")}
    if kind == "sleep":
        return "other", kind, "sleep %s ms" % item.get("durationMs"), {"duration_ms": item.get("durationMs")}
    if kind == "functionCallOutput":
        return "other", str(item.get("name") or kind), str(item.get("name") or kind), None
    return "other", kind, kind, None


def tool_status(item: Dict[str, Any]) -> str:
    """tool.completed's status from a completed item's own status / error."""
    status = item.get("status")
    if isinstance(status, str) and status in TOOL_STATUSES:
        return TOOL_STATUSES[status]
    if item.get("success") is False or item.get("error") or item.get("failure"):
        return "failed"
    return "completed"


def tool_output(item: Dict[str, Any]) -> str:
    """What a completed tool produced, as text (its tail is kept)."""
    kind = item.get("type")
    if kind == "commandExecution":
        return str(item.get("aggregatedOutput") or "")
    if kind == "mcpToolCall":
        error = item.get("error")
        if isinstance(error, dict):
            return str(error.get("message") or "")
        return _texts(as_object(item.get("result")).get("content"))
    if kind == "dynamicToolCall":
        return _texts(item.get("contentItems"))
    if kind == "functionCallOutput":
        output = item.get("output")
        return output if isinstance(output, str) else _texts(output)
    if kind == "collabAgentToolCall":
        states = as_object(item.get("agentsStates")).values()
        return "\n".join(str(s.get("message")) for s in states if isinstance(s, dict) and s.get("message"))
    if kind == "imageGeneration":
        return str(item.get("savedPath") or "")
    return ""


def sandbox_failure(item: Dict[str, Any]) -> Optional[str]:
    """bubblewrap's own complaint when a command failed because codex could not
    sandbox it, else None.  As recorded from 0.171.0 with bubblewrap installed
    and CODEX_HOME inside the temporary folder: every command is a failed
    commandExecution whose whole output is `bwrap: execvp codex-linux-sandbox:
    No such file or directory` (the model gets it as the command's output, so
    nothing else tells why)."""
    if item.get("type") != "commandExecution" or tool_status(item) != "failed":
        return None
    first = tool_output(item).strip().split("\n", 1)[0].strip()
    return first if first.startswith("bwrap: ") else None


def helpers_refused(stderr: str) -> Optional[str]:
    """codex's start-up reason for making no helpers (its stderr), or None."""
    refusals = HELPERS_REFUSED.findall(stderr)
    return refusals[-1].strip() if refusals else None


def sandbox_warning(failure: Optional[str], refusal: Optional[str]) -> str:
    """The one line that says codex cannot sandbox its commands: bubblewrap's
    complaint (None: not seen yet), and codex's start-up reason (helpers_refused;
    with what to change when the reason is CODEX_HOME inside the temporary folder)."""
    text = "codex cannot sandbox its commands, so each one fails"
    if failure:
        text += ": %s" % failure
    if refusal:
        text += "; at start codex said: %s" % refusal
        if "temporary dir" in refusal:
            text += " (CODEX_HOME must lie outside $TMPDIR, else /tmp)"
    return text


def as_object(value: Any) -> Dict[str, Any]:
    """A JSON object from the wire, or {} for anything else."""
    return value if isinstance(value, dict) else {}


def _texts(content: Any) -> str:
    return "\n".join(str(c.get("text")) for c in content or [] if isinstance(c, dict) and c.get("text"))


def change_of(change: Dict[str, Any]) -> Dict[str, Any]:
    kind = change.get("kind")
    move_path = kind.get("move_path") if isinstance(kind, dict) else None
    if isinstance(kind, dict):
        kind = kind.get("type")
    out = {"path": change.get("path"), "kind": kind, "diff": change.get("diff")}
    if move_path:
        out["move_path"] = move_path
    return out


def file_change(change: Dict[str, Any]) -> Optional[Tuple[str, str, Optional[str], str]]:
    """(path, change, move_path, unified diff) of one codex FileUpdateChange.

    codex gives an added file's content (not a diff) and an update's hunks
    without file headers; a delete's `diff` is the old content.  An update
    with a `move_path` is a move."""
    path = change.get("path")
    if not isinstance(path, str) or not path:
        return None
    kind = change.get("kind")
    move_path = kind.get("move_path") if isinstance(kind, dict) else None
    kind = kind.get("type") if isinstance(kind, dict) else kind
    diff = change.get("diff")
    text = diff if isinstance(diff, str) else ""
    if kind == "add":
        return path, "add", None, text if _is_diff(text) else unified_diff(path, None, text)
    if kind == "delete":
        return path, "delete", None, text if _is_diff(text) else unified_diff(path, text, None)
    new_path = move_path if isinstance(move_path, str) and move_path else None
    if _is_diff(text) and not text.startswith("--- "):
        text = "--- a/%s\n+++ b/%s\n%s" % (path.lstrip("/"), (new_path or path).lstrip("/"), text)
    return path, "move" if new_path else "update", new_path, text


def _is_diff(text: str) -> bool:
    return text.startswith("--- ") or text.startswith("@@") or "\n@@ " in text


def plan_entries(plan: Any) -> List[Tuple[str, str]]:
    """turn/plan/updated's steps as (text, status)."""
    out = []
    for step in plan if isinstance(plan, list) else []:
        if isinstance(step, dict):
            out.append((str(step.get("step") or ""), PLAN_STATUSES.get(str(step.get("status")), "pending")))
    return out


# -- session -------------------------------------------------------------------------------


def version_of(user_agent: Any) -> Optional[str]:
    """codex's version from initialize's userAgent ("originator/0.171.0 (Debian ...) ...")."""
    match = re.match(r"^[^/\s]+/(\d[^\s]*)", user_agent) if isinstance(user_agent, str) else None
    return match.group(1) if match else None


def policy_name(value: Any) -> Optional[str]:
    """An approval policy or sandbox as one name: a string as is, a tagged
    object by its tag (`{"type": "readOnly", ...}`, `{"granular": {...}}`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            return value["type"]
        if len(value) == 1:
            return str(next(iter(value)))
    return None


def thread_mode(mode: Optional[str]) -> Dict[str, Any]:
    """thread/start and thread/resume params that put codex in `mode` (they
    override config.toml and `-c`; `approvalsReviewer` keeps a configured
    auto-review subagent from answering in the user's place); {} for None:
    codex's own configuration."""
    if mode is None:
        return {}
    policy, sandbox, _ = MODES[mode]
    return {"approvalPolicy": policy, "sandbox": sandbox, "approvalsReviewer": "user"}


def turn_mode(mode: Optional[str]) -> Dict[str, Any]:
    """The same for each turn/start (codex keeps a turn's override for the turns after it)."""
    if mode is None:
        return {}
    policy, _, sandbox_policy = MODES[mode]
    return {"approvalPolicy": policy, "sandboxPolicy": sandbox_policy, "approvalsReviewer": "user"}


def warning_text(method: str, params: Dict[str, Any]) -> str:
    """The text of a warning / configWarning / deprecationNotice / guardianWarning."""
    text = str(params.get("message") or params.get("summary") or method)
    details = params.get("details")
    if details:
        text += ": %s" % details
    if params.get("path"):
        text += " (%s)" % params["path"]
    return text
