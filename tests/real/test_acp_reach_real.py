"""The ACP adapter end to end through the CLI against the reach agents (issue
21): opencode, copilot, qwen, pi, cline, kilocode, droid, auggie, openclaw, each
started by its PRESET command from its pinned npm prefix
(HARNESSCTL_TEST_ACP_REACH), offline against the project's mock model on
127.0.0.1 as its recipe says (tests/support/acp_support/recipes/).

Each scenario runs for the agents whose recipe's TRAITS allow it; where the
agents differ, the test says what each does.  Skipped when an agent's prefix
is missing, failed instead under HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).
No test sleeps: a turn is held open at a gate of the mock until the test has
done what it must do mid-turn.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List

import pytest
from acp_support import mock_chat as mc
from acp_support.agents import PERMISSION_FILE, sessions
from acp_support.recipes import trait, written
from cliutil import matching, only, status, wait_matching

from harnessctl.store import registry

pytestmark = pytest.mark.real

LONG = "PART1 This is the first part of a deliberately slow answer that streams in many small pieces. " * 3


def agents(**want: Any) -> List[str]:
    """The reach agents with a recipe whose TRAITS have these values."""
    return [name for name in written() if all(trait(name, key) == value for key, value in want.items())]


def agents_with(key: str) -> List[str]:
    """The reach agents whose trait `key` is set (truthy)."""
    return [name for name in written() if trait(name, key)]


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session over that real agent (several per test allowed)."""
    with sessions(workdir) as start:
        yield start


def last_json(proc) -> Dict[str, Any]:
    return json.loads(proc.stdout.decode().splitlines()[-1])


@pytest.mark.parametrize("agent", agents())
def test_plain_run_completes_with_the_agents_answer(start, agent):
    s = start(agent)
    s.model.answer("Hello from the mock.")
    s.send("Say hello.")
    result = only(s.wait("result"))
    accepted = only(s.events("accepted"))
    assert accepted["delivery"] == "start" and accepted["run_id"] == result["run_id"]
    assert (result["status"], result["error"], result["output"]) == ("completed", None, "Hello from the mock.")
    assert result["input_ids"] == [accepted["input_id"]]
    assert s.events("message")[-1]["text"] == "Hello from the mock."
    body = s.model.wait_requests(1)[-1]
    assert "Say hello." in s.model.user_texts(body)[-1]  # copilot and kilo decorate the prompt


@pytest.mark.parametrize("agent", agents())
def test_a_send_mid_turn_is_queued_for_its_own_next_run(start, agent):
    s = start(agent)
    s.model.held("First answer, held open.")
    s.model.answer("Second answer.")
    s.send("Write a long answer.")
    mid_turn(s, agent)
    s.send("SECOND prompt: what about apples?")
    first, second = s.events("accepted")[:2]
    assert second["delivery"] == "queued" and second["run_id"] != first["run_id"]
    assert s.model.count() == 1  # held by harnessctl, not sent into the running turn
    s.model.release()
    one, two = s.wait("result", 2)
    assert (one["status"], one["input_ids"], one["output"]) == (
        "completed", [first["input_id"]], "First answer, held open.")
    assert (two["status"], two["input_ids"], two["output"]) == ("completed", [second["input_id"]], "Second answer.")
    assert two["run_id"] != one["run_id"]
    body = s.model.wait_requests(2)[1]
    assert "SECOND prompt: what about apples?" in s.model.user_texts(body)[-1]
    assert "First answer, held open." in s.model.history(body)


def mid_turn(s, agent: str, **match: Any) -> None:
    """Wait until the held reply is being shown: its first text.delta, or for an
    agent that sends text only once the answer is complete, the reply waiting at
    the mock's gate (the run is then mid-turn all the same)."""
    if trait(agent, "streams"):
        s.wait("log", kind="text.delta", **match)
    else:
        s.model.mock.wait_gate("hold")


