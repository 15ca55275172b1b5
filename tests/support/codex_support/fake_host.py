"""The app-server's side of the Codex backend's unit tests.

The backend runs against the tests' one FakeHost (tests/support/fakehost.py), which
records every report and every JSON-RPC line it writes.  `Wire` plays the app-server's side: it
answers the backend's requests and pushes notifications and server requests,
using the shapes recorded from the real codex 0.171.0.  Everything runs on
the test's thread, so races are scripted exactly.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from fakehost import FakeChild, FakeHost

from harnessctl.kit.backend import Config
from harnessctl.store import registry


def make_config(tmp_path, model=None, env=None, debug=False, mode=None) -> Config:
    sidecar = tmp_path / "events.jsonl.d"
    sidecar.mkdir(exist_ok=True)
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    base = {"HARNESSCTL_CODEX_BIN": "/opt/codex", "PATH": "/usr/bin"}
    base.update(env or {})
    return Config(cwd=str(cwd), model=model, sidecar=str(sidecar), env=base, debug=debug,
                  harness=registry.manifest("codex")["harness"], mode=mode)


class Wire:
    """The app-server's side of the conversation with one backend."""

    THREAD = "thr-1"

    def __init__(self, backend, host: FakeHost) -> None:
        self.backend, self.host = backend, host
        self.answered: set = set()

    @property
    def child(self) -> FakeChild:
        return self.host.children[-1]

    def requests(self, method: str) -> List[Dict[str, Any]]:
        return [m for m in self.child.frames() if m.get("method") == method and "id" in m]

    def last(self, method: str) -> Dict[str, Any]:
        found = self.requests(method)
        assert found, "backend never sent %s; sent %s" % (method, [m.get("method") for m in self.child.frames()])
        return found[-1]

    def replies(self) -> List[Dict[str, Any]]:
        """What the backend answered to server requests."""
        return [m for m in self.child.frames() if "method" not in m]

    def _pending(self, method: str) -> Dict[str, Any]:
        for msg in self.requests(method):
            if (len(self.host.children), msg["id"]) not in self.answered:
                return msg
        raise AssertionError("no unanswered %s" % method)

    def respond(self, method: str, result: Dict[str, Any]) -> Dict[str, Any]:
        msg = self._pending(method)
        self.answered.add((len(self.host.children), msg["id"]))
        self.line({"id": msg["id"], "result": result})
        return msg

    def fail(self, method: str, message: str) -> Dict[str, Any]:
        msg = self._pending(method)
        self.answered.add((len(self.host.children), msg["id"]))
        self.line({"error": {"code": -32600, "message": message}, "id": msg["id"]})
        return msg

    def line(self, msg: Dict[str, Any]) -> None:
        self.backend.on_line(json.dumps(msg))

    def notify(self, method: str, params: Dict[str, Any]) -> None:
        self.line({"method": method, "params": params, "emittedAtMs": 1796207982773})

    def ask(self, native_id: int, method: str, params: Dict[str, Any]) -> None:
        self.line({"method": method, "id": native_id, "params": params})

    # -- recorded sequences
    def handshake(self, thread_id: str = THREAD, resume: bool = False) -> None:
        self.respond("initialize", {"userAgent": "harnessctl/0.171.0", "codexHome": "/h",
                                    "platformFamily": "unix", "platformOs": "linux"})
        method = "thread/resume" if resume else "thread/start"
        self.respond(method, {"thread": {"id": thread_id, "status": {"type": "idle"}, "turns": []},
                              "model": "mock-model", "cwd": "/w"})

    def turn(self, turn_id: str) -> Dict[str, Any]:
        return {"id": turn_id, "items": [], "itemsView": "notLoaded", "status": "inProgress",
                "error": None, "startedAt": None, "completedAt": None, "durationMs": None}

    def start_turn(self, turn_id: str) -> None:
        self.respond("turn/start", {"turn": self.turn(turn_id)})
        self.notify("turn/started", {"threadId": self.THREAD, "turn": self.turn(turn_id)})

    def user_message(self, turn_id: str, text: str, client_id: Optional[str]) -> None:
        item = {"type": "userMessage", "id": "um-%s" % text[:8], "clientId": client_id,
                "content": [{"type": "text", "text": text, "text_elements": []}]}
        self.notify("item/started", {"item": item, "threadId": self.THREAD, "turnId": turn_id})
        self.notify("item/completed", {"item": item, "threadId": self.THREAD, "turnId": turn_id})

    def agent_message(self, turn_id: str, item_id: str, text: str, complete: bool = True) -> None:
        item = {"type": "agentMessage", "id": item_id, "text": "", "phase": None}
        self.notify("item/started", {"item": item, "threadId": self.THREAD, "turnId": turn_id})
        self.notify("item/agentMessage/delta", {"threadId": self.THREAD, "turnId": turn_id,
                                                "itemId": item_id, "delta": text})
        if complete:
            self.notify("item/completed", {"item": dict(item, text=text), "threadId": self.THREAD,
                                           "turnId": turn_id})

    def usage(self, turn_id: str, total: int) -> None:
        last = {"totalTokens": 110, "inputTokens": 100, "cachedInputTokens": 20,
                "cacheWriteInputTokens": 0, "outputTokens": 10, "reasoningOutputTokens": 3}
        totals = {k: v * total for k, v in last.items()}
        self.notify("thread/tokenUsage/updated", {"threadId": self.THREAD, "turnId": turn_id,
                                                  "tokenUsage": {"total": totals, "last": last,
                                                                 "modelContextWindow": 258400}})

    def complete_turn(self, turn_id: str, status: str = "completed", error: Any = None,
                      items: Optional[list] = None) -> None:
        turn = dict(self.turn(turn_id), status=status, error=error, items=items or [],
                    itemsView="summary")
        self.notify("turn/completed", {"threadId": self.THREAD, "turn": turn})


def open_run(tmp_path, host: FakeHost, turn_id: str = "turn-1") -> Wire:
    """A started backend with one open run (run-1, codex turn `turn_id`), and its Wire."""
    from adapters.codex.backend import CodexBackend
    from harnessctl.kit.backend import Input

    backend = CodexBackend(host, make_config(tmp_path))
    wire = Wire(backend, host)
    backend.start()
    wire.handshake()
    backend.send(Input("in-1", "hi"))
    wire.start_turn(turn_id)
    return wire
