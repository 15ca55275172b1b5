"""A loopback mock of the OpenAI Chat Completions API for driving the real ACP
agents that speak it (opencode, kilo, copilot, qwen, cline, droid, pi, openclaw).

Each agent's recipe (tests/support/acp_support/recipes/) points it at ``base_url + "/v1"``.
``POST …/chat/completions`` requests that offer tools are the conversation: they
play a scripted FIFO of replies, streamed as SSE (``"stream": true``) or answered
as one JSON completion, optionally slowed down, held at a named gate until the
test releases it, or replaced by an HTTP error (401, 500, ...).  A reply's tool
call is named in the abstract (`shell`, `write`) and resolved at serve time
against the tools the REQUEST offers: every agent names its shell and file
tools and their arguments differently, and the request's own JSON schemas say
how.  Requests without tools (titles, summaries, whatever else an agent asks on
its own) are side requests: answered with a short text without consuming the
script, logged in `aux`.  ``GET …/models`` lists the one model.  Every answer
carries usage (a last ``usage`` chunk when ``stream_options.include_usage``).

Stdlib only; binds 127.0.0.1 port 0::

    with MockChat() as mock:
        mock.script(reply(text("hi")), reply(shell("touch x")))
        ... OPENAI_BASE_URL=mock.base_url + "/v1" ...
        mock.wait_requests(1)
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Dict, List, Optional, Tuple

from scripted_mock import Handler, ScriptedMock, words

from .mock_gemini import fitting

MODEL = "mock-model"
CALL_IDS = itertools.count(1)
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
AUX_TEXT = "Mock title"
AGENT_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"  # how an agent-injected context message starts
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_api_key", 403: "permission_denied",
               404: "not_found", 429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}
# tool names, best first: the shell-like and the file-writing tool of the agents seen so far
SHELL_NAMES = ("bash", "run_shell_command", "shell", "execute_command", "run_command", "execute", "exec",
               "terminal", "command")
WRITE_NAMES = ("write_file", "write_to_file", "write", "create_file", "create", "edit_file", "edit")

# -- building replies ---------------------------------------------------------


def text(value: str) -> Dict[str, Any]:
    """A text part."""
    return {"text": value}


def shell(command: str) -> Dict[str, Any]:
    """A tool call of the shell-like tool the request offers, running `command`."""
    return {"tool": "shell", "command": command}


def write(path: str, content: str) -> Dict[str, Any]:
    """A tool call of the file-writing tool the request offers: `content` into `path`
    (absolute: the agents' file tools want absolute paths)."""
    return {"tool": "write", "path": path, "content": content}


def call(name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
    """A tool call of the tool `name` with exactly these arguments."""
    return {"tool": "call", "name": name, "arguments": arguments}


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

    Text is streamed word by word when `delay` (seconds between chunks) is set,
    else one chunk per part; each tool call is one chunk.  gate: the stream
    waits there after `gate_after` chunks (default 0: the request is in flight,
    not even the status line sent; a non-streamed answer always waits there
    whole); `MockChat.release` opens it.  status != 200: an HTTP error
    with an OpenAI error body carrying `message` (after the gate, if any).
    """
    return {
        "parts": list(parts),
        "delay": delay,
        "gate": gate,
        "gate_after": 0 if gate_after is None else gate_after,
        "status": status,
        "message": message,
        "usage": usage or dict(USAGE),
    }


# -- reading the request log ----------------------------------------------------


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def user_texts(body: Dict[str, Any]) -> List[str]:
    """The text of every user message of a request (history included), in order.
    Agents decorate a prompt (copilot prefixes a date, kilo appends environment
    details), so a test looks for its prompt *in* the text.  A user message that
    is only an agent's own context block (openclaw sends one after every prompt,
    marked "data, not instructions") is no user text."""
    texts = [content_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user"]
    return [text for text in texts if not text.startswith(AGENT_CONTEXT)]


def conversation_texts(body: Dict[str, Any]) -> List[str]:
    """The text of every user and assistant message: the history."""
    return [content_text(m.get("content")) for m in body.get("messages") or []
            if m.get("role") in ("user", "assistant") and content_text(m.get("content"))]


def tool_results(body: Dict[str, Any]) -> List[str]:
    """What each tool call of the conversation returned (role "tool" messages)."""
    return [content_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]


def tool_names(body: Dict[str, Any]) -> List[str]:
    """The names of the function tools a request offers."""
    return [fn["name"] for fn in _functions(body)]


# -- resolving abstract tool calls against the request's tools ------------------------


def _functions(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    out = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out.append(fn)
    return out


def _pick(functions: List[Dict[str, Any]], names: Tuple[str, ...]) -> Optional[Dict[str, Any]]:
    """The offered tool whose name matches `names` best: exactly first, then by substring."""
    by_name = {fn["name"].lower(): fn for fn in functions}
    for name in names:
        if name in by_name:
            return by_name[name]
    for name in names:
        for low, fn in by_name.items():
            if name in low:
                return fn
    return None


def _arguments(fn: Dict[str, Any], values: Dict[str, Any]) -> Dict[str, Any]:
    """Arguments for `fn` from its JSON schema: each property named like a key of
    `values` ("command", "path", "content") gets that value, other required ones
    a value that fits their schema."""
    schema = fn.get("parameters") or {}
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    args: Dict[str, Any] = {}
    for key, spec in props.items():
        value = _value_for(key, spec, values)
        if value is not None:
            args[key] = value
        elif key in required:
            args[key] = _filler(key, spec)
    return args


def _value_for(key: str, spec: Any, values: Dict[str, Any]) -> Any:
    low = key.lower()
    kind = spec.get("type") if isinstance(spec, dict) else None
    if "content" in values and low == "command" and "create" in ((spec or {}).get("enum") or []):
        return "create"  # an editor tool with subcommands (openhands' file_editor): `create` writes the file
    if "command" in values and (low in ("command", "cmd", "script") or low.endswith(("command", "commands"))):
        return [values["command"]] if kind == "array" else values["command"]
    if "path" in values and ("path" in low or low in ("file", "filename")):
        return values["path"]
    if "content" in values and low in ("content", "contents", "text", "file_text", "new_str", "new_string"):
        return values["content"]
    return None


def _filler(key: str, spec: Any) -> Any:
    """A value for a required argument the scenario does not care about."""
    low = key.lower()
    if "description" in low or "reason" in low or "justification" in low:
        return "mock tool call"
    if "timeout" in low:
        return 30000
    if "risk" in low and isinstance(spec, dict) and spec.get("enum"):
        # droid's Execute asks the model to rate its command low/medium/high, and its auto-low mode runs a
        # "low" one unasked: the mock rates every command the highest, so only the mode decides whether it asks
        return spec["enum"][-1]
    return fitting(spec)


def resolve(part: Dict[str, Any], body: Dict[str, Any]) -> Dict[str, Any]:
    """A scripted tool part as {"name", "arguments"} for this request's tools
    (an AssertionError names the offered tools when none fits)."""
    if part["tool"] == "call":
        return {"name": part["name"], "arguments": part["arguments"]}
    functions = _functions(body)
    names = SHELL_NAMES if part["tool"] == "shell" else WRITE_NAMES
    fn = _pick(functions, names)
    if fn is None:
        raise AssertionError("mock: no %s tool among %s" % (part["tool"], [f["name"] for f in functions]))
    values = {k: v for k, v in part.items() if k != "tool"}
    return {"name": fn["name"], "arguments": _arguments(fn, values)}


# -- the server -------------------------------------------------------------------


class MockChat(ScriptedMock):
    """The mock server (scripted_mock.py: the script, gates and logs); a context manager.

    `requests`: the scripted (tool-offering) requests, each {seq, t, path, model,
    headers, body, stream, served, aborted}, `served` being the reply with its
    tool calls resolved; `aux`: the side requests; `errors`: what the mock could
    not serve (a tool it could not resolve), for the test to see."""

    def __init__(self, default: Optional[Dict[str, Any]] = None) -> None:
        self.errors: List[str] = []
        super().__init__(default or reply(text("ok")))

    def _log(self, into: List[Dict[str, Any]], path: str, headers: Dict[str, str],
             body: Dict[str, Any]) -> Dict[str, Any]:
        return self._record(into, path=path, model=body.get("model"), headers=headers, body=body,
                            stream=bool(body.get("stream")), served=None)

    def _handler_class(self) -> type:
        mock = self

        class MockHandler(Handler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    return self.send_json(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "mock",
                         "context_length": 128000}]})
                self._error(404, "mock: no route for GET %s" % self.path)

            def do_POST(self) -> None:
                raw, body, headers, path = self.read_json()
                if not path.rstrip("/").endswith("/chat/completions"):
                    return self._error(404, "mock: no route for POST %s" % path)
                if not _functions(body):
                    mock._log(mock.aux, path, headers, body)
                    return self._answer(body, reply(text(AUX_TEXT)), [])
                entry = mock._log(mock.requests, path, headers, body)
                with mock._lock:
                    chosen = mock._take()
                try:
                    calls = [resolve(p, body) for p in chosen["parts"] if "tool" in p]
                except AssertionError as exc:
                    with mock._lock:
                        mock.errors.append(str(exc))
                    return self._error(400, str(exc))
                entry["served"] = dict(chosen, calls=calls)
                try:
                    self._answer(body, chosen, calls)
                except (BrokenPipeError, ConnectionResetError):
                    entry["aborted"] = True  # the agent dropped the request (a cancel)

            def _answer(self, body: Dict[str, Any], chosen: Dict[str, Any], calls: List[Dict[str, Any]]) -> None:
                if chosen["gate"] and (chosen["gate_after"] == 0 or chosen["status"] != 200 or not body.get("stream")):
                    mock._arrive(chosen["gate"]).wait()  # in flight: not even the status line sent
                if chosen["status"] != 200:
                    return self._error(chosen["status"], chosen["message"])
                if body.get("stream"):
                    return self._stream(body, chosen, calls)
                message: Dict[str, Any] = {"role": "assistant",
                                           "content": "".join(p["text"] for p in chosen["parts"] if "text" in p)}
                if calls:
                    message["tool_calls"] = [_tool_call(i, c) for i, c in enumerate(calls)]
                self.send_json(200, {"id": "chatcmpl-mock", "object": "chat.completion", "created": int(time.time()),
                                 "model": body.get("model") or MODEL,
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if calls else "stop"}],
                                 "usage": chosen["usage"]})

            def _stream(self, body: Dict[str, Any], chosen: Dict[str, Any], calls: List[Dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")  # the body ends when the connection does
                self.end_headers()
                self.close_connection = True
                model = body.get("model") or MODEL
                deltas = _deltas(chosen, calls)
                self._event(_chunk(model, {"role": "assistant", "content": ""}))
                for index, delta in enumerate(deltas):
                    if chosen["gate"] and index and chosen["gate_after"] == index:
                        mock._arrive(chosen["gate"]).wait()
                    elif index and chosen["delay"]:
                        time.sleep(chosen["delay"])
                    self._event(_chunk(model, delta))
                if chosen["gate"] and chosen["gate_after"] >= max(1, len(deltas)):
                    mock._arrive(chosen["gate"]).wait()
                separate = bool((body.get("stream_options") or {}).get("include_usage"))
                finish = _chunk(model, {}, "tool_calls" if calls else "stop")
                if not separate:
                    finish["usage"] = chosen["usage"]
                self._event(finish)
                if separate:
                    self._event(dict(_chunk(model, {}), choices=[], usage=chosen["usage"]))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: Dict[str, Any]) -> None:
                self.wfile.write(("data: %s\n\n" % json.dumps(payload)).encode())
                self.wfile.flush()

            def _error(self, status: int, message: str) -> None:
                kind = ERROR_TYPES.get(status, "server_error")
                self.send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": kind}})

        return MockHandler


def _tool_call(index: int, call_: Dict[str, Any]) -> Dict[str, Any]:
    return {"index": index, "id": "call_mock_%d" % next(CALL_IDS),
            "type": "function", "function": {"name": call_["name"], "arguments": json.dumps(call_["arguments"])}}


def _deltas(chosen: Dict[str, Any], calls: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The streamed deltas: text (split into words when slowed), then one per tool call."""
    out: List[Dict[str, Any]] = []
    for part in chosen["parts"]:
        if "text" in part:
            pieces = words(part["text"]) if chosen["delay"] else [part["text"]]
            out.extend({"content": piece} for piece in pieces)
    out.extend({"tool_calls": [_tool_call(i, c)]} for i, c in enumerate(calls))
    return out


def _chunk(model: str, delta: Dict[str, Any], finish: Optional[str] = None) -> Dict[str, Any]:
    return {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
