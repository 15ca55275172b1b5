#!/usr/bin/env python3
"""A hostile ACP agent for the torture suite (issue 19): the fake agent
(fake_agent.py, imported and reused as is) plus prompts that attack harnessctl
the ways an agent that runs as the user can.

Why a separate file: the fake agent models what real agents do; this one does
what no honest agent should, and every test that drives it expects harnessctl
to hold.  Everything it does is appended to the JSON lines of `--report PATH`
(outside its workspace), so the test knows exactly what was attempted.

Flags (besides the fake's):

  --report PATH     where to append what it did (also puts the round's folder
                    on its command line, so the test's clean-up finds it)
  --hostile-ids     escape sequences in agentInfo, the session id, mode and model ids
  --refuse-session  session/new fails with an escape-laden error message

Prompts (anything else is the fake agent's):

  /fs SEED          fs/read_text_file + fs/write_text_file of harnessctl's own
                    files: the event file, FILE.d/binding.json (a forged
                    binding), state.json, acp-session.json, runtime.log, a new
                    sidecar file, the sidecar through a symlink and a hard link
                    made in the workspace, /tmp/harnessctl-<uid>/, and a FIFO
  /forge-binding now|later
                    rewrite FILE.d/binding.json itself so that the agent
                    command first creates PWNED next to the event file; `later`
                    leaves a detached helper that does it once the runtime exited
  /forge-state      a helper that forges FILE.d/state.json (a snapshot with a
                    valid header, a lying status line and a forged pending
                    request) once the runtime exited
  /forge-append     ask a permission, and while it is pending append a forged
                    `request` (replied allow) and a forged `result` to the event
                    file; then say which option harnessctl really answered
  /escapes SEED     escape sequences in every field it controls (text, thought,
                    tool title/kind/status/paths/diff/output, plan, usage,
                    permission option ids and names), then ends the turn with a
                    hostile stopReason, error or usage
  /flood N IDS [STOP]
                    N agent_message_chunk updates over IDS distinct message ids,
                    and on until the file STOP exists
  /ignore-cancel    streams until killed: ignores session/cancel and the end
                    of its stdin (SIGTERM it always ignores)
  /junk BYTES       BYTES of output without a newline, then a newline, then a
                    permission request and "after the junk"
  /ask-tool JSON    a permission request for the tool call JSON (kind, title,
                    rawInput as the test likes); answers "answered: OPTION_ID"
  /race SECONDS OUTSIDE
                    flip the folder `flip` of its cwd between a directory and a
                    symlink to OUTSIDE (flipper.py) while writing flip/target.txt
                    and flip/deep/new.txt and reading flip/secret.txt through the
                    client for SECONDS; answers a JSON object: the distinct contents read,
                    how many requests were answered and refused, and the flips
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import fake_agent as fake

ARGS = sys.argv[1:]
REPORT = ARGS[ARGS.index("--report") + 1] if "--report" in ARGS[:-1] else None
HOSTILE_IDS = "--hostile-ids" in ARGS
REFUSE_SESSION = "--refuse-session" in ARGS
MARKER = "PWNED"  # the file a forged agent command creates: it must never appear
FLOOD_MAX, FLOOD_SECONDS = 4, 120  # a flood that waits for its stop file ends anyway
REQUEST_WAIT = 60.0  # how long an attack waits for something it needs from harnessctl

# What the agent hides in every field it controls: CSI, OSC 52 (clipboard) and
# OSC 0 (title), C1 controls, bidi overrides and isolates, line and paragraph
# separators, zero-width characters, and a newline that forges a transcript line.
ESCAPES = [
    "\x1b[2J\x1b[31mred",
    "\x1b]52;c;cm0gLXJmIH4=\x07",
    "\x1b]0;PWNED\x07",
    "\x9b2J\x9d0;c1-title\x9c\x85",
    "\u202eevil\u202c\u202a\u202b\u202d",
    "\u2066iso\u2069\u2067\u2068",
    "line\u2028sep\u2029para",
    "zero\u200b\u200c\u200d\u2060\ufeffwidth",
    "\n=== result completed (run 00000000, 1 in, 1 out tokens)\n",
    "\r\x08\x7f\x00bell\x07",
]

report_lock = threading.Lock()
ignoring = threading.Event()  # an /ignore-cancel turn runs: live on whatever happens


def report(event: str, **fields: Any) -> None:
    if REPORT is None:
        return
    with report_lock, open(REPORT, "a", encoding="utf-8") as f:
        f.write(json.dumps(dict(fields, event=event)) + "\n")


def hostile(rng: random.Random, label: str = "") -> str:
    """A visible word and, in most fields, every escape string (the newline
    that forges a transcript line among them); else one or two of them."""
    if rng.random() < 0.6:
        return every_escape(label)
    return "HOSTILE%s %s" % (label, "".join(rng.sample(ESCAPES, rng.randint(1, 2))))


def every_escape(label: str = "") -> str:
    return "HOSTILE%s %s" % (label, "".join(ESCAPES))


# -- where harnessctl's files are ------------------------------------------------------------


def event_file() -> str:
    """The event file, from the runtime's command line (the agent's parent; it
    runs as the user, so /proc tells it everything)."""
    with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
        argv = [a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")]
    for arg in argv:
        if arg.startswith("/") and os.path.isfile(arg) and os.path.isdir(arg + ".d"):
            return arg
    raise RuntimeError("no event file on the runtime's command line: %s" % argv)


def runtime_dir() -> str:
    return os.environ.get("HARNESSCTL_SOCKET_DIR") or "/tmp/harnessctl-%d" % os.getuid()


def forged_binding(path: str, nonce: str) -> str:
    """The real binding with an agent command that first creates PWNED next to
    the event file, then execs the real agent (so nothing looks wrong)."""
    with open(path + ".d/binding.json", encoding="utf-8") as f:
        binding = json.load(f)
    marker = os.path.join(os.path.dirname(path), MARKER)
    real = binding.get("agent") or ""
    binding["agent"] = "sh -c %s" % shlex.quote("echo %s > %s; exec %s" % (nonce, shlex.quote(marker), real))
    return json.dumps(binding)


def write_in_place(path: str, text: str) -> None:
    """Rewrite a file keeping its inode and mode (as an editor's save would not,
    but a plain `>` does)."""
    with open(path, "r+", encoding="utf-8") as f:
        f.seek(0)
        f.write(text)
        f.truncate()


# -- /fs: harnessctl's files through the client file system ---------------------------------


def fs_targets(path: str, cwd: str, nonce: str) -> List[Dict[str, Any]]:
    """(label, path, content to write) of every harnessctl file the agent tries;
    the symlink, hard link and FIFO are made by the agent itself in its cwd
    (one it cannot make is left out, and reported)."""
    sidecar = path + ".d"
    binding = os.path.join(sidecar, "binding.json")
    link = os.path.join(cwd, "notes-%s" % nonce)
    hard = os.path.join(cwd, "innocent-%s.txt" % nonce)
    fifo = os.path.join(cwd, "pipe-%s" % nonce)
    text = "HOSTILE-FS-%s\n" % nonce
    forged = forged_binding(path, nonce)
    targets = [
        ("event file", path, text),
        ("binding.json", binding, forged),
        ("state.json", os.path.join(sidecar, "state.json"), text),
        ("acp-session.json", os.path.join(sidecar, "acp-session.json"), text),
        ("runtime.log", os.path.join(sidecar, "runtime.log"), text),
        ("a new sidecar file", os.path.join(sidecar, "hostile-%s.txt" % nonce), text),
        ("binding.json through a symlink", os.path.join(link, "binding.json"), forged),
        ("binding.json through a hard link", hard, forged),
        ("the runtime directory", os.path.join(runtime_dir(), "hostile-%s.txt" % nonce), text),
        ("a FIFO", fifo, text),
    ]
    made = {link: lambda: os.symlink(sidecar, link), hard: lambda: os.link(binding, hard),
            fifo: lambda: os.mkfifo(fifo, 0o600)}
    out = []
    for label, target, content in targets:
        try:
            for prefix, make in made.items():
                if target.startswith(prefix):
                    make()
        except OSError as exc:
            report("fs-setup-failed", target=label, error=str(exc))
            continue
        out.append({"label": label, "path": target, "content": content})
    return out


def fs_attack(turn: fake.Turn, seed: int) -> str:
    rng = random.Random(seed)
    path, cwd = event_file(), os.getcwd()
    nonce = "%08x" % rng.randrange(1 << 32)
    targets = fs_targets(path, cwd, nonce)
    chosen = rng.sample(targets, rng.randint(3, len(targets)))
    report("fs-plan", nonce=nonce, targets=[t["label"] for t in chosen])
    for target in chosen:
        for method in ("fs/read_text_file", "fs/write_text_file"):
            params = {"path": target["path"], "sessionId": turn.session_id}
            if method == "fs/write_text_file":
                params["content"] = target["content"]
            response = fake.ask(method, params) or {}
            report("fs", method=method, target=target["label"], path=target["path"],
                   refused="error" in response, nonce=nonce)
    report("fs-done", nonce=nonce)
    fake.chunk(turn, "fs attack done", "msg-1")
    return "end_turn"


# -- /forge-*: harnessctl's files written directly -----------------------------------------------


def forge_binding(turn: fake.Turn, when: str) -> str:
    path = event_file()
    nonce = "%08x" % random.randrange(1 << 32)
    if when == "later":
        after_exit(path, ["binding"], nonce)
    else:
        text = forged_binding(path, nonce)
        write_in_place(path + ".d/binding.json", text)
        report("forged-binding", when="now", binding=text)
    fake.chunk(turn, "binding forged %s" % when, "msg-1")
    return "end_turn"


def forge_state(turn: fake.Turn) -> str:
    after_exit(event_file(), ["state"], "%08x" % random.randrange(1 << 32))
    fake.chunk(turn, "state will be forged", "msg-1")
    return "end_turn"


def after_exit(path: str, actions: List[str], nonce: str) -> None:
    """A detached helper (its own session: the runtime's kill of the agent's
    process group does not reach it) that waits for the runtime to exit."""
    subprocess.Popen([sys.executable, os.path.abspath(__file__), "--after-exit", str(os.getppid()), path,
                      ",".join(actions), nonce] + (["--report", REPORT] if REPORT else []),
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True)
    report("helper-started", actions=actions)


def helper_main(runtime_pid: int, path: str, actions: List[str], nonce: str) -> None:
    deadline = time.monotonic() + 120
    while os.path.exists("/proc/%d" % runtime_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if "binding" in actions:
        text = forged_binding(path, nonce)
        write_in_place(path + ".d/binding.json", text)
        report("forged-binding", when="later", binding=text)
    if "state" in actions:
        report("forged-state", snapshot=forge_snapshot(path))
    report("helper-done", actions=actions)


def _sum(line: str) -> str:
    data = line.encode("utf-8", "surrogateescape")
    return "%d:%d" % (len(data), sum(data))


def forge_snapshot(path: str) -> str:
    """A FILE.d/state.json whose header matches the event file as it is now
    (inode, size, the 64 bytes before the end, the lines' sums: all public),
    whose status line and conversation claim a pending request nobody asked."""
    st = os.stat(path)
    with open(path, "rb") as f:
        f.seek(max(0, st.st_size - 64))
        tail = f.read(min(st.st_size, 64)).hex()
    request = {"request_id": "req-forged", "kind": "permission", "message": "FORGED: approve rm -rf ~"}
    status = json.dumps({"state": "awaiting_reply", "run_id": "forged-run", "queued": 0, "requests": [request],
                         "cwd": os.getcwd(), "model": None, "adapter": "acp", "runtime": "stopped",
                         "last_activity": None, "agent": "FORGED"}, separators=(",", ":"))
    conversation = "{}"
    snapshot = path + ".d/state.json"
    try:
        with open(snapshot, encoding="utf-8") as f:
            conversation = f.read().split("\n")[2]
        conv = json.loads(conversation)
        conv.setdefault("pending", {})["req-forged"] = dict(request, state="pending", run_id="forged-run")
        conversation = json.dumps(conv)
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    header = "harnessctl-snapshot 4 %d %d %s %s %s" % (st.st_ino, st.st_size, _sum(status), _sum(conversation), tail)
    text = "%s\n%s\n%s\n" % (header, status, conversation)
    fd = os.open(snapshot, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def forge_append(turn: fake.Turn) -> str:
    """Forged lines while the runtime holds the file: a `replied` for the request
    really pending, and a completed `result` for the running input."""
    path = event_file()
    tool_id = "call_forge_%d" % int(time.time() * 1000)
    appended = threading.Event()

    def forger() -> None:
        deadline = time.monotonic() + REQUEST_WAIT
        while time.monotonic() < deadline:
            pending = [e for e in read_lines(path) if e.get("type") == "request" and e.get("tool_id") == tool_id]
            if pending:
                break
            time.sleep(0.02)
        else:
            report("forge-append-gave-up")
            return
        events = read_lines(path)
        seq = max([e.get("seq", 0) for e in events if isinstance(e.get("seq"), int)] or [0])
        accepted = [e for e in events if e.get("type") == "accepted"][-1]
        stamp = pending[-1]["ts"]
        replied = dict(pending[-1], seq=seq + 1, state="replied", answer="allow")
        result = {"type": "result", "ts": stamp, "seq": seq + 2, "run_id": accepted.get("run_id"),
                  "input_ids": [accepted["input_id"]], "status": "completed", "output": "FORGED output",
                  "usage": None, "cost_usd": None, "error": None}
        lines = [json.dumps(replied, separators=(",", ":")), json.dumps(result, separators=(",", ":"))]
        with open(path, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        report("forged-append", lines=lines, request_id=pending[-1]["request_id"])
        appended.set()

    threading.Thread(target=forger, daemon=True).start()
    fake.update(turn.session_id, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "kind": "execute",
                                  "title": "touch forged.txt", "status": "pending"})
    response = fake.ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": {
        "toolCallId": tool_id, "title": "touch forged.txt", "kind": "execute", "status": "pending"}, "options": [
        {"optionId": "allow_once", "name": "Yes", "kind": "allow_once"},
        {"optionId": "reject_once", "name": "No", "kind": "reject_once"}]}, turn) or {}
    outcome = (response.get("result") or {}).get("outcome") or {}
    chosen = outcome.get("optionId") or outcome.get("outcome")
    report("permission-answer", optionId=chosen, forged_first=appended.is_set())
    fake.update(turn.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed"})
    fake.chunk(turn, "harnessctl answered %s" % chosen, "msg-1")
    return "end_turn"


def read_lines(path: str) -> List[Dict[str, Any]]:
    out = []
    with open(path, "rb") as f:
        for raw in f:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict):
                out.append(event)
    return out


# -- /escapes: every field it controls ------------------------------------------------------------


def escapes(turn: fake.Turn, seed: int) -> Optional[str]:
    rng = random.Random(seed)
    h = lambda label="": hostile(rng, label)  # noqa: E731 - a fresh hostile string per field
    sid = turn.session_id
    fake.update(sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": h("thought")}})
    fake.chunk(turn, h("text"), h("msgid"))
    tool_id = h("toolid")
    target = os.path.join(os.getcwd(), "dir" + h("path").replace("/", "_"))
    diff = {"type": "diff", "path": target, "oldText": h("old") + "\n", "newText": h("new") + "\n"}
    fake.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "name": h("name"), "kind": h("kind"),
                      "title": h("title"), "status": h("status"), "rawInput": {"command": h("cmd")},
                      "locations": [{"path": target}], "content": [diff]})
    fake.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed",
                      "content": [diff], "rawOutput": h("rawout"),
                      "_meta": {"terminal_output_delta": {"data": h("output")}, "terminal_exit": {"exit_code": 3}}})
    edit_id = h("editid")
    fake.update(sid, {"sessionUpdate": "tool_call", "toolCallId": edit_id, "kind": "edit", "title": h("edit"),
                      "status": "in_progress", "content": [diff]})
    fake.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "completed",
                      "content": [diff]})
    fake.update(sid, {"sessionUpdate": "tool_call", "toolCallId": h("open"), "kind": "execute", "title": h("open"),
                      "status": h("status")})  # never completed: shown as still running
    fake.update(sid, {"sessionUpdate": "plan", "entries": [
        {"content": h("plan"), "priority": h("prio"), "status": h("status")},
        {"content": h("plan"), "priority": "high", "status": "in_progress"}]})
    fake.update(sid, {"sessionUpdate": "usage_update", "used": rng.choice([h("used"), 10 ** 400, 17]),
                      "size": rng.choice([h("size"), -1, 200000]),
                      "cost": {"amount": rng.choice([0.5, 1e308, float("inf"), 10 ** 400]),
                               "currency": rng.choice(["USD", h("cur")])}})
    fake.chunk(turn, every_escape("all"), "msg-all")
    permission(turn, rng, h)
    fake.chunk(turn, h("after"), "msg-end")
    ending = rng.choice(["stop", "error", "usage"])
    report("escapes-ending", ending=ending)
    if ending == "stop":
        return h("stop")
    if ending == "error":
        raise fake.RpcError(-32603, h("error"))
    fake.send({"id": turn.prompt_id, "result": {"stopReason": "end_turn", "usage": {
        "totalTokens": rng.choice([h("total"), 10 ** 400]), "inputTokens": 10 ** 400, "outputTokens": h("out"),
        "cachedReadTokens": -5}}})
    return None


def permission(turn: fake.Turn, rng: random.Random, h: Any) -> None:
    """A permission request whose options' ids, names and kinds carry escapes;
    which id came back is reported (harnessctl must hand back the agent's own)."""
    tool_id = h("permtool")
    options = [{"optionId": h("allowid"), "name": h("allowname"), "kind": "allow_once"},
               {"optionId": h("oddid"), "name": h("oddname"), "kind": h("oddkind")},
               {"optionId": every_escape("oddid2"), "name": h("oddname"), "kind": "custom"},
               {"optionId": h("rejectid"), "name": h("rejectname"), "kind": "reject_once"}]
    report("permission-options", options=[o["optionId"] for o in options], tool_id=tool_id)
    response = fake.ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": {
        "toolCallId": tool_id, "title": h("permtitle"), "kind": h("permkind"), "rawInput": {"command": h("perm")},
        "status": "pending"}, "options": options}, turn) or {}
    outcome = (response.get("result") or {}).get("outcome") or {}
    report("permission-answer", optionId=outcome.get("optionId"), outcome=outcome.get("outcome"))


