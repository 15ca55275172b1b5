"""A wire recorder between a real MCP client and the server it starts:
`python3 tee.py LOG COMMAND...` runs COMMAND with the client's stdin and
stdout passed through line by line, and appends each line to LOG as
`{"from": "client"|"server", "message": ...}`, so a test reads what the
client really sent and got (its protocol revision, task handles, polls).

stderr passes straight through; the recorder ends when the server does."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO


def record(log: IO[str], lock: threading.Lock, side: str, line: bytes) -> None:
    try:
        message = json.loads(line)
    except ValueError:
        message = line.decode("utf-8", "replace")
    with lock:
        log.write(json.dumps({"from": side, "message": message}) + "\n")
        log.flush()


def pump(source: IO[bytes], sink: IO[bytes], log: IO[str], lock: threading.Lock, side: str) -> None:
    for line in iter(source.readline, b""):
        record(log, lock, side, line)
        try:
            sink.write(line)
            sink.flush()
        except (BrokenPipeError, ValueError):
            return
    try:
        sink.close()
    except OSError:
        pass


def main() -> int:
    log_path, command = sys.argv[1], sys.argv[2:]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    lock = threading.Lock()
    with open(log_path, "a") as log:
        inbound = threading.Thread(target=pump, args=(sys.stdin.buffer, server.stdin, log, lock, "client"),
                                   daemon=True)
        inbound.start()
        pump(server.stdout, sys.stdout.buffer, log, lock, "server")
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
