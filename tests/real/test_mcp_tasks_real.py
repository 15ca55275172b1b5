"""Real MCP clients and `harnessctl mcp` under 2026-07-28: Claude Code runs a
sub-agent as a task (the Tasks extension) and gets its result in a later
turn; headless, it cancels a task that needs an answer, which ends the run
`cancelled`; codex, which declares no Tasks extension, speaks 2026-07-28
with the calls that wait.  The wire between client and server is recorded
(tests/support/mcp_support/tee.py) and read back.  How each client is set up, and
why: tests/support/mcp_support/clients.py and recorded.md."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any, Dict, List

import pytest
from claudecode_support.fixtures import claude_env
from claudecode_support.mock_messages import MockMessages, bash, conversation_texts, reply, text, tool_results, tool_use
from cliutil import ROOT, cli_env, command, matching, real_binary, wait_for
from codex_support.mock_responses import MockResponses, write_codex_home
from codex_support.mock_responses import text as codex_text
from mcp_support.clients import (
    claude_mcp_config,
    claude_task_args,
    claude_task_env,
    claude_user_line,
    codex_modern_features,
    codex_server_table,
)
from mcp_support.realbed import (
    StepResponses,
    check_real_sub_session,
    check_sub_session,
    codex_results,
    codex_step,
    layout,
    real_steps,
    steps,
)

pytestmark = pytest.mark.real

TEE = os.path.join(ROOT, "tests", "support", "mcp_support", "tee.py")
TASKS = "io.modelcontextprotocol/tasks"


def recorded_server(root: str, wire: str) -> Dict[str, Any]:
    """harnessctl's MCP server confined to ROOT, behind the wire recorder."""
    python, *args = command("mcp", "--root", root)
    return {"command": sys.executable, "args": [TEE, wire, python, *args], "env": {"PYTHONPATH": ROOT}}


def wire_lines(wire: str) -> List[Dict[str, Any]]:
    with open(wire) as f:
        return [json.loads(line) for line in f]


def answers_to(wire: List[Dict[str, Any]], method: str) -> List[Dict[str, Any]]:
    """The server's answers to the client's requests of METHOD, in order."""
    asked = {json.dumps(m["message"]["id"]) for m in wire
             if m["from"] == "client" and isinstance(m["message"], dict) and m["message"].get("method") == method}
    return [m["message"] for m in wire if m["from"] == "server" and isinstance(m["message"], dict)
            and "method" not in m["message"] and json.dumps(m["message"].get("id")) in asked]


def client_requests(wire: List[Dict[str, Any]], method: str) -> List[Dict[str, Any]]:
    return [m["message"] for m in wire
            if m["from"] == "client" and isinstance(m["message"], dict) and m["message"].get("method") == method]


# -- Claude Code: a task ------------------------------------------------------------------


