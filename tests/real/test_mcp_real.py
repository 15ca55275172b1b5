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
import os
import subprocess
from typing import Any, Callable, Dict, List, Tuple

import pytest
from claudecode_support.fixtures import claude_env
from claudecode_support.mock_messages import MockMessages, bash, conversation_texts, reply, text, tool_results, tool_use
from cliutil import ROOT, cli_env, command, events, matching, real_binary
from codex_support.mock_responses import MockResponses, function_call, tool_outputs, write_codex_home
from codex_support.mock_responses import text as codex_text

pytestmark = pytest.mark.real

PERMISSION = "/permission deploy to staging?"


def server(root: str) -> Dict[str, Any]:
    """How a client starts harnessctl's MCP server, confined to `root`."""
    python, *args = command("mcp", "--root", root)
    return {"command": python, "args": args,
            "env": {"PYTHONPATH": ROOT}}


def last_result(results: List[str]) -> Dict[str, Any]:
    """The structured result of the latest tool call (its text is that JSON)."""
    return json.loads(results[-1])


def steps(file: str, cwd: str) -> List[Any]:
    """The orchestrator's tool calls, as (tool, arguments) or a function of
    the previous tool results giving them."""
    return [
        ("send", {"file": file, "text": "/sleep 5", "adapter": "mock", "cwd": cwd}),
        ("send", {"file": file, "text": PERMISSION, "wait": True}),
        ("status", {"files": [file]}),
        lambda results: ("reply", {"file": file, "request_id": last_result(results)["statuses"][0]["requests"][0][
            "request_id"], "answer": "allow"}),
        lambda results: ("wait", {"file": file, "input_id": json.loads(results[-3])["input_id"]}),
    ]


def check_sub_session(file: str, results: List[str]) -> None:
    """What every orchestrator must have seen, and the event file holds."""
    assert len(results) == 5, results
    started, asked, status, replied, done = [json.loads(r) for r in results]
    assert started["outcome"] == "accepted"
    assert asked["outcome"] == "request" and asked["message"] == "deploy to staging?"
    assert status["statuses"][0]["state"] == "awaiting_reply"
    assert replied["outcome"] == "replied"
    assert done["outcome"] == "completed" and "permission: allow" in done["output"]
    assert done["input_ids"] == [started["input_id"], asked["input_id"]]
    assert [e["delivery"] for e in matching(file, "accepted")] == ["start", "steer"]
    [request_id] = {e["request_id"] for e in matching(file, "request")}
    assert request_id == asked["request_id"]
    assert matching(file, "request", request_id=request_id, state="replied")[0]["answer"] == "allow"
    assert [e["status"] for e in events(file) if e["type"] == "result"] == ["completed"]


# -- Claude Code ------------------------------------------------------------------------


class StepMock(MockMessages):
    """MockMessages whose queued reply may be a function of the request it answers."""

    def _next_reply(self, body: Dict[str, Any], path: str, headers: Dict[str, str]) -> Dict[str, Any]:
        with self._lock:
            if self._queue and callable(self._queue[0]):
                self._queue[0] = self._queue[0](body)
        return super()._next_reply(body, path, headers)


