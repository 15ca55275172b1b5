#!/usr/bin/env python3
"""The lean harness: one turn at a time, one JSON object a line.

in:  {"do": "work", "texts": [T, ...]} | {"do": "stop"}
out: {"is": "ran", "command": C}                   a shell command it ran (no exit code)
     {"is": "done", "status": S, "text": T}         the turn ended

A turn whose first text is /slow FILE works until a stop cancels it or FILE
exists; /crash dies; /tool CMD reports a command first; anything else is
echoed at once."""

from __future__ import annotations

import json
import os
import select
import sys
from typing import Any, Optional


def say(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    release: Optional[str] = None  # the file that ends the slow turn
    pending = b""
    while True:
        if b"\n" not in pending:
            if not select.select([0], [], [], 0.05 if release else None)[0]:
                if release and os.path.exists(release):
                    say(**{"is": "done", "status": "completed", "text": "released"})
                    release = None
                continue
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
            continue
        line, pending = pending.split(b"\n", 1)
        msg = json.loads(line)
        if msg["do"] == "stop" and release:
            say(**{"is": "done", "status": "cancelled", "text": ""})
            release = None
        elif msg["do"] == "work":
            first = msg["texts"][0]
            if first.startswith("/crash"):
                os._exit(3)
            if first.startswith("/slow "):
                release = first[6:]
                continue
            if first.startswith("/tool "):
                say(**{"is": "ran", "command": first[6:]})
            say(**{"is": "done", "status": "completed", "text": "\n".join("echo: " + t for t in msg["texts"])})


if __name__ == "__main__":
    main()
