"""What codex asks while a turn runs (its server requests: approvals,
permissions, MCP elicitations, request_user_input) as harnessctl requests, and
the answers back.  approvals.py maps each shape; this keeps the requests
still waiting for an answer, answers what harnessctl itself decides (mode
`edit`'s file changes inside the cwd, what nobody here can answer), and
closes a request codex withdrew.  The backend (backend.py) owns the turns."""

from __future__ import annotations

from harnessctl.kit import Calls, Config, Host

from . import approvals

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

    from .run import Run


class Asking:
    """The server requests of one app-server."""

    def __init__(self, host: Host, calls: Calls, config: Config,
                 changes: Callable[[Dict[str, Any]], Optional[List[Dict[str, Any]]]]) -> None:
        self.host = host
        self.calls = calls
        self.config = config
        self.changes = changes  # the file changes a request names, as last seen (Items.changes)
        self.requests: Dict[Any, Dict[str, Any]] = {}  # codex request id -> its kind, turn, replies

    def request(self, msg: Dict[str, Any], params: Dict[str, Any], run_id: Optional[str]) -> None:
        """A server request of the run `run_id`: a harnessctl request, unless
        it is answered here."""
        native_id = msg.get("id")
        info = self._info(msg.get("method"), native_id, params, run_id)
        if info is None:
            return
        kind = info.get("kind", "permission")
        entry: Dict[str, Any] = {"turn_id": params.get("turnId"), "kind": kind, "replies": info.get("replies") or {}}
        if "fields" in info:
            entry["fields"] = info["fields"]
        self.host.request(run_id, kind, info["message"], info.get("options"), info["details"], token=native_id)
        self.requests[native_id] = entry

    def _info(self, method: Any, native_id: Any, params: Dict[str, Any],
              run_id: Optional[str]) -> Optional[Dict[str, Any]]:
        """What the request asks (approvals.py), or None once it is answered
        here: a file change mode `edit` lets through, an elicitation nobody
        here can answer, a request harnessctl does not handle."""
        if method == "item/commandExecution/requestApproval":
            return approvals.command_request(params)
        if method == "item/fileChange/requestApproval":
            info = approvals.file_change_request(params, self.changes(params))
            if not self._edit_allows(info["details"]):
                return info
            self.host.debug("codex: file changes inside the cwd accepted (mode edit): %s" % info["message"])
            self.calls.respond(native_id, {"decision": "accept"})
            return None
        if method == "item/permissions/requestApproval":
            return approvals.permissions_request(params)
        if method == "item/tool/requestUserInput":
            return dict(approvals.question_request(params), kind="question", options=None)
        if method == "mcpServer/elicitation/request":
            elicitation = approvals.elicitation_request(params)
            if elicitation is None:  # e.g. a device-signed user verification: nobody here can sign it
                self.host.log("diagnostic", "warning", run_id=run_id,
                              message="codex relayed an MCP %s request harnessctl cannot answer; declined"
                              % params.get("mode"))
                self.calls.respond(native_id, {"action": "decline", "content": None})
            return elicitation
        self.host.log("diagnostic", "warning", run_id=run_id,
                      message="codex asked %s, which harnessctl does not handle; refused" % method)
        self.calls.refuse(native_id, -32601, "harnessctl does not handle %s" % method)
        return None

    def _edit_allows(self, details: Dict[str, Any]) -> bool:
        """Whether mode `edit` lets a file change through without asking: every
        path it touches lies inside the bound cwd, and none is the event file or
        its sidecar (harnessctl's record and binding still ask).  codex itself
        has no mode that applies edits and asks for commands, so `edit` runs as
        `untrusted` (wire.MODES), which asks for every patch; the rest is
        answered here (Config.edit_allows)."""
        return self.config.edit_allows(details)

    def answer(self, token: Any, answer: Any) -> None:
        entry = self.requests.pop(token, None)
        if entry is None:
            self.host.debug("codex: reply to request %s, which codex no longer waits for" % token)
            return
        if "fields" in entry:
            result = approvals.elicitation_answer(entry["fields"], answer)
        elif entry["kind"] == "question":
            result = approvals.question_answer(answer)
        else:  # the runtime let only the request's own options through
            result = entry["replies"].get(answer) or entry["replies"]["deny"]
        self.calls.respond(token, result)

    def on_resolved(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """serverRequest/resolved: nobody answered, codex withdrew the request."""
        native_id = params.get("requestId")
        if self.requests.pop(native_id, None) is not None:
            self.host.request_closed(native_id)

    def forget(self, turn_id: str) -> None:
        """Drop a finished turn's requests: the runtime expires them with its result."""
        for native_id in [k for k, v in self.requests.items() if v["turn_id"] == turn_id]:
            del self.requests[native_id]
