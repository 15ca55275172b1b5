"""Torture scenario: waiters (issue 10).

Round after round, on one event file, several `send --print-id --wait` of
random mock directives and a few `wait FILE` run at once while the file's
runtime is left alone, cancelled, answered or killed with SIGKILL at a
random moment.  Every waiter must return (none hangs), print a line that is
in the file byte for byte and exit by what that line says: a result by its
status, a pending request of its input's run with 9 (the round then replies
and waits again until the result), a status line that is neither running nor
cancelling with 0.  The file itself must pass the suite's invariant check.
Shared by tests/torture/test_torture_waiters.py and bench/torture_report.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time

from cliutil import cli_env, run, runtime_pids, start
from torture_support import check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List

TEXTS = ("hello", "/sleep 0.4", "/sleep 1", "/fail broken", "/permission may I?", "/question which one?")
MOMENTS = ("none", "cancel", "reply", "kill")
EXIT_BY_STATUS = {"completed": 0, "failed": 7, "cancelled": 8}
WAITER_TIMEOUT = 120


def harnessctl(*args: str) -> subprocess.Popen:
    return start(*args, env=cli_env(HARNESSCTL_ADAPTER="mock"))


def finish(proc: subprocess.Popen) -> "tuple[int, List[str], str]":
    out, err = proc.communicate(timeout=WAITER_TIMEOUT)
    return proc.returncode, out.decode().splitlines(), err.decode()


def file_lines(path: str) -> "set[str]":
    with open(path, "rb") as f:
        return {line.decode().rstrip("\n") for line in f if line.endswith(b"\n")}


class Waiters:
    def __init__(self, directory: str, seed: int) -> None:
        self.path = os.path.join(directory, "waiters.jsonl")
        self.random = random.Random(seed)
        self.stats: Dict[str, Any] = {"rounds": 0, "waiters": 0, "by_moment": {m: 0 for m in MOMENTS},
                                      "by_exit": {}, "rewaits": 0}

    def play(self, rounds: int) -> Dict[str, Any]:
        for _ in range(rounds):
            self.round()
        finish(harnessctl("cancel", self.path))  # what a refused or timed-out send may have left open
        check(self.path)
        # A runtime killed in the last round left its socket: a last send's runtime takes
        # the path over, and SIGTERM lets it go as a runtime does.
        assert finish(harnessctl("send", self.path, "goodbye", "--wait"))[0] == 0
        for pid in runtime_pids(self.path):
            os.kill(pid, 15)
        return self.stats

    def round(self) -> None:
        existed = os.path.exists(self.path)  # a `wait` on a file no send created yet exits 4
        texts = ["%s\nround %d send %d" % (self.random.choice(TEXTS), self.stats["rounds"], i)
                 for i in range(self.random.randint(1, 4))]  # unique: the checker tells their echoes apart
        sends = [harnessctl("send", self.path, text, "--print-id", "--wait") for text in texts]
        idle_waiters = [harnessctl("wait", self.path) for _ in range(self.random.randint(0, 2) if existed else 0)]
        moment = self.random.choice(MOMENTS)
        self.stats["by_moment"][moment] += 1
        done = threading.Event()
        meddler = threading.Thread(target=self.meddle, args=(moment, done))
        meddler.start()
        try:
            outcomes = [finish(p) for p in sends]
            statuses = [finish(p) for p in idle_waiters]
        finally:
            done.set()
            meddler.join()
        for code, lines, err in outcomes:
            self.check_send(code, lines, err)
        for code, lines, err in statuses:
            self.check_status(code, lines, err)
        check(self.path, quiescent=False)
        self.stats["rounds"] += 1

    def meddle(self, moment: str, done: threading.Event) -> None:
        """At a random moment of the round: nothing, cancel, answer what is pending, or kill -9."""
        if done.wait(self.random.uniform(0.0, 0.8)) or moment == "none":
            return
        if moment == "cancel":
            finish(harnessctl("cancel", self.path))
        elif moment == "reply":
            for request_id in self.pending():
                finish(harnessctl("reply", self.path, request_id, "allow"))
        else:
            for pid in runtime_pids(self.path):
                os.kill(pid, 9)

    def pending(self) -> List[str]:
        code, lines, _ = finish(harnessctl("status", self.path))
        return [r["request_id"] for r in json.loads(lines[0])["requests"]] if code == 0 else []

    def check_send(self, code: int, lines: List[str], err: str) -> None:
        self.stats["waiters"] += 1
        self.stats["by_exit"][code] = self.stats["by_exit"].get(code, 0) + 1
        if code in (2, 5, 6) and len(lines) <= 1:
            return  # the send itself was refused or raced a kill: no wait began (its id, if any, is checked by check())
        assert len(lines) == 2, (code, lines, err)
        input_id, line = lines
        self.assert_in_file(line)
        event = json.loads(line)
        while code == 9:  # a request of the input's run awaits a reply: answer it, wait again
            assert event["type"] == "request" and event["state"] == "pending", line
            reply = finish(harnessctl("reply", self.path, event["request_id"], self.answer(event)))
            assert reply[0] in (0, 3), reply  # 3: it expired meanwhile (cancel, kill)
            code, again, err = finish(harnessctl("wait", self.path, input_id))
            assert len(again) == 1, (code, again, err)
            self.assert_in_file(again[0])
            event = json.loads(again[0])
            self.stats["rewaits"] += 1
        assert event["type"] == "result" and input_id in event["input_ids"], line
        assert code == EXIT_BY_STATUS[event["status"]], (code, event)

    def check_status(self, code: int, lines: List[str], err: str) -> None:
        assert code == 0 and len(lines) == 1, (code, lines, err)
        assert json.loads(lines[0])["state"] not in ("running", "cancelling"), lines[0]

    def assert_in_file(self, line: str) -> None:
        """Written (and fsynced) before any waiter hears of it."""
        assert line in file_lines(self.path), "printed a line that is not in the file: %s" % line

    @staticmethod
    def answer(request: Dict[str, Any]) -> str:
        return "allow" if request["kind"] == "permission" else "that one"


def waiters(directory: str, rounds: int, seed: int) -> Dict[str, Any]:
    return Waiters(directory, seed).play(rounds)


# -- many waiters at once (issue 19, section 2) ---------------------------------------------


def limit_descriptors(soft: int, hard: "int | None" = None) -> "Any":
    """A preexec_fn: the common soft limit of 1024 descriptors (and a hard one, if given)."""
    import resource

    def apply() -> None:
        current_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, current_hard if hard is None else hard))
    return apply


class ManyWaiters:
    """`count` waits held at once on one busy input of one runtime: raw
    connections speaking the wait request of harnessctl/store/ipc.py, as `wait
    FILE ID` sends it (a process each would measure the machine, not the
    runtime).  The runtime was started by a send under `limit` (preexec_fn)."""

    def __init__(self, directory: str, count: int, limit: "Any") -> None:
        self.path = os.path.join(directory, "many-waiters.jsonl")
        self.count = count
        self.limit = limit
        self.conns: List[Any] = []
        self.stats: Dict[str, Any] = {"waiters": count}

    def __enter__(self) -> "ManyWaiters":
        import resource

        self.own_limit = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.own_limit[1], self.own_limit[1]))  # ours: every connection
        return self

    def __exit__(self, *exc: Any) -> None:
        import resource

        for conn in self.conns:
            conn.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, self.own_limit)

    def start(self) -> str:
        """A send of a long run under the limit; its input id."""
        proc = run("send", self.path, "/sleep 600", "--print-id", env=cli_env(HARNESSCTL_ADAPTER="mock"),
                   preexec_fn=self.limit, timeout=WAITER_TIMEOUT)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().strip()

    def hold(self, input_id: str) -> None:
        import socket

        from harnessctl.store import ipc

        request = ipc.encode_request(["wait", input_id])
        started = time.monotonic()
        for _ in range(self.count):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connect(conn, self.path + ".d/runtime.sock")
            conn.sendall(request)
            conn.shutdown(socket.SHUT_WR)
            self.conns.append(conn)
        self.stats["connect_s"] = round(time.monotonic() - started, 3)

    def answered(self) -> List[Any]:
        """The connections the runtime has answered (and closed) so far."""
        import select

        poller = select.poll()
        for conn in self.conns:
            poller.register(conn, select.POLLIN)
        ready = {fd for fd, _ in poller.poll(0)}
        return [c for c in self.conns if c.fileno() in ready]

    def command(self, *args: str) -> "tuple[int, List[str], str]":
        started = time.monotonic()
        outcome = finish(harnessctl(*args))
        self.stats["%s_s" % args[0]] = round(time.monotonic() - started, 3)
        return outcome

    def replies(self) -> List[str]:
        """Every connection's whole reply (blocking until each is answered)."""
        out = []
        for conn in self.conns:
            conn.settimeout(WAITER_TIMEOUT)
            data = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            out.append(data.decode())
        return out


