#!/usr/bin/env python3
"""A fake ACP agent for the adapter's fast tests: JSON-RPC 2.0 lines on stdio,
protocol version 1, speaking only the shapes recorded from codex-acp 2.6.0,
claude-agent-acp 0.101.0 and gemini-cli 0.61.0.

By default it behaves like codex-acp: it advertises `_meta.steering.supported`
and `sessionCapabilities.resume`, queues a second session/prompt behind the
running one, and withdraws a pending permission request on cancel with
`$/cancel_request`.  Flags:

  --no-steering   like gemini: no steering (`_session/steering` is -32601), a second
                  session/prompt cancels the running one, a pending permission
                  request waits for the client's reply after a cancel
  --no-resume     advertise neither session/resume nor loadSession
  --load-only     advertise loadSession only (session/load replays the history)
  --no-fork       advertise no session/fork (with resume, as codex-acp and claude-agent-acp, it is offered)
  --silent-exit   exit 0 without answering initialize (codex-acp without its codex)

What a prompt does is said by its text:

  /slow [N]       stream "working… " until cancelled or steered (the steer text is
                  then answered "echo: TEXT"); `endonsteer=promptRequired` ends the
                  turn when a steer arrives and answers it promptRequired,
                  `endonsteer=injected` writes the prompt's response before
                  answering the steer injected
  /approve [N]    ask session/request_permission (options as codex-acp's) and say
                  "permission: <optionId>"
  /elicit KIND    ask elicitation/create, a `form` (fields title, count) or a `url`, and
                  say "elicitation: <the client's answer as JSON>"
  /switchmode     ask session/request_permission of a `switch_mode` tool call (claude-agent-acp's
                  plan exit, its options) and say "mode: <optionId>"
  /crash [N]      exit 3 in the middle of the turn
  /tool CMD...    run CMD (no shell) as an `execute` tool call, output in
                  _meta.terminal_output_delta, exit code in _meta.terminal_exit
  /write PATH T   fs/read_text_file then fs/write_text_file through the client, as
                  an `edit` tool call with a diff
  /fail CODE      answer the prompt with a JSON-RPC error of that code
  /stop REASON    end with that stopReason
  /plan           a plan update
  /silent         nothing over ACP until cancelled, "Connection refused" on stderr and
                  then three lines of chatter (claude-agent-acp retrying a closed port)
  /notice         "echo: notice", then a warning notice (as a `notice` update when the
                  client advertised session.notices, else as claude-agent-acp's
                  informational message text)
  /history        "history: " and the session's earlier prompts
  anything else   "echo: TEXT"

$FAKE_ACP_EXTRA_OPTIONS (a JSON list) adds options to /approve's; $FAKE_ACP_APPROVE_TOOL (a
JSON object) replaces fields of the tool call it asks about (e.g. an `edit` with `locations`).

Sessions are files in $FAKE_ACP_HOME (else $TMPDIR/fake-acp-UID, never the checkout); every line received
is appended to $FAKE_ACP_LOG when set."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, Dict, List, Optional

FLAGS = set(sys.argv[1:])
STEERING = "--no-steering" not in FLAGS
FORKING = not FLAGS & {"--no-fork", "--no-resume", "--load-only"}  # session/fork comes with session/resume
HOME = os.environ.get("FAKE_ACP_HOME") or os.path.join(tempfile.gettempdir(), "fake-acp-%d" % os.getuid())
LOG = os.environ.get("FAKE_ACP_LOG")
MODES = [{"id": m, "name": m} for m in ("read-only", "workspace-write", "agent", "agent-full-access")]  # codex-acp's
MODELS = [{"modelId": "fake-small", "name": "Fake small"}, {"modelId": "fake-large", "name": "Fake large"}]

write_lock = threading.Lock()
state_lock = threading.Condition()
turn_lock = threading.Lock()
next_id = [0]  # our request ids count from 0, as the real agents'
waiting: Dict[int, Dict[str, Any]] = {}  # our request id -> {"event", "response"}
sessions: Dict[str, Dict[str, Any]] = {}
cost = [0.0]
client: Dict[str, Any] = {}  # the client's capabilities


class Turn:
    def __init__(self, prompt_id: Any, session_id: str, text: str) -> None:
        self.prompt_id = prompt_id
        self.session_id = session_id
        self.text = text
        self.cancelled = threading.Event()
        self.steers: List[Any] = []  # (steering request id, text)
        self.done = False  # no steer joins it any more
        self.answered = False  # its response was written by a steer race
        self.mode: Optional[str] = None  # /slow's endonsteer=


current: List[Optional[Turn]] = [None]


def send(msg: Dict[str, Any]) -> None:
    msg = dict({"jsonrpc": "2.0"}, **msg)
    with write_lock:
        sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def update(session_id: str, body: Dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def chunk(turn: Turn, text: str, message_id: Optional[str] = None) -> None:
    body: Dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if message_id:
        body["messageId"] = message_id
    update(turn.session_id, body)


def ask(method: str, params: Dict[str, Any], turn: Optional[Turn] = None) -> Optional[Dict[str, Any]]:
    """A request to the client; its response, or None when the turn is cancelled
    first and this agent withdraws (codex-acp's `$/cancel_request`)."""
    with state_lock:
        request_id = next_id[0]
        next_id[0] += 1
        entry: Dict[str, Any] = {"event": threading.Event(), "response": None}
        waiting[request_id] = entry
    send({"id": request_id, "method": method, "params": params})
    while not entry["event"].wait(0.02):
        if turn is not None and turn.cancelled.is_set() and STEERING:
            send({"method": "$/cancel_request", "params": {"requestId": request_id}})
            return None
    return entry["response"]


# -- sessions ------------------------------------------------------------------------


def session_path(session_id: str) -> str:
    return os.path.join(HOME, "%s.json" % session_id)


def load_session(session_id: str) -> Optional[Dict[str, Any]]:
    try:
        with open(session_path(session_id), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save_session(session_id: str, data: Dict[str, Any]) -> None:
    os.makedirs(HOME, exist_ok=True)
    with open(session_path(session_id), "w", encoding="utf-8") as f:
        json.dump(data, f)


def session_result(session_id: str) -> Dict[str, Any]:
    data = sessions[session_id]
    return {"modes": {"currentModeId": data.get("mode", "agent"), "availableModes": MODES},
            "models": {"currentModelId": data.get("model", "fake-small"), "availableModels": MODELS}}


# -- turns -------------------------------------------------------------------------------


def run_turn(turn: Turn) -> None:
    if not STEERING and current[0] is not None and not current[0].done:
        current[0].cancelled.set()  # gemini: a second prompt cancels the running one
    with turn_lock:
        current[0] = turn
        try:
            stop = play(turn)
        except RpcError as exc:
            turn.done = True
            send({"id": turn.prompt_id, "error": {"code": exc.code, "message": exc.message}})
            return
        answer_steers(turn)
        if stop is None or turn.answered:
            return
        data = sessions[turn.session_id]
        data.setdefault("history", []).append(turn.text)
        save_session(turn.session_id, data)
        cost[0] += 0.001
        update(turn.session_id, {"sessionUpdate": "usage_update", "used": 17, "size": 200000,
                                 "cost": {"amount": round(cost[0], 6), "currency": "USD"}})
        send({"id": turn.prompt_id, "result": {"stopReason": stop, "usage": {
            "totalTokens": 17, "inputTokens": 10, "cachedReadTokens": 2, "cachedWriteTokens": 0, "outputTokens": 5}}})


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def answer_steers(turn: Turn) -> None:
    """Steers that arrived too late to be streamed are still answered in the turn."""
    with state_lock:
        steers, turn.steers = turn.steers, []
        turn.done = True
    for _, text in steers:
        chunk(turn, "echo: %s" % text, "msg-steer")


def play(turn: Turn) -> Optional[str]:
    """The turn's work; the stopReason (None: already answered)."""
    words = turn.text.split()
    command = words[0] if words and words[0].startswith("/") else ""
    if command == "/slow":
        return slow(turn)
    if command == "/approve":
        return approve(turn)
    if command == "/elicit":
        return elicit(turn, words[1] if len(words) > 1 else "form")
    if command == "/switchmode":
        return switch_mode(turn)
    if command == "/crash":
        chunk(turn, "about to crash", "msg-1")
        os._exit(3)
    if command == "/tool":
        return tool(turn, turn.text.split(None, 1)[1] if len(words) > 1 else "true")
    if command == "/write" and len(words) >= 3:
        return write(turn, words[1], turn.text.split(None, 2)[2])
    if command == "/fail":
        raise RpcError(int(words[1]) if len(words) > 1 else -32603, "mock says %s" % (words[1:] or ["no"])[0])
    if command == "/stop":
        chunk(turn, "stopping", "msg-1")
        return words[1] if len(words) > 1 else "max_tokens"
    if command == "/silent":
        # as claude-agent-acp does: the reason, then lines that say nothing of it
        sys.stderr.write("fake: API Error: Connection refused (ECONNREFUSED), retrying\n"
                         + "[idle-compaction] skip: cache TTL is unknown, not 1h\n" * 3)
        sys.stderr.flush()
        turn.cancelled.wait(600)
        return "cancelled"
    if command == "/notice":
        chunk(turn, "echo: notice", "msg-1")
        notice = {"sessionUpdate": "notice", "severity": "warning", "title": "Fake warning",
                  "description": "this is not the answer"}
        if not isinstance(client.get("session", {}).get("notices"), dict):
            meta = {"claudeCode": {"kind": "informational", "level": "warning"}}
            notice = {"sessionUpdate": "agent_message_chunk", "_meta": meta,
                      "content": {"type": "text", "text": "**Warning:** this is not the answer"}}
        update(turn.session_id, notice)
        return "end_turn"
    if command == "/plan":
        update(turn.session_id, {"sessionUpdate": "plan", "entries": [
            {"content": "read", "priority": "high", "status": "completed"},
            {"content": "write", "priority": "medium", "status": "in_progress"}]})
        chunk(turn, "planned", "msg-1")
        return "end_turn"
    if command == "/history":
        chunk(turn, "history: %s" % " | ".join(sessions[turn.session_id].get("history", [])), "msg-1")
        return "end_turn"
    update(turn.session_id, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
    chunk(turn, "echo: ", "msg-1")
    chunk(turn, turn.text, "msg-1")
    return "end_turn"


def slow(turn: Turn) -> Optional[str]:
    mode = next((w.split("=", 1)[1] for w in turn.text.split() if w.startswith("endonsteer=")), None)
    turn.mode = mode
    for _ in range(600):
        if turn.cancelled.is_set():
            return "cancelled"
        with state_lock:
            steers = list(turn.steers)
            turn.steers = []
        if steers:
            for _, text in steers:
                chunk(turn, "echo: %s" % text, "msg-2")
            return "end_turn"
        chunk(turn, "working… ", "msg-1")
        time.sleep(0.05)
    return "end_turn"


def approve(turn: Turn) -> Optional[str]:
    tool_id = "call_%s" % uuid.uuid4().hex[:8]
    raw = {"command": "touch approved.txt", "cwd": os.getcwd()}
    update(turn.session_id, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "name": "exec_command",
                             "kind": "execute", "title": "touch approved.txt", "status": "in_progress",
                             "rawInput": raw})
    asked = {"toolCallId": tool_id, "title": "touch approved.txt", "rawInput": raw, "kind": "execute",
             "status": "pending"}
    asked.update(json.loads(os.environ.get("FAKE_ACP_APPROVE_TOOL") or "{}"))
    response = ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": asked, "options": [
        {"optionId": "allow_once", "name": "Yes, proceed", "kind": "allow_once"},
        {"optionId": "accept_execpolicy_amendment", "name": "Yes, and don't ask again", "kind": "allow_always"},
        {"optionId": "cancel", "name": "No, and tell the agent what to do differently", "kind": "reject_once"}]
        + json.loads(os.environ.get("FAKE_ACP_EXTRA_OPTIONS") or "[]")}, turn)
    outcome = ((response or {}).get("result") or {}).get("outcome") or {}
    if response is None or outcome.get("outcome") == "cancelled" or turn.cancelled.is_set():
        update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "failed",
                                 "_meta": {"terminal_exit": {"exit_code": None, "signal": None}}})
        return "cancelled"
    option = outcome.get("optionId")
    if option == "cancel":  # codex ends the turn cancelled on a reject
        update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "failed"})
        chunk(turn, "permission: %s" % option, "msg-1")
        return "end_turn"
    update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed",
                             "_meta": {"terminal_exit": {"exit_code": 0, "signal": None}}})
    chunk(turn, "permission: %s" % option, "msg-1")
    return "end_turn"


