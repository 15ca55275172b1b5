"""What an ACP agent asks of a person, black-box through the CLI over the fake
ACP agent: elicitations parked as questions and answered by `reply`, mode
switches that only a reply or a `mode` rule answers, and a deny that keeps
the agent's turn."""

from __future__ import annotations

import json

from acp_support.fakeagent import Agent
from cliutil import of_type, ok, wait_for

EVERYTHING = ("--mode", "full", "--allow", "*")


def parked(agent: Agent, text: str, *flags: str):
    """Send `text`; the request it parks, once it is in the file."""
    proc = agent.send(text, "--print-id", *flags)
    assert proc.returncode == 0, proc.stderr
    request = wait_for(lambda: of_type(agent.path, "request"), what="the request")[0]
    return proc.stdout.decode().strip(), request


def said(agent: Agent, input_id: str) -> str:
    code, result = agent.wait(input_id)
    assert (code, result["status"]) == (0, "completed"), result
    return result["output"]


def test_a_form_elicitation_parks_as_a_question_and_the_reply_reaches_the_agent_typed(workdir):
    agent = Agent(workdir)
    input_id, request = parked(agent, "/elicit form")
    assert (request["kind"], request["options"]) == ("question", ["decline", "cancel"])
    assert [q["id"] for q in request["questions"]] == ["title", "count"]
    ok("reply", agent.path, request["request_id"], '{"title": "Crash", "count": "3"}', env=agent.env)
    assert json.loads(said(agent, input_id).split(": ", 1)[1]) == {"action": "accept",
                                                                    "content": {"count": 3, "title": "Crash"}}


def test_a_form_elicitation_declined_by_reply(workdir):
    agent = Agent(workdir)
    input_id, request = parked(agent, "/elicit form")
    ok("reply", agent.path, request["request_id"], "decline", env=agent.env)
    assert said(agent, input_id) == 'elicitation: {"action": "decline"}'


def test_a_url_elicitation_parks_under_any_policy_and_carries_the_url(workdir):
    agent = Agent(workdir, preset="codex")
    input_id, request = parked(agent, "/elicit url", *EVERYTHING)
    assert request["url"] == "https://example.org/login" and request["options"] == ["accept", "decline", "cancel"]
    ok("reply", agent.path, request["request_id"], "accept", env=agent.env)
    assert said(agent, input_id) == 'elicitation: {"action": "accept"}'


def test_a_mode_switch_parks_under_mode_full_and_allow_everything(workdir):
    agent = Agent(workdir, preset="codex")
    input_id, request = parked(agent, "/switchmode", *EVERYTHING)
    assert request["kind"] == "mode" and request["state"] == "pending"
    ok("reply", agent.path, request["request_id"], "allow", env=agent.env)
    assert said(agent, input_id) == "mode: default"


def test_a_mode_rule_answers_a_mode_switch(workdir):
    agent = Agent(workdir, preset="codex")
    proc = agent.send("/switchmode", "--wait", "--deny", "mode", "--allow", "*")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == "mode: plan"
    replied = of_type(agent.path, "request")[-1]
    assert (replied["kind"], replied["answer"], replied["by"], replied["rule"]) == ("mode", "deny", "rule", "mode")


def test_a_deny_by_rule_selects_the_reject_option_and_the_turn_completes(workdir):
    agent = Agent(workdir, preset="codex")
    proc = agent.send("/approve", "--wait", "--deny", "*")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == "permission: cancel"  # codex-acp's reject_once option id
    replied = of_type(agent.path, "request")[-1]
    assert replied["option_kinds"][replied["options"].index(replied["answer"])] == "reject_once"


def test_a_fetch_of_an_elicitation_url_parks_under_mode_full_and_allow_everything(workdir):
    consent = {"toolCallId": "elicitation-e-9", "kind": "fetch", "title": "MCP server requests to open a URL",
               "rawInput": {"serverName": "tickets", "url": "https://example.org/login"}}
    agent = Agent(workdir, preset="codex", FAKE_ACP_APPROVE_TOOL=json.dumps(consent))
    input_id, request = parked(agent, "/approve", *EVERYTHING)
    assert (request["kind"], request["consent"], request["state"]) == ("permission", True, "pending")
    ok("reply", agent.path, request["request_id"], "allow", env=agent.env)
    assert said(agent, input_id) == "permission: allow_once"
