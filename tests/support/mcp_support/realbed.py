"""The scripted steps and checks of the real MCP clients' tests (tests/real/test_mcp_real.py,
test_mcp_tasks_real.py): a model mock scripted to call harnessctl's tools, and what the sub-session
must then hold."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Callable, Dict, List, Tuple

from claudecode_support.fixtures import claude_env
from claudecode_support.mock_messages import MockMessages, reply, tool_results, tool_use
from cliutil import ROOT, cli_env, command, events, matching
from codex_support.mock_responses import MockResponses, function_call, tool_outputs, write_codex_home

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
