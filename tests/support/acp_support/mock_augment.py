"""A loopback mock of Augment's backend (the `tenantURL`) for driving the real `auggie --acp`.

auggie 0.36.0 has no model API of its own: every turn goes to Augment's backend
as ``POST /chat-stream`` (the request's `nodes` carry the user text, tool
results and the IDE state; `chat_history` the earlier exchanges; its tool
JSON schemas sit in `tool_definitions`).  The answer is NDJSON, one chunk a
line: ``{"text": ..., "nodes": [...]}``, text with its node of type 0 (the
node is what auggie keeps: it sends earlier answers back as `response_nodes`
with `response_text` blanked) or a tool call (a node of type 5, `tool_use`
{tool_use_id, tool_name, input_json}), closed by a chunk carrying `stop_reason` (1 END_TURN,
3 TOOL_USE_REQUESTED) and a type 10 `token_usage` node.  That shape was read
from the bundle (`augment.mjs`: BackChatResult, `pushExchange`, the
`Dye` stop-reason enum).

Chat-stream requests play a scripted FIFO of replies (text, shell and file
tool calls, optionally slowed down, held at a named gate, or replaced by an
HTTP error).  Everything else auggie asks on its own (``/get-models``,
``/settings/get-mcp-*-configs``, ``/agents/list-remote-tools``,
``/find-missing`` of the workspace indexing, ``/report-error``, ...) is answered without consuming the script and logged
in `aux`.

Point auggie here with a fake session (no login exists offline)::

    AUGMENT_SESSION_AUTH={"accessToken": "mock-token", "tenantURL": mock.base_url + "/", ...}

Stdlib only; binds 127.0.0.1 port 0::

    with MockAugment() as mock:
        mock.script(reply(text("hi")))
        mock.wait_requests(1)
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Dict, List, Optional

from scripted_mock import Handler, ScriptedMock, words

SHELL_TOOL = "launch-process"  # auggie's shell tool (tool_safety 2: checked before it runs)
WRITE_TOOL = "save-file"       # auggie's new-file tool
END_TURN, TOOL_USE_REQUESTED = 1, 3
TEXT_NODE, TOOL_USE_NODE, TOKEN_USAGE_NODE = 0, 5, 10
TOOL_RESULT_NODE = 1  # in a request's nodes: what a tool call returned
MODELS = {"default_model": "mock", "feature_flags": {}, "languages": [],
          "models": [{"name": "mock", "internal_name": "mock",
                      "suggested_prefix_char_count": 0, "suggested_suffix_char_count": 0}]}
_ids = itertools.count(1)

# -- building replies ---------------------------------------------------------


def text(value: str) -> Dict[str, Any]:
    """A text part."""
    return {"text": value}


def tool(name: str, args: Dict[str, Any]) -> Dict[str, Any]:
    """A call of one of auggie's tools (its `tool_definitions` name and input)."""
    return {"tool": name, "input": args}


def shell(command: str) -> Dict[str, Any]:
    """A launch-process call that waits for `command`, run in the workspace root."""
    return tool(SHELL_TOOL, {"command": command, "wait": True, "max_wait_seconds": 30, "cwd": "."})


def write(path: str, content: str) -> Dict[str, Any]:
    """A save-file call creating `path` (relative to the workspace root, or absolute)."""
    return tool(WRITE_TOOL, {"path": path, "file_content": content})