def elicit(turn: Turn, kind: str) -> Optional[str]:
    if kind == "url":
        params: Dict[str, Any] = {"sessionId": turn.session_id, "mode": "url", "message": "Sign in to tickets",
                                  "url": "https://example.org/login", "elicitationId": "e-1"}
    else:
        params = {"sessionId": turn.session_id, "mode": "form", "message": "Details for the ticket",
                  "requestedSchema": {"type": "object", "properties": {
                      "title": {"type": "string", "title": "Title"},
                      "count": {"type": "integer", "title": "How many"}}}}
    response = ask("elicitation/create", params, turn)
    if response is None or turn.cancelled.is_set():
        return "cancelled"
    chunk(turn, "elicitation: %s" % json.dumps(response.get("result"), sort_keys=True), "msg-1")
    return "end_turn"


def switch_mode(turn: Turn) -> Optional[str]:
    tool_id = "toolu_%s" % uuid.uuid4().hex[:8]
    asked = {"toolCallId": tool_id, "kind": "switch_mode", "title": "Ready to code?", "status": "pending",
             "rawInput": {"plan": "1. write it"}}
    update(turn.session_id, dict(asked, sessionUpdate="tool_call"))
    response = ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": asked, "options": [
        {"optionId": "acceptEdits", "name": "Yes, auto-accept edits", "kind": "allow_always"},
        {"optionId": "default", "name": "Yes, manually approve edits", "kind": "allow_once"},
        {"optionId": "plan", "name": "No, keep planning", "kind": "reject_once"}]}, turn)
    outcome = ((response or {}).get("result") or {}).get("outcome") or {}
    if response is None or turn.cancelled.is_set():
        return "cancelled"
    update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed"})
    chunk(turn, "mode: %s" % (outcome.get("optionId") or outcome.get("outcome")), "msg-1")
    return "end_turn"