def claude_results(body: Dict[str, Any]) -> List[str]:
    """Every tool result of the conversation so far, in order."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return [r for m in users for r in tool_results({"messages": [m]})]


def layout(workdir: Any, name: str) -> Tuple[str, str, str]:
    """(the folder the MCP server may use, the sub-agent's workspace in it, its event file NAME there)."""
    agents, work = str(workdir / "agents"), str(workdir / "agents" / "work")
    os.makedirs(work)
    return agents, work, os.path.join(agents, name)


def run_claude(claude: str, prompt: str, entry: Dict[str, Any], workdir: Any, base_url: str,
               timeout: float) -> subprocess.CompletedProcess:
    """`claude -p PROMPT` on the mock at BASE_URL, with harnessctl's MCP server (ENTRY: command, args,
    env) in an --mcp-config file and its tools allowed."""
    config = str(workdir / "mcp.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"harnessctl": entry}}, f)
    return subprocess.run([claude, "-p", prompt, "--mcp-config", config, "--strict-mcp-config",
                           "--allowedTools", "mcp__harnessctl__*", "--output-format", "json"],
                          env=claude_env(str(workdir), base_url), cwd=str(workdir),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def claude_step(step: Any) -> Any:
    def make(body: Dict[str, Any]) -> Dict[str, Any]:
        name, arguments = step(claude_results(body)) if callable(step) else step
        return reply(tool_use("mcp__harnessctl__" + name, arguments))
    return make


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


class StepResponses(MockResponses):
    """MockResponses whose next scripted reply may be a function of the request it answers."""

    def _next(self, record: Dict[str, Any]) -> Dict[str, Any]:
        with self._lock:
            if self.script and callable(self.script[0]):
                self.script[0] = self.script[0]({"body": record["body"]})
        return super()._next(record)


def codex_results(request: Dict[str, Any]) -> List[str]:
    """The outputs of the tool calls call_1, call_2 ... so far, in order: the
    tool's text, after the "Wall time: S seconds\nOutput:\n" codex puts
    before an MCP tool's result (as recorded)."""
    outputs = tool_outputs(request)
    return [outputs[key].partition("Output:\n")[2] for key in sorted(outputs, key=lambda k: int(k.split("_")[1]))]


def run_codex(codex: str, prompt: str, workdir: Any, base_url: str, top: str,
              timeout: float) -> subprocess.CompletedProcess:
    """`codex exec PROMPT` on the mock at BASE_URL, TOP (harnessctl's MCP server table) in its config."""
    env = cli_env()
    env.update(write_codex_home(str(workdir / "codex_home"), base_url, top=top))
    return subprocess.run([codex, "exec", "--skip-git-repo-check", prompt], env=env, cwd=str(workdir),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def codex_step(index: int, step: Any) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """codex offers an MCP server's tools as one namespace, mcp__SERVER (as recorded)."""
    def make(request: Dict[str, Any]) -> Dict[str, Any]:
        name, arguments = step(codex_results(request)) if callable(step) else step
        return function_call(name, arguments, "call_%d" % index, namespace="mcp__harnessctl")
    return make


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


def real_steps(file: str, cwd: str, adapter: str) -> List[Any]:
    return [
        ("send", {"file": file, "text": "please create approved.txt", "adapter": adapter, "cwd": cwd}),
        ("wait", {"file": file, "timeout": 120}),
        ("send", {"file": file, "text": "SECOND: then say done"}),
        lambda results: ("reply", {"file": file, "request_id": json.loads(results[1])["requests"][0]["request_id"],
                                   "answer": "allow"}),
        lambda results: ("wait", {"file": file, "input_id": json.loads(results[0])["input_id"], "timeout": 120}),
    ]


def check_real_sub_session(file: str, cwd: str, results: List[str], output: str) -> None:
    assert len(results) == 5, results
    started, waited, steer, replied, done = [json.loads(r) for r in results]
    assert started["outcome"] == "accepted" and steer["outcome"] == "accepted"
    assert waited["outcome"] == "status" and waited["state"] == "awaiting_reply"
    assert "approved.txt" in waited["requests"][0]["message"]
    assert replied["outcome"] == "replied"
    assert done["outcome"] == "completed" and done["output"] == output
    assert done["input_ids"] == [started["input_id"], steer["input_id"]]
    assert os.path.exists(os.path.join(cwd, "approved.txt"))
    deliveries = {e["input_id"]: e["delivery"] for e in matching(file, "accepted")}  # a Claude steer: twice, attributed
    assert deliveries == {started["input_id"]: "start", steer["input_id"]: "steer"}
    assert matching(file, "request", state="replied")[0]["answer"] == "allow"


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