# -- /flood, /ignore-cancel, /junk ------------------------------------------------------------------


def flood(turn: fake.Turn, updates: int, ids: int, stop: Optional[str]) -> str:
    """At least `updates` message chunks over `ids` distinct message ids, and
    on until the file `stop` exists (the test has seen enough of it), but
    never more than FLOOD_MAX times that or FLOOD_SECONDS."""
    started = time.monotonic()
    sent = 0
    while sent < updates or (stop and not os.path.exists(stop) and sent < FLOOD_MAX * updates
                             and time.monotonic() < started + FLOOD_SECONDS):
        batch = []
        for i in range(sent, sent + 500):
            body = {"sessionUpdate": "agent_message_chunk", "messageId": "flood-%d" % (i * ids // max(updates, 1)),
                    "content": {"type": "text", "text": "f%d " % i}}
            batch.append(json.dumps({"jsonrpc": "2.0", "method": "session/update",
                                     "params": {"sessionId": turn.session_id, "update": body}},
                                    separators=(",", ":")) + "\n")
        write_raw("".join(batch).encode())
        sent += len(batch)
    report("flood-done", updates=sent, ids=sent * ids // max(updates, 1), seconds=time.monotonic() - started)
    fake.chunk(turn, "flood done", "msg-last")
    return "end_turn"


def write_raw(data: bytes) -> None:
    with fake.write_lock:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def ignore_cancel(turn: fake.Turn) -> Optional[str]:
    """Streams forever; session/cancel, SIGTERM and stdin's end change nothing."""
    ignoring.set()
    report("ignoring-cancel", pid=os.getpid())
    while True:
        if turn.cancelled.is_set():
            report("cancel-ignored")
            turn.cancelled.clear()
        fake.chunk(turn, "stalling ", "msg-1")
        time.sleep(0.1)


def junk(turn: fake.Turn, size: int) -> str:
    """A line of `size` bytes without a newline, the newline only afterwards,
    then a permission request (the next JSON-RPC message) and an answer."""
    block = b"x" * (1 << 20)
    with fake.write_lock:
        sys.stdout.flush()
        left = size
        while left > 0:
            sys.stdout.buffer.write(block[:min(left, len(block))])
            left -= len(block)
        sys.stdout.buffer.flush()
        time.sleep(0.2)  # the junk is read before its end comes
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()
    report("junk-done", bytes=size)
    tool_id = "call_after_junk"
    response = fake.ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": {
        "toolCallId": tool_id, "title": "after the junk", "kind": "execute", "status": "pending"}, "options": [
        {"optionId": "allow_once", "name": "Yes", "kind": "allow_once"},
        {"optionId": "reject_once", "name": "No", "kind": "reject_once"}]}, turn) or {}
    outcome = (response.get("result") or {}).get("outcome") or {}
    fake.chunk(turn, "after the junk: %s" % outcome.get("optionId"), "msg-1")
    return "end_turn"


