"""The permission policy (`--mode`, `--allow`/`--deny`) through the CLI on the
real ACP agents: codex-acp 2.6.0, claude-agent-acp 0.101.0 and gemini-cli
0.61.0, each against its model mock (tests/support/acp_support/agents.py).

The model is scripted to write a file with the agent's own file tool and to
run shell commands; what asks is what the agent's mode (adapters/acp/
manifest.json, `modes`) lets through to the client.  Where an agent differs
from the contract's meaning, the test says so:

* codex-acp runs a command inside its sandbox without asking (read-only in
  `ask`, the workspace in `edit`); only a command the model asks to run
  outside it (`require_escalated`) asks, so the scripted commands do (but in
  `full`, where codex refuses such a request: there is no sandbox to leave);
* a codex-acp reject ends its turn (cancelled): the model hears of it only in
  the next turn;
* claude-agent-acp offers bypassPermissions only when not root or in a
  sandbox (IS_SANDBOX=1): as root `full` exits 5 with its reason;
* gemini offers autoEdit and yolo only in a trusted folder.
"""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from acp_support import mock_gemini as mg
from acp_support.agents import AGENTS, real_agent
from claudecode_support import mock_messages as mm
from cliutil import status
from codex_support import mock_responses as mr

pytestmark = pytest.mark.real

FULLEST = {"codex": "agent-full-access", "claude": "bypassPermissions", "gemini": "yolo"}
ASK_MODE = {"codex": "read-only", "claude": "default", "gemini": "default"}
# what lets each agent offer its fullest mode: claude bypassPermissions even as root, gemini autoEdit and yolo
UNLOCKED = {"IS_SANDBOX": "1", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
# a command no agent's edit mode runs unasked (claude's acceptEdits runs touch, mkdir, ... in the cwd)
CREATE = "python3 -c \"open('c.txt', 'w')\""


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session over that real agent, codex on a model offered apply_patch."""
    with contextlib.ExitStack() as stack:
        def session(agent, **env):
            s = stack.enter_context(real_agent(workdir / agent, agent, **env))
            if agent == "codex":
                s.model.use_patch_model(s.root)
            return s
        yield session


def requests(s):
    """The file's request snapshots by request id, each the list of its states."""
    found = {}
    for event in s.events("request"):
        found.setdefault(event["request_id"], []).append(event)
    return found


def reply(s, request, answer):
    proc = s.cmd("reply", s.path, request["request_id"], answer)
    assert proc.returncode == 0, proc.stderr.decode()


def exists(s, name):
    return os.path.exists(os.path.join(s.cwd, name))


@pytest.mark.parametrize("agent", AGENTS)
def test_ask_parks_a_write_and_a_command_though_the_agent_is_set_to_its_fullest_mode(start, agent):
    s = start(agent, HARNESSCTL_ACP_MODE=FULLEST[agent], **UNLOCKED)
    s.model.writes(s.cwd, "w.txt", "hello\n")
    s.model.runs("touch x.txt")
    s.model.runs("rm -f w.txt")
    s.model.answer("Done.")
    s.send("Write, touch, remove.", "--mode", "ask", "--deny", "command:rm *")
    (write,) = s.wait("request", state="pending")
    assert write["tool"] == "file_change" and write["paths"] == [os.path.join(s.cwd, "w.txt")]
    assert status(s.path, env=s.env)["state"] == "awaiting_reply" and not exists(s, "w.txt")
    reply(s, write, "allow")
    command = s.wait("request", 2, state="pending")[1]
    assert (command["tool"], command.get("command")) == ("command", line(agent, "touch x.txt"))
    assert not exists(s, "x.txt")
    reply(s, command, "allow")
    if agent == "gemini":  # its command is only a title, which no pattern sees: the deny cannot match it
        refused = s.wait("request", 3, state="pending")[2]
        reply(s, refused, "deny")
    else:
        (refused,) = s.wait("request", state="replied", by="rule")
        assert (refused["command"], refused["answer"], refused["rule"]) == ("rm -f w.txt", "deny", "command:rm *")
    (result,) = s.wait("result")
    # codex-acp ends its turn on a reject; the others tell the model and go on
    assert result["status"] == ("cancelled" if agent == "codex" else "completed")
    assert exists(s, "w.txt") and exists(s, "x.txt")
    (session,) = s.events("log", "session")
    assert session["approval_policy"] == ASK_MODE[agent]  # the table's mode, not HARNESSCTL_ACP_MODE's


@pytest.mark.parametrize("agent", AGENTS)
def test_edit_writes_without_asking_and_a_command_asks(start, agent):
    s = start(agent, **UNLOCKED)
    s.model.writes(s.cwd, "w.txt", "hello\n")
    s.model.runs(CREATE)
    s.model.answer("Done.")
    s.send("Write, then create.", "--mode", "edit")
    (command,) = s.wait("request", state="pending")
    assert (command["tool"], command.get("command")) == ("command", line(agent, CREATE))
    assert exists(s, "w.txt") and not exists(s, "c.txt")  # the write went through unasked
    reply(s, command, "allow")
    (result,) = s.wait("result")
    assert result["status"] == "completed" and exists(s, "c.txt")
    assert list(requests(s)) == [command["request_id"]]


@pytest.mark.parametrize("agent", AGENTS)
def test_full_writes_and_runs_without_asking(start, agent):
    s = start(agent, **UNLOCKED)
    s.model.writes(s.cwd, "w.txt", "hello\n")
    s.model.runs("touch x.txt", escalated=False)  # no sandbox to leave: codex refuses to ask
    s.model.answer("Done.")
    proc = s.cmd("send", s.path, "Write, then touch.", *s.flags(), "--mode", "full", "--wait")
    assert proc.returncode == 0, (proc.stderr.decode(), s.runtime_log()[-2000:])
    assert json.loads(proc.stdout.decode().splitlines()[-1])["status"] == "completed"
    assert exists(s, "w.txt") and exists(s, "x.txt") and s.events("request") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="claude-agent-acp offers bypassPermissions to a user other than root")
