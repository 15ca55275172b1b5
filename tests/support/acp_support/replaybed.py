"""The ACP backend driven through the FakeHost (fakehost.py), over the wire
recorded from the real agents (transcripts/) or hand-made frames of the
same shapes: start one, say or ask as the agent, and read what it wrote."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from cliutil import ROOT
from fakehost import FakeHost

from adapters.acp.backend import AcpBackend
from harnessctl.kit.backend import Config, Input
from harnessctl.store import registry

TRANSCRIPTS = os.path.join(ROOT, "tests", "support", "acp_support", "transcripts")
CWD = "/work/project"  # the recorded sessions' cwd, as the fixtures spell it


def make(tmp_path, agent: Optional[str] = "fake-agent --flag", cwd: str = CWD, model: Optional[str] = None,
         mode: Optional[str] = None, **env: str):
    host = FakeHost()
    manifest = registry.manifest("acp")
    config = Config(cwd, model, str(tmp_path), dict(env), False, manifest["harness"], agent, mode,
                    agents=manifest["agents"])
    return host, AcpBackend(host, config)


class Replay:
    """Feeds a recorded transcript's agent lines to a backend; a response is
    renumbered to the id the backend gave the same request."""

    def __init__(self, name: str, host: FakeHost, backend: AcpBackend) -> None:
        with open(os.path.join(TRANSCRIPTS, name + ".jsonl"), encoding="utf-8") as f:
            self.entries = [json.loads(line) for line in f if line.strip()]
        self.host, self.backend, self.at = host, backend, 0
        self.requests: Dict[Any, tuple] = {}  # transcript id -> (method, occurrence)
        self.seen: Dict[str, int] = {}

    def to(self, method: Optional[str] = None, reply: bool = False) -> Optional[Dict[str, Any]]:
        """Feed agent lines up to the client's next `method` request (or its next
        reply to an agent request); that client line, or None at the end."""
        while self.at < len(self.entries):
            entry = self.entries[self.at]
            self.at += 1
            msg = entry["msg"]
            if entry["dir"] == "c2a":
                if "method" in msg and "id" in msg:
                    count = self.seen.get(msg["method"], 0)
                    self.seen[msg["method"]] = count + 1
                    self.requests[msg["id"]] = (msg["method"], count)
                if (method is not None and msg.get("method") == method) or (reply and "method" not in msg):
                    return msg
                continue
            if "method" not in msg and msg.get("id") in self.requests:
                wanted, count = self.requests[msg["id"]]
                ours = [f for f in self.host.children[-1].frames() if f.get("method") == wanted and "id" in f]
                if len(ours) <= count:
                    continue  # a request the backend does not send (session/list)
                msg = dict(msg, id=ours[count]["id"])
            self.backend.on_line(json.dumps(msg))
        return None


def started(tmp_path, name: str, **kwargs: Any):
    host, backend = make(tmp_path, **kwargs)
    backend.start()
    replay = Replay(name, host, backend)
    return host, backend, replay


def frames(host: FakeHost, method: Optional[str] = None) -> List[Dict[str, Any]]:
    return [f for f in host.children[-1].frames() if method is None or f.get("method") == method]


def send_prompt(replay: Replay, backend: AcpBackend, input_id: str) -> None:
    msg = replay.to("session/prompt")
    assert msg is not None
    backend.send(Input(input_id, msg["params"]["prompt"][0]["text"]))


def ready_agent(tmp_path, init: Optional[Dict[str, Any]] = None, session: Optional[Dict[str, Any]] = None,
                **kwargs: Any):
    """A backend whose hand-made agent answered initialize and session/new."""
    host, backend = make(tmp_path, **kwargs)
    backend.start()
    result = init or {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "x", "version": "1"},
                      "_meta": {"steering": {"supported": True}}}
    respond(backend, host, "initialize", result)
    respond(backend, host, frames(host)[-1]["method"], dict({"sessionId": "s-1"}, **(session or {})))
    return host, backend


def respond(backend: AcpBackend, host: FakeHost, method: str, result: Any = None, error: Any = None) -> None:
    """Answer the backend's last `method` request."""
    request = [f for f in frames(host, method) if "id" in f][-1]
    body = {"error": error} if error is not None else {"result": result if result is not None else {}}
    backend.on_line(json.dumps(dict({"jsonrpc": "2.0", "id": request["id"]}, **body)))


def agent_says(backend: AcpBackend, update: Dict[str, Any]) -> None:
    backend.on_line(json.dumps({"jsonrpc": "2.0", "method": "session/update",
                                "params": {"sessionId": "s-1", "update": update}}))


def agent_asks(backend: AcpBackend, request_id: Any, method: str, params: Dict[str, Any]) -> None:
    backend.on_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))


def answer_to(host: FakeHost, request_id: Any) -> Dict[str, Any]:
    return [f for f in frames(host) if f.get("id") == request_id and "method" not in f][-1]
