"""Helpers shared by the claudecode tests (imported by the tests, not conftest)."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional

from cliutil import events as read_events  # noqa: F401  (re-exported to the claudecode tests)
from cliutil import real_binary, session_dirs, wait_for  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FAKE_CLAUDE = os.path.join(HERE, "fake_claude.py")


def real_claude() -> str:
    """Path of the real `claude` binary, or skip (fail under HARNESSCTL_REQUIRE_REAL=1)."""
    return real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")


def claude_env(root: str, base_url: str, **extra: str) -> Dict[str, str]:
    """A clean environment for Claude against the loopback mock.

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
        **session_dirs(),
        "PYTHONPATH": REPO,
    }
    env.update(extra)
    return env


def wait_event(path: str, match: Callable[[Dict[str, Any]], bool], timeout: float = 60.0,
               what: str = "event") -> Dict[str, Any]:
    """Wait for the first event in the file that `match` accepts."""
    def find() -> Optional[Dict[str, Any]]:
        for event in read_events(path):
            if match(event):
                return event
        return None
    return wait_for(find, timeout, what)