def tool(turn: Turn, command: str) -> str:
    tool_id = "call_%s" % uuid.uuid4().hex[:8]
    update(turn.session_id, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "name": "exec_command",
                             "kind": "execute", "title": command, "status": "in_progress",
                             "content": [{"type": "terminal", "terminalId": tool_id}],
                             "rawInput": {"command": command, "cwd": os.getcwd()}})
    try:
        proc = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        output, code = proc.stdout.decode(errors="replace"), proc.returncode
    except OSError as exc:
        output, code = "%s\n" % exc, 127
    update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                             "status": "completed" if code == 0 else "failed",
                             "_meta": {"terminal_output_delta": {"data": output, "terminal_id": tool_id},
                                       "terminal_exit": {"exit_code": code, "signal": None, "terminal_id": tool_id}}})
    chunk(turn, "ran: %s" % command, "msg-2")
    return "end_turn"


def write(turn: Turn, path: str, text: str) -> str:
    target = os.path.join(os.getcwd(), path) if not os.path.isabs(path) else path
    tool_id = "write_file__write_file_%d_0" % int(time.time() * 1000)
    old = ask("fs/read_text_file", {"path": target, "sessionId": turn.session_id}) or {}
    if "error" in old:
        chunk(turn, "read refused: %s" % old["error"].get("message"))
        return "end_turn"
    before = (old.get("result") or {}).get("content", "")
    diff = {"type": "diff", "path": target, "oldText": before, "newText": text,
            "_meta": {"kind": "add" if before == "" else "modify"}}
    update(turn.session_id, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "status": "in_progress",
                             "title": "Writing to %s" % path, "content": [diff], "locations": [{"path": target}],
                             "kind": "edit"})
    done = ask("fs/write_text_file", {"path": target, "content": text, "sessionId": turn.session_id}) or {}
    failed = "error" in done
    update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                             "status": "failed" if failed else "completed", "title": "Writing to %s" % path,
                             "content": [diff], "locations": [{"path": target}], "kind": "edit"})
    chunk(turn, "write refused: %s" % done["error"].get("message") if failed else "wrote %s" % path)
    return "end_turn"


