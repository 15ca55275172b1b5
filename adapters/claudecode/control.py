"""Claude's control protocol (`control_request` and `control_response` lines,
both ways) for one Claude process:

* our requests, `initialize` and `interrupt`, go out under ids of our own;
  their responses go back to the backend, which acts on them;
* Claude's `can_use_tool` prompts become harnessctl requests (asking.py);
  Claude echoes our answer, which is then no news, and may withdraw a
  prompt (`control_cancel_request`);
* any other request of Claude's gets an error response: harnessctl
  supports none.
"""

from __future__ import annotations

from . import asking

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Set, Tuple

    from harnessctl.kit import Host


class Control:
    """The control requests open between harnessctl and one Claude process."""

    def __init__(self, host: Host, write: Callable[[Dict[str, Any]], None], declined: Set[str]) -> None:
        self.host = host
        self.write = write  # one validated line to Claude's stdin
        self.declined = declined  # tool_use ids whose tool ends declined (Messages.declined)
        self.seq = 0
        self.init_id: Optional[str] = None
        self.interrupt_ids: Set[str] = set()
        self.prompts: Dict[str, Dict[str, Any]] = {}  # Claude's request id -> what answering it needs
        self.answered: Set[str] = set()  # Claude's request ids we answered (their echo is ignored)

    # -- ours -----------------------------------------------------------------------

    def initialize(self) -> None:
        self.init_id = self._request_id("init")
        self._request(self.init_id, {"subtype": "initialize", "hooks": None})

    def interrupt(self) -> None:
        """Abort the turn and drop the queued inputs (`cancel_queued`)."""
        request_id = self._request_id("interrupt")
        self.interrupt_ids.add(request_id)
        self._request(request_id, {"subtype": "interrupt", "cancel_queued": True})

    def on_response(self, frame: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
        """Claude's control_response -> (the subtype of our request it answers,
        or None, and the response)."""
        response = frame.get("response") or {}
        request_id = response.get("request_id")
        if request_id in self.answered:
            self.answered.discard(request_id)  # the echo of our own answer
            return None, response
        if request_id == self.init_id:
            return "initialize", response
        if request_id in self.interrupt_ids:
            self.interrupt_ids.discard(request_id)
            return "interrupt", response
        return None, response

    def _request_id(self, prefix: str) -> str:
        self.seq += 1
        return "harnessctl-%s-%d" % (prefix, self.seq)

    def _request(self, request_id: str, request: Dict[str, Any]) -> None:
        self.write({"type": "control_request", "request_id": request_id, "request": request})

    # -- Claude's -------------------------------------------------------------------

    def on_request(self, run_id: Optional[str], frame: Dict[str, Any]) -> None:
        request = frame.get("request") or {}
        claude_id = frame.get("request_id")
        if request.get("subtype") != "can_use_tool" or not isinstance(claude_id, str):
            self._respond(claude_id, "error", error="harnessctl does not support %s" % request.get("subtype"))
            return
        entry, shown = asking.prompt(claude_id, request)
        self.host.request(run_id, shown["kind"], shown["message"], options=shown["options"],
                          details=shown["details"], token=claude_id)
        self.prompts[claude_id] = entry

    def on_cancel(self, frame: Dict[str, Any]) -> None:
        claude_id = str(frame.get("request_id"))
        if self.prompts.pop(claude_id, None) is not None:
            self.host.request_closed(claude_id)

    def answer(self, token: Any, answer: Any) -> None:
        """A validated reply -> Claude's can_use_tool response; the tool of a
        denied prompt ends declined."""
        entry = self.prompts.pop(token, None)
        if entry is None:
            return
        response = asking.response(entry, answer)
        if response["behavior"] == "deny" and entry["tool_use_id"]:
            self.declined.add(entry["tool_use_id"])
        self.answered.add(entry["claude_id"])
        self._respond(entry["claude_id"], "success", response=response)

    def _respond(self, claude_id: Any, subtype: str, **fields: Any) -> None:
        self.write({"type": "control_response", "response": dict({"subtype": subtype, "request_id": claude_id},
                                                                  **fields)})
