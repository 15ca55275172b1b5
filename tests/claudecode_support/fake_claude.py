#!/usr/bin/env python3
"""A fake `claude -p` speaking the recorded stream-json shapes, for races the
real binary cannot be made to hit on demand (a receipt after the turn's result,
a crash with a steer still queued, ...).

It follows a script: FAKE_CLAUDE_SCRIPT names a JSON file
`{"spawns": [[step, ...], ...]}`; spawn N (counted in FAKE_CLAUDE_STATE) plays
list N.  Steps:

  {"expect": "user", "as": "U1"}       wait for the next user line; $U1 = its uuid
  {"expect": "interrupt", "as": "I"}   wait for an interrupt control request
  {"expect": "answer"}                 wait for a control_response (our reply)
  {"plain": true}                      wait for a user line and play a plain turn for it
  {"emit": {...}}                      write a frame; "$U1" strings are substituted
  {"sleep": 0.2}
  {"exit": 1}                          die abruptly

`initialize` is always answered.  After the script (or with none) every user
line gets the plain recorded sequence (queued, started, init, assistant
"echo: TEXT", result); EOF ends the process with 0.  Every argv and stdin line
is appended to FAKE_CLAUDE_LOG as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

SESSION = "11111111-2222-4333-8444-555555555555"


def log(entry):
    path = os.environ.get("FAKE_CLAUDE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def substitute(value, bound):
    if isinstance(value, str):
        for name, real in bound.items():
            if value == "$" + name:
                return real
        return value
    if isinstance(value, list):
        return [substitute(v, bound) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, bound) for k, v in value.items()}
    return value


def read_frame():
    """The next stdin frame (None at EOF); initialize is answered here."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        log({"stdin": line.rstrip("\n")})
        try:
            frame = json.loads(line)
        except ValueError:
            sys.stderr.write("Error parsing streaming input line\n")
            sys.exit(1)
        request = frame.get("request") or {}
        if frame.get("type") == "control_request" and request.get("subtype") == "initialize":
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": frame["request_id"],
                                                           "response": {"pid": os.getpid()}}})
            continue
        return frame


def matches(frame, kind):
    if kind == "user":
        return frame.get("type") == "user"
    if kind == "interrupt":
        return frame.get("type") == "control_request" and frame["request"].get("subtype") == "interrupt"
    if kind == "answer":
        return frame.get("type") == "control_response"
    return False


def lifecycle(command_uuid, state):
    return {"type": "command_lifecycle", "command_uuid": command_uuid, "state": state,
            "uuid": str(uuid.uuid4()), "session_id": SESSION}


def plain_turn(frame):
    """The recorded sequence of an idle turn (transcript simple__plain)."""
    u = frame.get("uuid")
    content = frame["message"]["content"]
    emit(lifecycle(u, "queued"))
    emit(lifecycle(u, "started"))
    emit({"type": "system", "subtype": "init", "session_id": SESSION, "user_message_uuids": [u],
          "capabilities": ["msg_lifecycle_v1", "interrupt_cancel_queued_v1"]})
    emit({"type": "user", "message": {"role": "user", "content": content}, "uuid": u, "isReplay": True,
          "session_id": SESSION})
    text = "echo: " + (content if isinstance(content, str) else "")
    emit({"type": "assistant", "message": {"id": "msg_fake_" + uuid.uuid4().hex[:8], "role": "assistant",
                                           "content": [{"type": "text", "text": text}]},
          "session_id": SESSION, "user_message_uuid": u, "user_message_uuids": [u]})
    emit({"type": "result", "subtype": "success", "is_error": False, "terminal_reason": "completed",
          "num_turns": 1, "result": text, "session_id": SESSION, "total_cost_usd": 0.0,
          "usage": {"input_tokens": 1, "output_tokens": 1}, "user_message_uuid": u, "user_message_uuids": [u]})
    emit(lifecycle(u, "completed"))


def spawn_number():
    path = os.environ.get("FAKE_CLAUDE_STATE")
    if not path:
        return 0
    try:
        with open(path) as fh:
            number = int(fh.read() or 0)
    except OSError:
        number = 0
    with open(path, "w") as fh:
        fh.write(str(number + 1))
    return number


def main():
    log({"argv": sys.argv[1:]})
    steps = []
    script = os.environ.get("FAKE_CLAUDE_SCRIPT")
    if script:
        with open(script) as fh:
            spawns = json.load(fh)["spawns"]
        number = spawn_number()
        steps = spawns[number] if number < len(spawns) else []
    bound = {}
    for step in steps:
        if "expect" in step:
            while True:
                frame = read_frame()
                if frame is None:
                    return 0
                if matches(frame, step["expect"]):
                    break
            if "as" in step:
                bound[step["as"]] = frame.get("uuid") or frame.get("request_id")
        elif "plain" in step:
            frame = None
            while frame is None or frame.get("type") != "user":
                frame = read_frame()
                if frame is None:
                    return 0
            plain_turn(frame)
        elif "emit" in step:
            emit(substitute(step["emit"], bound))
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "exit" in step:
            os._exit(step["exit"])
    while True:
        frame = read_frame()
        if frame is None:
            return 0
        if frame.get("type") == "user":
            plain_turn(frame)
        elif frame.get("type") == "control_request":
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": frame["request_id"],
                                                           "response": {"still_queued": [], "cancelled": []}}})


if __name__ == "__main__":
    sys.exit(main())