def ask(s, *extra: str) -> Dict[str, Any]:
    """Send a prompt whose model answer runs PERMISSION_FILE's command; the
    pending permission request `send --wait` stops at (exit 9)."""
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait", *extra)
    assert proc.returncode == 9, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-2000:])
    request = last_json(proc)
    assert request["type"] == "request" and request["kind"] == "permission" and request["state"] == "pending"
    assert PERMISSION_FILE in json.dumps(request)
    options = request["options"]  # one name per option, said in the agent's words (qwen has two "always")
    assert len(set(options)) == len(options) and not any(re.search(r"-[0-9]+$", o) for o in options), options
    return request


@pytest.mark.parametrize("agent", agents(asks=True))
def test_permission_denied_by_a_later_reply_does_not_run_the_command(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("I did not create it.")
    request = ask(s)
    assert "deny" in request["options"]
    assert status(s.path, env=s.env)["state"] == "awaiting_reply"
    assert s.cmd("reply", s.path, request["request_id"], "deny").returncode == 0
    waited = s.cmd("wait", s.path, only(s.events("accepted"))["input_id"])
    result = last_json(waited)
    assert (waited.returncode, result["status"]) == (0, "completed")
    if trait(agent, "deny_ends_turn"):  # the turn ends at the declined tool: the model is not asked again
        assert s.model.count() == 1
    else:  # the model is told the command was refused, and answers
        assert result["output"] == "I did not create it." and s.model.count() == 2
    assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
    final = s.events("request")[-1]
    assert (final["request_id"], final["state"], final["answer"]) == (request["request_id"], "replied", "deny")
    started = [e["tool_id"] for e in s.events("log", "tool.started")]
    assert started == [request["tool_id"]]  # one tool, one start: cline re-sends the declined call as failed


@pytest.mark.parametrize("agent", agents(asks=True))
def test_permission_allowed_by_a_later_reply_runs_the_command(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("Created it.")
    request = ask(s)
    assert "allow" in request["options"]
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    waited = s.cmd("wait", s.path, only(s.events("accepted"))["input_id"])
    result = last_json(waited)
    assert (waited.returncode, result["status"], result["output"]) == (0, "completed", "Created it.")
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))


# cline titles its request "run_commands: touch asked.txt"; the command a rule matches is its rawInput.commands
@pytest.mark.parametrize("agent", agents(asks=True))
def test_an_allow_rule_for_the_command_answers_its_request_with_no_human(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("Created it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--allow", "command:touch *", "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
    final = s.events("request")[-1]
    assert (final["command"], final["answer"], final["by"], final["rule"]) == (
        "touch %s" % PERMISSION_FILE, "allow", "rule", "command:touch *")
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))


@pytest.mark.parametrize("agent", agents(asks=False, runs_in_cwd=True))
def test_a_command_runs_without_asking(start, agent):
    s = start(agent)
    s.model.asks_permission()
    s.model.answer("Created it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode())
    assert last_json(proc)["output"] == "Created it." and s.events("request") == []
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))


@pytest.mark.parametrize("agent", agents(runs_in_cwd=False))
def test_a_command_run_outside_the_cwd_lands_there_and_is_said(start, agent):
    """openclaw's bridge does not pass the session's cwd to its gateway (only a
    "[Working directory: ...]" line in the prompt): its tools run in the
    gateway's agents.defaults.cwd (the recipe's: the test's work folder), else
    its workspace.  Bound to another --cwd, the command lands in the gateway's
    folder, not there, and harnessctl says so once (a diagnostic warning)."""
    s = start(agent)
    gateway_cwd, s.cwd = s.cwd, os.path.join(s.root, "elsewhere")
    os.makedirs(s.cwd)
    s.model.asks_permission()
    s.model.answer("Created it.")
    request = ask(s)
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    result = last_json(s.cmd("wait", s.path, only(s.events("accepted"))["input_id"]))
    assert (result["status"], result["output"]) == ("completed", "Created it.")
    assert os.path.exists(os.path.join(gateway_cwd, PERMISSION_FILE))
    assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
    warning = only([e for e in s.events("log", "diagnostic") if e["level"] == "warning"])
    assert gateway_cwd in warning["message"] and s.cwd in warning["message"], warning


