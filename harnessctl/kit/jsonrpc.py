"""JSON-RPC over a child's JSON lines, for the adapters whose harness speaks
it (codex app-server, every ACP agent): requests numbered and each response
handed to the callback its request named, notifications, and the answers to
the harness's own requests.  What the methods mean stays in the adapter."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    Callback = Callable[[Optional[Dict[str, Any]], Any], None]  # (result, error): one of them is None


class Calls:
    """The requests one harness process has not answered yet.  `version`:
    the `jsonrpc` field every message carries ("2.0"), or None for a peer
    that leaves it out (codex app-server)."""

    def __init__(self, write: Callable[[Dict[str, Any]], None], version: Optional[str] = None) -> None:
        self._write = write
        self._head: Dict[str, Any] = {"jsonrpc": version} if version else {}
        self._pending: Dict[Any, Callback] = {}
        self._next_id = 1

    def call(self, method: str, params: Dict[str, Any], callback: Callback) -> int:
        """Send a request; `callback(result, error)` runs with its response.  Its id."""
        request_id, self._next_id = self._next_id, self._next_id + 1
        self._pending[request_id] = callback
        self._write(dict(self._head, id=request_id, method=method, params=params))
        return request_id

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        message = dict(self._head, method=method)
        if params is not None:
            message["params"] = params
        self._write(message)

    def respond(self, request_id: Any, result: Dict[str, Any]) -> None:
        """Answer a request of the harness."""
        self._write(dict(self._head, id=request_id, result=result))

    def refuse(self, request_id: Any, code: int, message: str) -> None:
        """Answer a request of the harness with an error."""
        self._write(dict(self._head, id=request_id, error={"code": code, "message": message}))

    def answered(self, msg: Dict[str, Any]) -> bool:
        """Hand a response (a message without a method) to its request's
        callback; False when no request of ours has its id."""
        callback = self._pending.pop(msg.get("id"), None)
        if callback is None:
            return False
        callback(msg.get("result"), msg.get("error") if "error" in msg else None)
        return True