# -- the connection ---------------------------------------------------------------------------


def fork(rid: Any, params: Dict[str, Any]) -> None:
    """session/fork: a new session with the source's history, answered as
    recorded (sessionId, modes, configOptions: no `models`)."""
    source = load_session(str(params.get("sessionId")))
    if source is None:
        send({"id": rid, "error": {"code": -32002, "message": "Resource not found",
                                   "data": {"sessionId": params.get("sessionId")}}})
        return
    session_id = str(uuid.uuid4())
    sessions[session_id] = {"history": list(source.get("history", [])), "cwd": params.get("cwd")}
    save_session(session_id, sessions[session_id])
    modes = session_result(session_id)["modes"]
    send({"id": rid, "result": {"sessionId": session_id, "modes": modes, "configOptions": []}})


def on_request(msg: Dict[str, Any]) -> None:
    method, params, rid = msg.get("method"), msg.get("params") or {}, msg.get("id")
    if method == "initialize":
        client.update(params.get("clientCapabilities") or {})
        if "--silent-exit" in FLAGS:
            sys.stderr.write("[SYSTEM_ERROR] the fake's backend could not be started\n")
            os._exit(0)
        capabilities: Dict[str, Any] = {"promptCapabilities": {"image": False, "embeddedContext": True}}
        if "--no-resume" not in FLAGS:
            capabilities["loadSession"] = True
            if "--load-only" not in FLAGS:
                capabilities["sessionCapabilities"] = {"resume": {}, "list": {}}
                if FORKING:
                    capabilities["sessionCapabilities"]["fork"] = {}
        result: Dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": [],
                                  "agentInfo": {"name": "fake-acp", "title": "Fake ACP agent", "version": "0.0.1"}}
        if STEERING:
            result["_meta"] = {"steering": {"supported": True}}
        send({"id": rid, "result": result})
    elif method == "session/new":
        session_id = str(uuid.uuid4())
        sessions[session_id] = {"history": []}
        save_session(session_id, sessions[session_id])
        send({"id": rid, "result": dict(session_result(session_id), sessionId=session_id)})
    elif method in ("session/resume", "session/load"):
        session_id = str(params.get("sessionId"))
        data = load_session(session_id)
        if data is None or (method == "session/resume" and "--load-only" in FLAGS):
            send({"id": rid, "error": {"code": -32002, "message": "Resource not found",
                                       "data": {"sessionId": session_id}}})
            return
        sessions[session_id] = data
        if method == "session/load":
            for text in data.get("history", []):
                update(session_id, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}})
                update(session_id, {"sessionUpdate": "agent_message_chunk", "messageId": "old",
                                    "content": {"type": "text", "text": "echo: %s" % text}})
        send({"id": rid, "result": dict(session_result(session_id), sessionId=session_id)})
    elif method == "session/fork" and FORKING:
        fork(rid, params)
    elif method == "session/set_mode":
        mode = params.get("modeId")
        if mode not in [m["id"] for m in MODES]:
            send({"id": rid, "error": {"code": -32602, "message": "Invalid params"}})
            return
        sessions[str(params.get("sessionId"))]["mode"] = mode
        send({"id": rid, "result": {}})
    elif method == "session/set_model":
        model = params.get("modelId")
        if model not in [m["modelId"] for m in MODELS]:
            send({"id": rid, "error": {"code": -32602, "message": "Invalid params", "data": {
                "details": "unknown model %s" % model}}})
            return
        sessions[str(params.get("sessionId"))]["model"] = model
        send({"id": rid, "result": {}})
    elif method == "session/prompt":
        text = "\n".join(b.get("text", "") for b in params.get("prompt") or [] if b.get("type") == "text")
        turn = Turn(rid, str(params.get("sessionId")), text)
        threading.Thread(target=run_turn, args=(turn,), daemon=True).start()
    elif method == "_session/steering" and STEERING:
        steer(rid, params)
    else:
        send({"id": rid, "error": {"code": -32601, "message": "\"Method not found\": %s" % method,
                                   "data": {"method": method}}})