class Session:
    """A headless Claude Code that may use Tasks: stream-json in and out, its
    stdin kept open until the test has what it waits for (recorded: after
    stdin's end it stops a task still working within ~5 s)."""

    def __init__(self, claude: str, workdir: Any, base_url: str, entry: Dict[str, Any]) -> None:
        config = claude_mcp_config(str(workdir / "mcp.json"), "harnessctl", entry["command"], entry["args"],
                                   entry["env"])
        self.proc = subprocess.Popen(claude_task_args(claude, config, "mcp__harnessctl__*"),
                                     env=claude_task_env(str(workdir), base_url), cwd=str(workdir),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.events: List[Dict[str, Any]] = []
        self.lines: "queue.Queue[bytes]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def say(self, prompt: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(claude_user_line(prompt))
        self.proc.stdin.flush()

    def seen(self, subtype: str) -> List[Dict[str, Any]]:
        while not self.lines.empty():
            try:
                self.events.append(json.loads(self.lines.get_nowait()))
            except ValueError:
                pass
        return [e for e in self.events if e.get("subtype") == subtype or e.get("type") == subtype]

    def until(self, subtype: str, count: int = 1, timeout: float = 180) -> List[Dict[str, Any]]:
        return wait_for(lambda: (lambda found: found if len(found) >= count else None)(self.seen(subtype)),
                        timeout, "%d %s event(s) from claude" % (count, subtype))

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(60)
        assert code == 0, self.proc.stderr.read().decode()[-2000:]
        return code


def check_task_wire(wire: List[Dict[str, Any]], status: str) -> Dict[str, Any]:
    """What the wire of a task run must show: 2026-07-28 opened by
    server/discover, a tools/call declaring Tasks answered with a task
    handle, tasks/get polls, the last one in STATUS; that last answer."""
    [discover] = client_requests(wire, "server/discover")
    assert discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert not client_requests(wire, "initialize")
    [call] = client_requests(wire, "tools/call")
    assert TASKS in call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
    [handle] = answers_to(wire, "tools/call")
    assert handle["result"]["resultType"] == "task" and handle["result"]["status"] == "working"
    polls = answers_to(wire, "tasks/get")
    assert polls and all(p["result"]["taskId"] == handle["result"]["taskId"] for p in polls)
    assert polls[-1]["result"]["status"] == status
    return polls[-1]["result"]


def test_claude_code_runs_a_sub_agent_as_a_task(workdir):
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    agents, work, file = layout(workdir, "sub.jsonl")
    wire = str(workdir / "wire.jsonl")
    with MockMessages() as mock:
        mock.script(reply(tool_use("mcp__harnessctl__send", {"file": file, "text": "/sleep 3", "adapter": "mock",
                                                             "cwd": work, "wait": True})),
                    reply(text("The sub-agent works in the background.")),
                    reply(text("The sub-agent is done.")))
        session = Session(claude, workdir, mock.base_url, recorded_server(agents, wire))
        session.say("Run the sub-agent.")
        session.until("task_notification")
        session.until("result", 2)
        session.close()
        moved, notified = tool_results(mock.bodies()[1]), conversation_texts(mock.bodies()[2])
    assert any("moved to the background" in t for t in moved)
    done = check_task_wire(wire_lines(wire), "completed")["result"]["structuredContent"]
    assert done["outcome"] == "completed" and done["exit_code"] == 0
    assert any("<task-notification>" in t and "<status>completed</status>" in t and '"outcome":"completed"' in t
               for t in notified), notified
    [result] = matching(file, "result")
    assert result["status"] == "completed" and done["input_id"] == matching(file, "accepted")[0]["input_id"]


def test_claude_code_headless_cancels_a_task_that_needs_an_answer(workdir):
    """Headless Claude Code cannot show an elicitation: it sends tasks/cancel
    as soon as the task goes input_required (recorded), and the model is
    told so; the run ends cancelled and its request expires unanswered."""
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    agents, work, file = layout(workdir, "sub.jsonl")
    wire = str(workdir / "wire.jsonl")
    with MockMessages() as mock:
        mock.script(reply(tool_use("mcp__harnessctl__send", {"file": file, "text": "/permission deploy?",
                                                             "adapter": "mock", "cwd": work, "wait": True})),
                    reply(text("Waiting.")), reply(text("It was cancelled.")))
        session = Session(claude, workdir, mock.base_url, recorded_server(agents, wire))
        session.say("Run the sub-agent.")
        session.until("task_notification")
        session.until("result", 2)
        session.close()
        notified = conversation_texts(mock.bodies()[2])
    lines = wire_lines(wire)
    asked = [p["result"] for p in answers_to(lines, "tasks/get") if p["result"]["status"] == "input_required"]
    assert asked and next(iter(asked[0]["inputRequests"].values()))["params"]["message"] == "deploy?"
    assert client_requests(lines, "tasks/cancel")
    assert any("<status>cancelled</status>" in t for t in notified), notified
    assert [e["status"] for e in matching(file, "result")] == ["cancelled"]
    assert matching(file, "request", state="expired") and not matching(file, "request", state="replied")


def test_claude_code_runs_a_real_codex_as_a_task(workdir):
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "codex.jsonl")
    wire = str(workdir / "wire.jsonl")
    sub = MockResponses().start()
    try:
        sub.add(codex_text("Codex did the work."))
        entry = recorded_server(agents, wire)
        entry["env"].update(write_codex_home(str(workdir / "codex_home"), sub.base_url))
        entry["env"].update(HARNESSCTL_CODEX_BIN=codex, HARNESSCTL_IDLE_TIMEOUT="20", HARNESSCTL_TIMEOUT="60")
        with MockMessages() as mock:
            mock.script(reply(tool_use("mcp__harnessctl__send", {"file": file, "text": "do the work",
                                                                 "adapter": "codex", "cwd": work, "wait": True})),
                        reply(text("Codex works in the background.")), reply(text("Codex is done.")))
            session = Session(claude, workdir, mock.base_url, entry)
            session.say("Run codex.")
            session.until("task_notification")
            session.until("result", 2)
            session.close()
            notified = conversation_texts(mock.bodies()[2])
    finally:
        sub.stop()
    done = check_task_wire(wire_lines(wire), "completed")["result"]["structuredContent"]
    assert done["outcome"] == "completed" and done["output"] == "Codex did the work."
    assert any("Codex did the work." in t for t in notified), notified


