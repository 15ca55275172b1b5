"""Fixtures for the Codex adapter's black-box tests (imported by the test files).

`fake_codex` runs the CLI over tests/support/codex_support/fake_app_server.py;
`real_codex` runs it over the real `codex app-server` (HARNESSCTL_TEST_CODEX_BIN,
else `codex` on PATH) pointed at a loopback Responses mock with a fresh
CODEX_HOME.  Both leave no process behind: the conftest `workdir` fixture kills
every runtime under the test directory, and the harness dies with its runtime.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import stat
import subprocess
from typing import Any, Dict, List, Optional

from cliutil import cli_env, events, matching, real_binary, run, runtime_pids, start, wait_for, wait_matching
from schemacheck import check_event

from .mock_responses import MockResponses, write_codex_home

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_SERVER = os.path.join(HERE, "fake_app_server.py")


def schema_errors(path: str) -> List[str]:
    """Every event of the file that does not match schema/events.schema.json."""
    return ["%s: %s" % (e.get("seq"), err) for e in events(path) for err in check_event(e)]


def recent(last_activity: str, logged: str) -> bool:
    """`status.last_activity` (when the runtime read the harness line) is at most a
    second older than the `ts` of the log line it wrote for it."""
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    delta = datetime.datetime.strptime(logged, fmt) - datetime.datetime.strptime(last_activity, fmt)
    return delta.total_seconds() < 1.0


def require_codex() -> str:
    """The real codex binary, or skip (fail under HARNESSCTL_REQUIRE_REAL=1)."""
    return real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")


class Session:
    """One event file driven through the CLI, plus what its harness saw."""

    def __init__(self, workdir: str, env: Dict[str, str]) -> None:
        self.workdir = workdir
        self.path = os.path.join(workdir, "events.jsonl")
        self.cwd = os.path.join(workdir, "work")
        os.makedirs(self.cwd, exist_ok=True)
        self.env = env

    def cmd(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        return run(*args, env=self.env, **kwargs)

    def send(self, text: str, first: bool = False) -> subprocess.CompletedProcess:
        flags = ["--adapter", "codex", "--cwd", self.cwd] if first else []
        proc = self.cmd("send", self.path, text, *flags)
        assert proc.returncode == 0, proc.stderr.decode()
        return proc

    def send_later(self, text: str) -> subprocess.Popen:
        """A send running in the background (to cancel or race it)."""
        return start("send", self.path, text, env=self.env)

    def events(self, type_: Optional[str] = None, kind: Optional[str] = None) -> List[Dict[str, Any]]:
        return matching(self.path, type_, kind)

    def wait(self, type_: str, count: int = 1, timeout: float = 60, **match: Any) -> List[Dict[str, Any]]:
        return wait_matching(self.path, type_, count, timeout, **match)

    def wait_log(self, predicate, timeout: float = 60) -> Dict[str, Any]:
        return wait_for(lambda: next((e for e in self.events("log") if predicate(e)), None), timeout, "log line")

    def runtime_gone(self, timeout: float = 60) -> None:
        wait_for(lambda: not runtime_pids(self.path), timeout, "runtime exit")

    def runtime_log(self) -> str:
        try:
            with open(self.path + ".d/runtime.log", encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def fake_factory(workdir):
    """A factory: `make(**env)` -> Session over the fake app-server (`make.home`
    holds what it received)."""
    mode = os.stat(FAKE_SERVER).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(FAKE_SERVER, mode | stat.S_IXUSR)
    home = os.path.join(str(workdir), "fake_home")
    os.makedirs(home, exist_ok=True)

    def make(**extra: str) -> Session:
        env = cli_env(HARNESSCTL_CODEX_BIN=FAKE_SERVER, HARNESSCTL_IDLE_TIMEOUT="5", FAKE_CODEX_HOME=home)
        env.update(extra)
        return Session(str(workdir), env)

    make.home = home
    return make


def fake_requests(home: str) -> List[Dict[str, Any]]:
    """Every JSON-RPC line the fake app-server received."""
    try:
        with open(os.path.join(home, "requests.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


@contextlib.contextmanager
def real_session(workdir):
    """(Session, MockResponses) over the real codex; `session.configure(...)`
    rewrites config.toml.  Kills the runtime (and so codex) and stops the mock."""
    binary = require_codex()
    mock = MockResponses().start()
    home = os.path.join(str(workdir), "codex_home")
    env = cli_env(HARNESSCTL_CODEX_BIN=binary, HARNESSCTL_IDLE_TIMEOUT="20", HARNESSCTL_TIMEOUT="60")
    env.update(write_codex_home(home, mock.base_url))
    session = Session(str(workdir), env)

    def configure(base_url: Optional[str] = None, **kwargs: Any) -> None:
        write_codex_home(home, base_url or mock.base_url, **kwargs)

    session.configure = configure
    session.codex_home = home
    try:
        yield session, mock
        assert schema_errors(session.path) == []
    finally:
        for pid in runtime_pids(session.path):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        mock.stop()