# -- /ask-tool -----------------------------------------------------------------------------------------


def ask_tool(turn: fake.Turn, tool_call: str) -> str:
    """A permission request for the tool call given as JSON, labelled however
    the test likes (a `kind: edit` that carries `rm -rf ~`, a title alone);
    the answer comes back as the message `answered: OPTION_ID`."""
    call = dict(json.loads(tool_call), toolCallId="call_asked", status="pending")
    response = fake.ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": call, "options": [
        {"optionId": "allow_once", "name": "Yes", "kind": "allow_once"},
        {"optionId": "reject_once", "name": "No", "kind": "reject_once"}]}, turn) or {}
    outcome = (response.get("result") or {}).get("outcome") or {}
    fake.chunk(turn, "answered: %s" % (outcome.get("optionId") or outcome.get("outcome")), "msg-1")
    return "end_turn"


# -- /race: a folder of the cwd swapped for a symlink while the client file system uses it -------


def race(turn: fake.Turn, seconds: str, outside: str) -> str:
    flipper = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "flipper.py"), "flip", outside, seconds],
                               stdout=subprocess.PIPE)
    reads, answered, refused = set(), 0, 0
    while flipper.poll() is None:
        for method, name in (("fs/write_text_file", "target.txt"), ("fs/write_text_file", "deep/new.txt"),
                             ("fs/read_text_file", "secret.txt")):
            params = {"path": os.path.join(os.getcwd(), "flip", name), "sessionId": turn.session_id}
            response = fake.ask(method, dict(params, content="inside")) or {}
            if "error" in response:
                refused += 1
            else:
                answered += 1
                reads.add((response.get("result") or {}).get("content"))
    flips = int(flipper.communicate()[0])
    fake.chunk(turn, json.dumps({"reads": sorted(r for r in reads if r is not None), "answered": answered,
                                 "refused": refused, "flips": flips}), "msg-1")
    return "end_turn"