# -- codex: the 2026-07-28 line, without Tasks ---------------------------------------------


def run_modern_codex(codex: str, workdir: Any, base_url: str, entry: Dict[str, Any],
                     server_env: Dict[str, str]) -> subprocess.CompletedProcess:
    """`codex exec` on the mock at BASE_URL speaking 2026-07-28 to ENTRY's
    server (codex passes a server little of its own environment: SERVER_ENV)."""
    top = codex_server_table("harnessctl", entry["command"], entry["args"], server_env) + "tool_timeout_sec = 180\n"
    env = cli_env()
    env.update(write_codex_home(str(workdir / "codex_home"), base_url, top=top, features=codex_modern_features()))
    return subprocess.run([codex, "exec", "--skip-git-repo-check", "Run the sub-agent."], env=env, cwd=str(workdir),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)


def check_modern_wire(wire: List[Dict[str, Any]]) -> None:
    """codex opened with server/discover, spoke 2026-07-28, and no call became a task."""
    [discover] = client_requests(wire, "server/discover")
    assert discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert not client_requests(wire, "initialize") and not client_requests(wire, "tasks/get")
    assert all(a["result"]["resultType"] == "complete" for a in answers_to(wire, "tools/call"))


def test_codex_speaks_2026_07_28_and_its_calls_wait(workdir):
    """codex 0.171.0 declares no Tasks extension (recorded), so its calls are
    answered as they always were; with mcp_connection_sharing it opens with
    server/discover and speaks 2026-07-28."""
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "sub.jsonl")
    wire = str(workdir / "wire.jsonl")
    entry = recorded_server(agents, wire)
    mock = StepResponses().start()
    try:
        mock.add(*[codex_step(i + 1, step) for i, step in enumerate(steps(file, work))])
        mock.add(codex_text("The sub-agent is done."))
        proc = run_modern_codex(codex, workdir, mock.base_url, entry, entry["env"])
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        results = codex_results(mock.requests[-1])
    finally:
        mock.stop()
    check_sub_session(file, results)
    check_modern_wire(wire_lines(wire))


def test_codex_drives_a_real_claude_code_over_2026_07_28(workdir):
    """The real sub-agent the other way round: codex cannot take it as a
    task, so it steers, answers and waits for it with waiting calls."""
    claude = real_binary("HARNESSCTL_TEST_CLAUDE_BIN", "claude")
    codex = real_binary("HARNESSCTL_TEST_CODEX_BIN", "codex")
    agents, work, file = layout(workdir, "claude.jsonl")
    wire = str(workdir / "wire.jsonl")
    entry = recorded_server(agents, wire)
    mock = StepResponses().start()
    try:
        with MockMessages() as sub:
            sub.script(reply(bash("touch approved.txt", "Create approved.txt")), reply(text("Created, and noted.")))
            env = dict(claude_env(str(workdir / "sub"), sub.base_url), HARNESSCTL_CLAUDE_BIN=claude,
                       HARNESSCTL_IDLE_TIMEOUT="20", HARNESSCTL_TIMEOUT="60", **entry["env"])
            mock.add(*[codex_step(i + 1, step) for i, step in enumerate(real_steps(file, work, "claudecode"))])
            mock.add(codex_text("Claude is done."))
            proc = run_modern_codex(codex, workdir, mock.base_url, entry, env)
            assert proc.returncode == 0, proc.stderr.decode()[-2000:]
            results = codex_results(mock.requests[-1])
    finally:
        mock.stop()
    check_real_sub_session(file, work, results, "Created, and noted.")
    check_modern_wire(wire_lines(wire))
