"""A loopback mock of the Gemini API for driving the real `gemini --acp`.

gemini-cli 0.61.0, pointed here by GOOGLE_GEMINI_BASE_URL with its model pinned
(GEMINI_MODEL), sends every conversation turn as
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (as recorded).  Those
requests play a scripted FIFO of replies streamed as SSE: text, thought and
functionCall parts, optionally slowed down, held at a named gate until the
test releases it, or replaced by an HTTP error (401, 500, ...).  Side requests
do not consume the script: ``:generateContent`` (the model router of the `auto`
model, JSON answers) gets a JSON value that fits its
``generationConfig.responseJsonSchema``, ``:countTokens`` a count, anything else
404.  Every request is logged so a test can assert what the model was shown.

Stdlib only; binds 127.0.0.1 port 0::

    with MockGemini() as mock:
        mock.script(reply(text("hi")))
        ... GOOGLE_GEMINI_BASE_URL=mock.base_url ...
        mock.wait_requests(1)
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Optional

from scripted_mock import Handler, ScriptedMock, words

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

# -- building replies ---------------------------------------------------------


def text(value: str) -> Dict[str, Any]:
    """A text part."""
    return {"text": value}


def thought(value: str) -> Dict[str, Any]:
    """A thought part (gemini shows it as agent_thought_chunk)."""
    return {"text": value, "thought": True}


def function_call(name: str, args: Dict[str, Any]) -> Dict[str, Any]:
    """A functionCall part: the model calls one of gemini-cli's tools."""
    return {"functionCall": {"name": name, "args": args}}


def shell(command: str, description: str = "Run a command") -> Dict[str, Any]:
    """A run_shell_command call (gemini asks permission for most commands in mode default)."""
    return function_call("run_shell_command", {"command": command, "description": description})