def reply(
    *parts: Dict[str, Any],
    delay: float = 0.0,
    gate: Optional[str] = None,
    gate_after: Optional[int] = None,
    status: int = 200,
    message: str = "mock error",
    usage: Optional[Dict[str, int]] = None,
) -> Dict[str, Any]:
    """One scripted chat-stream answer.

    Text parts are streamed word by word when `delay` (seconds between chunks)
    is set, else one chunk per part; a tool part is one chunk.  gate: the
    stream waits there after `gate_after` chunks (default 0: the request is in
    flight, nothing shown); `MockAugment.release` opens it.  status != 200: an
    HTTP error whose body is `message`.
    """
    return {
        "parts": list(parts),
        "delay": delay,
        "gate": gate,
        "gate_after": 0 if gate_after is None else gate_after,
        "status": status,
        "message": message,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


# -- reading the request log ----------------------------------------------------


def _node_texts(nodes: Any) -> List[str]:
    out: List[str] = []
    for node in nodes or []:
        if isinstance(node, dict) and node.get("type") == TEXT_NODE:
            content = (node.get("text_node") or {}).get("content")
            if isinstance(content, str):
                out.append(content)
    return out


def _exchange_user_texts(exchange: Dict[str, Any]) -> List[str]:
    texts = _node_texts(exchange.get("request_nodes"))
    message = exchange.get("request_message")
    return texts or ([message] if isinstance(message, str) and message else [])


def user_texts(body: Dict[str, Any]) -> List[str]:
    """Every user text of a chat-stream request, the earlier exchanges' first, in order."""
    out: List[str] = []
    for entry in body.get("chat_history") or []:
        out.extend(_exchange_user_texts(entry))
    out.extend(_exchange_user_texts({"request_nodes": body.get("nodes"), "request_message": body.get("message")}))
    return out


def _answer_text(exchange: Dict[str, Any]) -> str:
    """An earlier answer: its text nodes joined (auggie blanks `response_text` in the history)."""
    nodes = [node.get("content") or "" for node in exchange.get("response_nodes") or []
             if isinstance(node, dict) and node.get("type") == TEXT_NODE]
    return "".join(nodes) or exchange.get("response_text") or ""


def conversation_texts(body: Dict[str, Any]) -> List[str]:
    """Every user and assistant text a request carried: the history, then this turn."""
    out: List[str] = []
    for entry in body.get("chat_history") or []:
        out.extend(_exchange_user_texts(entry))
        if _answer_text(entry):
            out.append(_answer_text(entry))
    out.extend(_exchange_user_texts({"request_nodes": body.get("nodes"), "request_message": body.get("message")}))
    return out


def tool_results(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The tool_result_node of each tool result the request sends back."""
    return [node["tool_result_node"] for node in body.get("nodes") or []
            if isinstance(node, dict) and node.get("type") == TOOL_RESULT_NODE and node.get("tool_result_node")]


# -- the server -------------------------------------------------------------------


class MockAugment(ScriptedMock):
    """The mock backend (scripted_mock.py: the script, gates and logs); a context manager.

    `requests`: the chat-stream requests, each {seq, t, path, headers, body,
    aborted}; `aux`: every other request; `errors`: scripted tool calls of a
    tool the request did not offer (a test should see none)."""

    def __init__(self, default: Optional[Dict[str, Any]] = None) -> None:
        self.errors: List[str] = []
        super().__init__(default or reply(text("ok")))

    def _log(self, into: List[Dict[str, Any]], path: str, headers: Dict[str, str],
             body: Dict[str, Any]) -> Dict[str, Any]:
        return self._record(into, path=path, headers=headers, body=body)

    def _handler_class(self) -> type:
        mock = self

        class MockHandler(Handler):
            protocol_version = "HTTP/1.0"  # the NDJSON body ends when we close the connection

            def do_POST(self) -> None:
                raw, body, headers, path = self.read_json()
                path = path.rstrip("/")
                if path != "/chat-stream":
                    mock._log(mock.aux, path, headers, body)
                    return self.send_json(200, _aux_answer(path))
                entry = mock._log(mock.requests, path, headers, body)
                with mock._lock:
                    chosen = mock._take()
                    mock.errors.extend(_unoffered(chosen, body))
                try:
                    self._serve(chosen)
                except (BrokenPipeError, ConnectionResetError):
                    entry["aborted"] = True  # auggie dropped the stream (a cancel)

            do_GET = do_POST

            def _serve(self, chosen: Dict[str, Any]) -> None:
                if chosen["status"] != 200:
                    if chosen["gate"]:
                        mock._arrive(chosen["gate"]).wait()
                    data = chosen["message"].encode()
                    self.send_response(chosen["status"])
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                chunks = _chunks(chosen)
                for index, chunk in enumerate(chunks):
                    if chosen["gate"] and chosen["gate_after"] == index:
                        mock._arrive(chosen["gate"]).wait()
                    elif index and chosen["delay"]:
                        time.sleep(chosen["delay"])
                    self._line(chunk)
                if chosen["gate"] and chosen["gate_after"] >= len(chunks):
                    mock._arrive(chosen["gate"]).wait()
                self._line(_last_chunk(chosen))

            def _line(self, payload: Dict[str, Any]) -> None:
                self.wfile.write((json.dumps(payload) + "\n").encode())
                self.wfile.flush()

        return MockHandler


def _unoffered(chosen: Dict[str, Any], body: Dict[str, Any]) -> List[str]:
    """The scripted tool calls naming a tool the request's tool_definitions lack."""
    offered = {tool.get("name") for tool in body.get("tool_definitions") or [] if isinstance(tool, dict)}
    return ["tool %s not offered (offered: %s)" % (part["tool"], sorted(offered))
            for part in chosen["parts"] if "tool" in part and part["tool"] not in offered]


def _aux_answer(path: str) -> Dict[str, Any]:
    """What a side request gets: the model list, no remote tools, no missing blobs, else {}."""
    if path == "/get-models":
        return MODELS
    if path == "/agents/list-remote-tools":
        return {"tools": []}
    if path == "/find-missing":  # indexing (--allow-indexing): every blob already known, nothing uploaded
        return {"unknown_memory_names": [], "nonindexed_blob_names": []}
    return {}


def _chunks(chosen: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The streamed chunks: text split into words when slowed, one node per tool call."""
    out: List[Dict[str, Any]] = []
    for part in chosen["parts"]:
        if "tool" in part:
            node = {"id": next(_ids), "type": TOOL_USE_NODE, "content": "",
                    "tool_use": {"tool_use_id": "toolu_mock_%d" % next(_ids), "tool_name": part["tool"],
                                 "input_json": json.dumps(part["input"])}}
            out.append({"text": "", "nodes": [node]})
        else:
            pieces = words(part["text"]) if chosen["delay"] else [part["text"]]
            out.extend({"text": piece, "nodes": [{"id": next(_ids), "type": TEXT_NODE, "content": piece}]}
                       for piece in pieces)
    return out


def _last_chunk(chosen: Dict[str, Any]) -> Dict[str, Any]:
    """The closing chunk: why the turn stopped, and the token usage."""
    calls = any("tool" in part for part in chosen["parts"])
    usage = {"id": next(_ids), "type": TOKEN_USAGE_NODE, "content": "", "token_usage": chosen["usage"]}
    return {"text": "", "nodes": [usage], "stop_reason": TOOL_USE_REQUESTED if calls else END_TURN}