def steer(rid: Any, params: Dict[str, Any]) -> None:
    text = "\n".join(b.get("text", "") for b in params.get("prompt") or [] if b.get("type") == "text")
    turn = current[0]
    idle = ((params.get("_meta") or {}).get("steering") or {}).get("idleBehavior")
    with state_lock:
        running = turn is not None and not turn.done
        mode = turn.mode if turn is not None and running else None
        if running and turn is not None:
            if mode is None:
                turn.steers.append((rid, text))
            else:
                turn.done = turn.answered = True
    if not running or turn is None:
        if idle == "promptRequired":
            send({"id": rid, "result": {"outcome": "promptRequired", "reason": "noRunningTurn"}})
        else:
            send({"id": rid, "result": {"outcome": "startedNewTurn"}})
        return
    if mode == "promptRequired":  # the turn ends just as the steer arrives
        send({"id": turn.prompt_id, "result": {"stopReason": "end_turn"}})
        send({"id": rid, "result": {"outcome": "promptRequired", "reason": "noRunningTurn"}})
        turn.cancelled.set()
        return
    if mode == "injected":  # the turn's response overtakes the steer's answer
        chunk(turn, "echo: %s" % text, "msg-2")
        send({"id": turn.prompt_id, "result": {"stopReason": "end_turn"}})
        turn.cancelled.set()
    send({"id": rid, "result": {"outcome": "injected"}})


def main() -> None:
    for line in sys.stdin:
        if LOG:
            with open(LOG, "a", encoding="utf-8") as f:
                f.write(line if line.endswith("\n") else line + "\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "method" in msg and "id" in msg:
            on_request(msg)
        elif "method" in msg:
            if msg["method"] == "session/cancel" and current[0] is not None:
                current[0].cancelled.set()
        else:
            with state_lock:
                entry = waiting.pop(msg.get("id"), None)
            if entry is not None:
                entry["response"] = msg
                entry["event"].set()


if __name__ == "__main__":
    main()