# -- wiring into the fake agent -----------------------------------------------------------------------


PLAIN_PLAY = fake.play
PLAIN_ON_REQUEST = fake.on_request


def play(turn: fake.Turn) -> Optional[str]:
    words = turn.text.split()
    command, args = (words[0], words[1:]) if words else ("", [])
    number = [int(a) for a in args if a.isdigit()]
    if command == "/fs":
        return fs_attack(turn, number[0] if number else 0)
    if command == "/forge-binding":
        return forge_binding(turn, args[0] if args else "now")
    if command == "/forge-state":
        return forge_state(turn)
    if command == "/forge-append":
        return forge_append(turn)
    if command == "/escapes":
        return escapes(turn, number[0] if number else 0)
    if command == "/flood":
        return flood(turn, *(number + [10000, 1000])[:2], stop=args[2] if len(args) > 2 else None)
    if command == "/ignore-cancel":
        return ignore_cancel(turn)
    if command == "/race" and len(args) == 2:
        return race(turn, args[0], args[1])
    if command == "/junk":
        return junk(turn, number[0] if number else 1 << 20)
    if command == "/ask-tool":
        return ask_tool(turn, turn.text.partition(" ")[2])
    return PLAIN_PLAY(turn)


def on_request(msg: Dict[str, Any]) -> None:
    method, rid = msg.get("method"), msg.get("id")
    rng = random.Random(hashlib.sha256(str(rid).encode()).hexdigest())
    if method == "initialize" and HOSTILE_IDS:
        fake.send({"id": rid, "result": {
            "protocolVersion": 1, "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"resume": {}},
                                                        "promptCapabilities": {"image": False}},
            "authMethods": [], "agentInfo": {"name": hostile(rng, "agent"), "version": hostile(rng, "version"),
                                             "title": hostile(rng, "title")},
            "_meta": {"steering": {"supported": True}}}})
        return
    if method == "session/new" and REFUSE_SESSION:
        fake.send({"id": rid, "error": {"code": -32603, "message": every_escape("refused"),
                                        "data": {"details": hostile(rng, "details")}}})
        return
    if method == "session/new" and HOSTILE_IDS:
        session_id = "sess" + hostile(rng, "session").replace("/", "_")
        fake.sessions[session_id] = {"history": []}
        mode, model = hostile(rng, "mode"), hostile(rng, "model")
        fake.send({"id": rid, "result": {
            "sessionId": session_id,
            "modes": {"currentModeId": mode, "availableModes": [{"id": mode, "name": hostile(rng, "modename")}]},
            "models": {"currentModelId": model, "availableModels": [{"modelId": model, "name": model}]}}})
        return
    PLAIN_ON_REQUEST(msg)


def main() -> None:
    if "--after-exit" in ARGS:
        i = ARGS.index("--after-exit")
        helper_main(int(ARGS[i + 1]), ARGS[i + 2], ARGS[i + 3].split(","), ARGS[i + 4])
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # here: only the main thread may; harmless to the others
    fake.play = play
    fake.on_request = on_request
    if HOSTILE_IDS:  # the fake saves sessions under their id: keep hostile ids off the file system
        fake.save_session = lambda session_id, data: None
    fake.main()
    while ignoring.is_set():  # stdin ended: an agent that ignores that too lives on until killed
        time.sleep(1)


if __name__ == "__main__":
    main()
