"""Helpers shared by the claudecode tests (imported by the tests, not conftest)."""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any, Callable, Dict, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAKE_CLAUDE = os.path.join(HERE, "fake_claude.py")


def real_claude() -> str:
    """Path of the real `claude` binary, or skip (fail under HARNESSCTL_REQUIRE_REAL=1)."""
    path = os.environ.get("HARNESSCTL_TEST_CLAUDE_BIN") or shutil.which("claude")
    if path and os.access(path, os.X_OK):
        return path
    reason = "real claude binary not found (set HARNESSCTL_TEST_CLAUDE_BIN)"
    if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)
    raise AssertionError  # unreachable


def claude_env(root: str, base_url: str, **extra: str) -> Dict[str, str]:
    """A clean environment for Claude against the loopback mock (REPORT section 2).

    Built from scratch, not from os.environ, so no real credential or user
    configuration can leak in: temp HOME / CLAUDE_CONFIG_DIR / TMPDIR, a dummy
    key, nonessential traffic, telemetry and auto-update off, and no API retries
    (a 401 fails in under a second instead of three minutes)."""
    home = os.path.join(root, "home")
    tmp = os.path.join(root, "tmp")
    for path in (home, os.path.join(home, ".claude"), tmp):
        os.makedirs(path, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "TMPDIR": tmp,
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "PYTHONPATH": REPO,
    }
    env.update(extra)
    return env


def read_events(path: str) -> List[Dict[str, Any]]:
    """The complete JSON lines of an event file (a torn tail is skipped)."""
    events = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return events


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def wait_event(path: str, match: Callable[[Dict[str, Any]], bool], timeout: float = 60.0,
               what: str = "event") -> Dict[str, Any]:
    """Wait for the first event in the file that `match` accepts."""
    def find() -> Optional[Dict[str, Any]]:
        for event in read_events(path):
            if match(event):
                return event
        return None
    return wait_for(find, timeout, what)
