"""The pure mappings between the Agent Client Protocol (version 1) and
harnessctl: which command runs an agent, what its tool kinds, permission
options, stop reasons, errors and usage mean in the activity vocabulary, and
the client file system confined to the bound cwd.  No state, no I/O but the
fs helpers: backend.py keeps the state machine.

Every shape here was recorded from codex-acp 2.6.0, claude-agent-acp 0.101.0
and gemini-cli 0.61.0 (`gemini --acp`) against loopback model mocks.
Over 400 lines because the protocol is wide and each agent fills it its own
way (commands, tool kinds, options, usage, cost): one small pure function a
shape."""

from __future__ import annotations

import json
import os

from harnessctl.kit import amount, argv_line
from harnessctl.kit import permission_subject as subject

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from harnessctl.kit import Config

# ACP tool kinds -> the vocabulary's (activity.TOOL_KINDS)
TOOL_KINDS = {"execute": "command", "edit": "file_change", "delete": "file_change", "move": "file_change",
              "read": "read", "search": "search", "fetch": "web_search", "think": "other", "other": "other"}
# ACP permission option kinds -> the answer names every adapter uses
OPTION_NAMES = {"allow_once": "allow", "allow_always": "allow-session", "reject_once": "deny",
                "reject_always": "deny-always"}
STOP_STATUSES = {"end_turn": "completed", "cancelled": "cancelled"}  # anything else (refusal, max_tokens,
# max_turn_requests, an unknown reason) is failed, with the reason as error_class
RPC_CLASSES = {-32000: "auth_required", -32002: "resource_not_found", -32600: "invalid_request",
               -32601: "method_not_found", -32602: "invalid_params", -32603: "internal_error",
               -32700: "parse_error"}
PLAN_STATUSES = ("pending", "in_progress", "completed")
MCP_PREFIX = "mcp__"  # claude-agent-acp names an MCP tool mcp__SERVER__TOOL (Claude Code's spelling)
PATH_KEYS = ("file_path", "path", "notebook_path")  # rawInput keys naming the file an edit tool changes
CWD_KEYS = ("cwd", "workdir", "working_directory", "workingDirectory")  # rawInput keys naming where a tool runs


# -- which agent -------------------------------------------------------------------------


def agent_command(agent: str, presets: Dict[str, Any], env: Dict[str, str]) -> Tuple[List[str], str, Optional[str]]:
    """(argv, what to call it in messages, the variable that overrides it) for a
    preset name or a command line; raises ValueError on a line shlex cannot split."""
    import shlex

    preset = presets.get(agent)
    if isinstance(preset, dict):
        variable = str(preset.get("command_env") or "") or None
        line = (env.get(variable) if variable else None) or str(preset.get("command") or "")
        return shlex.split(line), "%s (preset %s)" % (line, agent), variable
    return shlex.split(agent), agent, None


def extra_args(env: Dict[str, str], variable: Optional[str]) -> List[str]:
    """The extra arguments in the manifest's `args_env` variable; raises
    ValueError on a line shlex cannot split."""
    import shlex

    return shlex.split(env.get(variable, "")) if variable else []


def install_hint(agent: str, presets: Dict[str, Any]) -> str:
    """How to get a missing agent: its package and the variable that overrides the command."""
    preset = presets.get(agent)
    if not isinstance(preset, dict):
        return "check the --agent command line (or %s)" % "HARNESSCTL_ACP_AGENT"
    package = preset.get("package")
    where = "install %s" % package if package else "install the %s agent" % agent
    return "%s or set %s to its command line" % (where, preset.get("command_env"))


# -- what the agent advertises -------------------------------------------------------------


def steering_supported(init: Dict[str, Any]) -> bool:
    """`_meta.steering.supported` of the initialize result (codex-acp, claude-agent-acp)."""
    return bool(as_object(as_object(init.get("_meta")).get("steering")).get("supported"))