@pytest.mark.parametrize("agent", agents())
def test_cancel_ends_the_running_run_cancelled(start, agent):
    s = start(agent)
    s.model.held(LONG)
    s.send("Write a long answer.")
    accepted = only(s.events("accepted"))
    mid_turn(s, agent)
    assert s.cmd("cancel", s.path).returncode == 0
    result = only(s.wait("result"))
    s.model.release()
    assert result["status"] == "cancelled" and result["input_ids"] == [accepted["input_id"]]


@pytest.mark.parametrize("agent", agents())
def test_cancel_before_the_first_token_ends_the_run_cancelled_and_the_next_send_goes_on(start, agent):
    s = start(agent)
    s.model.stalls()
    s.model.answer("After the cancel.")
    s.send("Write a long answer.")
    s.model.wait_requests(1)  # the model request is in flight, nothing answered yet
    assert s.cmd("cancel", s.path).returncode == 0
    result = only(s.wait("result"))
    s.model.release()
    # qwen 0.15.10 answers this prompt with a JSON-RPC error ("Request was aborted."): still a cancel
    assert result["status"] == "cancelled", result
    s.send("Say something.")
    last = s.wait("result", 2)[1]
    assert (last["status"], last["output"]) == ("completed", "After the cancel.")


@pytest.mark.parametrize("agent", agents(resumes=True))
def test_send_after_idle_exit_resumes_the_conversation(start, agent):
    s = start(agent, HARNESSCTL_IDLE_TIMEOUT="3")
    s.model.answer("Noted: the secret word is PINEAPPLE.", "It was PINEAPPLE.")
    s.model.answer_any_more("It was PINEAPPLE.")  # the history below proves the resume, not the script's order
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    s.runtime_gone()
    s.send("What was the secret word?")
    second = s.wait("result", 2)[1]
    assert second["status"] == "completed" and second["output"] == "It was PINEAPPLE."
    body = s.model.wait_requests(2)[-1]
    assert "What was the secret word?" in s.model.user_texts(body)[-1]
    history = "\n".join(s.model.history(body))  # the new agent process was shown the earlier turn
    assert "Remember the secret word PINEAPPLE." in history and "Noted: the secret word is PINEAPPLE." in history


@pytest.mark.parametrize("agent", agents(forks=True))
def test_a_fork_continues_the_session_and_the_original_never_sees_the_forks_turns(start, agent):
    """`harnessctl fork FILE NEW --cwd OTHER`; NEW's first send opens its
    session by session/fork of FILE's: its request holds FILE's turn, and
    FILE's next request holds nothing of NEW's."""
    s = start(agent)
    s.model.answer("Noted: the secret word is PINEAPPLE.", "It was PINEAPPLE.", "Still here.")
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    new, other = os.path.join(s.root, "forked.jsonl"), os.path.join(s.root, "other")
    os.makedirs(other)
    proc = s.cmd("fork", s.path, new, "--cwd", other)
    assert proc.returncode == 0, proc.stderr.decode()
    proc = s.cmd("send", new, "FORKTEXT: what was the secret word?")
    assert proc.returncode == 0, proc.stderr.decode()
    assert only(wait_matching(new, "result", timeout=90))["output"] == "It was PINEAPPLE."
    forked = s.model.wait_requests(2)[1]
    assert "FORKTEXT: what was the secret word?" in s.model.user_texts(forked)[-1]
    history = "\n".join(s.model.history(forked))
    assert "Remember the secret word PINEAPPLE." in history and "Noted: the secret word is PINEAPPLE." in history
    assert os.path.realpath(other) in json.dumps(forked)  # the model is told the fork's own cwd
    assert only(matching(new, "log", "session"))["session_id"] != only(s.events("log", "session"))["session_id"]
    s.send("ORIGTEXT: and now?")
    assert s.wait("result", 2)[1]["output"] == "Still here."
    original = s.model.wait_requests(3)[2]
    assert "ORIGTEXT: and now?" in s.model.user_texts(original)[-1]
    assert "Remember the secret word PINEAPPLE." in "\n".join(s.model.history(original))
    assert not any("FORKTEXT" in t or "It was PINEAPPLE." in t for t in s.model.history(original))


