"""The ACP adapter end to end through the CLI against the real agents: codex-acp
2.6.0, claude-agent-acp 0.101.0 and gemini-cli 0.61.0 (`--acp`), each against
the project's mock of its model API on 127.0.0.1 (tests/support/acp_support/agents.py).

Each claim of adapters/acp/manifest.json's per-agent capability table names
the test here that proved it against that agent.  Skipped when the pinned
packages are missing (HARNESSCTL_TEST_ACP_NPM), failed instead under
HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).  No test sleeps: a turn is held
open at a gate of the mock (codex's mock streams slowly instead) until the test
has done what it must do mid-turn.
"""

from __future__ import annotations

import json
import os

import pytest
from acp_support.agents import AGENTS, PERMISSION_FILE, sessions
from cliutil import only, status, wait_for

pytestmark = pytest.mark.real

STEERING = ("codex", "claude")  # advertise _meta.steering.supported and inject into the running turn
RESUMING = ("codex", "claude")  # offer session/resume (gemini 0.61.0 cannot load a session)
LONG = "PART1 This is the first part of a deliberately slow answer that streams in many small pieces. " * 3
STEER = "STEER: please also mention bananas"


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session over that real agent (several per test allowed)."""
    with sessions(workdir) as start:
        yield start


@pytest.mark.parametrize("agent", AGENTS)
def test_plain_run_completes_with_the_agents_answer(start, agent):
    s = start(agent)
    s.model.answer("Hello from the mock.")
    s.send("Say hello.")
    result = only(s.wait("result"))
    accepted = only(s.events("accepted"))
    assert accepted["delivery"] == "start" and accepted["run_id"] == result["run_id"]
    assert result["status"] == "completed" and result["error"] is None
    assert result["output"] == "Hello from the mock."
    assert result["input_ids"] == [accepted["input_id"]]
    assert s.events("message")[-1]["text"] == "Hello from the mock."
    body = s.model.wait_requests(1)[-1]
    assert s.model.user_texts(body)[-1] == "Say hello."


@pytest.mark.parametrize("agent", STEERING)
def test_a_send_mid_turn_steers_into_the_same_run(start, agent):
    s = start(agent)
    s.model.held(LONG)
    s.model.answer("Steered answer: bananas are included.")
    s.send("Write a long answer.")
    s.wait_log("text.delta")
    s.send(STEER)
    first, second = s.events("accepted")[:2]
    assert second["delivery"] == "steer" and second["run_id"] == first["run_id"]
    body = s.model.wait_requests(2)[1]  # the steer reached the model while the first reply was held
    s.model.release()
    texts = s.model.user_texts(body)
    assert texts[-1] == STEER and "Write a long answer." in texts
    result = only(s.wait("result"))
    assert result["status"] == "completed" and result["run_id"] == first["run_id"]
    assert result["input_ids"] == [first["input_id"], second["input_id"]]
    assert result["output"].endswith("Steered answer: bananas are included.")
    wait_for(lambda: status(s.path, env=s.env)["state"] == "idle", 60, "idle")
    assert len(s.events("result")) == 1


def test_a_send_mid_turn_on_gemini_waits_for_its_own_next_run(start):
    s = start("gemini")
    s.model.held("First answer, held open.")
    s.model.answer("Second answer.")
    s.send("Write a long answer.")
    s.wait_log("text.delta")
    s.send("SECOND prompt: what about apples?")
    first, second = s.events("accepted")[:2]
    assert second["delivery"] == "queued" and second["run_id"] != first["run_id"]
    assert s.model.count() == 1  # not sent to gemini while the first runs (it would cancel it)
    s.model.release()
    one, two = s.wait("result", 2)
    assert (one["status"], one["input_ids"], one["output"]) == (
        "completed", [first["input_id"]], "First answer, held open.")
    assert (two["status"], two["input_ids"], two["output"]) == ("completed", [second["input_id"]], "Second answer.")
    assert two["run_id"] != one["run_id"]
    requests = s.model.mock.requests
    assert not requests[0]["aborted"]
    assert "First answer, held open." in s.model.history(requests[1]["body"])  # gemini drops cancelled turns


@pytest.mark.parametrize("agent", AGENTS)
def test_cancel_ends_the_running_run_cancelled(start, agent):
    s = start(agent)
    s.model.held(LONG)
    s.send("Write a long answer.")
    accepted = only(s.events("accepted"))
    s.wait_log("text.delta")
    assert s.cmd("cancel", s.path).returncode == 0
    result = only(s.wait("result"))
    s.model.release()
    assert result["status"] == "cancelled" and result["input_ids"] == [accepted["input_id"]]


@pytest.mark.parametrize("agent", AGENTS)
def test_permission_denied_by_a_later_reply_does_not_run_the_command(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("I did not create it.")  # codex ends a refused turn instead of asking the model again
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait")
    assert proc.returncode == 9, (proc.returncode, proc.stderr.decode())
    request = json.loads(proc.stdout.decode().splitlines()[-1])
    assert request["type"] == "request" and request["kind"] == "permission" and request["state"] == "pending"
    assert "deny" in request["options"] and PERMISSION_FILE in json.dumps(request)
    assert status(s.path, env=s.env)["state"] == "awaiting_reply"
    assert s.cmd("reply", s.path, request["request_id"], "deny").returncode == 0
    input_id = only(s.events("accepted"))["input_id"]
    waited = s.cmd("wait", s.path, input_id)
    result = json.loads(waited.stdout.decode().splitlines()[-1])
    if agent == "codex":  # codex-acp answers a refusal by interrupting the turn
        assert (waited.returncode, result["status"]) == (8, "cancelled")
    else:
        assert (waited.returncode, result["status"], result["output"]) == (0, "completed", "I did not create it.")
    assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
    final = s.events("request")[-1]
    assert (final["request_id"], final["state"], final["answer"]) == (request["request_id"], "replied", "deny")


@pytest.mark.parametrize("agent", AGENTS)
def test_permission_allowed_by_a_later_reply_runs_the_command(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("Created it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait")
    assert proc.returncode == 9, (proc.returncode, proc.stderr.decode())
    request = json.loads(proc.stdout.decode().splitlines()[-1])
    assert "allow" in request["options"]
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    waited = s.cmd("wait", s.path, only(s.events("accepted"))["input_id"])
    result = json.loads(waited.stdout.decode().splitlines()[-1])
    assert (waited.returncode, result["status"], result["output"]) == (0, "completed", "Created it.")
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))


@pytest.mark.parametrize("agent", RESUMING)
def test_send_after_idle_exit_resumes_the_conversation(start, agent):
    s = start(agent, HARNESSCTL_IDLE_TIMEOUT="3")
    s.model.answer("Noted: the secret word is PINEAPPLE.", "It was PINEAPPLE.")
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    s.runtime_gone()
    s.send("What was the secret word?")
    first, second = s.wait("result", 2)
    assert second["status"] == "completed" and second["output"] == "It was PINEAPPLE."
    body = s.model.wait_requests(2)[-1]
    assert s.model.user_texts(body)[-1] == "What was the secret word?"
    history = s.model.history(body)  # the new agent process was shown the earlier turn
    assert "Remember the secret word PINEAPPLE." in history and "Noted: the secret word is PINEAPPLE." in history


def test_gemini_after_idle_exit_starts_a_new_session_and_says_so(start):
    s = start("gemini", HARNESSCTL_IDLE_TIMEOUT="3")
    s.model.answer("Noted.", "A fresh start.")
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    s.runtime_gone()
    s.send("What was the secret word?")
    second = s.wait("result", 2)[1]
    assert second["status"] == "completed" and second["output"] == "A fresh start."
    notes = [e["message"] for e in s.events("log", "diagnostic") if "cannot resume" in e.get("message", "")]
    # session/load fails in gemini-cli 0.61.0: the documented choice is a new session and a diagnostic
    assert len(notes) == 1 and "a new session starts" in notes[0], s.events("log", "diagnostic")
    assert "Remember the secret word PINEAPPLE." not in s.model.history(s.model.wait_requests(2)[-1])


USAGE = {  # what each mock reports, as the agent passes it on
    "codex": {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 10, "reasoning_tokens": 3,
              "total_tokens": 110},
    "claude": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "total_tokens": 15},
    "gemini": {"input_tokens": 10, "output_tokens": 5},
}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_run_reports_the_tokens_the_model_counted(start, agent):
    s = start(agent)
    s.model.answer("Counted.")
    s.send("Count.")
    result = only(s.wait("result"))
    assert result["usage"] == USAGE[agent]
    if agent == "claude":  # only claude-agent-acp reports a cost
        assert result["cost_usd"] > 0
    else:
        assert result["cost_usd"] is None


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on(start, agent):
    s = start(agent)
    s.model.answer("Noted: the secret word is PINEAPPLE.")
    s.model.held(LONG)
    s.model.answer("It was PINEAPPLE.")
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    s.send("Write a long answer.")
    s.wait("log", kind="text.delta", run_id=s.events("accepted")[-1]["run_id"])
    s.kill_agent()
    crashed = s.wait("result", 2)[1]
    s.model.release()
    assert crashed["status"] == "failed" and crashed["error"]
    s.send("What was the secret word?")
    last = s.wait("result", 3)[2]
    assert last["status"] == "completed" and last["output"] == "It was PINEAPPLE."
    history = s.model.history(s.model.wait_requests(3)[-1])
    # codex and claude resume the session; gemini 0.61.0 cannot, and starts a new one
    assert ("Remember the secret word PINEAPPLE." in history) == (agent in RESUMING)


ERROR_TEXT = {"codex": "Authentication required", "claude": "Authentication required", "gemini": "mock says 401"}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_401_from_the_model_endpoint_fails_the_run_with_the_error(start, agent):
    s = start(agent)
    s.model.fail(401, "mock says 401")
    s.send("This will fail.")
    result = only(s.wait("result"))
    assert result["status"] == "failed" and ERROR_TEXT[agent] in result["error"]


def test_a_missing_agent_command_exits_5_naming_it(start):
    s = start("codex", HARNESSCTL_ACP_CODEX_CMD="/nonexistent/codex-acp")
    proc = s.cmd("send", s.path, "hi", *s.flags())
    assert proc.returncode == 5 and "/nonexistent/codex-acp" in proc.stderr.decode()
    assert s.events("accepted") == []


def test_codex_acp_without_its_codex_exits_5_and_its_reason_is_in_the_runtime_log(start):
    s = start("codex", CODEX_PATH="/nonexistent/codex")  # codex-acp exits 0 without answering initialize
    proc = s.cmd("send", s.path, "hi", *s.flags())
    assert proc.returncode == 5 and "exited" in proc.stderr.decode()
    assert "spawn /nonexistent/codex ENOENT" in s.runtime_log()  # the agent's stderr
    assert s.events("accepted") == [] and s.model.count() == 0


def test_claude_agent_acp_without_its_claude_exits_5_with_the_agents_reason(start):
    s = start("claude", CLAUDE_CODE_EXECUTABLE="/nonexistent/claude")  # session/new fails
    proc = s.cmd("send", s.path, "hi", *s.flags())
    assert proc.returncode == 5 and "native binary not found at /nonexistent/claude" in proc.stderr.decode()
    assert s.events("accepted") == [] and s.model.count() == 0
