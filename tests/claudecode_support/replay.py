"""Drive the claudecode backend with a fake Host, feeding it recorded frames.

The transcripts in transcripts/*.jsonl hold what the
real Claude Code 2.1.332 wrote on stdout, interleaved with what the lab wrote
on stdin.  Replaying them through the backend tests every race exactly as it
happened, without timing: our sends go in where the lab's user lines went
(one at a time, as the runtime does), our interrupts and answers where the
lab's were, and the lab's control ids are mapped to the backend's own.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional

from harnessctl import registry
from harnessctl.backend import Config, Host, Input

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "transcripts")


def transcript_path(name: str) -> str:
    """A transcript shipped with the tests."""
    path = os.path.join(FIXTURES, name + ".jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    return path


class FakeChild:
    pid = 4242

    def __init__(self) -> None:
        self.lines: List[str] = []
        self.closed = False
        self.killed = False

    def write_line(self, text: str) -> None:
        self.lines.append(text)

    def frames(self) -> List[Dict[str, Any]]:
        return [json.loads(line) for line in self.lines]

    def close_stdin(self) -> None:
        self.closed = True

    def kill(self) -> None:
        self.killed = True

    def wait(self, timeout: float) -> Optional[int]:
        return 0


class FakeHost(Host):
    """Records every call as (name, args...) and hands out run/request ids."""

    def __init__(self) -> None:
        self.calls: List[tuple] = []
        self.children: List[FakeChild] = []
        self.spawned: List[Dict[str, Any]] = []
        self.timers: List[tuple] = []
        self._runs = 0
        self._reqs = 0
        self.tokens: Dict[str, Any] = {}  # request id -> the token the backend asked it with

    def spawn(self, argv, env, cwd):  # type: ignore[override]
        if shutil.which(argv[0], path=env.get("PATH")) is None:  # as the real spawn (Popen) refuses it
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        child = FakeChild()
        self.children.append(child)
        self.spawned.append({"argv": list(argv), "env": dict(env), "cwd": cwd})
        return child

    def call_later(self, seconds, callback):  # type: ignore[override]
        self.timers.append((seconds, callback))

    def ready(self) -> None:
        self.calls.append(("ready",))

    def start_failed(self, message: str) -> None:
        self.calls.append(("start_failed", message))

    def new_run(self) -> str:
        self._runs += 1
        return "run-%d" % self._runs

    def accepted(self, input_id, delivery, run_id) -> None:  # type: ignore[override]
        self.calls.append(("accepted", input_id, delivery, run_id))

    def attributed(self, input_id, run_id) -> None:  # type: ignore[override]
        self.calls.append(("attributed", input_id, run_id))

    def send_failed(self, input_id, message, unavailable=False) -> None:  # type: ignore[override]
        self.calls.append(("send_failed", input_id, message, unavailable))

    def message(self, run_id, message_id, text, role="assistant") -> None:  # type: ignore[override]
        self.calls.append(("message", run_id, message_id, text))

    def request(self, run_id, kind, message, options=None, details=None, token=None) -> str:  # type: ignore[override]
        self._reqs += 1
        req = "req-%d" % self._reqs
        self.tokens[req] = req if token is None else token
        self.calls.append(("request", req, run_id, kind, message, options, details))
        return req

    def request_closed(self, token) -> None:  # type: ignore[override]
        self.calls.append(("request_closed", next(r for r, t in self.tokens.items() if t == token)))

    def token(self, request_id):
        """What the runtime passes to Backend.answer for `request_id`."""
        return self.tokens[request_id]

    def result(self, run_id, input_ids, status, output="", usage=None, cost_usd=None, error=None) -> None:  # type: ignore[override]
        self.calls.append(("result", run_id, list(input_ids), status,
                           {"output": output, "usage": usage, "cost_usd": cost_usd, "error": error}))

    def log(self, kind, level="info", run_id=None, **fields) -> None:  # type: ignore[override]
        self.calls.append(("log", kind, level, run_id, fields))

    def debug(self, text) -> None:  # type: ignore[override]
        pass

    # views
    def named(self, *names: str) -> List[tuple]:
        return [c for c in self.calls if c[0] in names]

    def business(self) -> List[tuple]:
        """Everything but logs and messages: the attribution story."""
        return [c for c in self.calls if c[0] not in ("log", "message")]

    def results(self) -> List[tuple]:
        return self.named("result")

    def logs(self, kind: str) -> List[tuple]:
        return [c for c in self.calls if c[0] == "log" and c[1] == kind]


def make_backend(tmp_path: str, env: Optional[Dict[str, str]] = None, model: Optional[str] = None):
    from adapters.claudecode.backend import ClaudeCodeBackend

    sidecar = os.path.join(str(tmp_path), "events.jsonl.d")
    os.makedirs(sidecar, exist_ok=True)
    base = {"PATH": os.environ.get("PATH", ""), "HARNESSCTL_CLAUDE_BIN": "true"}
    base.update(env or {})
    host = FakeHost()
    config = Config(cwd=str(tmp_path), model=model, sidecar=sidecar, env=base, debug=False,
                    harness=registry.manifest("claudecode")["harness"])
    return ClaudeCodeBackend(host, config), host


def initialize(backend: Any) -> None:
    """Start the backend and answer its initialize request."""
    backend.start()
    init = backend.host.children[-1].frames()[0]
    feed(backend, {"type": "control_response", "response": {
        "subtype": "success", "request_id": init["request_id"], "response": {"pid": 1}}})


def feed(backend: Any, frame: Dict[str, Any]) -> None:
    backend.on_line(json.dumps(frame))


def replay(backend: Any, name: str, answers: Optional[List[Any]] = None,
           on_frame: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
    """Replay transcript `name` through an initialized backend.

    answers: our replies to the requests, in order, given where the lab wrote
    its control_response (default "allow")."""
    host: FakeHost = backend.host
    waiting: List[Input] = []
    ids: Dict[str, str] = {}
    answer_list = list(answers or [])

    def pump() -> None:
        while waiting and not backend._pending:
            backend.send(waiting.pop(0))

    with open(transcript_path(name), encoding="utf-8") as fh:
        entries = [json.loads(line) for line in fh]
    for entry in entries:
        if entry.get("proc", 0) != 0:
            break  # only the first process of a transcript
        data = entry["data"]
        if entry["src"] == "stdin" and isinstance(data, dict):
            kind = data.get("type")
            if kind == "user" and data.get("uuid"):
                content = data["message"]["content"]
                text = content if isinstance(content, str) else " ".join(
                    b.get("text", "") for b in content if isinstance(b, dict))
                waiting.append(Input(data["uuid"], text))
                pump()
            elif kind == "control_request" and data["request"].get("subtype") == "interrupt":
                backend.interrupt()
                ids[data["request_id"]] = json.loads(host.children[-1].lines[-1])["request_id"]
            elif kind == "control_response":
                pending = [c for c in host.named("request") if host.token(c[1]) in backend._requests]
                if pending:
                    value = answer_list.pop(0) if answer_list else "allow"
                    backend.answer(host.token(pending[0][1]), value)
        elif entry["src"] == "stdout" and isinstance(data, dict):
            if data.get("type") == "control_response":
                rid = data["response"].get("request_id")
                if rid in ids:
                    data = json.loads(json.dumps(data))
                    data["response"]["request_id"] = ids[rid]
            if on_frame:
                on_frame(data)
            feed(backend, data)
            pump()
        elif entry["src"] == "exit":
            backend.on_exit(data.get("rc"))
