"""Pure helpers that turn Claude Code's stream-json shapes into harnessctl's,
and harnessctl's into Claude's (its arguments, its stdin lines): each a small
function of its input (every shape recorded from Claude Code 2.1.332; the
transcripts in tests/support/claudecode_support/transcripts)."""

from __future__ import annotations

import json
import re

from harnessctl.kit import amount, unified_diff

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from harnessctl.kit import Config

FORCED_ARGS = [
    "-p",
    "--input-format", "stream-json",
    "--output-format", "stream-json",
    "--verbose",
    "--replay-user-messages",
    "--permission-prompt-tool", "stdio",
    "--include-partial-messages",
]
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
STDIN_TYPES = ("user", "control_request", "control_response")  # the lines Claude reads

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


def turn_cost(frame: Dict[str, Any], last_total: float) -> Tuple[Optional[float], float]:
    """(the turn's cost, Claude's total so far): total_cost_usd is per
    process; the per-turn figure is model_usage_since_last_result (or the
    difference of the totals)."""
    total = amount(frame.get("total_cost_usd"))  # a finite number or None, whatever Claude sent
    since = frame.get("model_usage_since_last_result")
    cost: Optional[float] = None
    if isinstance(since, dict):
        cost = amount(sum(amount(v.get("costUSD")) or 0.0 for v in since.values() if isinstance(v, dict)))
    elif total is not None:
        cost = amount(max(0.0, total - last_total))
    return (round(cost, 8) if cost is not None else None), (last_total if total is None else total)


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


# -- harnessctl's side: Claude's arguments and stdin lines ----------------------------


def arguments(config: Config, session_id: Optional[str], fork_from: Optional[str]) -> List[str]:
    """Claude's arguments: the stream-json ones, the settings, the session to
    resume (or to fork from: its own session id is saved after its first
    turn, as always), the bound model, mode and schema."""
    args = FORCED_ARGS + permission_settings(config.own_files, config.mode)
    if session_id:
        args += ["--resume", session_id]
    elif fork_from:
        args += ["--resume", fork_from, "--fork-session"]
    if config.model:
        args += ["--model", config.model]
    if config.mode:
        args += ["--permission-mode", PERMISSION_MODES[config.mode]]
    if config.schema is not None:
        args += ["--json-schema", json.dumps(config.schema, separators=(",", ":"))]
    return args


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


def without_user_flags(argv: List[str], start: int, mode: Optional[str]) -> List[str]:
    """`argv` whose user's own arguments (from `start` on) lose --json-schema,
    and under a bound mode the flags that would overrule it."""
    flags = dict(SCHEMA_FLAGS, **MODE_FLAGS) if mode is not None else SCHEMA_FLAGS
    return argv[:start] + without_mode_flags(argv[start:], flags)


def start_failure(error: Optional[str], returncode: Optional[int], stderr: str, mode: Optional[str]) -> str:
    """Why Claude exited before it was ready: its own reason (`error`: the
    error of its result or of `initialize`), else the last line of its
    stderr (e.g. its refusal of bypassPermissions as root); under --mode
    full, the flag behind the mode, which Claude's refusal names."""
    said = stderr.strip().splitlines()
    reason = error or "claude exited (code %s) before it was ready%s" % (
        returncode, ": " + said[-1].strip() if said else "")
    return reason + (" (--mode full is --permission-mode bypassPermissions)" if mode == "full" else "")


def user_line(input_id: str, text: str) -> Dict[str, Any]:
    """A user line under the input's id: Claude's receipts and results name it."""
    return {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None,
            "uuid": input_id}


def stdin_line(frame: Dict[str, Any]) -> str:
    """One JSON line for Claude's stdin, validated: a malformed line would kill Claude."""
    line = json.dumps(frame, ensure_ascii=True, separators=(",", ":"))
    if "\n" in line or "\r" in line or json.loads(line) != frame:
        raise ValueError("refusing to write an invalid stdin line")
    if frame.get("type") not in STDIN_TYPES:
        raise ValueError("unknown stdin line type %r" % frame.get("type"))
    if frame["type"] == "user" and not (isinstance(frame["message"]["content"], str)
                                        and frame["message"]["content"].strip()):
        raise ValueError("empty user text")
    return line
