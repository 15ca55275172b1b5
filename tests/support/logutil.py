"""Event files written by hand for `log` (lines no adapter writes on purpose:
torn, foreign, every kind at once) and `log` itself run as a user would."""

from __future__ import annotations

import json

from cliutil import ok

RUN = "0b9e1111-2222-3333-4444-555566667777"


def log(*args, env=None):
    """`log ARGS` that must succeed; its stdout as text."""
    return ok("log", *args, env=env).stdout.decode()


def write_events(path, *lines, mode="w"):
    """Hand-written lines: a dict gets type log (unless it says), ts and the next
    seq; bytes are written as they are (torn lines, foreign lines)."""
    seq = 0
    with open(path, mode + "b") as f:
        for line in lines:
            if isinstance(line, bytes):
                f.write(line)
                continue
            seq += 1
            event = {"type": "log", "ts": "2026-12-02T10:40:33.794Z", "seq": seq}
            if line.get("type", "log") == "log":
                event.update(level="info", run_id=RUN)
            event.update(line)
            f.write(json.dumps(event).encode() + b"\n")


def accepted(text, run_id=RUN, delivery="start", input_id="in-1"):
    return {"type": "accepted", "input_id": input_id, "text": text, "delivery": delivery, "run_id": run_id}


def result(status="completed", run_id=RUN, **fields):
    event = {"type": "result", "run_id": run_id, "input_ids": ["in-1"], "status": status, "output": "",
             "usage": None, "cost_usd": None, "error": None}
    event.update(fields)
    return event
