"""What an ACP agent asks of its client: of a person (a tool's permission,
an elicitation) as harnessctl requests, kept pending until answered
(`Asking`), and the answers back; of the client itself, its file system
(wire.py: confined to the cwd).  ACP schema 1.21.0 and later; codex-acp
2.6.0, claude-agent-acp 0.101.0.

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

from . import wire
from .updates import Tool

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from harnessctl.kit import Calls, Config, Host

    from .updates import Run, Updates

# what the client offers (ClientCapabilities.elicitation): both modes
CAPABILITY: Dict[str, Dict[str, Any]] = {"form": {}, "url": {}}
ACTIONS = ("accept", "decline", "cancel")
ACTION_TEXTS = {"accept": "accept (a URL: you opened it and went through it)", "decline": "decline",
                "cancel": "dismiss without a decision"}
CANCELLED = {"action": "cancel"}  # the answer when harnessctl cancels (a run's cancel or end)
PERMISSION_CANCELLED = {"outcome": {"outcome": "cancelled"}}  # only when harnessctl cancels, or no reject option


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


class Asking:
    """One agent process's requests.  Those that wait for a person
    (permissions and elicitations) are kept by the agent's request id until
    a reply, the agent withdraws one, or harnessctl cancels it (a cancel, the
    run's end)."""

    def __init__(self, host: Host, calls: Calls, config: Config, updates: Updates) -> None:
        self.host, self.calls, self.config, self.updates = host, calls, config, updates
        self.pending: Dict[Any, Dict[str, Any]] = {}  # agent request id -> what answering it needs

    def on_request(self, run: Optional[Run], method: str, agent_id: Any, params: Dict[str, Any], label: str) -> None:
        """A request of the agent (`label` in messages) during the run, if
        any: progress of that run, since it may wait for a person, however long."""
        if run is not None:
            run.progressed = True
        if method == "session/request_permission":
            self._permission(run, agent_id, params)
        elif method == "elicitation/create":
            self._elicitation(run, agent_id, params, label)
        elif method not in wire.FILE_METHODS:
            self.host.log("diagnostic", "warning", run_id=run.run_id if run else None,
                          message="the ACP agent asked %s, which harnessctl does not offer; refused" % method)
            self.calls.refuse(agent_id, -32601, "Method not found: %s" % method)
        else:  # the client's file system, confined to the cwd
            result, refusal = wire.file_request(self.config, method, params)
            if refusal is None:
                self.calls.respond(agent_id, result)
            else:
                self.calls.refuse(agent_id, *refusal)

    def _permission(self, run: Optional[Run], agent_id: Any, params: Dict[str, Any]) -> None:
        """session/request_permission: a `permission` request (`mode` for a mode switch)."""
        tool_call = wire.as_object(params.get("toolCall"))
        tool_id = wire.text_or_none(tool_call.get("toolCallId"))
        # the request completes what the agent said of the tool (gemini said nothing before it)
        tool = self.updates.tool(run, tool_id, tool_call) if run is not None and tool_id else Tool("", tool_call)
        names, texts, mapping = wire.permission_options(params.get("options"))
        details = wire.permission_subject(tool.kind, tool.own_name, tool.title, tool.input, tool.content,
                                          tool_call.get("locations"))
        details.update(input=tool.input, option_descriptions=texts, tool_id=tool_id,
                       option_kinds=wire.option_kinds(params.get("options"), mapping))
        kind = "mode" if is_mode_switch(tool_call) else "permission"
        if is_consent(tool_call):
            details["consent"] = True  # a login URL to open: no rule and no mode answers it
        self.pending[agent_id] = {"run": run, "mapping": mapping, "tool_id": tool_id}
        self.host.request(run.run_id if run else None, kind, wire.permission_message(tool_call), options=names,
                          details=details, token=agent_id)

    def _elicitation(self, run: Optional[Run], agent_id: Any, params: Dict[str, Any], label: str) -> None:
        """A form or a URL for a person: a question, parked until a reply."""
        run_id = run.run_id if run else None
        asked = elicitation_request(params)
        if asked is None:
            self.host.log("diagnostic", "warning", run_id=run_id, message="the ACP agent %s asked an elicitation "
                          "of mode %r, which harnessctl cannot show; cancelled" % (label, params.get("mode")))
            self.calls.respond(agent_id, CANCELLED)
            return
        self.pending[agent_id] = {"run": run, "fields": asked["fields"],
                                  "elicitation_id": asked["details"].get("elicitation_id")}
        self.host.request(run_id, "question", asked["message"], options=asked["options"],
                          details=asked["details"], token=agent_id)

    def completed(self, run_id: Optional[str], params: Dict[str, Any]) -> None:
        """The agent says a URL elicitation is over (the login went through):
        one still pending is no longer asked, and is answered `cancel`."""
        wanted = params.get("elicitationId")
        for agent_id in [k for k, v in self.pending.items() if wanted and v.get("elicitation_id") == wanted]:
            self._cancel(agent_id)
            self.host.request_closed(agent_id)
        self.host.log("native", level="debug", run_id=run_id, data={"method": "elicitation/complete",
                                                                    "params": params})

    def withdrawn(self, agent_id: Any) -> None:
        """`$/cancel_request`: the agent no longer asks."""
        if self.pending.pop(agent_id, None) is not None:
            self.host.request_closed(agent_id)

    def answer(self, token: Any, answer: Any, live: bool) -> None:
        """A reply or a rule: an elicitation's action or values, else the
        permission option our name maps to (the request's `option_kinds` say
        which kind that is).  Not `live` (the agent is gone): only forgotten."""
        entry = self.pending.pop(token, None)
        if entry is None or not live:
            return
        if "fields" in entry:
            self.calls.respond(token, elicitation_response(entry["fields"], answer))
            return
        option_id = entry["mapping"].get(answer)
        if not option_id:  # `deny` where the agent offers no reject option
            self.calls.respond(token, PERMISSION_CANCELLED)
            return
        if str(answer).startswith("deny"):
            self.updates.declined(entry["tool_id"])
        self.calls.respond(token, {"outcome": {"outcome": "selected", "optionId": option_id}})

    def cancel(self, run: Run, closed: bool = False) -> None:
        """harnessctl cancels the run's requests the agent still waits for (at
        its end, the runtime expires them with the result); `closed` on a
        cancel, which closes them too."""
        for agent_id in [k for k, v in self.pending.items() if v["run"] is run]:
            self._cancel(agent_id)
            if closed:
                self.host.request_closed(agent_id)

    def _cancel(self, agent_id: Any) -> None:
        entry = self.pending.pop(agent_id, None)
        if entry is not None:
            self.calls.respond(agent_id, CANCELLED if "fields" in entry else PERMISSION_CANCELLED)
