"""codex's server requests (approvals, permissions, MCP elicitations,
request_user_input) as harnessctl requests, and the answers back: pure
functions of the wire shapes (codex 0.171.0 and the app-server JSON schema
that binary generates).  A request offers exactly what codex offers."""

from __future__ import annotations

import re

from harnessctl.kit import field_questions, field_values, form_fields, permission_subject

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

# codex approval decision (a string) -> our reply option
DECISION_OPTIONS = {
    "accept": "allow",
    "acceptForSession": "allow-session",
    "decline": "deny",
    "cancel": "cancel",
}
# the options of an approval that lists no `availableDecisions` (file changes, older servers)
DEFAULT_DECISIONS = ["accept", "decline", "acceptForSession", "cancel"]


def decision_option(decision: Any) -> Optional[Tuple[str, str]]:
    """One `availableDecisions` entry -> (our option, what it does), or None
    for a decision shape harnessctl does not know."""
    if isinstance(decision, str):
        option = DECISION_OPTIONS.get(decision)
        return (option, DECISION_TEXTS[option]) if option else None
    if not isinstance(decision, dict) or len(decision) != 1:
        return None
    name, value = next(iter(decision.items()))
    value = value if isinstance(value, dict) else {}
    if name == "acceptWithExecpolicyAmendment":
        prefix = " ".join(str(p) for p in value.get("execpolicy_amendment") or [])
        return "allow-always", "run it, and never ask again for commands starting with `%s`" % prefix
    if name == "applyNetworkPolicyAmendment":
        rule = value.get("network_policy_amendment")
        rule = rule if isinstance(rule, dict) else {}
        action = rule.get("action")
        if action in ("allow", "deny"):
            return "%s-host" % action, "%s %s from now on" % (action, rule.get("host"))
    return None


DECISION_TEXTS = {
    "allow": "run it once",
    "allow-session": "run it, and do not ask again this session",
    "deny": "refuse it; the agent goes on",
    "cancel": "refuse it and end the turn",
}


def approval_options(available: Any) -> Tuple[List[str], List[str], Dict[str, Any]]:
    """(options, their descriptions, option -> codex decision) of an approval.

    Only what codex offers (`availableDecisions`, else every plain decision),
    plus `deny`: codex accepts `decline` even where its list leaves it out (as
    recorded: 0.171.0 offers accept, an execpolicy amendment and cancel), and
    a caller must always be able to refuse without ending the turn."""
    decisions = available if isinstance(available, list) else DEFAULT_DECISIONS
    options: List[str] = []
    texts: List[str] = []
    mapping: Dict[str, Any] = {}
    for decision in decisions:
        known = decision_option(decision)
        if known is None or known[0] in mapping:
            continue
        options.append(known[0])
        texts.append(known[1])
        mapping[known[0]] = decision
    if "deny" not in mapping:
        at = options.index("cancel") if "cancel" in options else len(options)
        options.insert(at, "deny")
        texts.insert(at, DECISION_TEXTS["deny"])
        mapping["deny"] = "decline"
    return options, texts, mapping


def command_request(params: Dict[str, Any]) -> Dict[str, Any]:
    """item/commandExecution/requestApproval -> host.request arguments."""
    command = params.get("command") or ""
    cwd = params.get("cwd")  # where codex runs it: the rules judge it there
    reason = params.get("reason")
    kind = params.get("kind") or "command"
    network = params.get("networkApprovalContext")
    if isinstance(network, dict) and not command:
        message = "Allow network access to %s (%s)" % (network.get("host"), network.get("protocol"))
    elif kind == "writeStdin":
        message = "Write to the running command: %s" % command
    elif kind == "humanCommand":
        message = "Confirm (a checkpoint that needs a person): %s" % command
    else:
        message = "Run command: %s" % command
    if reason:
        message += " (%s)" % reason
    options, texts, mapping = approval_options(params.get("availableDecisions"))
    details = {
        **permission_subject("command", "commandExecution", wire.command_title(command) or None,
                             cwd=cwd if isinstance(cwd, str) else None),
        "approval_kind": kind,
        "option_descriptions": texts,
        "input": {
            "command": command or None,
            "cwd": cwd,
            "reason": reason,
            "command_actions": params.get("commandActions"),
            "network": network if isinstance(network, dict) else None,
        },
    }
    return {"message": message, "options": options, "details": details,
            "replies": {o: {"decision": d} for o, d in mapping.items()}}