def session_capabilities(init: Dict[str, Any]) -> Dict[str, Any]:
    """What the session line records: the agentCapabilities as advertised, and steering."""
    capabilities = dict(as_object(init.get("agentCapabilities")))
    capabilities["steering"] = as_object(as_object(init.get("_meta")).get("steering")) or {"supported": False}
    return capabilities


def resume_method(init: Dict[str, Any]) -> List[str]:
    """The ways to reopen a stored session, best first: session/resume (no replay),
    then session/load (replays the history as session/update)."""
    agent = as_object(init.get("agentCapabilities"))
    methods = []
    if "resume" in as_object(agent.get("sessionCapabilities")):
        methods.append("session/resume")
    if agent.get("loadSession") is True:
        methods.append("session/load")
    return methods


def can_fork(init: Dict[str, Any]) -> bool:
    """Whether the agent offers `session/fork` (`sessionCapabilities.fork`, an
    object; null or absent: no).  codex-acp 2.6.0 and claude-agent-acp 0.101.0
    do; gemini-cli 0.61.0 has no sessionCapabilities."""
    agent = as_object(init.get("agentCapabilities"))
    return isinstance(as_object(agent.get("sessionCapabilities")).get("fork"), dict)


def mode_selector(session: Dict[str, Any]) -> Tuple[Optional[str], List[str], Optional[str]]:
    """(how to set a mode, the ids offered, the current one): config id None means
    session/set_mode over the `modes` object (codex-acp, claude-agent-acp, gemini,
    qwen, droid, cline); else the id of a select config option of category
    `mode` set by session/set_config_option (opencode and kilo offer only that)."""
    modes = as_object(session.get("modes"))
    if isinstance(modes.get("availableModes"), list):
        ids = [str(m.get("id")) for m in modes["availableModes"] if isinstance(m, dict) and m.get("id")]
        return None, ids, text_or_none(modes.get("currentModeId"))
    option = config_option(session, "mode")
    if option is None:
        return None, [], None
    return str(option["id"]), option_values(option), text_or_none(option.get("currentValue"))


def offered_mode(wanted: str, offered: List[str]) -> Optional[str]:
    """The offered id `wanted` names: itself, or the one id whose URL fragment
    it is (copilot's ids are https://agentclientprotocol.com/protocol/session-modes#plan)."""
    if wanted in offered:
        return wanted
    named = [mode for mode in offered if mode.endswith("#" + wanted)]
    return named[0] if len(named) == 1 else None


def modes_are_permissions(session: Dict[str, Any]) -> bool:
    """Whether the agent's modes are about permissions, so the session line may
    call the mode its approval policy: pi-acp and openclaw offer thinking levels
    as `modes`, which their config option of category thought_level mirrors."""
    modes = as_object(session.get("modes"))
    if not isinstance(modes.get("availableModes"), list) or config_option(session, "mode") is not None:
        return True
    thinking = config_option(session, "thought_level")
    return thinking is None or thinking.get("currentValue") != modes.get("currentModeId")


def model_selector(session: Dict[str, Any]) -> Optional[Tuple[str, Optional[str]]]:
    """How this agent selects a model: ("session/set_model", None) when it lists
    `models` (codex-acp, gemini, cline), ("session/set_config_option", config id)
    when it has a model config option (claude-agent-acp), else None."""
    if isinstance(session.get("models"), dict):
        return "session/set_model", None
    option = config_option(session, "model")
    return ("session/set_config_option", str(option["id"])) if option is not None else None


def current_model(session: Dict[str, Any]) -> Optional[str]:
    model = text_or_none(as_object(session.get("models")).get("currentModelId"))
    if model is None:
        return text_or_none(as_object(config_option(session, "model")).get("currentValue"))
    return model


def config_option(session: Dict[str, Any], category: str) -> Optional[Dict[str, Any]]:
    """The config option that sets `category`: the one whose id is the category,
    else the first of that category (cline's `provider` is of category model,
    before its `model`)."""
    options = [o for o in session.get("configOptions") or [] if isinstance(o, dict) and isinstance(o.get("id"), str)
               and o["id"] and category in (o.get("id"), o.get("category"))]
    return next((o for o in options if o["id"] == category), options[0] if options else None)


