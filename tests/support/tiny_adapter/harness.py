#!/usr/bin/env python3
"""The tiny harness: one JSON object a line on stdin and stdout.

in:  {"op": "prompt", "id": ID, "text": T} | {"op": "cancel"} | {"op": "allow" | "deny", "ask": N}
out: {"ev": "took", "id": ID, "turn": N, "joined": bool}   the prompt is in turn N
     {"ev": "ask", "ask": N, "turn": N, "what": TEXT}       a permission prompt
     {"ev": "ran", "turn": N, "command": C, "code": 0}       a shell command it ran (well, says it did)
     {"ev": "end", "turn": N, "ids": [...], "status": S, "text": T}

A prompt starting /slow works until a next prompt joins it or a cancel ends
it; /approve asks first; /crash dies; /tool CMD reports a command first;
anything else is answered at once."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, List, Optional


def out(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    turn = 0  # the turn going on
    ids: List[str] = []  # its prompts
    asked: Optional[int] = None  # the turn whose permission prompt waits
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "prompt":
            joined = bool(ids)
            if not joined:
                turn += 1
            ids.append(msg["id"])
            out(ev="took", id=msg["id"], turn=turn, joined=joined)
            text = msg["text"]
            if text.startswith("/crash"):
                os._exit(3)
            if text.startswith("/slow"):
                continue  # works until a next prompt joins it or a cancel ends it
            if text.startswith("/tool "):
                out(ev="ran", turn=turn, command=text[6:], code=0)
            if text.startswith("/approve"):
                asked = turn
                out(ev="ask", ask=turn, turn=turn, what="may I? " + text)
            else:
                out(ev="end", turn=turn, ids=ids, status="completed", text="echo: " + text)
                ids = []
        elif msg["op"] == "cancel" and ids:
            out(ev="end", turn=turn, ids=ids, status="cancelled", text="")
            ids, asked = [], None
        elif msg["op"] in ("allow", "deny") and msg.get("ask") == asked:
            out(ev="end", turn=turn, ids=ids, status="completed", text="allowed" if msg["op"] == "allow" else "denied")
            ids, asked = [], None


if __name__ == "__main__":
    main()
