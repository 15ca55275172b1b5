"""A client of `harnessctl mcp` for tests: the server started over pipes,
spoken to line by line (docs/PROTOCOL-MCP.md section 21), in either protocol
line: `initialize` then plain requests, or 2026-07-28 requests that each
carry their revision and capabilities in `_meta`."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any, Dict, List, Optional

from cliutil import ROOT, cli_env, command, wait_for

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


def modern_meta(tasks: bool = True, version: str = MODERN, **extra: Any) -> Dict[str, Any]:
    """The `_meta` of a 2026-07-28 request: its revision, the client, its capabilities."""
    capabilities: Dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities, **extra}


def structured(result: Dict[str, Any]) -> Dict[str, Any]:
    """The structured content of a tool result that is no error."""
    assert result["isError"] is False, result
    return result["structuredContent"]


class Client:
    """The client side of one `harnessctl mcp`: requests, and everything it
    says in order (responses by id, notifications)."""

    def __init__(self, *args: str, cwd: Optional[str] = None, entry: Optional[List[str]] = None,
                 env: Optional[Dict[str, str]] = None) -> None:
        self.proc = subprocess.Popen([*(entry or command()), "mcp", *args],  # entry: a packaged launcher
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or cli_env(), cwd=cwd or ROOT)
        self.lines: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))  # stdout carries JSON-RPC lines only: anything else fails here
        self.lines.put(None)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Dict[str, Any]) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode() + b"\n")

    def start(self, method: str, params: Dict[str, Any]) -> int:
        self.next_id += 1
        self.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
                   + b"\n")
        return self.next_id

    def answer(self, ident: Any, timeout: float = 60) -> Dict[str, Any]:
        """The response to request `ident`, reading what comes before it."""
        return wait_for(lambda: self._find(ident), timeout, "the answer to %r" % ident, interval=0)

    def _find(self, ident: Any) -> Optional[Dict[str, Any]]:
        for message in self.seen:
            if message.get("id") == ident and "method" not in message:
                return message
        try:
            message = self.lines.get(timeout=0.05)
        except queue.Empty:
            return None
        assert message is not None, "the server exited: %s" % self.stderr()
        self.seen.append(message)
        return None

    def request(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        return self.answer(self.start(method, params))

    def initialize(self, version: str = "2025-06-18", capabilities: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = self.request("initialize", {"protocolVersion": version, "capabilities": capabilities or {},
                                             "clientInfo": {"name": "test", "version": "1"}})["result"]
        self.notify("notifications/initialized", {})
        return result

    def tool(self, name: str, **arguments: Any) -> Dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]

    def drain(self) -> List[Dict[str, Any]]:
        """Everything said so far, with what has arrived meanwhile."""
        while True:
            try:
                message = self.lines.get_nowait()
            except queue.Empty:
                return self.seen
            assert message is not None, "the server exited"
            self.seen.append(message)

    def progress(self, token: Any) -> List[Dict[str, Any]]:
        self.drain()
        return [m["params"] for m in self.seen
                if m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token]

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode()

    def stop(self) -> None:
        """The end of a test's server, however the test left it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(30)

    def modern(self, method: str, params: Optional[Dict[str, Any]] = None, tasks: bool = True) -> Dict[str, Any]:
        """A 2026-07-28 request (with the Tasks extension unless `tasks` is false): the whole answer."""
        return self.request(method, dict(params or {}, _meta=modern_meta(tasks)))

    def modern_tool(self, name: str, tasks: bool = True, **arguments: Any) -> Dict[str, Any]:
        return self.modern("tools/call", {"name": name, "arguments": arguments}, tasks)["result"]