def option_values(option: Dict[str, Any]) -> List[str]:
    """The values a select config option offers, its groups flattened."""
    values: List[str] = []
    for entry in option.get("options") or []:
        group = as_object(entry).get("options")
        for choice in group if isinstance(group, list) else [entry]:
            value = as_object(choice).get("value")
            values += [value] if isinstance(value, str) else []
    return values


# -- activity ------------------------------------------------------------------------------


def tool_kind(kind: Any, name: Optional[str] = None) -> str:
    """The vocabulary's kind: `mcp` for a tool named as an MCP tool, else by its ACP kind."""
    return "mcp" if mcp_tool(name) else TOOL_KINDS.get(str(kind), "other")


def mcp_tool(name: Optional[str]) -> Optional[str]:
    """`server.tool` of an MCP tool's name (mcp__SERVER__TOOL), else None."""
    if isinstance(name, str) and name.startswith(MCP_PREFIX):
        server, sep, tool = name[len(MCP_PREFIX):].partition("__")
        if server and sep and tool:
            return "%s.%s" % (server, tool)
    return None


def tool_name(update: Dict[str, Any]) -> Optional[str]:
    """The agent's own tool name: `name` (codex exec_command, claude Bash), claude's
    _meta.claudeCode.toolName, else none (gemini: the id starts with it)."""
    name = update.get("name") or as_object(as_object(update.get("_meta")).get("claudeCode")).get("toolName")
    if isinstance(name, str) and name:
        return name
    tool_id = update.get("toolCallId")
    if isinstance(tool_id, str) and "__" in tool_id:
        return tool_id.split("__", 1)[0]
    return None


def terminal_output(update: Dict[str, Any]) -> str:
    """codex-acp's streamed command output (the client said terminal:false)."""
    delta = as_object(as_object(update.get("_meta")).get("terminal_output_delta")).get("data")
    return delta if isinstance(delta, str) else ""


def exit_code(update: Dict[str, Any]) -> Optional[int]:
    """codex-acp's _meta.terminal_exit, else openclaw's rawOutput.details.exitCode."""
    code = as_object(as_object(update.get("_meta")).get("terminal_exit")).get("exit_code")
    if code is None:
        code = as_object(as_object(update.get("rawOutput")).get("details")).get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def declined(update: Dict[str, Any]) -> bool:
    """claude-agent-acp marks a tool refused by a person or its rules."""
    kind = as_object(as_object(update.get("_meta")).get("claudeCode")).get("nonExecutionKind")
    return kind in ("user-rejected", "permission-rule")


def raw_output(update: Dict[str, Any]) -> str:
    """A finished tool's output: rawOutput (claude) or its text content blocks."""
    raw = update.get("rawOutput")
    if isinstance(raw, str):
        return raw
    if raw is not None:
        return json.dumps(raw)
    texts = []
    for block in update.get("content") or []:
        inner = as_object(as_object(block).get("content"))
        if as_object(block).get("type") == "content" and inner.get("type") == "text":
            texts.append(str(inner.get("text") or ""))
    return "\n".join(texts)


def diffs(content: Any) -> List[Tuple[str, str, Optional[str], str]]:
    """(path, change, old text, new text) of each `diff` content block; a block
    with no oldText, or gemini's _meta.kind "add", creates the file."""
    out = []
    for block in content if isinstance(content, list) else []:
        block = as_object(block)
        if block.get("type") != "diff" or not isinstance(block.get("path"), str):
            continue
        old, new = block.get("oldText"), block.get("newText")
        kind = as_object(block.get("_meta")).get("kind")
        change = "add" if old is None or kind == "add" else "delete" if kind == "delete" else "update"
        out.append((block["path"], change, None if change == "add" else str(old or ""), str(new or "")))
    return out


