#!/usr/bin/env python3
"""A stand-in for `codex app-server`, speaking the shapes recorded from codex
0.171.0 (as recorded from the real binary), for fast tests of races the real binary
cannot be timed into: a steer racing the turn's end, a cancel before the turn
id is known, a crash mid-turn, garbage on stdout, an endless retry loop.

Run as `fake_app_server.py app-server` (HARNESSCTL_CODEX_BIN).  Each turn does
what the first word of its text says:

    /slow       stream a delta every 0.1 s until steered (then answers) or interrupted
    /crash      exit abruptly mid-turn
    /garbage    print lines that are not JSON-RPC, then answer normally
    /retry      emit `error` willRetry:true every 0.2 s until interrupted
    /approve    ask item/commandExecution/requestApproval, answer "decision: <d>"
    /tool CMD   run CMD (split like a shell would, no shell) as a commandExecution item:
                item/started, outputDelta, item/completed with its exitCode
    /edit PATH  a fileChange item adding PATH (item/started, patchUpdated, item/completed;
                nothing is written), a plan update, and a warning
    /history    answer "history: " and the thread's earlier turn texts, joined by " | "
                (what the model would be shown: thread/fork copies them to the new thread)
    anything    answer "echo: <text>" at once; with an outputSchema on turn/start, the text
                itself (the model API would answer JSON that fits it)

Environment knobs:
    FAKE_CODEX_HOME         directory for known thread ids and requests.jsonl (every line received)
    FAKE_CODEX_STEER_RACE   "error": a steer ends the turn first, then is refused with
                            "no active turn to steer"; "late-ok": a steer is consumed and the
                            turn completes before the steer's own answer is written
    FAKE_CODEX_START_DELAY  seconds to wait before answering turn/start

A config.toml in FAKE_CODEX_HOME holding `approval_policy = "untrusted"` makes it exit 1 at
start with codex 0.171.0's stderr for that (its reason, then a stack backtrace), before reading
a line.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import sys
import time
import uuid

HOME = os.environ.get("FAKE_CODEX_HOME") or os.getcwd()
STEER_RACE = os.environ.get("FAKE_CODEX_STEER_RACE", "")
START_DELAY = float(os.environ.get("FAKE_CODEX_START_DELAY") or 0)


def out(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def note(method, params):
    out({"method": method, "params": params, "emittedAtMs": int(time.time() * 1000)})


class Server:
    def __init__(self):
        self.thread = None
        self.turn = None  # {"id", "mode", "deltas"}
        self.timers = []  # (due, fn)
        self.server_requests = {}  # id -> callback
        self.next_server_id = 0
        self.items = 0

    # -- plumbing
    def later(self, seconds, fn):
        self.timers.append((time.monotonic() + seconds, fn))

    def run(self):
        buf = b""
        fd = sys.stdin.fileno()
        while True:
            now = time.monotonic()
            due = [t for t in self.timers if t[0] <= now]
            self.timers = [t for t in self.timers if t[0] > now]
            for _, fn in sorted(due, key=lambda t: t[0]):
                fn()
            wait = min([t[0] for t in self.timers], default=now + 1) - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, wait))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    self.handle(json.loads(line))

    def handle(self, msg):
        with open(os.path.join(HOME, "requests.jsonl"), "a") as f:
            f.write(json.dumps(msg) + "\n")
        if "method" not in msg:
            callback = self.server_requests.pop(msg.get("id"), None)
            if callback:
                callback(msg.get("result"))
            return
        handler = getattr(self, "on_" + msg["method"].replace("/", "_"), None)
        if "id" in msg:
            if handler is None:
                out({"error": {"code": -32600, "message": "unknown method"}, "id": msg["id"]})
            else:
                handler(msg["id"], msg.get("params") or {})

    def reply(self, rid, result):
        out({"id": rid, "result": result})

    def error(self, rid, message):
        out({"error": {"code": -32600, "message": message}, "id": rid})

    def ask(self, method, params, callback):
        sid, self.next_server_id = self.next_server_id, self.next_server_id + 1
        self.server_requests[sid] = callback
        out({"method": method, "id": sid, "params": params})
        return sid

    # -- handshake and threads
    def on_initialize(self, rid, params):
        self.reply(rid, {"userAgent": "fake/0.171.0", "codexHome": HOME, "platformFamily": "unix",
                         "platformOs": "linux"})

    def _thread(self):
        return {"id": self.thread, "status": {"type": "idle"}, "turns": [], "cwd": os.getcwd(),
                "cliVersion": "0.171.0"}

    def _opened(self):
        """thread/start's and thread/resume's answer (as recorded, trimmed)."""
        return {"thread": self._thread(), "model": "mock-model", "cwd": os.getcwd(), "approvalPolicy": "never",
                "sandbox": {"type": "readOnly", "networkAccess": False}}

    def on_thread_start(self, rid, params):
        self.thread = str(uuid.uuid4())
        with open(os.path.join(HOME, "threads"), "a") as f:
            f.write(self.thread + "\n")
        self.reply(rid, self._opened())
        note("thread/started", {"thread": self._thread()})

    def _known(self, thread_id):
        try:
            return thread_id in open(os.path.join(HOME, "threads")).read().split()
        except OSError:
            return False

    def _history(self, thread_id):
        try:
            with open(os.path.join(HOME, "history-%s.json" % thread_id)) as f:
                return json.load(f)
        except OSError:
            return []

    def _remember(self, text):
        history = self._history(self.thread) + [text]
        with open(os.path.join(HOME, "history-%s.json" % self.thread), "w") as f:
            json.dump(history, f)

    def on_thread_fork(self, rid, params):
        """A new thread with the source's history, in the cwd given (as recorded:
        the answer is thread/start's, its thread naming `forkedFromId`)."""
        source = params.get("threadId")
        if not self._known(source):
            self.error(rid, "no rollout found for thread id %s" % source)
            return
        self.thread = str(uuid.uuid4())
        with open(os.path.join(HOME, "threads"), "a") as f:
            f.write(self.thread + "\n")
        with open(os.path.join(HOME, "history-%s.json" % self.thread), "w") as f:
            json.dump(self._history(source), f)
        thread = dict(self._thread(), forkedFromId=source, cwd=params.get("cwd") or os.getcwd())
        self.reply(rid, dict(self._opened(), thread=thread, cwd=thread["cwd"]))
        note("thread/started", {"thread": thread})

    def on_thread_resume(self, rid, params):
        if not self._known(params.get("threadId")):
            self.error(rid, "no rollout found for thread id %s" % params.get("threadId"))
            return
        self.thread = params["threadId"]
        self.reply(rid, self._opened())

    # -- turns
    def _turn(self, status="inProgress", error=None, items=None):
        return {"id": self.turn["id"], "items": items or [], "status": status, "error": error,
                "itemsView": "summary" if items else "notLoaded"}

    def _base(self):
        return {"threadId": self.thread, "turnId": self.turn["id"]}

    def on_turn_start(self, rid, params):
        if self.turn is not None:  # codex folds it into the active turn
            self.reply(rid, {"turn": self._turn()})
            self._user_message(params)
            return
        text = params["input"][0]["text"]
        self.turn = {"id": str(uuid.uuid4()), "mode": text.split()[0] if text.split() else "", "texts": [text]}
        if START_DELAY:
            self.later(START_DELAY, lambda: self._begin(rid, params))
        else:
            self._begin(rid, params)

    def _begin(self, rid, params):
        text = params["input"][0]["text"]
        self.reply(rid, {"turn": self._turn()})
        note("turn/started", {"threadId": self.thread, "turn": self._turn()})
        self._user_message(params)
        mode = self.turn["mode"]
        if mode != "/history":
            self._remember(text)
        if mode == "/slow":
            self._agent_start("item_slow")
            self._tick()
        elif mode == "/crash":
            self._agent_start("item_crash")
            note("item/agentMessage/delta", dict(self._base(), itemId="item_crash", delta="about to"))
            os._exit(3)
        elif mode == "/garbage":
            sys.stdout.write("this is not json\n[1, 2]\n{\"id\": 999, \"result\": {}}\n")
            note("nope/unknown", {"x": 1})
            self._answer("echo: " + params["input"][0]["text"])
        elif mode == "/retry":
            self._retry()
        elif mode == "/approve":
            self._approve()
        elif mode == "/tool":
            self._tool(text[len("/tool"):].strip())
        elif mode == "/edit":
            self._edit(text[len("/edit"):].strip())
        elif mode == "/history":
            self._answer("history: " + " | ".join(self._history(self.thread)))
        elif "outputSchema" in params:
            self._answer(text)
        else:
            self._answer("echo: " + params["input"][0]["text"])

    def _user_message(self, params):
        item = {"type": "userMessage", "id": str(uuid.uuid4()), "clientId": params.get("clientUserMessageId"),
                "content": params["input"]}
        note("item/started", dict(self._base(), item=item))
        note("item/completed", dict(self._base(), item=item))

    def _agent_start(self, item_id):
        note("item/started", dict(self._base(), item={"type": "agentMessage", "id": item_id, "text": ""}))

    def _tick(self):
        if self.turn is None or self.turn["mode"] != "/slow":
            return
        note("item/agentMessage/delta", dict(self._base(), itemId="item_slow", delta="tick "))
        self.later(0.1, self._tick)

    def _retry(self):
        if self.turn is None or self.turn["mode"] != "/retry":
            return
        note("error", dict(self._base(), willRetry=True,
                           error={"message": "Reconnecting... waiting for network",
                                  "additionalDetails": "Connection failed: error sending request"}))
        self.later(0.2, self._retry)

    def _approve(self):
        item = {"type": "commandExecution", "id": "call_touch", "command": "/bin/bash -c 'touch x'",
                "cwd": os.getcwd(), "status": "inProgress"}
        note("item/started", dict(self._base(), item=item))

        def answered(result):
            note("serverRequest/resolved", {"threadId": self.thread, "requestId": sid})
            decision = (result or {}).get("decision")
            decision = decision if isinstance(decision, str) else json.dumps(decision, sort_keys=True)
            note("item/completed", dict(self._base(), item=dict(item, status="completed")))
            self._answer("decision: %s" % decision)

        offered = ["accept", {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch", "x"]}}, "cancel"]
        sid = self.ask("item/commandExecution/requestApproval",
                       dict(self._base(), kind="command", itemId="call_touch", command=item["command"],
                            cwd=os.getcwd(), reason=None, availableDecisions=offered), answered)

    def _tool(self, command):
        """Run one command the way codex reports it (its output as one delta)."""
        wrapped = "/bin/bash -c '%s'" % command
        item = {"type": "commandExecution", "id": "call_tool", "command": wrapped, "cwd": os.getcwd(),
                "commandActions": [{"type": "unknown", "command": command}], "status": "inProgress",
                "aggregatedOutput": None, "exitCode": None, "durationMs": None, "source": "agent"}
        note("item/started", dict(self._base(), item=item))
        try:
            proc = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=30)
            output, code = proc.stdout.decode("utf-8", "replace"), proc.returncode
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            output, code = "%s\n" % exc, 127
        note("item/commandExecution/outputDelta", dict(self._base(), itemId="call_tool", delta=output))
        note("item/completed", dict(self._base(), item=dict(item, status="completed" if code == 0 else "failed",
                                                             aggregatedOutput=output, exitCode=code, durationMs=5)))
        self._answer("ran: %s (exit %d)" % (command, code))

    def _edit(self, path):
        """A patch adding `path` (codex gives an added file's content, not a diff)."""
        path = os.path.join(os.getcwd(), path or "new.txt")
        first = [{"path": path, "kind": {"type": "add"}, "diff": "draft\n"}]
        final = [{"path": path, "kind": {"type": "add"}, "diff": "hello\nworld\n"}]
        item = {"type": "fileChange", "id": "call_patch", "changes": first, "status": "inProgress"}
        note("turn/plan/updated", dict(self._base(), explanation="one file",
                                       plan=[{"step": "write the file", "status": "inProgress"}]))
        note("item/started", dict(self._base(), item=item))
        note("item/fileChange/patchUpdated", dict(self._base(), itemId="call_patch", changes=final))
        note("item/completed", dict(self._base(), item=dict(item, changes=final, status="completed")))
        note("warning", {"threadId": self.thread, "message": "the fake wrote nothing"})
        self._answer("edited %s" % path)

    def _answer(self, text):
        self.items += 1
        item = {"type": "agentMessage", "id": "item_%d" % self.items, "text": ""}
        note("item/started", dict(self._base(), item=item))
        note("item/agentMessage/delta", dict(self._base(), itemId=item["id"], delta=text))
        note("item/completed", dict(self._base(), item=dict(item, text=text)))
        last = {"totalTokens": 110, "inputTokens": 100, "cachedInputTokens": 20, "outputTokens": 10,
                "reasoningOutputTokens": 3}
        note("thread/tokenUsage/updated", dict(self._base(), tokenUsage={"total": last, "last": last}))
        self._complete("completed", items=[dict(item, text=text)])

    def _complete(self, status, error=None, items=None):
        note("turn/completed", {"threadId": self.thread, "turn": self._turn(status, error, items)})
        self.turn = None

    def on_turn_steer(self, rid, params):
        if self.turn is None:
            self.error(rid, "no active turn to steer")
            return
        if params.get("expectedTurnId") != self.turn["id"]:
            self.error(rid, "expected active turn id `%s` but found `%s`" % (params.get("expectedTurnId"),
                                                                            self.turn["id"]))
            return
        text = params["input"][0]["text"]
        if STEER_RACE == "error":
            self._answer("finished before the steer")
            self.error(rid, "no active turn to steer")
            return
        if STEER_RACE == "late-ok":
            turn_id = self.turn["id"]
            self._user_message(params)
            self._answer("steered: " + text)
            self.reply(rid, {"turnId": turn_id})
            return
        self.reply(rid, {"turnId": self.turn["id"]})
        self._user_message(params)
        if self.turn["mode"] == "/slow":
            self.turn["mode"] = "steered"
            self._answer("steered: " + text)

    def on_turn_interrupt(self, rid, params):
        if self.turn is None:
            self.error(rid, "no active turn to interrupt")
            return
        self.reply(rid, {})
        for sid in list(self.server_requests):
            self.server_requests.pop(sid)
            self._complete("interrupted")
            note("serverRequest/resolved", {"threadId": self.thread, "requestId": sid})
            return
        self._complete("interrupted")


# what codex 0.171.0 writes when its config.toml sets approval_policy = "untrusted" (recorded)
UNTRUSTED_STDERR = """\
WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries \
under temporary dir "/tmp" (codex_home: AbsolutePathBuf("/tmp/tmpa1b2c3"))
Error: approval_policy = "untrusted" is no longer supported; remove this setting

Stack backtrace:
   0: <unknown>
   1: <unknown>
   2: <unknown>
   3: <unknown>
   4: <unknown>
   5: <unknown>
   6: <unknown>
"""


def refused_config():
    """codex's refusal of its config.toml, as it starts (exits 1), else nothing."""
    try:
        with open(os.path.join(HOME, "config.toml")) as f:
            config = f.read()
    except OSError:
        return
    if 'approval_policy = "untrusted"' in config:
        sys.stderr.write(UNTRUSTED_STDERR)
        sys.exit(1)


if __name__ == "__main__":
    refused_config()
    Server().run()
