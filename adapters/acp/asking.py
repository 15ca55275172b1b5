"""What an ACP agent asks of a person, beyond a tool's permission, as
harnessctl requests, and the answers back: pure functions of the wire shapes
(ACP schema 1.21.0 and later; codex-acp 2.6.0, claude-agent-acp 0.101.0).

* `elicitation/create` (a form, or a URL to open) is a `question`: a form's
  fields are its questions, and its `options` are the answers that are no
  field values (`decline`, `cancel`; a URL or a form with no field adds
  `accept`).  No rule and no mode answers a question, so a URL, which stands
  for a person's consent (a login), never passes by policy;
* a permission whose tool call is a `switch_mode` (claude-agent-acp's plan
  exit and entry) is a `mode` request, which only a reply or a rule naming
  `mode` answers;
* a `fetch` permission of an `elicitation-…` tool call with rawInput
  {serverName, url} is codex-acp's stand-in for a URL elicitation where the
  client offers none: it carries `consent`, so no rule and no mode answers it.
"""

from __future__ import annotations

from harnessctl.kit import field_questions, field_values, form_fields

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

# what the client offers (ClientCapabilities.elicitation): both modes
CAPABILITY: Dict[str, Dict[str, Any]] = {"form": {}, "url": {}}
ACTIONS = ("accept", "decline", "cancel")
ACTION_TEXTS = {"accept": "accept (a URL: you opened it and went through it)", "decline": "decline",
                "cancel": "dismiss without a decision"}
CANCELLED = {"action": "cancel"}  # the answer when harnessctl cancels (a run's cancel or end)


def elicitation_request(params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """An `elicitation/create` -> {message, options, details, fields} of a
    question request, or None for a mode harnessctl cannot show."""
    mode = params.get("mode")
    message = str(params.get("message") or "")
    details: Dict[str, Any] = {"elicitation": mode}
    tool_id = params.get("toolCallId")
    if isinstance(tool_id, str) and tool_id:
        details["tool_id"] = tool_id
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not url:
            return None
        elicitation_id = params.get("elicitationId")
        details.update(url=url, elicitation_id=elicitation_id if isinstance(elicitation_id, str) else None,
                       questions=[])
        return {"message": "Open %s: %s" % (url, message) if message else "Open %s" % url,
                "options": list(ACTIONS), "details": dict(details, option_descriptions=_texts(ACTIONS)),
                "fields": {}}
    if mode != "form":
        return None
    fields = form_fields(params.get("requestedSchema"))
    options = list(ACTIONS[1:] if fields else ACTIONS)
    details.update(questions=field_questions(params.get("requestedSchema")), option_descriptions=_texts(options))
    return {"message": message or "The agent asks", "options": options, "details": details, "fields": fields}


def _texts(options: Any) -> List[str]:
    return [ACTION_TEXTS[o] for o in options]


def elicitation_response(fields: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """A validated answer -> the `elicitation/create` result: one of the
    actions, or the fields' values (each converted to its field's type) as
    an accept."""
    if answer in ACTIONS:
        return {"action": answer, "content": {}} if answer == "accept" and fields else {"action": answer}
    return {"action": "accept", "content": field_values(fields, answer)}


def is_mode_switch(tool_call: Dict[str, Any]) -> bool:
    """A permission to switch the agent's own mode (ACP tool kind `switch_mode`)."""
    return tool_call.get("kind") == "switch_mode"


def is_consent(tool_call: Dict[str, Any]) -> bool:
    """codex-acp's URL elicitation as a permission (a client without the
    elicitation capability): kind `fetch`, toolCallId `elicitation-…`,
    rawInput {serverName, url}."""
    raw = tool_call.get("rawInput")
    tool_id = tool_call.get("toolCallId")
    return (tool_call.get("kind") == "fetch" and isinstance(tool_id, str) and tool_id.startswith("elicitation-")
            and isinstance(raw, dict) and "url" in raw and "serverName" in raw)
