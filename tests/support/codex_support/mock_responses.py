"""A loopback mock of the OpenAI Responses API for tests that run the real codex.

codex only ever calls ``POST {base_url}/responses`` (as recorded) and
reads a server-sent-event stream back.  This mock plays a script of replies, one
per request, in order, and records every request (headers, JSON body, and the
``turn_id`` from the ``x-codex-turn-metadata`` header) so a test can assert what
the model was shown: the steer text in the same turn's next request, the earlier
history after a resume, a tool call's output after an approval.

Usage::

    mock = MockResponses()
    mock.start()
    mock.add(text("Hello."), exec_command("touch ok.txt"), text("Done."))
    home = write_codex_home(tmp_path / "codex_home", mock.base_url)
    ...
    mock.stop()

When the script runs out, every further request gets ``mock.default`` (a short
text answer), so a stray extra request never hangs a test.

codex's hidden side requests (as recorded from codex 0.166.0 under codex-acp)
never consume the script: the tool-less title generation ("...generate a very
short title...") and the approval guardian of codex-acp's `agent` mode ("You are
judging one planned coding-agent action") get JSON fitting the output schema
they ask for, and are logged in ``mock.aux``, not ``mock.requests``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

API_KEY_ENV = "MOCK_API_KEY"
POLL = 0.02  # seconds between serve_forever's checks for stop() (0.5 s by default, paid by every test)

USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 20},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 110,
}


# -- replies ----------------------------------------------------------------


def text(body: str, chunks: int = 1, delay: float = 0.0, gate: Optional[str] = None) -> Dict[str, Any]:
    """An assistant message streamed as `chunks` deltas, `delay` seconds apart;
    with a `gate`, the stream waits there after its first delta until the test
    calls `mock.release(gate)` (a run that stays busy as long as the test wants)."""
    return {"kind": "text", "text": body, "chunks": chunks, "delay": delay, "gate": gate}


def structured(value: Any) -> Dict[str, Any]:
    """The answer to a request whose `text.format` is json_schema (a turn/start
    with outputSchema): the Responses API streams the value as the output_text
    of an assistant message, as JSON text, like any other answer (as recorded)."""
    return text(json.dumps(value))


def function_call(name: str, arguments: Dict[str, Any], call_id: str,
                  namespace: Optional[str] = None) -> Dict[str, Any]:
    """A function call; `namespace` names the group of a tool codex offers in
    one (an MCP server's tools: "mcp__SERVER", the tool's own name as `name`)."""
    return {"kind": "function_call", "name": name, "arguments": arguments, "call_id": call_id,
            "namespace": namespace}


def exec_command(cmd: str, call_id: str = "call_cmd") -> Dict[str, Any]:
    """The model runs a shell command (codex's shell tool is `exec_command`)."""
    return function_call("exec_command", {"cmd": cmd}, call_id)


def user_input(questions: List[Dict[str, Any]], call_id: str = "call_rui") -> Dict[str, Any]:
    """The model asks the user (`request_user_input`; needs plan mode or the feature flag)."""
    return function_call("request_user_input", {"questions": questions}, call_id)


def apply_patch(patch: str, call_id: str = "call_patch") -> Dict[str, Any]:
    """The model edits files with the freeform `apply_patch` tool (offered only for
    bundled model slugs such as gpt-5.5, not for mock-model)."""
    return {"kind": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call_id}


def http_error(status: int, message: str) -> Dict[str, Any]:
    """The endpoint answers with an HTTP error and an OpenAI-style JSON error body."""
    return {"kind": "http_error", "status": status, "message": message}


# -- server -----------------------------------------------------------------


class MockResponses:
    """The mock server: ``start()``, ``add(...)`` replies, read ``requests``, ``stop()``."""

    def __init__(self) -> None:
        self.script: List[Dict[str, Any]] = []
        self.default = text("ok")
        self.requests: List[Dict[str, Any]] = []
        self.aux: List[Dict[str, Any]] = []  # side requests (title, guardian): not scripted
        self._lock = threading.Lock()
        self._gates: Dict[str, threading.Event] = {}
        self._reached: Dict[str, int] = {}
        self._server: Optional[ThreadingHTTPServer] = None

    # -- lifecycle
    def start(self) -> "MockResponses":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(POLL,), daemon=True).start()
        return self

    def stop(self) -> None:
        with self._lock:
            for gate in self._gates.values():
                gate.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        return "http://127.0.0.1:%d/v1" % self._server.server_address[1]

    # -- script
    def add(self, *replies: Dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(replies)

    def _next(self, record: Dict[str, Any]) -> Dict[str, Any]:
        with self._lock:
            record["index"] = len(self.requests) + 1
            self.requests.append(record)
            return self.script.pop(0) if self.script else self.default

    def _aux(self, record: Dict[str, Any]) -> Dict[str, Any]:
        """Log a side request and answer it with JSON fitting its output schema."""
        with self._lock:
            record["index"] = 1000 + len(self.aux)
            self.aux.append(record)
        schema = ((record["body"].get("text") or {}).get("format") or {}).get("schema")
        return text(json.dumps(_fitting(schema)) if schema else "Mock title")

    # -- gates
    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def _arrive(self, name: str) -> threading.Event:
        """A stream has reached gate `name`; the event it waits on."""
        gate = self._gate(name)
        with self._lock:
            self._reached[name] = self._reached.get(name, 0) + 1
        return gate

    def release(self, name: str) -> None:
        """Open a gate: a stream waiting there (now or later) goes on."""
        self._gate(name).set()

    def wait_gate(self, name: str, timeout: float = 30.0) -> None:
        """Block until a stream waits at gate `name`."""
        deadline = time.monotonic() + timeout
        while not self._reached.get(name):
            if time.monotonic() > deadline:
                raise AssertionError("mock: gate %s never reached" % name)
            time.sleep(0.02)

    # -- assertions
    def wait_for_requests(self, count: int, timeout: float = 30.0) -> List[Dict[str, Any]]:
        """Block until at least `count` requests arrived; returns them all."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.02)
        raise AssertionError("mock saw %d requests, wanted %d" % (len(self.requests), count))


def aux_kind(body: Dict[str, Any]) -> Optional[str]:
    """"title" / "guardian" for codex's hidden side requests, None for a conversation turn."""
    texts = [part.get("text", "") for item in body.get("input") or [] if isinstance(item, dict)
             and item.get("type") == "message" for part in item.get("content") or [] if isinstance(part, dict)]
    if not body.get("tools") and any("generate a very short title" in t for t in texts):
        return "title"
    if texts and texts[0].startswith("You are judging one planned coding-agent action"):
        return "guardian"
    return None


def _fitting(schema: Any) -> Any:
    """A value that fits a (structured-output) JSON schema: first enum value, every property."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("type") == "object" or "properties" in schema:
        return {name: _fitting(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"array": [], "integer": 1, "number": 1, "boolean": False}.get(schema.get("type"), "Mock title")


def user_texts(request: Dict[str, Any]) -> List[str]:
    """The user-message texts a request carried, in order (history included)."""
    out = []
    for item in request["body"].get("input", []):
        if item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content", []):
                if part.get("type") == "input_text":
                    out.append(part.get("text", ""))
    return out


def assistant_texts(request: Dict[str, Any]) -> List[str]:
    out = []
    for item in request["body"].get("input", []):
        if item.get("type") == "message" and item.get("role") == "assistant":
            out.extend(p.get("text", "") for p in item.get("content", []))
    return out


def tool_outputs(request: Dict[str, Any]) -> Dict[str, str]:
    """call_id -> output text of every tool result the request carried."""
    out = {}
    for item in request["body"].get("input", []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out[item.get("call_id")] = output if isinstance(output, str) else json.dumps(output)
    return out


# -- the HTTP side ------------------------------------------------------------


def _make_handler(mock: MockResponses):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the SSE body ends when we close the connection

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw.decode("utf-8")) if raw else {}
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                meta = json.loads(headers.get("x-codex-turn-metadata", "{}"))
            except ValueError:
                meta = {}
            record = {"path": self.path, "headers": headers, "body": body,
                      "turn_id": meta.get("turn_id"), "aborted": False}
            record["aux"] = aux_kind(body)
            reply = mock._aux(record) if record["aux"] else mock._next(record)
            try:
                if reply["kind"] == "http_error":
                    self._error(reply)
                else:
                    self._stream(record["index"], reply)
            except (BrokenPipeError, ConnectionResetError):
                record["aborted"] = True  # codex dropped the stream (steer / interrupt)

        def _error(self, reply: Dict[str, Any]) -> None:
            payload = json.dumps({"error": {"message": reply["message"], "type": "mock_error",
                                            "code": None, "param": None}}).encode()
            self.send_response(reply["status"])
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _event(self, data: Dict[str, Any]) -> None:
            self.wfile.write(("event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data))).encode())
            self.wfile.flush()

        def _stream(self, index: int, reply: Dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            response_id = "resp_%d" % index
            item_id = "item_%d_0" % index
            self._event({"type": "response.created", "response": {"id": response_id}})
            if reply["kind"] == "text":
                self._text(item_id, reply)
            elif reply["kind"] == "custom_tool_call":
                item = {"type": "custom_tool_call", "id": item_id, "call_id": reply["call_id"],
                        "name": reply["name"], "input": reply["input"], "status": "completed"}
                self._event({"type": "response.output_item.added", "output_index": 0,
                             "item": dict(item, input="", status="in_progress")})
                self._event({"type": "response.output_item.done", "output_index": 0, "item": item})
            else:
                item = {"type": "function_call", "id": item_id, "call_id": reply["call_id"],
                        "name": reply["name"], "arguments": json.dumps(reply["arguments"]),
                        "status": "completed"}
                if reply.get("namespace"):
                    item["namespace"] = reply["namespace"]
                self._event({"type": "response.output_item.added", "output_index": 0,
                             "item": dict(item, arguments="", status="in_progress")})
                self._event({"type": "response.output_item.done", "output_index": 0, "item": item})
            self._event({"type": "response.completed",
                         "response": {"id": response_id, "usage": USAGE}})

        def _text(self, item_id: str, reply: Dict[str, Any]) -> None:
            body, chunks = reply["text"], max(1, reply["chunks"])
            self._event({"type": "response.output_item.added", "output_index": 0,
                         "item": {"type": "message", "id": item_id, "role": "assistant",
                                  "status": "in_progress", "content": []}})
            size = -(-len(body) // chunks) or 1
            for start in range(0, len(body), size):
                if reply.get("gate") and start == size:
                    mock._arrive(reply["gate"]).wait()
                if reply["delay"] and start:
                    time.sleep(reply["delay"])
                self._event({"type": "response.output_text.delta", "item_id": item_id,
                             "output_index": 0, "content_index": 0,
                             "delta": body[start:start + size]})
            self._event({"type": "response.output_item.done", "output_index": 0,
                         "item": {"type": "message", "id": item_id, "role": "assistant",
                                  "status": "completed",
                                  "content": [{"type": "output_text", "text": body,
                                               "annotations": []}]}})

    return Handler


# -- CODEX_HOME ---------------------------------------------------------------

CONFIG = """\
model = "mock-model"
model_provider = "mock"
approval_policy = "{approval_policy}"
sandbox_mode = "{sandbox_mode}"
allow_login_shell = false
{top}
[features]
plugins = false
shell_snapshot = false
{features}
[model_providers.mock]
name = "Mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{api_key_env}"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 60000
"""


def write_codex_home(
    home: "os.PathLike[str] | str",
    base_url: str,
    approval_policy: str = "never",
    sandbox_mode: str = "read-only",
    features: Optional[Dict[str, bool]] = None,
    top: str = "",
) -> Dict[str, str]:
    """Write a fresh CODEX_HOME/config.toml pointing codex at the mock (as recorded:
    retries off, no plugins / shell snapshot / login shell, so nothing leaves
    127.0.0.1).  Returns the environment variables a test must add.

    They include a TMPDIR beside the home (its parent's `tmp`): codex refuses to
    make its `codex-linux-sandbox` helper when CODEX_HOME lies inside the
    temporary folder ($TMPDIR, else /tmp), and with bubblewrap installed every
    sandboxed command then fails (`bwrap: execvp codex-linux-sandbox: ...`,
    issue 47).  A test's home is always under /tmp, so it gets a TMPDIR that
    does not hold it."""
    home = os.fspath(home)
    tmp = os.path.join(os.path.dirname(os.path.abspath(home)), "tmp")
    for path in (home, tmp):
        os.makedirs(path, exist_ok=True)
    flags = "".join("%s = %s\n" % (k, "true" if v else "false") for k, v in (features or {}).items())
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(CONFIG.format(approval_policy=approval_policy, sandbox_mode=sandbox_mode,
                              top=top, features=flags, base_url=base_url,
                              api_key_env=API_KEY_ENV))
    return {"CODEX_HOME": home, "TMPDIR": tmp, API_KEY_ENV: "sk-mock-dummy"}
