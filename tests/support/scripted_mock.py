"""What every scripted mock model server of the tests shares: replies served
in order (a default when the script is empty), named gates a reply can wait
at until the test opens them, the log of what was asked, and waiting for any
of that from the test's thread.  A subclass gives the HTTP handler that
speaks its API (mock_messages.py: Anthropic Messages; acp_support/mock_gemini.py:
Gemini).  Thread-safe; a context manager; 127.0.0.1 only."""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple

POLL = 0.02  # seconds between serve_forever's checks for shutdown()


class ScriptedMock:
    """`requests`: the scripted requests; `aux`: the side requests an agent
    makes on its own (titles, classifiers, routing), answered without
    consuming the script."""

    def __init__(self, default: Dict[str, Any]) -> None:
        self._lock = threading.Condition()
        self._queue: List[Dict[str, Any]] = []
        self._default = default
        self._gates: Dict[str, threading.Event] = {}
        self._reached: Dict[str, int] = {}
        self._seq = itertools.count(1)
        self.requests: List[Dict[str, Any]] = []
        self.aux: List[Dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, paid by every test at its end
        self._thread = threading.Thread(target=self._server.serve_forever, args=(POLL,), daemon=True)

    def _handler_class(self) -> type:
        raise NotImplementedError

    # lifecycle
    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> Any:
        self._thread.start()
        return self

    def close(self) -> None:
        with self._lock:
            for event in self._gates.values():
                event.set()
            self._lock.notify_all()
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d" % self._server.server_address[1]

    # scripting
    def script(self, *replies: Dict[str, Any]) -> None:
        """Queue replies; each scripted request takes the next one (the default when empty)."""
        with self._lock:
            self._queue.extend(replies)

    def set_default(self, chosen: Dict[str, Any]) -> None:
        """The reply served when the script is empty (e.g. a sticky 500)."""
        with self._lock:
            self._default = chosen

    def release(self, gate: str) -> None:
        """Open a gate: a reply waiting there (now or later) goes on."""
        self._gate(gate).set()

    def wait_gate(self, gate: str, timeout: float = 60.0) -> None:
        """Block until a reply is waiting at `gate`."""
        self._wait(lambda: self._reached.get(gate, 0) > 0, timeout, "gate %s never reached" % gate)

    def wait_requests(self, count: int, timeout: float = 60.0) -> List[Dict[str, Any]]:
        """Block until at least `count` scripted requests arrived; return the log."""
        self._wait(lambda: len(self.requests) >= count, timeout, "fewer than %d requests" % count)
        with self._lock:
            return list(self.requests)

    def bodies(self) -> List[Dict[str, Any]]:
        with self._lock:
            return [entry["body"] for entry in self.requests]

    # for the handlers
    def _record(self, into: List[Dict[str, Any]], **fields: Any) -> Dict[str, Any]:
        """Log one request in `into` (requests or aux): its fields, a seq and a
        time, and `aborted` False until the agent drops it; wakes waiters."""
        with self._lock:
            entry = dict({"seq": next(self._seq), "t": time.time(), "aborted": False}, **fields)
            into.append(entry)
            self._lock.notify_all()
        return entry

    def _take(self) -> Dict[str, Any]:
        """The next scripted reply (call with the lock held)."""
        return self._queue.pop(0) if self._queue else self._default

    def _wait(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("mock: " + what)
                self._lock.wait(left)

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def _arrive(self, gate: str) -> threading.Event:
        """A reply reached `gate`: its event, to wait on."""
        event = self._gate(gate)
        with self._lock:
            self._reached[gate] = self._reached.get(gate, 0) + 1
            self._lock.notify_all()
        return event


class Handler(BaseHTTPRequestHandler):
    """What every mock's request handler shares: quiet, a JSON body read, a JSON answer."""

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def read_json(self) -> Tuple[bytes, Dict[str, Any], Dict[str, str], str]:
        """(raw body, its JSON object or {}, lower-cased headers, path without the query)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            body = {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        return raw, body if isinstance(body, dict) else {}, headers, self.path.split("?")[0]

    def send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def words(value: str) -> List[str]:
    """`value` cut after each space: the chunks a slowed reply streams, which join back to it."""
    parts, word = [], ""
    for ch in value:
        word += ch
        if ch == " ":
            parts.append(word)
            word = ""
    return parts + [word] if word else parts