def file_change_request(params: Dict[str, Any], changes: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    """item/fileChange/requestApproval + the `changes` remembered from item/started
    or item/fileChange/patchUpdated (the approval params carry no diff)."""
    changes = [c for c in changes or [] if isinstance(c, dict)]
    paths = [str(c.get("path")) for c in changes]
    message = "Apply file changes: %s" % (", ".join(paths) if paths else "(unknown files)")
    reason = params.get("reason")
    if reason:
        message += " (%s)" % reason
    options, texts, mapping = approval_options(None)
    details = {
        **permission_subject("file_change", "fileChange", paths=touched_paths(changes)),
        "option_descriptions": texts,
        "input": {
            "changes": [wire.change_of(c) for c in changes],
            "reason": reason,
            "grant_root": params.get("grantRoot"),
        },
    }
    return {"message": message, "options": options, "details": details,
            "replies": {o: {"decision": d} for o, d in mapping.items()}}


def touched_paths(changes: List[Dict[str, Any]]) -> List[str]:
    """Every path a file change touches: each file, and where a move takes it."""
    paths: List[str] = []
    for change in changes:
        shown = wire.change_of(change)
        paths.extend(str(p) for p in (shown["path"], shown.get("move_path")) if p)
    return paths


def permissions_request(params: Dict[str, Any]) -> Dict[str, Any]:
    """item/permissions/requestApproval (the model asks for more sandbox access)
    -> a permission: allow grants what it asked for this turn, allow-session for
    the session, deny grants nothing."""
    asked = wire.as_object(params.get("permissions"))
    wants = []
    network = asked.get("network")
    if isinstance(network, dict) and network.get("enabled"):
        wants.append("network access")
    files = asked.get("fileSystem")
    if isinstance(files, dict):
        for access in ("write", "read"):
            for path in files.get(access) or []:
                wants.append("%s %s" % (access, path))
        for entry in files.get("entries") or []:
            if isinstance(entry, dict):
                wants.append("%s %s" % (entry.get("access"), _fs_path(entry.get("path"))))
    message = "Grant %s" % (", ".join(wants) if wants else "extra permissions")
    reason = params.get("reason")
    if reason:
        message += " (%s)" % reason
    granted = {k: v for k, v in asked.items() if v is not None}
    return {
        "message": message,
        "options": ["allow", "allow-session", "deny"],
        "details": {**permission_subject("other", "request_permissions"),
                    "option_descriptions": ["grant it for this turn", "grant it for the session",
                                            "grant nothing"],
                    "input": {"permissions": asked, "cwd": params.get("cwd"), "reason": reason}},
        "replies": {"allow": {"permissions": granted, "scope": "turn"},
                    "allow-session": {"permissions": granted, "scope": "session"},
                    "deny": {"permissions": {}, "scope": "turn"}},
    }


def _fs_path(path: Any) -> str:
    if not isinstance(path, dict):
        return str(path)
    if path.get("type") == "path":
        return str(path.get("path"))
    if path.get("type") == "glob_pattern":
        return str(path.get("pattern"))
    value = path.get("value")
    return str(value.get("kind") if isinstance(value, dict) else value)


def elicitation_request(params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """mcpServer/elicitation/request -> a request, or None for a mode no caller
    can answer (a device-signed `openai/userVerification`).

    A form with fields becomes a question (one per field, its answer converted
    to the field's type); a form with no field, or a URL to visit, becomes a
    permission: allow (accept), deny (decline), cancel.  A URL's carries
    `consent`: no rule and no mode answers it."""
    server = params.get("serverName") or "an MCP server"
    message = str(params.get("message") or "")
    mode = params.get("mode")
    fields = form_fields(params.get("requestedSchema"))
    if mode in ("form", "openai/form", "openaiForm") and fields:
        questions = field_questions(params.get("requestedSchema"))
        return {"kind": "question", "message": "%s asks: %s" % (server, message), "options": None,
                "details": {"tool": "mcp", "server": server, "questions": questions},
                "fields": fields}
    meta = wire.as_object(params.get("_meta"))
    tool = _mcp_tool(server, meta, message)
    if mode == "url":
        text = "%s asks you to open %s: %s" % (server, params.get("url"), message)
    elif mode in ("form", "openai/form", "openaiForm"):
        text = "%s asks: %s" % (server, message)
    else:
        return None
    return {"kind": "permission", "message": text, "options": ["allow", "deny", "cancel"],
            "details": {**permission_subject("mcp", tool or "elicitation", mcp_tool=tool),
                        "server": server, "url": params.get("url"),
                        "option_descriptions": ["accept", "decline", "cancel the request"],
                        **({"consent": True} if mode == "url" else {})},  # a login: no rule or mode answers it
            "replies": {"allow": {"action": "accept", "content": {} if mode != "url" else None},
                        "deny": {"action": "decline", "content": None},
                        "cancel": {"action": "cancel", "content": None}}}


def _mcp_tool(server: str, meta: Dict[str, Any], message: str) -> Optional[str]:
    """`server.tool` of codex's approval of an MCP tool call (an elicitation whose
    `_meta.codex_approval_kind` is `mcp_tool_call`): the tool from `_meta`, else
    from codex's text `Allow the S MCP server to run tool "T"?`."""
    if meta.get("codex_approval_kind") != "mcp_tool_call":
        return None
    tool = meta.get("tool_name")
    if not isinstance(tool, str) or not tool:
        named = re.search(r'run tool "([^"]+)"', message)
        tool = named.group(1) if named else None
    return "%s.%s" % (server, tool) if tool else None


def elicitation_answer(fields: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """{field: text} -> the elicitation response, each value converted to its
    field's type (kit.field_values)."""
    return {"action": "accept", "content": field_values(fields, answer)}


def question_request(params: Dict[str, Any]) -> Dict[str, Any]:
    """item/tool/requestUserInput -> a question request (labels as options, their
    descriptions alongside in `option_descriptions`)."""
    questions = []
    for q in params.get("questions") or []:
        if not isinstance(q, dict):
            continue
        entry: Dict[str, Any] = {"id": str(q.get("id")), "question": str(q.get("question") or "")}
        options = [o for o in q.get("options") or [] if isinstance(o, dict)]
        if options:
            entry["options"] = [str(o.get("label")) for o in options]
            entry["option_descriptions"] = [str(o.get("description") or "") for o in options]
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
