"""A loopback mock of the Anthropic Messages API for driving the real `claude`.

Claude Code (2.1.332) only ever calls `POST /v1/messages?beta=true` when run
with the environment of `claude_env()` (as recorded from the real binary), so this
is all a test needs: a scripted FIFO of replies streamed as SSE, each made of
text / tool_use / thinking blocks, optionally slowed down per delta, held at
a named gate until the test releases it, or replaced by an HTTP error.  Every
request body is logged, so a test can assert which user texts a request
carried (e.g. that a steer was folded into the running turn).

The hidden side requests of Claude Code (as recorded from the one under
claude-agent-acp 0.101.0) never consume the script: the tool-less session title
request (`<session>...</session> Write the title...`), "[SUGGESTION MODE"
prompt suggestions and the auto-mode classifier (`<transcript>...`, answered
`<block>no</block>`: allowed) are logged in `mock.aux`, not `mock.requests`.

Stdlib only; binds 127.0.0.1 port 0.  Use it in-process::

    with MockMessages() as mock:
        mock.script(reply(text("hi")))
        env = claude_env(tmp_path, mock.base_url)
        ...
        mock.wait_requests(1)
"""

from __future__ import annotations

import json
import os
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, List, Optional

from scripted_mock import ScriptedMock

# -- building replies ---------------------------------------------------------


def text(value: str) -> Dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def thinking(value: str) -> Dict[str, Any]:
    """A thinking content block (Claude shows it as an assistant thinking frame)."""
    return {"type": "thinking", "thinking": value}


def redacted_thinking(data: str = "cmVkYWN0ZWQ=") -> Dict[str, Any]:
    """A redacted_thinking block: the API withholds the thinking, only opaque data."""
    return {"type": "redacted_thinking", "data": data}


def tool_use(name: str, tool_input: Dict[str, Any]) -> Dict[str, Any]:
    """A tool_use content block; the id is filled in when it is served."""
    return {"type": "tool_use", "name": name, "input": tool_input}


def bash(command: str, description: str = "Run a command") -> Dict[str, Any]:
    """A Bash tool call."""
    return tool_use("Bash", {"command": command, "description": description})


def ask(question: str, labels: List[str], header: str = "Choice") -> Dict[str, Any]:
    """An AskUserQuestion tool call with one single-select question."""
    options = [{"label": label, "description": label} for label in labels]
    item = {"question": question, "header": header, "options": options, "multiSelect": False}
    return tool_use("AskUserQuestion", {"questions": [item]})