@pytest.mark.parametrize("agent", agents(forks=False))
def test_fork_refuses_the_file_of_an_agent_that_cannot_fork_and_says_why(start, agent):
    """The preset does not claim fork, and `harnessctl fork` quotes its
    degraded.fork: the agent's initialize offers no sessionCapabilities.fork,
    or (opencode) its fork keeps the source session's directory."""
    s = start(agent)
    s.model.answer("Hello from the mock.")
    s.send("Say hello.")
    s.wait("result")
    why = preset(agent)["degraded"]["fork"]
    offered = "fork" in (only(s.events("log", "session"))["capabilities"].get("sessionCapabilities") or {})
    assert offered == ("does not offer session/fork" not in why), why  # opencode offers it: see its phrase
    new = os.path.join(s.root, "forked.jsonl")
    proc = s.cmd("fork", s.path, new)
    assert (proc.returncode, proc.stderr.decode()) == (
        2, "harnessctl: the acp agent %s cannot fork: %s\n" % (agent, why))
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")


@pytest.mark.parametrize("agent", agents_with("usage"))
def test_a_run_reports_the_tokens_the_model_counted(start, agent):
    s = start(agent)
    s.model.answer("Counted.")
    s.send("Count.")
    result = only(s.wait("result"))
    assert (result["usage"], result["cost_usd"]) == (trait(agent, "usage"), trait(agent, "cost"))


@pytest.mark.parametrize("agent", agents())
def test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on(start, agent):
    s = start(agent)
    s.model.answer("Noted: the secret word is PINEAPPLE.")
    s.model.held(LONG)
    s.model.answer("It was PINEAPPLE.")
    s.send("Remember the secret word PINEAPPLE.")
    s.wait("result")
    s.send("Write a long answer.")
    mid_turn(s, agent, run_id=s.events("accepted")[-1]["run_id"])
    s.kill_agent()
    crashed = s.wait("result", 2)[1]
    s.model.release()
    assert crashed["status"] == "failed" and crashed["error"]
    s.send("What was the secret word?")
    last = s.wait("result", 3)[2]
    assert last["status"] == "completed" and last["output"] == "It was PINEAPPLE."
    history = "\n".join(s.model.history(s.model.wait_requests(3)[-1]))
    assert ("Remember the secret word PINEAPPLE." in history) == trait(agent, "resumes")


@pytest.mark.parametrize("agent", agents(error_as_text=False))
def test_a_401_from_the_model_endpoint_fails_the_run_with_the_error(start, agent):
    s = start(agent)
    s.model.fail(401, "mock says 401", sticky=True)
    s.send("This will fail.")
    result = only(s.wait("result"))
    if trait(agent, "error_401") is None:  # the agent drops the error: the turn ends as if the model said nothing
        assert (result["status"], result["output"], result["error"]) == ("completed", "", None), result
        return
    assert result["status"] == "failed" and trait(agent, "error_401") in result["error"], result


@pytest.mark.parametrize("agent", agents(error_as_text=True))
def test_a_401_on_an_agent_that_reports_it_as_text_completes_with_the_error_as_output(start, agent):
    """copilot retries, then ends the turn normally (stopReason end_turn) with
    "Error: Authentication failed ... (HTTP 401)" as its message: nothing on
    the wire says the turn failed.  openclaw's bridge ends a failed gateway run
    end_turn and drops the error (only the gateway's log has it): nothing is said."""
    s = start(agent)
    s.model.fail(401, "mock says 401", sticky=True)
    s.send("This will fail.")
    result = only(s.wait("result"))
    assert (result["status"], result["error"]) == ("completed", None)
    if trait(agent, "error_401"):
        assert trait(agent, "error_401") in result["output"], result
    else:
        assert result["output"] == "", result


MODE_CASES = [(agent, level) for agent in agents_with("modes") for level in sorted(trait(agent, "modes"))]


def preset(agent: str) -> Dict[str, Any]:
    """The agent's preset in adapters/acp/manifest.json."""
    return registry.manifest("acp")["agents"].get(agent, {})


def manifest_modes(agent: str) -> Dict[str, str]:
    """The preset's --mode table in adapters/acp/manifest.json (empty when it has none)."""
    return preset(agent).get("modes") or {}


