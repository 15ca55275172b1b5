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
"echo: TEXT", result) unless its text starts with a directive (shapes from the
permission__allow and interrupt__tool transcripts):

  /slow      the turn works until interrupted (an `aborted_tools` result) or
             until a next user line, which is folded into it at its next tool
             boundary (queued, started; ONE result lists both uuids)
  /approve   a can_use_tool prompt for Bash; the answer becomes the text
             "permission: allow" or "permission: deny"
  /crash     exit abruptly once the turn started
  /tool CMD  Claude's Bash tool runs CMD (not really: `echo WORDS` prints WORDS,
             `exit N` fails with "Exit code N"): a tool_use, its tool_result,
             then the text "ran: CMD"
  /history   "history: " and the session's earlier texts, joined by " | "
             (kept per session in $FAKE_CLAUDE_HOME when set; `--fork-session`
             copies them into the new session)

Started with --json-schema, a plain turn answers with the user's text itself
(no "echo: "), and its result carries it as `structured_output` when it is
JSON, as Claude does once its StructuredOutput tool took a valid value; prose
gives a result without one (as recorded when the model never calls the tool).

Every frame names the session as the real binary does: the default id, the
one `--resume` gives, or with `--fork-session` a new one.  EOF ends the
process with 0.  Every argv and stdin line is appended to FAKE_CLAUDE_LOG as
JSON.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
import uuid


def session_id(argv):
    """The session this process speaks for, as recorded: `--resume X` keeps X;
    with `--fork-session` a new id (here derived from X, so a test can name it)."""
    if "--resume" not in argv[:-1]:
        return "11111111-2222-4333-8444-555555555555"
    resumed = argv[argv.index("--resume") + 1]
    return str(uuid.uuid5(uuid.NAMESPACE_URL, resumed)) if "--fork-session" in argv else resumed


SESSION = session_id(sys.argv)
HOME = os.environ.get("FAKE_CLAUDE_HOME")  # where sessions keep their texts for /history; unset: nowhere


def history(session):
    """The texts of a session's earlier turns ([] without a HOME)."""
    if not HOME:
        return []
    try:
        with open(os.path.join(HOME, "history-%s.json" % session)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return []


def remember(session, texts):
    if HOME:
        with open(os.path.join(HOME, "history-%s.json" % session), "w") as fh:
            json.dump(texts, fh)


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
    content = frame["message"]["content"]
    text = content if isinstance(content, str) else ""
    uuids = begin_turn(frame)
    if text.startswith("/crash"):
        os._exit(1)
    if text.startswith("/history"):
        text = "history: " + " | ".join(history(SESSION))
    elif text.startswith("/approve"):
        text = approve()
    elif text.startswith("/slow"):
        uuids, text = slow(uuids)
    elif text.startswith("/tool "):
        text = run_tool(uuids, text[len("/tool "):].strip())
    elif "--json-schema" not in sys.argv:
        remember(SESSION, history(SESSION) + [text])
        text = "echo: " + text
    if text is None:
        return
    end_turn(uuids, text)


def begin_turn(frame):
    u = frame.get("uuid")
    emit(lifecycle(u, "queued"))
    emit(lifecycle(u, "started"))
    emit({"type": "system", "subtype": "init", "session_id": SESSION, "user_message_uuids": [u],
          "capabilities": ["msg_lifecycle_v1", "interrupt_cancel_queued_v1"]})
    emit({"type": "user", "message": {"role": "user", "content": frame["message"]["content"]}, "uuid": u,
          "isReplay": True, "session_id": SESSION})
    return [u]


def structured(text):
    """The StructuredOutput value of a turn under --json-schema, or None."""
    if "--json-schema" not in sys.argv:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def end_turn(uuids, text):
    value = structured(text)
    emit({"type": "assistant", "message": {"id": "msg_fake_" + uuid.uuid4().hex[:8], "role": "assistant",
                                           "content": [{"type": "text", "text": text}]},
          "session_id": SESSION, "user_message_uuid": uuids[0], "user_message_uuids": uuids})
    emit({"type": "result", "subtype": "success", "is_error": False, "terminal_reason": "completed",
          "num_turns": 1, "result": text, "session_id": SESSION, "total_cost_usd": 0.0,
          "usage": {"input_tokens": 1, "output_tokens": 1}, "user_message_uuid": uuids[0], "user_message_uuids": uuids,
          **({"structured_output": value} if value is not None else {})})
    for u in uuids:
        emit(lifecycle(u, "completed"))


def run_tool(uuids, command):
    """A Bash tool_use and its tool_result, in the recorded shapes (activity__bash)."""
    tool_id = "toolu_fake_" + uuid.uuid4().hex[:8]
    tool_input = {"command": command, "description": "Run a command"}
    emit({"type": "assistant", "message": {"id": "msg_fake_" + uuid.uuid4().hex[:8], "role": "assistant",
                                           "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                                        "input": tool_input}]},
          "parent_tool_use_id": None, "session_id": SESSION, "user_message_uuid": uuids[0],
          "user_message_uuids": uuids})
    if command.startswith("exit ") and command[5:].strip().isdigit():
        output, detail = "Exit code %s" % command[5:].strip(), "Error: Exit code %s" % command[5:].strip()
        is_error = True
    else:
        output = command[5:] if command.startswith("echo ") else ""
        detail = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        is_error = False
    emit({"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": is_error}]},
        "parent_tool_use_id": None, "session_id": SESSION, "tool_use_result": detail})
    return "ran: " + command


def approve():
    """A Bash permission prompt; the text the answer leads to (None: EOF)."""
    request_id = str(uuid.uuid4())
    tool_input = {"command": "touch approved.txt", "description": "Create approved.txt"}
    emit({"type": "control_request", "request_id": request_id, "request": {
        "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash", "input": tool_input,
        "description": "Create approved.txt", "permission_suggestions": [], "tool_use_id": "toolu_fake"}})
    while True:
        frame = read_frame()
        if frame is None:
            return None
        response = frame.get("response") or {}
        if frame.get("type") == "control_response" and response.get("request_id") == request_id:
            emit(frame)  # Claude echoes the answer (recorded)
            behavior = (response.get("response") or {}).get("behavior")
            return "permission: %s" % ("allow" if behavior == "allow" else "deny")


def slow(uuids):
    """Work until a next user line joins the turn or an interrupt aborts it:
    (uuids the result lists, its text), or (uuids, None) once aborted."""
    while True:
        if not select.select([sys.stdin], [], [], 0.1)[0]:
            continue
        frame = read_frame()
        if frame is None:
            sys.exit(0)
        if frame.get("type") == "user":
            u = frame.get("uuid")
            emit(lifecycle(u, "queued"))
            emit(lifecycle(u, "started"))  # folded in at the next tool boundary
            return uuids + [u], "echo: " + " / ".join([frame["message"]["content"]])
        if frame.get("type") == "control_request" and frame["request"].get("subtype") == "interrupt":
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": frame["request_id"],
                                                           "response": {"still_queued": [], "cancelled": []}}})
            emit({"type": "result", "subtype": "error_during_execution", "is_error": True,
                  "terminal_reason": "aborted_tools", "num_turns": 1, "session_id": SESSION, "total_cost_usd": 0.0,
                  "usage": {"input_tokens": 1, "output_tokens": 1}, "user_message_uuid": uuids[0],
                  "user_message_uuids": uuids})
            for u in uuids:
                emit(lifecycle(u, "cancelled"))
            return uuids, None


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
    if "--fork-session" in sys.argv and SESSION != session_id([]):
        remember(SESSION, history(sys.argv[sys.argv.index("--resume") + 1]))
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
