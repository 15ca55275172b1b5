"""How to make the two pinned real MCP clients use the 2026-07-28 Tasks extension
(io.modelcontextprotocol/tasks) against a server under test.

Everything here was recorded with the real binaries on 2026-12-05 (see
recorded.md beside this file): Claude Code 2.1.332 and codex 0.171.0, each on the
project's loopback mock model.  The helpers only build environments, config
files and command lines; the caller gives the server's command and runs the
client itself.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from claudecode_support.fixtures import claude_env

TASKS = "io.modelcontextprotocol/tasks"

# The GrowthBook flag that turns Claude Code's Tasks client on (recorded: the
# function that decides is `zC(){if(CLAUDE_CODE_DISABLE_MCP_TASKS)return!1;
# return w("tengu_glowing_lark", entrypoint==="cli" && !REMOTE && ...)}`): its
# default is on for the interactive entrypoint "cli" and off for "sdk-cli",
# which every `claude -p` is (a CLAUDE_CODE_ENTRYPOINT=cli is rewritten to
# sdk-cli under -p).
CLAUDE_TASKS_FLAG = "tengu_glowing_lark"


def claude_task_env(root: str, base_url: str, **extra: str) -> Dict[str, str]:
    """The environment for a headless `claude -p` that declares the Tasks
    extension and moves a task-returning MCP tool call to the background.

    On top of claudecode_support's claude_env (scratch HOME, mock model,
    telemetry and nonessential traffic off) three things are needed, each
    recorded as necessary:

    - the flag tengu_glowing_lark true in the feature cache of the scratch
      $CLAUDE_CONFIG_DIR/.claude.json (cachedGrowthBookFeatures); written here;
    - CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1, or Claude Code ignores
      that cache while DISABLE_TELEMETRY / CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC
      are set (the flag reads as its default, off);
    - CLAUDE_AUTO_BACKGROUND_TASKS=1: in a non-interactive session a tool call
      may use Tasks only when it can be moved to the background, and a headless
      session allows that only with this variable.

    And the session must not be a single-shot print: use claude_task_args
    (`-p --input-format stream-json`, the prompt written to stdin).  Under
    `claude -p PROMPT` the tools/call never declares the extension whatever the
    environment (recorded; the gate is the session's singleShotPrintSession).

    CLAUDE_INTERNAL_FC_OVERRIDES does nothing in this build (its reader returns
    null), so the config file is the only way in."""
    env = claude_env(root, base_url, CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF="1",
                     CLAUDE_AUTO_BACKGROUND_TASKS="1", **extra)
    seed_claude_flags(env["CLAUDE_CONFIG_DIR"], {CLAUDE_TASKS_FLAG: True})
    return env


def seed_claude_flags(config_dir: str, flags: Dict[str, Any]) -> None:
    """Merge FLAGS into the feature cache of CONFIG_DIR/.claude.json (both keys
    Claude Code reads: cachedGrowthBookFeatures first, then cachedFeatureFlags),
    keeping whatever else the file holds."""
    path = os.path.join(config_dir, ".claude.json")
    config: Dict[str, Any] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    for key in ("cachedGrowthBookFeatures", "cachedFeatureFlags"):
        config[key] = dict(config.get(key) or {}, **flags)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)


def claude_mcp_config(path: str, name: str, command: str, args: List[str],
                      env: Optional[Dict[str, str]] = None) -> str:
    """Write an --mcp-config file with one stdio server NAME; returns PATH."""
    entry: Dict[str, Any] = {"command": command, "args": list(args)}
    if env:
        entry["env"] = dict(env)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"mcpServers": {name: entry}}, f)
    return path


def claude_task_args(claude: str, mcp_config: str, allowed_tools: str) -> List[str]:
    """The command line of a headless Claude Code session that may use Tasks:
    stream-json in and out (the user turns are written to stdin as
    {"type":"user","message":{"role":"user","content":TEXT}} lines).

    Recorded: the tool_result the model gets at once says the task "was moved
    to the background"; the result comes later as a user turn holding a
    <task-notification> (one more model request), and stdout carries system
    events task_started / task_progress (statusMessage) / task_updated /
    task_notification.  After stdin's EOF claude goes on polling for about 5 s:
    a task that ends by then gets its notification turn and claude exits 0; a
    longer one is stopped locally (task_notification "stopped") and claude
    exits 0 without sending tasks/cancel.  So a test that wants the result
    keeps stdin open until the task_notification event, then closes it."""
    return [claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
            "--mcp-config", mcp_config, "--strict-mcp-config", "--allowedTools", allowed_tools]


def claude_user_line(text: str) -> bytes:
    """One user turn for claude_task_args' stdin."""
    return (json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n").encode()


# -- codex ----------------------------------------------------------------------------

# The codex features that switch its MCP client to the 2026-07-28 protocol
# (server/discover, per-request _meta); both "under development" in 0.171.0.
CODEX_STDIO_MODERN_FEATURE = "mcp_connection_sharing"
CODEX_HTTP_MODERN_FEATURE = "mcp_2026_07_28"


def codex_modern_features() -> Dict[str, bool]:
    """[features] for codex_support's write_codex_home(features=...) that make
    codex speak 2026-07-28 to a stdio server (and to an HTTP one).

    Recorded: by default codex sends `initialize` (protocolVersion 2025-06-18)
    and never server/discover, with or without mcp_2026_07_28, which only acts
    on streamable-HTTP servers.  With mcp_connection_sharing (alone or with
    mcp_2026_07_28) codex probes server/discover over stdio, then uses the
    modern protocol; it falls back to `initialize` when the probe gets -32601,
    and gives up on a server whose discover result lacks ttlMs / cacheScope
    (CacheableResult: required), never listing its tools.  Its
    clientCapabilities are {"experimental":{"codex/auth-change":{}},
    "extensions":{"codex/connection-lease":{}},"elicitation":{"form":{},"url":{}}}:
    codex 0.171.0 never declares io.modelcontextprotocol/tasks (no feature or
    config key does), so a conforming server never answers it with a task, and a
    task answered anyway fails the call ("Unexpected response type", no
    tasks/get).  codex cannot be made to use Tasks; these features let a test
    prove the server's modern non-task path with it.  A run with them takes
    about 2 s longer to exit (2.3 s against 0.4 s)."""
    return {CODEX_STDIO_MODERN_FEATURE: True, CODEX_HTTP_MODERN_FEATURE: True}


def codex_server_table(name: str, command: str, args: List[str], env: Optional[Dict[str, str]] = None) -> str:
    """The `top` text for write_codex_home: one stdio MCP server NAME whose tools
    codex calls without asking (`codex exec` with approvals never refuses)."""
    lines = ["[mcp_servers.%s]" % name, "command = %s" % json.dumps(command), "args = %s" % json.dumps(list(args))]
    if env:
        lines.append("env = { %s }" % ", ".join("%s = %s" % (k, json.dumps(v)) for k, v in sorted(env.items())))
    lines.append('default_tools_approval_mode = "approve"')
    return "\n".join(lines) + "\n"


def codex_http_server_table(name: str, url: str) -> str:
    """The `top` text for write_codex_home: one streamable-HTTP MCP server NAME
    at URL (recorded with mcp_2026_07_28: headers MCP-Protocol-Version,
    Mcp-Method, Mcp-Name on every POST)."""
    return '[mcp_servers.%s]\nurl = %s\ndefault_tools_approval_mode = "approve"\n' % (name, json.dumps(url))
