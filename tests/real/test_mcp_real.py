"""Real MCP clients driving `harnessctl mcp`: Claude Code and codex, each
with harnessctl registered as an MCP server and its model replaced by the
project's loopback mock, scripted to call the tools.  The orchestrating
agent starts a sub-agent session (the mock adapter) with `send`, steers it
with a second `send` while it runs, reads its pending approval (`send` with
wait, then `status`), answers it with `reply`, and gets the sub-agent's
result back from `wait` as its tool result.  Then the same with a real
sub-agent: codex under Claude Code, Claude Code under codex.

A scripted model cannot know an input id in advance, so a step may be a
function of the request that carries the previous tool's result."""

from __future__ import annotations

import json

import pytest
from claudecode_support.fixtures import claude_env
from claudecode_support.mock_messages import MockMessages, bash, conversation_texts, reply, text
from cliutil import ROOT, real_binary
from codex_support.mock_responses import MockResponses, function_call, write_codex_home
from codex_support.mock_responses import text as codex_text
from mcp_support.realbed import (
    StepMock,
    StepResponses,
    check_real_sub_session,
    check_sub_session,
    claude_results,
    claude_step,
    codex_results,
    codex_step,
    layout,
    real_steps,
    run_claude,
    run_codex,
    server,
    steps,
)

pytestmark = pytest.mark.real


def test_claude_code_drives_a_sub_agent_through_harnessctl_mcp(workdir):
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    agents, work, file = layout(workdir, "sub.jsonl")
    with StepMock() as mock:
        mock.script(*[claude_step(step) for step in steps(file, work)], reply(text("The sub-agent is done.")))
        proc = run_claude(claude, "Run the sub-agent.", server(agents), workdir, mock.base_url, 180)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        assert json.loads(proc.stdout)["result"] == "The sub-agent is done."
        bodies = mock.bodies()
    results = claude_results(bodies[-1])
    check_sub_session(file, results)


# -- codex ---------------------------------------------------------------------------------
#
# Run with `codex exec`, as `claude -p` above: the orchestrator is a plain
# client process, the way a user runs one; harnessctl's own codex adapter is
# proven elsewhere (test_codex_real.py) and would add nothing to the MCP side.


def test_codex_drives_a_sub_agent_through_harnessctl_mcp(workdir):
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "sub.jsonl")
    entry = server(agents)
    top = ('[mcp_servers.harnessctl]\ncommand = %s\nargs = %s\nenv = { PYTHONPATH = %s }\n'
           'default_tools_approval_mode = "approve"\n'  # else codex asks, and `exec` with approval never refuses
           % (json.dumps(entry["command"]), json.dumps(entry["args"]), json.dumps(ROOT)))
    mock = StepResponses().start()
    try:
        mock.add(*[codex_step(i + 1, step) for i, step in enumerate(steps(file, work))])
        mock.add(codex_text("The sub-agent is done."))
        proc = run_codex(codex, "Run the sub-agent.", workdir, mock.base_url, top, 180)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        assert "The sub-agent is done." in proc.stdout.decode()
        tools = [t for t in mock.requests[0]["body"]["tools"] if t.get("name") == "mcp__harnessctl"]
        assert {t["name"] for t in tools[0]["tools"]} == {"send", "wait", "status", "reply", "cancel", "log", "fork"}
        results = codex_results(mock.requests[-1])
    finally:
        mock.stop()
    check_sub_session(file, results)


# -- a real sub-agent: codex under Claude Code, Claude Code under codex --------------------
#
# The sub-agent asks to run `touch approved.txt`; the orchestrator waits for
# the conversation to need it, steers the run while the approval waits, allows
# the command and waits for the result that covers both inputs.


def test_claude_code_drives_a_real_codex_through_harnessctl_mcp(workdir):
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "codex.jsonl")
    sub = MockResponses().start()
    try:
        sub.add(function_call("exec_command", {"cmd": "touch approved.txt", "sandbox_permissions": "require_escalated",
                                               "justification": "needs to write"}, "call_touch"),
                codex_text("Done."))
        entry = server(agents)
        entry["env"].update(write_codex_home(str(workdir / "codex_home"), sub.base_url,
                                             approval_policy="on-request", sandbox_mode="read-only"))
        entry["env"].update(HARNESSCTL_CODEX_BIN=codex, HARNESSCTL_IDLE_TIMEOUT="20", HARNESSCTL_TIMEOUT="60")
        with StepMock() as mock:
            mock.script(*[claude_step(step) for step in real_steps(file, work, "codex")], reply(text("Codex is done.")))
            proc = run_claude(claude, "Run codex.", entry, workdir, mock.base_url, 240)
            assert proc.returncode == 0, proc.stderr.decode()[-2000:]
            results = claude_results(mock.bodies()[-1])
        assert "SECOND: then say done" in json.dumps(sub.requests[-1]["body"]["input"])  # the steer reached codex
    finally:
        sub.stop()
    check_real_sub_session(file, work, results, "Done.")


def test_codex_drives_a_real_claude_code_through_harnessctl_mcp(workdir):
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "claude.jsonl")
    mock = StepResponses().start()
    try:
        with MockMessages() as sub:
            sub.script(reply(bash("touch approved.txt", "Create approved.txt")), reply(text("Created, and noted.")))
            entry = server(agents)
            env = dict(claude_env(str(workdir / "sub"), sub.base_url), HARNESSCTL_CLAUDE_BIN=claude,
                       HARNESSCTL_IDLE_TIMEOUT="20", HARNESSCTL_TIMEOUT="60", **entry["env"])
            top = ('[mcp_servers.harnessctl]\ncommand = %s\nargs = %s\ndefault_tools_approval_mode = "approve"\n'
                   'tool_timeout_sec = 180\nenv = { %s }\n'  # codex passes a server little of its own environment
                   % (json.dumps(entry["command"]), json.dumps(entry["args"]),
                      ", ".join("%s = %s" % (k, json.dumps(v)) for k, v in env.items())))
            mock.add(*[codex_step(i + 1, step) for i, step in enumerate(real_steps(file, work, "claudecode"))])
            mock.add(codex_text("Claude is done."))
            proc = run_codex(codex, "Run Claude.", workdir, mock.base_url, top, 240)
            assert proc.returncode == 0, proc.stderr.decode()[-2000:]
            assert "Claude is done." in proc.stdout.decode()
            results = codex_results(mock.requests[-1])
            assert any("SECOND: then say done" in t for t in conversation_texts(sub.bodies()[-1]))
    finally:
        mock.stop()
    check_real_sub_session(file, work, results, "Created, and noted.")
