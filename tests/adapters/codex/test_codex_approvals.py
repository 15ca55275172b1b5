"""What the Codex adapter asks the caller: approvals list only the decisions
codex offers, permission requests and MCP elicitations become requests, and
each reply goes back in the response shape codex's schema gives (the
app-server JSON schema of the pinned 0.171.0)."""

from __future__ import annotations

import pytest
from codex_support.fake_host import FakeHost, open_run

from harnessctl.kit.backend import Input

T1 = "turn-1"
BASE = {"threadId": "thr-1", "turnId": T1, "itemId": "call_1", "startedAtMs": 1796207983984}


@pytest.fixture
def host():
    fake = FakeHost()
    yield fake
    assert fake.vocabulary_problems() == []


@pytest.fixture
def wire(tmp_path, host):
    """A backend with an open run (run-1, codex turn turn-1)."""
    return open_run(tmp_path, host, T1)


def ask(wire, host, method, params, native_id=0):
    wire.ask(native_id, method, dict(BASE, **params))
    (request,) = host.named("request")
    _, request_id, run_id, kind, message, options, details = request
    return {"id": request_id, "run_id": run_id, "kind": kind, "message": message, "options": options,
            "details": details}


def answer(wire, host, request, reply):
    wire.backend.answer(host.token(request["id"]), reply)
    return wire.replies()[-1]


# -- command approvals ---------------------------------------------------------------


def test_command_approval_without_available_decisions_offers_every_plain_decision(wire, host):
    request = ask(wire, host, "item/commandExecution/requestApproval", {"command": "ls", "cwd": "/w"})
    assert request["options"] == ["allow", "deny", "allow-session", "cancel"]


def test_a_command_approval_carries_the_cwd_codex_runs_it_in_for_the_rules(wire, host):
    request = ask(wire, host, "item/commandExecution/requestApproval", {"command": "ls", "cwd": "/elsewhere"})
    assert request["details"]["cwd"] == "/elsewhere"


def test_deny_is_offered_even_where_codex_leaves_decline_out(wire, host):
    request = ask(wire, host, "item/commandExecution/requestApproval",
                  {"command": "ls", "availableDecisions": ["accept", "cancel"]})
    assert request["options"] == ["allow", "deny", "cancel"]
    assert answer(wire, host, request, "deny") == {"id": 0, "result": {"decision": "decline"}}


def test_session_approval_is_offered_only_when_codex_lists_it(wire, host):
    request = ask(wire, host, "item/commandExecution/requestApproval",
                  {"command": "ls", "availableDecisions": ["accept", "acceptForSession", "decline"]})
    assert request["options"] == ["allow", "allow-session", "deny"]
    assert answer(wire, host, request, "allow-session")["result"] == {"decision": "acceptForSession"}


def test_network_policy_amendments_become_host_options_answered_with_the_amendment(wire, host):
    allow = {"applyNetworkPolicyAmendment": {"network_policy_amendment": {"host": "pypi.org", "action": "allow"}}}
    deny = {"applyNetworkPolicyAmendment": {"network_policy_amendment": {"host": "pypi.org", "action": "deny"}}}
    request = ask(wire, host, "item/commandExecution/requestApproval",
                  {"command": None, "networkApprovalContext": {"host": "pypi.org", "protocol": "https"},
                   "availableDecisions": ["accept", allow, deny, "cancel"]})
    assert request["options"] == ["allow", "allow-host", "deny-host", "deny", "cancel"]
    assert request["message"] == "Allow network access to pypi.org (https)"
    assert request["details"]["input"]["network"] == {"host": "pypi.org", "protocol": "https"}
    assert answer(wire, host, request, "deny-host")["result"] == {"decision": deny}