def reply(
    *parts: Dict[str, Any],
    delay: float = 0.0,
    gate: Optional[str] = None,
    gate_after: Optional[int] = None,
    status: int = 200,
    message: str = "mock error",
    usage: Optional[Dict[str, int]] = None,
) -> Dict[str, Any]:
    """One scripted response.

    Text parts are streamed word by word when `delay` (seconds between chunks)
    is set, else one chunk per part.  gate: the stream waits there after
    `gate_after` chunks (default 0: the request is in flight, nothing shown);
    `MockGemini.release` opens it.  status != 200: an HTTP error with a Google
    error body carrying `message`.
    """
    return {
        "parts": list(parts),
        "delay": delay,
        "gate": gate,
        "gate_after": 0 if gate_after is None else gate_after,
        "status": status,
        "message": message,
        "usage": usage or {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


def fitting(schema: Any) -> Any:
    """A value that fits a JSON schema (or a Gemini `Schema`, whose type names are
    upper case): the first enum value, the minimum, every property."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return fitting(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind or ("object" if "properties" in schema else "string")).lower()
    if kind == "object":
        return {name: fitting(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [fitting(schema.get("items")) for _ in range(int(schema.get("minItems") or 0))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return int(low) if kind == "integer" else low
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "mock" + "x" * max(0, int(schema.get("minLength") or 0) - 4)


# -- reading the request log ----------------------------------------------------


def _part_texts(content: Dict[str, Any]) -> List[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]


def user_texts(body: Dict[str, Any]) -> List[str]:
    """Every text part of every user turn in a request body (history included)."""
    out: List[str] = []
    for content in body.get("contents") or []:
        if content.get("role") == "user":
            out.extend(_part_texts(content))
    return out


def conversation_texts(body: Dict[str, Any]) -> List[str]:
    """Every text part of every turn (user and model): the history."""
    out: List[str] = []
    for content in body.get("contents") or []:
        out.extend(_part_texts(content))
    return out


def function_responses(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The functionResponse parts of the request (what each tool call returned)."""
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                out.append(part["functionResponse"])
    return out


# -- the server -------------------------------------------------------------------


class MockGemini(ScriptedMock):
    """The mock server (scripted_mock.py: the script, gates and logs); a context manager.

    `requests`: the scripted (streamGenerateContent) requests, each
    {seq, t, path, model, headers, body, aborted}; `aux`: the generateContent
    side requests; `token_counts`: how many countTokens calls came."""

    def __init__(self, default: Optional[Dict[str, Any]] = None) -> None:
        self.token_counts = 0
        super().__init__(default or reply(text("ok")))

    def _log(self, into: List[Dict[str, Any]], path: str, headers: Dict[str, str],
                body: Dict[str, Any]) -> Dict[str, Any]:
        model = path.split("/models/", 1)[-1].split(":", 1)[0]
        return super()._record(into, path=path, model=model, headers=headers, body=body)

    def _next_reply(self, path: str, headers: Dict[str, str], body: Dict[str, Any]) -> Any:
        entry = self._log(self.requests, path, headers, body)
        with self._lock:
            chosen = self._take()
        return entry, chosen

    def _handler_class(self) -> type:
        mock = self

        class MockHandler(Handler):
            protocol_version = "HTTP/1.0"  # the SSE body ends when we close the connection

            def do_POST(self) -> None:
                raw, body, headers, path = self.read_json()
                if path.endswith(":countTokens"):
                    with mock._lock:
                        mock.token_counts += 1
                    return self.send_json(200, {"totalTokens": max(1, len(raw) // 4)})
                if path.endswith(":generateContent"):
                    mock._log(mock.aux, path, headers, body)
                    return self.send_json(200, _aux_answer(body))
                if not path.endswith(":streamGenerateContent"):
                    return self._error(404, "mock: no route for %s" % path)
                entry, chosen = mock._next_reply(path, headers, body)
                try:
                    self._serve(chosen)
                except (BrokenPipeError, ConnectionResetError):
                    entry["aborted"] = True  # gemini dropped the stream (a cancel)

            def do_GET(self) -> None:
                self._error(404, "mock: no route for %s" % self.path)

            def _error(self, status: int, message: str) -> None:
                self.send_json(status, {"error": {"code": status, "message": message,
                                              "status": STATUS_NAMES.get(status, "UNKNOWN")}})

            def _serve(self, chosen: Dict[str, Any]) -> None:
                if chosen["status"] != 200:
                    if chosen["gate"]:
                        mock._arrive(chosen["gate"]).wait()
                    return self._error(chosen["status"], chosen["message"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                chunks = _chunks(chosen)
                held_at_end = bool(chosen["gate"]) and chosen["gate_after"] >= len(chunks)
                for index, parts in enumerate(chunks):
                    if chosen["gate"] and chosen["gate_after"] == index:
                        mock._arrive(chosen["gate"]).wait()
                    elif index and chosen["delay"]:
                        time.sleep(chosen["delay"])
                    last = index == len(chunks) - 1 and not held_at_end
                    self._event(_chunk(parts, chosen["usage"] if last else None, last))
                if held_at_end:
                    mock._arrive(chosen["gate"]).wait()
                    self._event(_chunk([], chosen["usage"], True))

            def _event(self, payload: Dict[str, Any]) -> None:
                self.wfile.write(("data: %s\r\n\r\n" % json.dumps(payload)).encode())
                self.wfile.flush()

        return MockHandler


def _chunks(chosen: Dict[str, Any]) -> List[List[Dict[str, Any]]]:
    """The streamed chunks, each a list of parts: text split into words when slowed."""
    out: List[List[Dict[str, Any]]] = []
    for part in chosen["parts"]:
        if "text" in part and chosen["delay"]:
            out.extend([dict(part, text=word)] for word in words(part["text"]))
        else:
            out.append([part])
    return out or [[]]


def _chunk(parts: List[Dict[str, Any]], usage: Optional[Dict[str, int]], last: bool) -> Dict[str, Any]:
    candidate: Dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    payload: Dict[str, Any] = {"candidates": [candidate], "modelVersion": "mock"}
    if usage:
        payload["usageMetadata"] = usage
    return payload


def _aux_answer(body: Dict[str, Any]) -> Dict[str, Any]:
    """A non-streamed answer for a side request: JSON fitting the requested schema."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    value = json.dumps(fitting(schema)) if schema else "Mock auxiliary answer."
    return {"candidates": [{"content": {"parts": [{"text": value}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": "mock"}