def plan_entries(update: Dict[str, Any]) -> List[Tuple[str, str]]:
    entries = []
    for entry in update.get("entries") or []:
        entry = as_object(entry)
        status = entry.get("status")
        entries.append((str(entry.get("content") or ""), status if status in PLAN_STATUSES else "pending"))
    return entries



# -- notices, compaction and the agent's own words ----------------------------------------------

NOTICE_LIMIT = 4000  # characters of a notice or compaction summary kept (an agent is untrusted input)
NOTICE_CHUNKS = ("informational", "mcpServerStatus")  # claude-agent-acp's _meta.claudeCode.kind of a notice
# it sends as message text to a client without `session.notices`


def notice(update: Dict[str, Any]) -> Tuple[str, str]:
    """(severity, text) of a `notice` update: its title and description on one
    line; a severity ACP does not define yet is `info`."""
    severity = update.get("severity")
    title = text_or_none(update.get("title")) or "notice"
    description = text_or_none(update.get("description"))
    text = "%s: %s" % (title, description) if description else title
    return (severity if severity in ("warning", "error") else "info"), cut(text)


def notice_chunk(update: Dict[str, Any]) -> Optional[str]:
    """The severity of a message chunk that is a notice, not the reply
    (claude-agent-acp marks them in _meta.claudeCode.kind), else None."""
    meta = as_object(as_object(update.get("_meta")).get("claudeCode"))
    if meta.get("kind") not in NOTICE_CHUNKS:
        return None
    return "info" if meta.get("kind") == "informational" and meta.get("level") != "warning" else "warning"


def content_text(blocks: Any) -> str:
    """The text of a list of ACP content blocks (a compaction summary)."""
    parts = [as_object(b).get("text") for b in blocks] if isinstance(blocks, list) else []
    return cut("".join(p for p in parts if isinstance(p, str)))


def agent_error(update: Dict[str, Any]) -> Optional[str]:
    """The error an agent reports in a session_info_update's _meta
    (codex-acp: `_meta.codex.error`, "Reconnecting... waiting for network"
    while it cannot reach its model), as one line; None if there is none."""
    for value in as_object(update.get("_meta")).values():
        error = as_object(as_object(value).get("error"))
        message = text_or_none(error.get("message"))
        if message:
            details = text_or_none(error.get("additionalDetails"))
            return cut("%s (%s)" % (message, details) if details else message)
    return None


def seconds(text: Optional[str], default: float) -> float:
    """A knob's number of seconds: `default` when unset, not a number, zero
    or negative; at most a year."""
    try:
        value = float(text or "")
    except ValueError:
        return default
    return min(value, 365 * 86400.0) if 0 < value < float("inf") else default


def agent_words(said: Optional[str], unreadable: str, stderr_words: str) -> str:
    """What the agent said, for a message that quotes it: its last reported
    error (of the run), the last line it wrote on stdout that was no message,
    and its stderr's line that names an error, else its last lines
    (ChildBackend.stderr_words): an agent's reason is often followed by more
    output (claude-agent-acp's "Connection refused", fast-agent's "No model
    configured")."""
    words = "; it reports: %s" % said if said else ""
    if unreadable:
        words += "; its stdout said: %s" % cut(unreadable, 300)
    return words + stderr_words


