"""A call's answer as MCP shapes it: a tool's (a CallToolResult: a result,
a tool error, the server busy) and a JSON-RPC error.  One place, because a
call answers at once and a task (tasks.py) gives the same answer when its
run ends."""

from __future__ import annotations

import json

from ..errors import UnavailableError
from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict

# JSON-RPC's error codes
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603


def tool_result(structured: Dict[str, Any], text: str) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def tool_error(message: str, code: int) -> Dict[str, Any]:
    """A tool's failure: the CLI's one-line message and exit code, with the
    caller's text in it made inert as the CLI's stderr line is (visible.py).
    Its text is its structured content serialized, as every result's is."""
    structured = {"error": shown(message), "exit_code": code}
    return {"content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False, separators=(",", ":"))}],
            "structuredContent": structured, "isError": True}


def busy(why: str) -> Dict[str, Any]:
    """The answer to a call the server runs no thread for: nothing was done;
    exit 5 (unavailable), as a runtime that holds no more waits answers."""
    return tool_error("the server is busy: %s; nothing was done, retry when a call has ended" % why,
                      UnavailableError.exit_code)


class RpcError(Exception):
    """A request answered with a JSON-RPC error (`error`: its object)."""

    def __init__(self, error: Dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


def rpc_error(code: int, message: str) -> Dict[str, Any]:
    return {"code": code, "message": message}