def wait_file_command(path: str, then: str = "echo step-done") -> str:
    """A shell command that blocks until `path` exists: a slow tool the test
    ends when it chooses (a foreground `sleep` may be refused by the Bash tool)."""
    script = "import os,time\nwhile not os.path.exists(%r): time.sleep(0.05)" % path
    return "python3 -c %s; %s" % (_sh_quote(script), then)


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def reply(
    *blocks: Dict[str, Any],
    delay: float = 0.0,
    gate: Optional[str] = None,
    gate_after: Optional[int] = None,
    status: int = 200,
    error_type: str = "api_error",
    error_message: str = "mock error",
    usage: Optional[Dict[str, int]] = None,
) -> Dict[str, Any]:
    """One scripted response.

    delay: seconds between streamed deltas.  gate: name of a gate the stream
    waits at after `gate_after` blocks (default: before the first block, i.e.
    the request is in flight and nothing shown yet); `MockMessages.release`
    opens it.  status != 200: an HTTP error with an Anthropic error body.
    """
    return {
        "blocks": list(blocks),
        "delay": delay,
        "gate": gate,
        "gate_after": 0 if gate_after is None else gate_after,
        "status": status,
        "error_type": error_type,
        "error_message": error_message,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


# -- reading the request log ----------------------------------------------------


def _texts(content: Any) -> List[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(block.get("text", ""))
    return out


def user_texts(body: Dict[str, Any]) -> List[str]:
    """Every text block of every user message in a request body."""
    out: List[str] = []
    for msg in body.get("messages", []):
        if msg.get("role") == "user":
            out.extend(_texts(msg.get("content")))
    return out


def last_user_texts(body: Dict[str, Any]) -> List[str]:
    """The text blocks of the last user message: what this request adds.
    (Claude appends a folded mid-turn message here, after the tool_result.)"""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _texts(users[-1].get("content")) if users else []


def tool_results(body: Dict[str, Any]) -> List[str]:
    """The tool_result contents of the last user message, as text."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            out.append(inner if isinstance(inner, str) else "\n".join(_texts(inner)))
    return out


def conversation_texts(body: Dict[str, Any]) -> List[str]:
    """Every text block of every message (user and assistant): the history."""
    out: List[str] = []
    for msg in body.get("messages", []):
        out.extend(_texts(msg.get("content")))
    return out


def aux_kind(body: Dict[str, Any]) -> Optional[str]:
    """"title" / "suggestion" / "classifier" for Claude's side requests, None for a turn."""
    last = "".join(last_user_texts(body)).lstrip()
    if last.startswith("[SUGGESTION MODE"):
        return "suggestion"
    if body.get("tools"):
        return None
    if last.startswith("<transcript>"):
        return "classifier"
    system = body.get("system")
    system_text = system if isinstance(system, str) else " ".join(_texts(system))
    if last.startswith("<session>") or "naming a coding session" in system_text:
        return "title"
    return None


AUX_ANSWERS = {"classifier": "<block>no</block>", "title": "Mock title", "suggestion": "Mock suggestion"}

# -- the server -------------------------------------------------------------------


class MockMessages(ScriptedMock):
    """The mock server (scripted_mock.py: the script, gates and logs); a context
    manager.  `aux`: Claude's side requests (title, suggestion, classifier)."""

    def __init__(self, default: Optional[Dict[str, Any]] = None, log_path: Optional[str] = None) -> None:
        self.log_path = log_path
        super().__init__(default or reply(text("ok")))

    # serving
    def _next_reply(self, body: Dict[str, Any], path: str, headers: Dict[str, str]) -> Dict[str, Any]:
        with self._lock:
            seq = next(self._seq)
            chosen = self._take()
            entry = {"seq": seq, "t": time.time(), "path": path, "headers": headers, "body": body}
            self.requests.append(entry)
            self._lock.notify_all()
        if self.log_path:
            line = dict(entry, last_user_texts=last_user_texts(body))
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")
        return dict(chosen, seq=seq)

    def _aux_reply(self, kind: str, body: Dict[str, Any], path: str, headers: Dict[str, str]) -> Dict[str, Any]:
        """Log a side request; its canned answer (the script is untouched)."""
        with self._lock:
            seq = next(self._seq)
            self.aux.append({"seq": seq, "t": time.time(), "kind": kind, "path": path, "headers": headers,
                             "body": body})
            self._lock.notify_all()
        return dict(reply(text(AUX_ANSWERS[kind])), seq=seq)

    def _handler_class(self) -> type:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw.decode("utf-8")) if raw else {}
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
                if path != "/v1/messages":
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                kind = aux_kind(body)
                if kind:
                    chosen = mock._aux_reply(kind, body, self.path, dict(self.headers.items()))
                else:
                    chosen = mock._next_reply(body, self.path, dict(self.headers.items()))
                try:
                    self._serve(chosen, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # Claude hung up (an interrupt): nothing to do

            def do_GET(self) -> None:
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

            do_HEAD = do_GET

            def _json(self, status: int, payload: Dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_mock_err")
                self.end_headers()
                self.wfile.write(data)

            def _serve(self, chosen: Dict[str, Any], body: Dict[str, Any]) -> None:
                if chosen["gate"] and chosen["gate_after"] == 0 and chosen["status"] != 200:
                    mock._arrive(chosen["gate"]).wait()
                if chosen["status"] != 200:
                    error = {"type": chosen["error_type"], "message": chosen["error_message"]}
                    return self._json(chosen["status"], {"type": "error", "error": error})
                if not body.get("stream"):
                    return self._json(200, _whole_message(chosen, body))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("request-id", "req_mock_%03d" % chosen["seq"])
                self.end_headers()
                _stream(self.wfile, chosen, body, mock)

        return Handler


def _message_id(chosen: Dict[str, Any]) -> str:
    return "msg_mock_%03d_%s" % (chosen["seq"], os.urandom(4).hex())


def _served_blocks(chosen: Dict[str, Any]) -> List[Dict[str, Any]]:
    out = []
    for index, block in enumerate(chosen["blocks"]):
        block = dict(block)
        if block["type"] == "tool_use":
            block["id"] = "toolu_mock_%03d_%d_%s" % (chosen["seq"], index, os.urandom(4).hex())
        if block["type"] == "thinking":
            block["signature"] = "c2lnbmF0dXJl"
        out.append(block)
    return out


def _stop_reason(blocks: List[Dict[str, Any]]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def _whole_message(chosen: Dict[str, Any], body: Dict[str, Any]) -> Dict[str, Any]:
    """The non-streaming fallback Claude uses after repeated stream failures."""
    blocks = _served_blocks(chosen)
    return {
        "id": _message_id(chosen), "type": "message", "role": "assistant",
        "model": body.get("model", "mock"), "content": blocks,
        "stop_reason": _stop_reason(blocks), "stop_sequence": None, "usage": chosen["usage"],
    }


def _chunks(value: str, delay: float) -> List[str]:
    """Split into word-sized deltas when slowed down, else one delta."""
    if not delay or not value:
        return [value]
    parts, word = [], ""
    for ch in value:
        word += ch
        if ch == " ":
            parts.append(word)
            word = ""
    if word:
        parts.append(word)
    return parts


def _stream(wfile: Any, chosen: Dict[str, Any], body: Dict[str, Any], mock: MockMessages) -> None:
    def event(name: str, payload: Dict[str, Any]) -> None:
        wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(payload))).encode())
        wfile.flush()

    blocks = _served_blocks(chosen)
    usage = chosen["usage"]
    start_usage = {"input_tokens": usage.get("input_tokens", 10), "output_tokens": 1,
                   "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    event("message_start", {"type": "message_start", "message": {
        "id": _message_id(chosen), "type": "message", "role": "assistant", "model": body.get("model", "mock"),
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
    for index, block in enumerate(blocks):
        if chosen["gate"] and chosen["gate_after"] == index:
            mock._arrive(chosen["gate"]).wait()
        _stream_block(event, index, block, chosen["delay"])
    if chosen["gate"] and chosen["gate_after"] >= len(blocks):
        mock._arrive(chosen["gate"]).wait()
    event("message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": _stop_reason(blocks), "stop_sequence": None},
                            "usage": {"output_tokens": usage.get("output_tokens", 5)}})
    event("message_stop", {"type": "message_stop"})


def _stream_block(event: Any, index: int, block: Dict[str, Any], delay: float) -> None:
    kind = block["type"]
    if kind == "text":
        event("content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "text", "text": ""}})
        for part in _chunks(block["text"], delay):
            time.sleep(delay)
            event("content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": part}})
    elif kind == "thinking":
        event("content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        for part in _chunks(block["thinking"], delay):
            time.sleep(delay)
            event("content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "thinking_delta", "thinking": part}})
        event("content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "signature_delta", "signature": block["signature"]}})
    elif kind == "redacted_thinking":
        event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
    elif kind == "tool_use":
        event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
        time.sleep(delay)
        event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
    event("content_block_stop", {"type": "content_block_stop", "index": index})