@pytest.mark.parametrize("agent,level", MODE_CASES)
def test_the_mode_table_entry_asks_what_its_level_says(start, agent, level):
    """ask: a command asks; edit: a file write runs unasked and a command asks;
    full: a file write and a command run unasked.  Through `--mode LEVEL` where the manifest's
    table has the entry, else through HARNESSCTL_ACP_MODE = the recipe's
    proposed id (the agent's own)."""
    own = trait(agent, "modes")[level]
    if level in manifest_modes(agent):
        s, first = start(agent), ["--mode", level]
    else:
        s, first = start(agent, HARNESSCTL_ACP_MODE=own), []
    if level in ("edit", "full"):
        s.model.writes(s.cwd, "edited.txt", "written unasked\n")
        s.model.answer("Wrote it.")
        proc = s.cmd("send", s.path, "Write the file.", *s.flags(), "--wait", *first)
        assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
        with open(os.path.join(s.cwd, "edited.txt"), encoding="utf-8") as f:
            assert f.read() == "written unasked\n"
        first = []
    s.model.asks_permission()
    s.model.answer("Created it.")
    if level == "full":
        proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait", *first)
        assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
        assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE)) and s.events("request") == []
    else:
        ask(s, *first)
        assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
    assert only(s.events("log", "session"))["approval_policy"] == own


def test_droid_auto_low_runs_a_command_the_model_rates_low_risk_without_asking(start):
    """droid's Execute tool makes the model rate each command low/medium/high;
    auto-low (the mode table's `edit`) runs a "low" one unasked and asks for
    the rest (the mock rates its commands "high" everywhere else)."""
    s = start("droid", HARNESSCTL_ACP_MODE=trait("droid", "modes")["edit"])
    command = "touch %s" % PERMISSION_FILE
    s.model.mock.script(mc.reply(mc.call("Execute", {
        "summary": "Create the marker file", "command": command,
        "riskLevelReason": "It creates one empty file in the workspace.", "riskLevel": "low"})))
    s.model.answer("Created it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE)) and s.events("request") == []


def test_pi_thinking_levels_are_no_approval_policy_and_it_reports_context_not_tokens(start):
    """pi-acp offers pi's thinking levels as ACP `modes` (pi never asks), so the
    session line names no approval policy; its usage_update says how full the
    context is (the mock's total_tokens of 128000, from models.json), while the
    result carries no token counts."""
    s = start("pi")
    s.model.answer("Counted.")
    s.send("Count.")
    result = only(s.wait("result"))
    session = only(s.events("log", "session"))
    assert session["approval_policy"] is None and session["harness"] == "pi-acp"
    context = [(e["context_used"], e["context_window"]) for e in s.events("log", "usage")]
    assert context[-1] == (mc.USAGE["total_tokens"], 128000)
    assert (result["usage"], result["cost_usd"]) == (None, None)


@pytest.mark.parametrize("agent", written())
def test_the_manifest_maps_only_modes_a_test_proved(agent):
    """Every --mode entry of a reach preset is one the mode test above ran (no agent needed)."""
    proven = trait(agent, "modes")
    assert {level: proven.get(level) for level in manifest_modes(agent)} == manifest_modes(agent)


@pytest.mark.parametrize("agent", agents_with("config_mode"))
def test_a_mode_offered_only_as_a_config_option_is_set_through_it(start, agent):
    """opencode and kilo list build/plan only as configOptions (category mode),
    with no `modes` object: HARNESSCTL_ACP_MODE goes through session/set_config_option."""
    mode, shown = trait(agent, "config_mode")
    s = start(agent, HARNESSCTL_ACP_MODE=mode)
    s.model.answer("Planned.")
    s.send("Make a plan.")
    result = only(s.wait("result"))
    assert (result["status"], result["output"]) == ("completed", "Planned.")
    assert only(s.events("log", "session"))["approval_policy"] == mode
    assert shown in s.model.user_texts(s.model.wait_requests(1)[0])[-1]


# capability -> the tests here that prove it for the agents they run for (as test_acp_claims.PROOFS)
