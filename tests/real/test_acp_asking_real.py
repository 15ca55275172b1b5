"""What a real ACP agent asks of a person (issue 35): codex-acp 2.6.0 relays an
MCP server's elicitation (acp_support/eliciting_mcp.py) as a question whose
reply reaches that server; claude-agent-acp 0.101.0's plan mode switches are
`mode` requests that only a reply or a `mode` rule answers, its questions
are forms; a deny by rule keeps claude's turn.  Each against the project's mock model on 127.0.0.1
(acp_support/agents.py)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from acp_support.agents import PERMISSION_FILE, sessions
from claudecode_support import mock_messages as mm
from cliutil import ROOT, only
from codex_support import mock_responses as mr

pytestmark = pytest.mark.real

SERVER = os.path.join(ROOT, "tests", "support", "acp_support", "eliciting_mcp.py")


@pytest.fixture
def start(workdir):
    with sessions(workdir) as start:
        yield start


def with_eliciting_server(s) -> str:
    """codex's config gains the eliciting MCP server (its tools approved up
    front, so only the elicitation asks); the file its results go to."""
    log = os.path.join(s.root, "elicitations.jsonl")
    config = os.path.join(s.root, "codex_home", "config.toml")
    with open(config, "a", encoding="utf-8") as f:
        f.write('\n[mcp_servers.tickets]\ncommand = %s\nargs = [%s]\ndefault_tools_approval_mode = "approve"\n'
                'env = { ELICITING_MCP_LOG = %s }\n' % (json.dumps(sys.executable), json.dumps(SERVER),
                                                        json.dumps(log)))
    s.model.mock.add(mr.function_call("file_ticket", {}, "call_ticket", namespace="mcp__tickets"))
    return log


def parked(s, *flags: str):
    """`send --wait` that stops at a parked request: that request."""
    proc = s.cmd("send", s.path, "File a ticket.", *s.flags(), *flags, "--wait")
    assert proc.returncode == 9, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-3000:])
    return json.loads(proc.stdout.decode().splitlines()[-1])


def finished(s):
    """The result of the one input, once the run ended."""
    waited = s.cmd("wait", s.path, only(s.events("accepted"))["input_id"])
    return waited.returncode, json.loads(waited.stdout.decode().splitlines()[-1])


def elicited(log: str):
    with open(log, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_codex_relays_an_mcp_elicitation_as_a_question_and_the_reply_reaches_the_server(start):
    s = start("codex")
    log = with_eliciting_server(s)
    s.model.answer("Filed.")
    request = parked(s)
    assert (request["kind"], request["elicitation"], request["options"]) == ("question", "form", ["decline", "cancel"])
    assert {q["id"]: q["answer_type"] for q in request["questions"]} == {"title": "string", "count": "integer"}
    assert not any(q.get("optional") for q in request["questions"])  # the server requires both
    assert s.cmd("reply", s.path, request["request_id"], '{"title": "Crash", "count": "3"}').returncode == 0
    code, result = finished(s)
    assert (code, result["status"], result["output"]) == (0, "completed", "Filed.")
    assert elicited(log) == [{"action": "accept", "content": {"title": "Crash", "count": 3}}]


def test_codex_relays_a_declined_elicitation_to_the_server(start):
    s = start("codex")
    log = with_eliciting_server(s)
    s.model.answer("Not filed.")
    request = parked(s)
    assert s.cmd("reply", s.path, request["request_id"], "decline").returncode == 0
    code, result = finished(s)
    assert (code, result["status"]) == (0, "completed")
    assert [e["action"] for e in elicited(log)] == ["decline"]


def test_claudes_question_is_a_form_whose_plain_text_reply_reaches_the_model(start):
    s = start("claude")
    s.model.mock.script(mm.reply(mm.tool_use("AskUserQuestion", {"questions": [{
        "question": "Which colour?", "header": "Colour", "multiSelect": False,
        "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]}]})))
    s.model.answer("Red it is.")
    request = parked(s)
    assert (request["kind"], request["elicitation"], request["message"]) == ("question", "form", "Which colour?")
    assert request["questions"][0]["options"] == ["Red", "Blue"]  # and an optional free-text field
    assert s.cmd("reply", s.path, request["request_id"], "Red").returncode == 0
    code, result = finished(s)
    assert (code, result["output"]) == (0, "Red it is.")
    (answered,) = s.model.wait_requests(2)[-1]["messages"][-1]["content"]
    assert '"Which colour?"="Red"' in answered["content"]


def plans(s) -> None:
    """The model enters plan mode (claude asks no one) and asks to leave it with a plan."""
    s.model.mock.script(mm.reply(mm.tool_use("EnterPlanMode", {})),
                        mm.reply(mm.tool_use("ExitPlanMode", {"plan": "1. Write the file."})))


def test_claudes_plan_exit_parks_under_mode_full_and_allow_everything_until_a_reply(start):
    s = start("claude")
    plans(s)
    s.model.answer("Ready.")
    request = parked(s, "--mode", "full", "--allow", "*")
    assert request["kind"] == "mode" and request["name"] == "ExitPlanMode"
    assert "allow" in request["options"] and "deny" in request["options"]
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    code, result = finished(s)
    assert (code, result["status"], result["output"]) == (0, "completed", "Ready.")


def test_claudes_plan_exit_is_answered_by_a_mode_rule(start):
    s = start("claude")
    plans(s)
    s.model.answer("Ready.")
    proc = s.cmd("send", s.path, "Plan it.", *s.flags(), "--mode", "full", "--allow", "mode", "--allow", "*",
                 "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-3000:])
    assert json.loads(proc.stdout.decode().splitlines()[-1])["output"] == "Ready."
    (replied,) = [r for r in s.events("request") if r["state"] == "replied"]
    assert (replied["kind"], replied["answer"], replied["rule"]) == ("mode", "allow", "mode")


def test_claudes_turn_goes_on_after_a_deny_by_rule_with_its_reject_once_option(start):
    s = start("claude")
    s.model.asks_permission()
    s.model.answer("I did not create it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--deny", "command", "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-3000:])
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (result["status"], result["output"]) == ("completed", "I did not create it.")
    replied = s.events("request")[-1]
    assert (replied["answer"], replied["by"]) == ("deny", "rule")
    assert replied["option_kinds"][replied["options"].index("deny")] == "reject_once"
    assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
