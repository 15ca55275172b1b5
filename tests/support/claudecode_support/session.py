"""One event file driven through the CLI against the real `claude` and the mock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional

import cliutil

from .fixtures import claude_env, read_events, real_claude, wait_for
from .mock_messages import MockMessages

IDLE_TIMEOUT = "20"


class Session:
    """A test's event file, work dir, environment and mock, plus CLI verbs."""

    def __init__(self, root: str, mock: MockMessages, binary: str) -> None:
        self.root = root
        self.mock = mock
        self.work = os.path.join(root, "work")
        os.makedirs(self.work, exist_ok=True)
        self.path = os.path.join(root, "events.jsonl")
        self.env = claude_env(root, mock.base_url, HARNESSCTL_CLAUDE_BIN=binary,
                              HARNESSCTL_IDLE_TIMEOUT=IDLE_TIMEOUT, HARNESSCTL_TIMEOUT="60")

    # commands
    def run(self, *args: str, stdin: str = "", env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
        return cliutil.run(*args, input=stdin.encode(), env=env or self.env, timeout=120)

    def ok(self, *args: str) -> subprocess.CompletedProcess:
        proc = self.run(*args)
        assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
        assert proc.stdout == b"" or args[0] == "status"
        return proc

    def send(self, text: str, *options: str) -> Dict[str, Any]:
        """Send (with more `options` of send, e.g. --mode) and return the `accepted` event the send wrote."""
        before = len(self.accepted())
        self.ok("send", self.path, text, "--adapter", "claudecode", "--cwd", self.work, *options)
        return self.accepted()[before]

    def reply(self, request_id: str, answer: str) -> None:
        self.ok("reply", self.path, request_id, answer)

    def cancel(self) -> None:
        self.ok("cancel", self.path)

    def status(self) -> Dict[str, Any]:
        lines = self.ok("status", self.path).stdout.decode().splitlines()
        assert len(lines) == 1
        return json.loads(lines[0])

    def status_idle(self) -> bool:
        return self.status()["state"] == "idle"

    # the event file
    def events(self, kind: Optional[str] = None) -> List[Dict[str, Any]]:
        return [e for e in read_events(self.path) if kind is None or e["type"] == kind]

    def accepted(self) -> List[Dict[str, Any]]:
        return self.events("accepted")

    def results(self) -> List[Dict[str, Any]]:
        return self.events("result")

    def wait_results(self, count: int, timeout: float = 60) -> List[Dict[str, Any]]:
        return wait_for(lambda: len(self.results()) >= count and self.results(), timeout, "%d results" % count)

    def wait_event(self, match: Callable[[Dict[str, Any]], bool], timeout: float = 60,
                   what: str = "event") -> Dict[str, Any]:
        return wait_for(lambda: next((e for e in self.events() if match(e)), None), timeout, what)

    def wait_log(self, kind: str, timeout: float = 60) -> Dict[str, Any]:
        return self.wait_event(lambda e: e["type"] == "log" and e.get("kind") == kind, timeout, "log " + kind)

    def wait_request(self, timeout: float = 60) -> Dict[str, Any]:
        return self.wait_event(lambda e: e["type"] == "request" and e["state"] == "pending", timeout, "a request")

    def run_of(self, input_id: str) -> Optional[str]:
        """The confirmed run of an input (the latest accepted snapshot)."""
        runs = [e["run_id"] for e in self.accepted() if e["input_id"] == input_id and e["run_id"]]
        return runs[-1] if runs else None

    # processes
    def runtime_pid(self) -> Optional[int]:
        real = os.fsencode(os.path.realpath(self.path))
        for pid in _pids():
            argv = _cmdline(pid)
            if b"harnessctl.runtime." in b" ".join(argv) and real in argv:
                return pid
        return None

    def claude_pid(self) -> Optional[int]:
        runtime = self.runtime_pid()
        return next((pid for pid in _pids() if runtime and _ppid(pid) == runtime), None)

    def wait_runtime_gone(self, timeout: float = 60) -> None:
        wait_for(lambda: self.runtime_pid() is None, timeout, "the runtime to exit")


@contextmanager
def real_session(root: str) -> Iterator[Session]:
    """A Session on the real `claude` and a fresh mock; its runtime is killed
    at the end (its claude dies with it: PR_SET_PDEATHSIG), and every line it
    wrote must follow the event schema with consecutive seq."""
    from schemacheck import check_event

    with MockMessages() as mock:
        session = Session(root, mock, real_claude())
        yield session
        pid = session.runtime_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
    written = session.events()
    assert [e["seq"] for e in written] == list(range(1, len(written) + 1))
    assert [(e, check_event(e)) for e in written if check_event(e)] == []


def _pids() -> List[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: int) -> List[bytes]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def _ppid(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return int(fh.read().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