def cut(text: str, limit: int = NOTICE_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- permissions -------------------------------------------------------------------------------


def permission_options(options: Any) -> Tuple[List[str], List[str], Dict[str, str]]:
    """(our option names, their descriptions, our name -> the agent's optionId).

    Names come from the ACP option kinds (allow_once -> allow, allow_always ->
    allow-session, reject_once -> deny, reject_always -> deny-always); where
    the agent offers two options of one kind (qwen: "Always Allow in project"
    and "... for user"), each also carries the agent's own words for it
    (allow-session-in-project, allow-session-for-user), else `-2`, `-3`...;
    an option of an unknown kind is named by its optionId.  Of several
    reject_once options the first is plain `deny`.  A deny keeps the
    agent's turn: `deny` is the reject_once option, else the reject_always
    one; only with no reject option at all does `deny` answer the request
    `cancelled` (which ends the agent's turn), so a person can always refuse."""
    options = [as_object(o) for o in options] if isinstance(options, list) else []
    options = [o for o in options if isinstance(o.get("optionId"), str) and o["optionId"]]
    kinds = [OPTION_NAMES.get(str(o.get("kind"))) or o["optionId"] for o in options]
    if "deny" not in kinds and "deny-always" in kinds:  # the agent's only way to refuse and go on
        kinds[kinds.index("deny-always")] = "deny"
    shared: Dict[str, int] = {}  # how many options each name stands for (counted once: an agent may send many)
    for base in kinds:
        shared[base] = shared.get(base, 0) + 1
    names: List[str] = []
    texts: List[str] = []
    mapping: Dict[str, str] = {}
    numbered: Dict[str, int] = {}  # the last -N each name got, so many alike stay linear
    plain = kinds.index("deny") if "deny" in kinds else -1  # the `deny` a rule answers with keeps its name
    for at, (option, base) in enumerate(zip(options, kinds)):
        words = option_words(option.get("name"), base) if shared[base] > 1 and at != plain else ""
        name = "%s-%s" % (base, words) if words else base
        while name in mapping:
            numbered[base] = numbered.get(base, 1) + 1
            name = "%s-%d" % (base, numbered[base])
        names.append(name)
        texts.append(str(option.get("name") or option["optionId"]))
        mapping[name] = option["optionId"]
    if not any(str(o.get("kind")).startswith("reject") for o in options):
        names.append("deny")
        texts.append("refuse (the agent offers no reject option: the request is answered cancelled)")
        mapping["deny"] = ""
    return names, texts, mapping


def option_kinds(options: Any, mapping: Dict[str, str]) -> List[str]:
    """The ACP kind of the option each of our names selects (in the order of
    `mapping`), `cancelled` for a `deny` that cancels: the request record
    keeps them, so its answer says which option the agent got."""
    offered = [as_object(o) for o in options] if isinstance(options, list) else []
    known = {o.get("optionId"): str(o.get("kind")) for o in offered if str(o.get("kind")) in OPTION_NAMES}
    return [known.get(option_id, "other") if option_id else "cancelled" for option_id in mapping.values()]


def option_words(label: Any, base: str) -> str:
    """What tells an option apart from others of its kind: the words of its
    label before any colon (the rest repeats the command), lower case, less
    those the name has already and `always`; at most four."""
    import re

    if not isinstance(label, str):
        return ""
    known = set(base.split("-")) | {"always"}
    words = [w for w in re.findall(r"[a-z0-9]+", label.split(":", 1)[0].lower()) if w not in known]
    return "-".join(words[:4])


def permission_subject(kind: str, name: Optional[str], title: str, raw_input: Any, content: Any,
                       locations: Any) -> Dict[str, Any]:
    """What a permission request is about, for the rules (activity.permission_subject):
    a command's line, the paths an edit touches, an MCP tool's server.tool.  The
    call decides, not its label: one that carries a command is a command
    whatever its `kind` says, and a title is never taken for a command (the
    agent's model writes it), so a call with nothing else is matched only by
    rules without a pattern."""
    command = command_line(raw_input)
    if command is not None:  # run where rawInput says (cwd, workdir): the rules judge it there
        return subject("command", name, command, cwd=input_cwd(as_object(raw_input)))
    return subject(kind, name, None, touched_paths(locations, content, raw_input) if kind == "file_change" else None,
                   mcp_tool(name))


def tool_cwd(update: Dict[str, Any]) -> Optional[str]:
    """The directory a tool update says the tool runs in, if absolute: its
    rawInput's cwd / workdir, or what its rawOutput.details say (openclaw)."""
    for raw in (as_object(update.get("rawInput")), as_object(as_object(update.get("rawOutput")).get("details"))):
        where = input_cwd(raw)
        if where and os.path.isabs(where):
            return where
    return None


def input_cwd(raw: Dict[str, Any]) -> Optional[str]:
    """The directory a tool's input names as where it runs (cwd, workdir, ...), as written."""
    return next((raw[key] for key in CWD_KEYS if isinstance(raw.get(key), str) and raw[key]), None)


def inside(root: str, path: str) -> bool:
    """Whether `path` is `root` or lies under it, symlinks resolved."""
    root, real = os.path.realpath(root), os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def command_line(raw_input: Any) -> Optional[str]:
    """rawInput.command (codex-acp, claude-agent-acp; an argv list is joined, a
    shell's -c/-lc wrapper removed) or rawInput.commands (cline, chained with
    &&); None when the call carries neither (gemini names its command only in
    the title)."""
    raw = as_object(raw_input)
    command = raw.get("command")
    commands = raw.get("commands")  # cline's run_commands: a list of command lines
    if command is None and isinstance(commands, list) and commands and all(isinstance(c, str) for c in commands):
        return " && ".join(commands)  # every one of them must be allowed
    if isinstance(command, list) and command and all(isinstance(word, str) for word in command):
        return argv_line(command)
    return command if isinstance(command, str) and command else None


def touched_paths(locations: Any, content: Any, raw_input: Any) -> List[str]:
    """Every path an edit names: its locations (all three agents), its diff
    blocks and the file its rawInput names (claude), each once, in order."""
    found = [as_object(place).get("path") for place in (locations if isinstance(locations, list) else ())]
    found += [path for path, _, _, _ in diffs(content)]
    found += [as_object(raw_input).get(key) for key in PATH_KEYS]
    return list(dict.fromkeys(path for path in found if isinstance(path, str) and path))


def permission_message(tool_call: Dict[str, Any]) -> str:
    kind = str(tool_call.get("kind") or "other")
    title = str(tool_call.get("title") or tool_name(tool_call) or "a tool")
    verb = {"execute": "Run", "edit": "Edit", "delete": "Delete", "move": "Move", "read": "Read",
            "fetch": "Fetch", "search": "Search", "switch_mode": "Switch mode"}.get(kind, "Allow")
    return "%s: %s" % (verb, title)


# -- results -------------------------------------------------------------------------------------


def outcome(stop_reason: Any) -> Tuple[str, Optional[str], Optional[str]]:
    """(status, error, error_class) of a session/prompt result's stopReason."""
    status = STOP_STATUSES.get(str(stop_reason))
    if status is not None:
        return status, None, None
    reason = str(stop_reason) if isinstance(stop_reason, str) and stop_reason else "unknown"
    return "failed", "the agent stopped the turn: %s" % reason, reason


def rpc_error_text(error: Any) -> str:
    """A JSON-RPC error as one line: its message, the details it carries, and
    the inner message of gemini's raw JSON bodies."""
    if not isinstance(error, dict):
        return str(error)
    message = str(error.get("message") or "error %s" % error.get("code"))
    try:
        body = json.loads(message)
    except ValueError:
        body = None
    inner = as_object(as_object(body).get("error"))
    if inner.get("message"):
        message = "%s (%s)" % (inner["message"], inner.get("status") or inner.get("code"))
    data = as_object(error.get("data"))
    details = data.get("details") or data.get("message")
    if isinstance(details, str) and details and details not in message:
        message = "%s: %s" % (message, details)
    return message


def rpc_error_class(error: Any) -> Optional[str]:
    """data.errorKind when the agent names it (claude: server_error), `http_NNN`
    when the code is an HTTP status (gemini passes it through), else the
    JSON-RPC code's name."""
    if not isinstance(error, dict):
        return None
    kind = as_object(error.get("data")).get("errorKind")
    if isinstance(kind, str) and kind:
        return kind
    code = error.get("code")
    if isinstance(code, int) and 100 <= code < 600:
        return "http_%d" % code
    return RPC_CLASSES.get(code) if isinstance(code, int) else None


def usage(result: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """The run's tokens from a session/prompt result: `usage` (codex, claude;
    inputTokens leaves cached reads out, so input_tokens adds them back, as the
    other adapters count), else gemini's _meta.quota.token_count."""
    raw = as_object(result.get("usage"))
    if raw:
        values = {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
        out = {"input_tokens": sum(values.get(k, 0) for k in ("inputTokens", "cachedReadTokens", "cachedWriteTokens")),
               "cached_input_tokens": values.get("cachedReadTokens", 0), "output_tokens": values.get("outputTokens", 0)}
        if "thoughtTokens" in values:
            out["reasoning_tokens"] = values["thoughtTokens"]
        if "totalTokens" in values:
            out["total_tokens"] = values["totalTokens"]
        return out
    count = as_object(as_object(as_object(result.get("_meta")).get("quota")).get("token_count"))
    if isinstance(count.get("input_tokens"), int) or isinstance(count.get("output_tokens"), int):
        return {k: int(count[k]) for k in ("input_tokens", "output_tokens") if isinstance(count.get(k), int)}
    return None


def cost(update: Dict[str, Any]) -> Optional[float]:
    """usage_update's `cost` (the session's cumulative cost) in US dollars."""
    raw = as_object(update.get("cost"))
    return amount(raw.get("amount")) if raw.get("currency", "USD") == "USD" else None


# -- the client file system, confined to the bound cwd ------------------------------------------------


# A file the agent reads comes back in one JSON-RPC message: a bigger one is
# refused (the agent reads it in parts through its own tools, or not at all).
MAX_READ = 16 * 1024 * 1024


def read_text(config: Config, params: Dict[str, Any]) -> Dict[str, Any]:
    """fs/read_text_file: `line` (1-based) and `limit` honoured; a missing file
    reads as empty text (gemini fails a write of a new file otherwise: REPORT §6).
    Only a file inside the cwd and none of harnessctl's own (Config.agent_file)."""
    target = config.agent_file(params.get("path"))
    try:
        fd = target.open(os.O_RDONLY)
    except FileNotFoundError:
        return {"content": ""}
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_READ + 1)
    if len(data) > MAX_READ:
        raise PermissionError("%s is larger than %d MiB" % (target.real, MAX_READ >> 20))
    text = data.decode("utf-8", "replace")
    line, limit = params.get("line"), params.get("limit")
    if isinstance(line, int) or isinstance(limit, int):
        lines = text.splitlines(True)
        start = max(line - 1, 0) if isinstance(line, int) else 0
        end = start + max(limit, 0) if isinstance(limit, int) else len(lines)
        text = "".join(lines[start:end])
    return {"content": text}


def write_text(config: Config, params: Dict[str, Any]) -> Dict[str, Any]:
    """fs/write_text_file: creates missing parent folders inside the cwd; the
    file is truncated only once it has passed every check."""
    target = config.agent_file(params.get("path"))
    content = params.get("content")
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    data = content.encode("utf-8")  # a lone surrogate: ValueError, before anything is touched
    with os.fdopen(target.open(os.O_WRONLY | os.O_CREAT, make_dirs=True), "wb") as f:
        f.truncate()
        f.write(data)
    return {}


FILE_METHODS = {"fs/read_text_file": read_text, "fs/write_text_file": write_text}


def file_request(config: Config, method: str,
                 params: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[Tuple[int, str]]]:
    """One of FILE_METHODS the agent calls its client with -> (its result,
    None), or ({}, (code, message)) of the JSON-RPC error that refuses it."""
    try:
        return FILE_METHODS[method](config, params), None
    except PermissionError as exc:
        return {}, (-32602, str(exc))
    except ValueError as exc:
        return {}, (-32602, "Invalid params: %s" % exc)
    except OSError as exc:
        return {}, (-32603, "Internal error: %s" % (exc.strerror or exc))


# -- small helpers ---------------------------------------------------------------------------------


def as_object(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def text_or_none(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None
