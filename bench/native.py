"""Minimal native drivers: how long the bare harness takes from spawn to the
confirmation a first `send` waits for, without harnessctl in between.

* codex: spawn `codex app-server`, `initialize` + `initialized`, `thread/start`,
  `turn/start` -> its response (what `accepted` waits for).
* claude: spawn `claude -p` stream-json, `initialize` control request and one
  user line with a uuid -> its `command_lifecycle` `queued` receipt.

Both run against the same loopback mock models as the adapter tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

CLAUDE_FLAGS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                "--replay-user-messages", "--permission-prompt-tool", "stdio"]


def _until(proc: subprocess.Popen, match) -> None:
    for raw in proc.stdout:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if match(message):
            return
    raise RuntimeError("the harness exited before confirming")


def _write(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def codex_start(binary: str, env: dict, cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        _write(proc, {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "bench", "version": "0"}}})
        _until(proc, lambda m: m.get("id") == 1)
        _write(proc, {"method": "initialized"})
        _write(proc, {"id": 2, "method": "thread/start", "params": {"cwd": cwd}})
        thread = {}
        _until(proc, lambda m: m.get("id") == 2 and thread.update(m["result"]["thread"]) is None)
        _write(proc, {"id": 3, "method": "turn/start", "params": {
            "threadId": thread["id"], "input": [{"type": "text", "text": "hello", "text_elements": []}]}})
        _until(proc, lambda m: m.get("id") == 3)
        return time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()


def claude_start(binary: str, env: dict, cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([binary] + CLAUDE_FLAGS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        _write(proc, {"type": "control_request", "request_id": "init_1",
                      "request": {"subtype": "initialize", "hooks": None}})
        _until(proc, lambda m: m.get("type") == "control_response")
        uuid = os.urandom(16).hex()
        _write(proc, {"type": "user", "message": {"role": "user", "content": "hello"},
                      "parent_tool_use_id": None, "uuid": uuid})
        _until(proc, lambda m: m.get("type") == "command_lifecycle" and m.get("command_uuid") == uuid
               and m.get("state") == "queued")
        return time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()