def test_full_on_claude_as_root_outside_a_sandbox_exits_5_with_the_agents_modes(start):
    s = start("claude")
    proc = s.cmd("send", s.path, "hi", *s.flags(), "--mode", "full")
    assert proc.returncode == 5
    assert "does not offer mode bypassPermissions (it offers default, acceptEdits, plan" in proc.stderr.decode()
    assert s.events("accepted") == [] and s.model.count() == 0


def test_edit_on_gemini_in_an_untrusted_folder_exits_5_with_its_reason(start):
    s = start("gemini")
    proc = s.cmd("send", s.path, "hi", *s.flags(), "--mode", "edit")
    assert proc.returncode == 5
    assert "Cannot enable privileged approval modes in an untrusted folder" in proc.stderr.decode()
    assert s.events("accepted") == [] and s.model.count() == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_rules_run_an_allowed_command_and_refuse_the_rest_with_no_human(start, agent):
    s = start(agent)
    s.model.runs("touch ok.txt")
    s.model.runs("touch bad.txt")
    s.model.answer("Refused, fine.")
    proc = s.cmd("send", s.path, "Touch both.", *s.flags(), "--allow", "command:touch ok*", "--deny", "*", "--wait")
    # never parked: --wait returns with the result (codex-acp ends its turn on the reject: cancelled, exit 8)
    assert proc.returncode == (8 if agent == "codex" else 0), (proc.returncode, proc.stderr.decode())
    assert status(s.path, env=s.env)["state"] == "idle"
    decided = list(requests(s).values())
    assert [[r["state"] for r in states] for states in decided] == [["pending", "replied"]] * 2
    answers = [(r.get("command"), r["answer"], r["by"], r["rule"]) for _, r in decided]
    if agent == "gemini":  # a title is no command: `command:touch ok*` sees nothing, `*` refuses both
        assert answers == [(None, "deny", "rule", "*")] * 2 and not exists(s, "ok.txt")
    else:
        assert answers == [("touch ok.txt", "allow", "rule", "command:touch ok*"),
                           ("touch bad.txt", "deny", "rule", "*")]
        assert exists(s, "ok.txt")
    assert not exists(s, "bad.txt")
    assert refusal_told(s, agent)


def line(agent, command):
    """The command line a request carries: gemini names its command only in
    the tool call's title, which harnessctl never takes for a command."""
    return None if agent == "gemini" else command


def refusal_told(s, agent):
    """What the model was told of the refused command: claude and gemini in the
    same turn; codex-acp ended its turn, so in the next one."""
    if agent == "codex":
        s.send("Why did you stop?")
        s.wait("result", 2)
        return mr.tool_outputs({"body": s.model.wait_requests(3)[2]})["call_run_1"].endswith("aborted by user")
    last = s.model.wait_requests(3)[2]
    if agent == "claude":
        return "User refused permission to run tool" in mm.tool_results(last)
    return {"error": 'Tool "run_shell_command" was canceled by the user.'} in [
        f["response"] for f in mg.function_responses(last)]
