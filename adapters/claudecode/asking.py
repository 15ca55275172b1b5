"""Claude's permission prompts (the control protocol's `can_use_tool`
requests) as harnessctl requests, and the answers back: pure functions of
the wire shapes (recorded from Claude Code 2.1.332; the transcripts
permission__* and askuser__*).

* AskUserQuestion's prompt is a `question`: its questions get the ids q1,
  q2 ..., and the answers go back in the tool's input, as `answers` keyed
  by each question's text;
* any other tool's prompt is a `permission` with the fields policy rules
  match: allow or deny, and allow-session when Claude suggests "always
  allow" rules (kept for this session only) and does not insist on asking
  every time (`suppress_always_allow_rule`, `requires_user_interaction`);
* an allow gives the tool its input back unchanged; a deny says why, and
  its tool ends `declined`.
"""

from __future__ import annotations

from harnessctl.kit import permission_subject as subject

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Tuple

QUESTION_TOOL = "AskUserQuestion"
DENY_MESSAGE = "The user denied this action."
DETAIL_KEYS = ("description", "blocked_path", "decision_reason", "tool_use_id")  # shown as Claude sent them


def prompt(claude_id: str, request: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """A can_use_tool request -> (what answering it needs, the harnessctl
    request: its kind, message, options and details)."""
    tool = str(request.get("tool_name") or "tool")
    tool_input = wire.as_object(request.get("input"))
    about = permission_subject(tool, tool_input)
    entry: Dict[str, Any] = {"claude_id": claude_id, "input": tool_input, "kind": "permission",
                             "suggestions": request.get("permission_suggestions") or [], "questions": [],
                             "tool_use_id": wire.text_or_none(request.get("tool_use_id"))}
    if tool == QUESTION_TOOL and isinstance(tool_input.get("questions"), list):
        entry["kind"] = "question"
        entry["questions"] = questions(tool_input["questions"])
        return entry, {"kind": "question", "message": question_message(entry["questions"]), "options": None,
                       "details": dict(about, questions=entry["questions"])}
    entry["suggestions"] = session_rules(entry["suggestions"])
    if request.get("suppress_always_allow_rule") or request.get("requires_user_interaction"):
        entry["suggestions"] = []  # Claude must not offer "don't ask again" for this ask
    options = ["allow", "deny"] + (["allow-session"] if entry["suggestions"] else [])
    details = dict(about, input=tool_input)
    for key in DETAIL_KEYS:
        if request.get(key) is not None:
            details[key] = request[key]
    return entry, {"kind": "permission", "message": permission_message(tool, request), "options": options,
                   "details": details}


def response(entry: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """A validated reply -> Claude's can_use_tool response (`entry` is what prompt() kept)."""
    tool_input = entry["input"]
    if entry["kind"] == "question":
        answers = {q["question"]: answer[q["id"]] for q in entry["questions"] if q["id"] in answer}
        return {"behavior": "allow", "updatedInput": dict(tool_input, answers=answers)}
    if answer == "deny":
        return {"behavior": "deny", "message": DENY_MESSAGE}
    allowed = {"behavior": "allow", "updatedInput": tool_input}
    if answer == "allow-session" and entry["suggestions"]:
        allowed["updatedPermissions"] = entry["suggestions"]
    return allowed


def permission_subject(name: str, tool_input: Dict[str, Any]) -> Dict[str, Any]:
    """What a can_use_tool prompt is about, in the fields policy rules match
    (activity.permission_subject): the tool's kind with Claude's name for it,
    Bash's command, the file an editing tool changes, server.tool of an MCP tool."""
    kind, title = wire.tool_kind(name, tool_input)
    command = wire.text_or_none(tool_input.get("command")) if kind == "command" else None
    path = wire.text_or_none(tool_input.get("file_path") or tool_input.get("notebook_path"))
    return subject(kind, name=name, command=command, paths=[path] if path and kind == "file_change" else None,
                   mcp_tool=title if kind == "mcp" else None)


def questions(raw: List[Any]) -> List[Dict[str, Any]]:
    """AskUserQuestion's questions as a question request's, each with its id and option labels."""
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
    tool_input = wire.as_object(request.get("input"))
    detail = tool_input.get("command") or tool_input.get("file_path") or request.get("description") or ""
    return ("Claude wants to use %s: %s" % (tool, detail)).rstrip(": ") if detail else "Claude wants to use %s" % tool