def test_option_descriptions_say_what_each_option_does(wire, host):
    request = ask(wire, host, "item/commandExecution/requestApproval",
                  {"command": "touch a", "availableDecisions": [
                      "accept", {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch"]}}]})
    assert request["options"] == ["allow", "allow-always", "deny"]
    descriptions = request["details"]["option_descriptions"]
    assert len(descriptions) == 3 and "`touch`" in descriptions[1]


@pytest.mark.parametrize("kind,words", [
    ("command", "Run command: cat x"),
    ("writeStdin", "Write to the running command: cat x"),
    ("humanCommand", "Confirm (a checkpoint that needs a person): cat x"),
])
def test_approval_kind_is_carried_and_said_in_the_message(wire, host, kind, words):
    request = ask(wire, host, "item/commandExecution/requestApproval", {"command": "cat x", "kind": kind})
    assert request["details"]["approval_kind"] == kind and request["message"] == words


# -- permissions ---------------------------------------------------------------------------

PERMISSIONS = {"cwd": "/w", "reason": "needs the network",
               "permissions": {"network": {"enabled": True}, "fileSystem": {"write": ["/data"], "read": None}}}


def test_permissions_request_is_a_permission_naming_what_it_grants(wire, host):
    request = ask(wire, host, "item/permissions/requestApproval", PERMISSIONS)
    assert request["kind"] == "permission" and request["options"] == ["allow", "allow-session", "deny"]
    assert request["message"] == "Grant network access, write /data (needs the network)"
    assert (request["details"]["tool"], request["details"]["name"]) == ("other", "request_permissions")


@pytest.mark.parametrize("reply,result", [
    ("allow", {"permissions": {"network": {"enabled": True}, "fileSystem": {"write": ["/data"], "read": None}},
               "scope": "turn"}),
    ("allow-session", {"permissions": {"network": {"enabled": True},
                                       "fileSystem": {"write": ["/data"], "read": None}}, "scope": "session"}),
    ("deny", {"permissions": {}, "scope": "turn"}),
])
def test_permissions_reply_grants_what_was_asked_or_nothing(wire, host, reply, result):
    request = ask(wire, host, "item/permissions/requestApproval", PERMISSIONS)
    assert answer(wire, host, request, reply) == {"id": 0, "result": result}


# -- MCP elicitations ------------------------------------------------------------------------

FORM = {"serverName": "tickets", "mode": "form", "message": "Details for the ticket",
        "requestedSchema": {"type": "object", "required": ["title"], "properties": {
            "title": {"type": "string", "title": "Title"},
            "priority": {"type": "string", "oneOf": [{"const": "p1", "title": "Urgent"},
                                                     {"const": "p2", "title": "Normal"}]},
            "count": {"type": "integer", "description": "How many"},
            "notify": {"type": "boolean"},
            "labels": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}}}}}


def test_elicitation_form_is_a_question_per_field(wire, host):
    request = ask(wire, host, "mcpServer/elicitation/request", FORM)
    assert request["kind"] == "question" and request["message"] == "tickets asks: Details for the ticket"
    questions = {q["id"]: q for q in request["details"]["questions"]}
    assert list(questions) == ["title", "priority", "count", "notify", "labels"]
    assert questions["title"]["question"] == "Title" and questions["count"]["question"] == "How many"
    assert questions["priority"]["options"] == ["Urgent", "Normal"]
    assert questions["notify"]["options"] == ["true", "false"]
    assert questions["labels"]["answer_type"] == "list"


def test_elicitation_answers_are_converted_to_each_fields_type(wire, host):
    request = ask(wire, host, "mcpServer/elicitation/request", FORM)
    reply = answer(wire, host, request, {"title": "Crash", "priority": "Urgent", "count": "3", "notify": "yes",
                                         "labels": "bug, docs"})
    assert reply == {"id": 0, "result": {"action": "accept", "content": {
        "title": "Crash", "priority": "p1", "count": 3, "notify": True, "labels": ["bug", "docs"]}}}


@pytest.mark.parametrize("reply,action", [("allow", "accept"), ("deny", "decline"), ("cancel", "cancel")])
def test_elicitation_without_fields_is_a_permission(wire, host, reply, action):
    request = ask(wire, host, "mcpServer/elicitation/request",
                  {"serverName": "tickets", "mode": "form", "message": "Proceed?",
                   "requestedSchema": {"type": "object", "properties": {}}})
    assert request["kind"] == "permission" and request["options"] == ["allow", "deny", "cancel"]
    assert answer(wire, host, request, reply)["result"]["action"] == action


def test_url_elicitation_is_a_permission_showing_the_url(wire, host):
    request = ask(wire, host, "mcpServer/elicitation/request",
                  {"serverName": "auth", "mode": "url", "message": "Sign in", "url": "https://example.org/login",
                   "elicitationId": "e1"})
    assert "https://example.org/login" in request["details"]["url"] and request["details"]["consent"] is True
    assert answer(wire, host, request, "allow")["result"] == {"action": "accept", "content": None}


def test_user_verification_elicitation_is_declined_with_a_diagnostic(wire, host):
    wire.ask(4, "mcpServer/elicitation/request", {"threadId": "thr-1", "turnId": T1, "serverName": "bank",
                                                  "mode": "openai/userVerification", "challenge": "c",
                                                  "title": "t", "description": "d"})
    assert not host.named("request")
    assert wire.replies()[-1] == {"id": 4, "result": {"action": "decline", "content": None}}
    assert "openai/userVerification" in host.logged("diagnostic")[-1]["message"]


# -- questions ---------------------------------------------------------------------------------


def test_question_option_descriptions_sit_beside_the_option_labels(wire, host):
    request = ask(wire, host, "item/tool/requestUserInput", {"isBlocking": True, "questions": [
        {"id": "color", "header": "Color", "question": "Which color?", "isOther": False, "isSecret": False,
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]})
    (question,) = request["details"]["questions"]
    assert question["options"] == ["Red", "Blue"] and question["option_descriptions"] == ["warm", "cool"]


# -- steer refusals ----------------------------------------------------------------------------


def test_steer_refused_as_not_steerable_waits_for_the_turn_end_then_starts_a_run(wire, host):
    backend = wire.backend
    backend.send(Input("in-2", "later"))
    wire.line({"id": wire.last("turn/steer")["id"], "error": {
        "code": -32600, "message": "cannot steer a review turn",
        "data": {"codexErrorInfo": {"activeTurnNotSteerable": {"turnKind": "review"}}}}})
    wire.answered.add((1, wire.last("turn/steer")["id"]))
    assert not host.named("send_failed") and len(wire.requests("turn/start")) == 1
    wire.complete_turn(T1)
    assert wire.last("turn/start")["params"]["clientUserMessageId"] == "in-2"
    wire.respond("turn/start", {"turn": wire.turn("turn-2")})
    assert host.named("accepted")[-1] == ("accepted", "in-2", "start", "run-2")


def test_steer_race_is_still_recognised_by_codexs_text(wire, host):
    backend = wire.backend
    backend.send(Input("in-2", "late"))
    wire.complete_turn(T1)
    wire.fail("turn/steer", "no active turn to steer")
    assert wire.last("turn/start")["params"]["clientUserMessageId"] == "in-2"
