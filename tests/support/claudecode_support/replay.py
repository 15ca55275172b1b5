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
from typing import Any, Callable, Dict, List, Optional

from fakehost import FakeHost

from harnessctl.kit.backend import Config, Input
from harnessctl.store import registry

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "transcripts")


def transcript_path(name: str) -> str:
    """A transcript shipped with the tests."""
    path = os.path.join(FIXTURES, name + ".jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    return path


def make_backend(tmp_path: str, env: Optional[Dict[str, str]] = None, model: Optional[str] = None,
                 mode: Optional[str] = None):
    from adapters.claudecode.backend import ClaudeCodeBackend

    sidecar = os.path.join(str(tmp_path), "events.jsonl.d")
    os.makedirs(sidecar, exist_ok=True)
    base = {"PATH": os.environ.get("PATH", ""), "HARNESSCTL_CLAUDE_BIN": "true"}
    base.update(env or {})
    host = FakeHost()
    config = Config(cwd=str(tmp_path), model=model, sidecar=sidecar, env=base, debug=False,
                    harness=registry.manifest("claudecode")["harness"], mode=mode)
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
                pending = [c for c in host.named("request") if host.token(c[1]) in backend.control.prompts]
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
