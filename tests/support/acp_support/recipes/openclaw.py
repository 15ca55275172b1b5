"""openclaw (openclaw@2026.9.6): how it runs offline against the project's mock (the lab's recipe).

`openclaw acp` is a bridge, not an agent: it forwards each prompt to an
OpenClaw Gateway over WebSocket, and the gateway's embedded agent calls the
model and runs the tools.  around() starts that gateway (`openclaw gateway
run`) beside the session and stops it after.  The preset command is plain
`openclaw acp`: with no --url it finds the local gateway from the same config
(gateway.port, gateway.auth.token), as a user's would.

The config (~/.openclaw/openclaw.json) names a `mock` provider
(openai-completions) as the default model, and two things that are not
openclaw's defaults:

* tools.exec.mode "ask": by default exec runs unasked; in ask mode the
  gateway's exec approval is relayed to the ACP client as
  session/request_permission (options "Allow once" / "Deny").
* agents.defaults.cwd = the test's cwd: the bridge does not pass the ACP
  session's cwd to the gateway (only a "[Working directory: …]" line in
  the prompt), so tools run in agents.defaults.cwd, or without it in the
  gateway's workspace (~/.openclaw/workspace).  One gateway serves one
  project this way.

Node >= 24.16 (node24 first on PATH).  Bonjour, channels, cron, the canvas and browser hosts, updates and helper
downloads are off; the gateway logs to root/gateway.log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
from typing import Dict, Iterator

PREFIX = "openclaw"
BIN = "openclaw"
NODE = "node24"
MOCK = "chat"
TOKEN = "mock-token"
TRAITS: Dict[str, object] = {
    # a busy send is queued (no _meta.steering), a deny is told to the model, which answers;
    # resumes by session/resume;
    # usage_update carries only the context size (no tokens). Its ACP modes are thought levels
    # (off ... adaptive): no --mode table.
    # a model error (the 401) ends the turn end_turn with nothing said: the bridge maps the gateway's
    # "error" state to end_turn and drops its message (only the gateway's log has it)
    "error_as_text": True,
    "error_401": "",
    # tools run in the gateway's agents.defaults.cwd (else its workspace), never in the ACP session's cwd
    "runs_in_cwd": False,
}
READY = re.compile(r"\[gateway\] ready")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port() -> int:
    """A loopback port nobody listens on now (the gateway binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config(root: str, base_url: str, port: int) -> Dict[str, object]:
    """openclaw.json: a local loopback gateway with a token, the mock as the only model,
    exec approvals relayed to the client, tools run in the session's cwd."""
    model = {"id": "mock-model", "name": "Mock", "reasoning": False, "input": ["text"],
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 128000, "maxTokens": 4096}
    return {
        "gateway": {"mode": "local", "bind": "loopback", "port": port, "auth": {"mode": "token", "token": TOKEN}},
        "models": {"mode": "merge", "providers": {"mock": {
            "baseUrl": base_url + "/v1", "apiKey": "mock-key", "api": "openai-completions", "models": [model]}}},
        "agents": {"defaults": {"model": {"primary": "mock/mock-model"},
                                "cwd": os.path.join(root, "work")}},  # the Session's cwd (agents.Session)
        "tools": {"exec": {"mode": "ask"}},
        "logging": {"file": os.path.join(root, "openclaw.log")},
        "plugins": {"enabled": False},
    }


def env(root: str, base_url: str) -> Dict[str, str]:
    state = os.path.join(root, "home", ".openclaw")
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, "openclaw.json"), "w", encoding="utf-8") as f:
        json.dump(config(root, base_url, free_port()), f)
    return {
        "OPENCLAW_DISABLE_BONJOUR": "1",   # no mDNS advertising of the gateway
        "OPENCLAW_SKIP_CHANNELS": "1",     # no chat channel transports (faster start)
        # nor the gateway's services no ACP session uses (openclaw's own test set-up skips them so)
        "OPENCLAW_SKIP_CRON": "1",
        "OPENCLAW_SKIP_GMAIL_WATCHER": "1",
        "OPENCLAW_SKIP_CANVAS_HOST": "1",
        "OPENCLAW_SKIP_BROWSER_CONTROL_SERVER": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_OFFLINE": "1",           # no helper binary downloads
        "OPENCLAW_ALLOW_MULTI_GATEWAY": "1",  # other tests' gateways may run at the same time
        "OPENCLAW_HIDE_BANNER": "1",
        "OPENCLAW_SUPPRESS_NOTES": "1",
        "NO_COLOR": "1",
    }


@contextlib.contextmanager
def around(root: str, env: Dict[str, str]) -> Iterator[None]:
    """The gateway for the session's whole life: started, waited for until it
    logs "[gateway] ready", killed with its process tree after."""
    from cliutil import wait_for

    from ..agents import kill_tree

    log_path = os.path.join(root, "gateway.log")
    with open(log_path, "wb") as log:
        gateway = subprocess.Popen(["openclaw", "gateway", "run"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: ready(gateway, log_path), 120, "the openclaw gateway to be ready", interval=0.2)
        yield
    finally:
        kill_tree(gateway.pid)
        gateway.wait()


def ready(gateway: subprocess.Popen, log_path: str) -> bool:
    """The gateway said it is ready (fails at once when it exited instead)."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        text = ANSI.sub("", f.read())
    if gateway.poll() is not None:
        raise AssertionError("the openclaw gateway exited %s:\n%s" % (gateway.returncode, text[-3000:]))
    return bool(READY.search(text))
