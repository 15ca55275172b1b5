"""What an ACP agent asks of a person (adapters/acp/asking.py): elicitations
as questions, mode switches as `mode` requests, consent permissions, and a
deny that keeps the turn, over the FakeHost (shapes from codex-acp 2.6.0 and
claude-agent-acp 0.101.0)."""

from __future__ import annotations

from acp_support.replaybed import agent_asks, answer_to, frames, ready_agent, respond

from adapters.acp import asking, wire
from harnessctl.kit.backend import Input

FORM = {"sessionId": "s-1", "mode": "form", "message": "Details for the ticket", "requestedSchema": {
    "type": "object", "properties": {
        "title": {"type": "string", "title": "Title"},
        "count": {"type": "integer", "title": "How many"},
        "notify": {"type": "boolean", "title": "Notify"},
        "priority": {"type": "string", "title": "Priority", "oneOf": [{"const": "p1", "title": "Urgent"},
                                                                      {"const": "p2", "title": "Normal"}]}}}}
URL = {"sessionId": "s-1", "mode": "url", "message": "Sign in to tickets", "url": "https://example.org/login",
       "elicitationId": "e-1"}
EXIT_PLAN = {"sessionId": "s-1", "toolCall": {"toolCallId": "toolu_1", "kind": "switch_mode", "title": "Ready to code?",
                                              "rawInput": {"plan": "1. write it"}},
             "options": [{"optionId": "acceptEdits", "name": "Yes, auto-accept edits", "kind": "allow_always"},
                         {"optionId": "default", "name": "Yes, manually approve edits", "kind": "allow_once"},
                         {"optionId": "plan", "name": "No, keep planning", "kind": "reject_once"}]}
CONSENT = {"sessionId": "s-1", "toolCall": {"toolCallId": "elicitation-e-2", "kind": "fetch", "title":
                                            "MCP server requests to open a URL",
                                            "rawInput": {"serverName": "tickets", "url": "https://example.org/x"}},
           "options": [{"optionId": "accept", "name": "Open", "kind": "allow_once"},
                       {"optionId": "decline", "name": "Decline", "kind": "reject_once"}]}


def asked(tmp_path, method, params):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_asks(backend, 9, method, params)
    ((_, request_id, run_id, kind, message, options, details),) = host.named("request")
    return host, backend, {"id": request_id, "run_id": run_id, "kind": kind, "message": message,
                           "options": options, "details": details}


def test_the_client_advertises_form_and_url_elicitation(tmp_path):
    host, _ = ready_agent(tmp_path)
    assert frames(host, "initialize")[0]["params"]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}


def test_a_form_elicitation_is_a_question_per_field(tmp_path):
    _, _, request = asked(tmp_path, "elicitation/create", FORM)
    assert (request["kind"], request["run_id"], request["message"]) == ("question", "run-1", "Details for the ticket")
    questions = {q["id"]: q for q in request["details"]["questions"]}
    assert list(questions) == ["title", "count", "notify", "priority"]
    assert questions["priority"]["options"] == ["Urgent", "Normal"] and questions["count"]["answer_type"] == "integer"


def test_a_form_offers_decline_and_cancel_besides_its_fields(tmp_path):
    _, _, request = asked(tmp_path, "elicitation/create", FORM)
    assert request["options"] == ["decline", "cancel"]


def test_a_forms_answer_is_accepted_with_each_value_of_its_fields_type(tmp_path):
    host, backend, request = asked(tmp_path, "elicitation/create", FORM)
    backend.answer(host.token(request["id"]), {"title": "Crash", "count": "3", "notify": "yes",
                                               "priority": "Urgent"})
    assert answer_to(host, 9)["result"] == {"action": "accept", "content": {
        "title": "Crash", "count": 3, "notify": True, "priority": "p1"}}


def test_a_forms_decline_and_cancel_are_its_actions(tmp_path):
    host, backend, request = asked(tmp_path, "elicitation/create", FORM)
    backend.answer(host.token(request["id"]), "decline")
    assert answer_to(host, 9)["result"] == {"action": "decline"}
    assert asking.elicitation_response({}, "cancel") == {"action": "cancel"}


def test_a_url_elicitation_is_a_question_carrying_the_url(tmp_path):
    _, _, request = asked(tmp_path, "elicitation/create", URL)
    assert request["kind"] == "question" and request["options"] == ["accept", "decline", "cancel"]
    assert request["details"]["url"] == "https://example.org/login" and request["details"]["questions"] == []
    assert request["details"]["elicitation_id"] == "e-1" and "https://example.org/login" in request["message"]