def connect(conn: Any, path: str) -> None:
    """Connect while the runtime's backlog has room (EAGAIN: full), for at
    most WAITER_TIMEOUT: a runtime that stops accepting fails the round
    instead of hanging it."""
    from cliutil import wait_for

    conn.setblocking(False)

    def connected() -> bool:
        try:
            conn.connect(path)
        except BlockingIOError:
            return False
        return True

    wait_for(connected, WAITER_TIMEOUT, "room in the runtime's backlog", interval=0.005)
    conn.setblocking(True)


def many_waiters(directory: str, count: int = 2000) -> Dict[str, Any]:
    """`count` waits held on a running input of a runtime started under a
    soft limit of 1024 descriptors: status and cancel answer while they are
    held, and every one is answered with the run's `cancelled` result line."""
    from cliutil import wait_for

    with ManyWaiters(directory, count, limit_descriptors(1024)) as game:
        input_id = game.start()
        [pid] = runtime_pids(game.path)
        game.hold(input_id)
        wait_for(lambda: len(os.listdir("/proc/%d/fd" % pid)) >= count and not game.answered(), timeout=120,
                 what="the runtime to hold %d waits" % count)
        code, lines, err = game.command("status", game.path)
        assert code == 0 and json.loads(lines[0])["state"] == "running", (code, lines, err)
        code, lines, err = game.command("cancel", game.path)
        assert code == 0, (code, err)
        started = time.monotonic()
        replies = game.replies()
        game.stats["all_answered_s"] = round(time.monotonic() - started, 3)
        assert all(r.startswith("0 cancelled ") for r in replies), [r for r in replies if not r.startswith("0 ")][:3]
        assert len({r for r in replies}) == 1  # the one result line, byte for byte
        check(game.path)
        for pid in runtime_pids(game.path):
            os.kill(pid, 15)
        return game.stats
