"""The one fake Host (and fake harness child) the adapters' unit tests drive a
backend with: it records every call, hands out run and request ids, and maps
request ids to the backend's tokens as the runtime's host does."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from harnessctl.kit.backend import Host


class FakeChild:
    """A harness process that records what the backend writes to it."""

    pid = 4242

    def __init__(self, argv: Any = (), env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None) -> None:
        self.argv, self.env, self.cwd = list(argv), dict(env or {}), cwd
        self.lines: List[str] = []
        self.stdin_closed = False
        self.killed = False
        self.stderr = ""  # what stderr_tail() returns: a test sets it

    def write_line(self, text: str) -> None:
        assert "\n" not in text
        self.lines.append(text)

    def frames(self) -> List[Dict[str, Any]]:
        """The lines written, parsed."""
        return [json.loads(line) for line in self.lines]

    def close_stdin(self) -> None:
        self.stdin_closed = True

    def kill(self) -> None:
        self.killed = True

    def wait(self, timeout: float) -> Optional[int]:
        return 0 if (self.stdin_closed or self.killed) else None

    def stderr_tail(self) -> str:
        return self.stderr


class FakeHost(Host):
    """Records every call as (name, args...); `spawn_error` makes the next spawns fail."""

    def __init__(self) -> None:
        self.calls: List[tuple] = []
        self.children: List[FakeChild] = []
        self.timers: List[tuple] = []
        self.debugs: List[str] = []
        self.spawn_error: Optional[OSError] = None
        self.tokens: Dict[str, Any] = {}  # request id -> the token the backend asked it with
        self._runs = 0
        self._requests = 0

    def spawn(self, argv, env, cwd):
        if self.spawn_error is not None:
            raise self.spawn_error
        child = FakeChild(argv, env, cwd)
        self.children.append(child)
        return child

    def call_later(self, seconds, callback) -> None:
        self.timers.append((seconds, callback))

    def ready(self) -> None:
        self.calls.append(("ready",))

    def start_failed(self, message: str) -> None:
        self.calls.append(("start_failed", message))

    def new_run(self) -> str:
        self._runs += 1
        return "run-%d" % self._runs

    def accepted(self, input_id, delivery, run_id) -> None:
        self.calls.append(("accepted", input_id, delivery, run_id))

    def attributed(self, input_id, run_id) -> None:
        self.calls.append(("attributed", input_id, run_id))

    def send_failed(self, input_id, message, unavailable=False) -> None:
        self.calls.append(("send_failed", input_id, message, unavailable))

    def message(self, run_id, message_id, text, role="assistant") -> None:
        self.calls.append(("message", run_id, message_id, text))

    def request(self, run_id, kind, message, options=None, details=None, token=None) -> str:
        self._requests += 1
        request_id = "req-%d" % self._requests
        self.tokens[request_id] = request_id if token is None else token
        self.calls.append(("request", request_id, run_id, kind, message, options, details))
        return request_id

    def request_closed(self, token) -> None:
        self.calls.append(("request_closed", next(r for r, t in self.tokens.items() if t == token)))

    def result(self, run_id, input_ids, status, output="", usage=None, cost_usd=None,
               error=None, error_class=None, output_json=None) -> None:
        details = {"output": output, "usage": usage, "cost_usd": cost_usd, "error": error}
        if error_class is not None:
            details["error_class"] = error_class
        if output_json is not None:
            details["output_json"] = output_json
        self.calls.append(("result", run_id, list(input_ids), status, details))

    def log(self, kind, level="info", run_id=None, **fields) -> None:
        self.calls.append(("log", kind, level, run_id, fields))

    def debug(self, text: str) -> None:
        self.debugs.append(text)

    # -- views for assertions ---------------------------------------------------

    def token(self, request_id: str) -> Any:
        """What the runtime passes to Backend.answer for `request_id`."""
        return self.tokens[request_id]

    def named(self, *names: str) -> List[tuple]:
        return [c for c in self.calls if c[0] in names]

    def reports(self) -> List[tuple]:
        """Every call but the logs, in order."""
        return [c for c in self.calls if c[0] != "log"]

    def business(self) -> List[tuple]:
        """Everything but logs and messages: the attribution story."""
        return [c for c in self.calls if c[0] not in ("log", "message")]

    def results(self) -> List[tuple]:
        return self.named("result")

    def log_events(self) -> List[Dict[str, Any]]:
        """Every log call as the line it would become in the event file."""
        out = []
        for n, call in enumerate(c for c in self.calls if c[0] == "log"):
            event: Dict[str, Any] = {"type": "log", "ts": "2026-12-03T00:00:00.000Z", "seq": n + 1,
                                     "level": call[2], "kind": call[1]}
            if call[3] is not None:
                event["run_id"] = call[3]
            event.update(call[4])
            out.append(event)
        return out

    def vocabulary_problems(self) -> List[str]:
        """What schema/events.schema.json finds wrong in the log lines so far."""
        import schemacheck

        return ["%s: %s" % (e["kind"], p) for e in self.log_events() for p in schemacheck.check_event(e)]

    def logs(self, kind: str) -> List[tuple]:
        return [c for c in self.calls if c[0] == "log" and c[1] == kind]

    def logged(self, kind: str) -> List[Dict[str, Any]]:
        """The log calls of `kind` as one dict each: their fields, kind, level and run_id."""
        return [dict(c[4], kind=c[1], level=c[2], run_id=c[3]) for c in self.logs(kind)]