def test_an_accepted_url_answers_accept(tmp_path):
    host, backend, request = asked(tmp_path, "elicitation/create", URL)
    backend.answer(host.token(request["id"]), "accept")
    assert answer_to(host, 9)["result"] == {"action": "accept"}


def test_elicitation_complete_withdraws_the_url_still_pending(tmp_path):
    host, backend, request = asked(tmp_path, "elicitation/create", URL)
    backend.on_line('{"jsonrpc":"2.0","method":"elicitation/complete","params":{"elicitationId":"e-1"}}')
    assert host.named("request_closed") == [("request_closed", request["id"])]
    assert answer_to(host, 9)["result"] == {"action": "cancel"}


def test_an_elicitation_pending_at_the_runs_end_is_answered_cancel(tmp_path):
    host, backend, _ = asked(tmp_path, "elicitation/create", FORM)
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert answer_to(host, 9)["result"] == {"action": "cancel"}


def test_an_elicitation_of_an_unknown_mode_is_cancelled_with_a_diagnostic(tmp_path):
    host, backend = ready_agent(tmp_path)
    agent_asks(backend, 4, "elicitation/create", {"sessionId": "s-1", "mode": "telepathy", "message": "?"})
    assert not host.named("request") and answer_to(host, 4)["result"] == {"action": "cancel"}
    assert "telepathy" in host.logged("diagnostic")[-1]["message"]


def test_a_switch_mode_permission_is_a_mode_request(tmp_path):
    _, _, request = asked(tmp_path, "session/request_permission", EXIT_PLAN)
    assert request["kind"] == "mode" and request["options"] == ["allow-session", "allow", "deny"]
    assert request["message"] == "Switch mode: Ready to code?"


def test_a_fetch_of_an_elicitation_url_stands_for_consent(tmp_path):
    _, _, request = asked(tmp_path, "session/request_permission", CONSENT)
    assert request["kind"] == "permission" and request["details"]["consent"] is True


def test_an_ordinary_fetch_is_no_consent(tmp_path):
    fetch = dict(CONSENT, toolCall=dict(CONSENT["toolCall"], toolCallId="call_1"))
    _, _, request = asked(tmp_path, "session/request_permission", fetch)
    assert "consent" not in request["details"]


def test_deny_selects_reject_once_and_the_request_says_so(tmp_path):
    host, backend, request = asked(tmp_path, "session/request_permission", EXIT_PLAN)
    assert request["details"]["option_kinds"] == ["allow_always", "allow_once", "reject_once"]
    backend.answer(host.token(request["id"]), "deny")
    assert answer_to(host, 9)["result"] == {"outcome": {"outcome": "selected", "optionId": "plan"}}


def test_reject_once_is_deny_before_reject_always():
    names, _, mapping = wire.permission_options([{"optionId": "never", "kind": "reject_always"},
                                                 {"optionId": "no", "kind": "reject_once"}])
    assert (names, mapping["deny"]) == (["deny-always", "deny"], "no")


def test_deny_is_reject_always_where_the_agent_offers_no_reject_once():
    names, _, mapping = wire.permission_options([{"optionId": "ok", "kind": "allow_once"},
                                                 {"optionId": "never", "kind": "reject_always"}])
    assert (names, mapping["deny"]) == (["allow", "deny"], "never")


def test_a_deny_that_cancels_says_so_in_its_option_kinds():
    options = [{"optionId": "ok", "kind": "allow_once"}]
    _, _, mapping = wire.permission_options(options)
    assert wire.option_kinds(options, mapping) == ["allow_once", "cancelled"]


def test_of_two_reject_once_options_the_first_is_deny():
    names, _, mapping = wire.permission_options([  # codex-acp's decline and cancel, as it orders them
        {"optionId": "allow_once", "name": "Yes, proceed", "kind": "allow_once"},
        {"optionId": "decline", "name": "No, continue without running it", "kind": "reject_once"},
        {"optionId": "cancel", "name": "No, and tell Codex what to do differently", "kind": "reject_once"}])
    assert names == ["allow", "deny", "deny-no-and-tell-codex"] and mapping["deny"] == "decline"


def test_an_option_kind_acp_does_not_know_is_recorded_as_other():
    options = [{"optionId": "odd", "kind": {"x" * 100: 1}}, {"optionId": "no", "kind": "reject_once"}]
    _, _, mapping = wire.permission_options(options)
    assert wire.option_kinds(options, mapping) == ["other", "reject_once"]
