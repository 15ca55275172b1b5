#!/usr/bin/env python3
"""A hostile ACP agent that tries to wedge its runtime (issue 19, section 2
and 7): the least of ACP (initialize, session/new, session/prompt,
session/cancel) and a prompt's text says how it misbehaves:

  /noline N     write N bytes without a newline, then a newline and answer "after the junk"
  /stderr N     write N bytes of stderr, then answer
  /deaf         never answer the prompt, and ignore session/cancel
  /storm N      N message chunks, each with a messageId of its own, then answer
  anything else answer "echo: TEXT"

Stdlib only, no threads."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

SESSION = "wedge-session"
CHUNK = 1024 * 1024


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def send(**msg: Any) -> None:
    write((json.dumps(dict(msg, jsonrpc="2.0")) + "\n").encode())


def say(text: str, message_id: str = "m0") -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
              "messageId": message_id}
    return (json.dumps({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": SESSION, "update": update}}) + "\n").encode()


def answer(prompt_id: Any, text: str) -> None:
    write(say(text))
    send(id=prompt_id, result={"stopReason": "end_turn"})


def prompt(prompt_id: Any, text: str) -> None:
    """Do what the text says (but /deaf)."""
    word, _, arg = text.partition(" ")
    if word == "/noline":
        left = int(arg)
        while left > 0:
            write(b"x" * min(CHUNK, left))
            left -= CHUNK
        write(b"\n")
        answer(prompt_id, "after the junk")
    elif word == "/stderr":
        left, line = int(arg), b"chatty stderr " * 1000 + b"\n"
        while left > 0:
            os.write(2, line[:left])
            left -= len(line)
        answer(prompt_id, "said plenty")
    elif word == "/storm":
        write(b"".join(say("part %d " % i, "m%d" % i) for i in range(int(arg))))
        answer(prompt_id, "calm")
    else:
        answer(prompt_id, "echo: " + text)


def main() -> None:
    """Every prompt but /deaf is answered before the next line is read, so a
    cancel never finds one open; a /deaf prompt never ends."""
    for line in sys.stdin:
        msg: Dict[str, Any] = json.loads(line)
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            send(id=msg["id"], result={"protocolVersion": 1, "agentCapabilities": {},
                                       "agentInfo": {"name": "wedge", "version": "1"}})
        elif method == "session/new":
            send(id=msg["id"], result={"sessionId": SESSION})
        elif method == "session/prompt":
            text = "".join(block.get("text", "") for block in params.get("prompt", []))
            if not text.startswith("/deaf"):
                prompt(msg["id"], text)
        elif "id" in msg and method is not None:
            send(id=msg["id"], error={"code": -32601, "message": "method not found"})


if __name__ == "__main__":
    main()
