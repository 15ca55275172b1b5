"""The `mode` request kind, consent permissions and questions that offer
options besides their fields: how the policy, a reply, `log` and the MCP
server's elicitation treat them (docs/PROTOCOL-COMMANDS.md section 8 and "Permission
policy")."""

from __future__ import annotations

import pytest

from harnessctl.checks import answers, policy
from harnessctl.errors import UsageError
from harnessctl.eventfile import wellformed
from harnessctl.kit import field_questions
from harnessctl.log import render
from harnessctl.mcp import tasks

MODE = {"request_id": "req-1", "kind": "mode", "message": "Allow: Ready to code?",
        "options": ["allow-session-and-use-auto-mode", "allow", "deny"], "tool": "other"}
CONSENT = {"request_id": "req-1", "kind": "permission", "message": "Fetch: MCP server requests to open a URL",
           "options": ["allow", "deny"], "tool": "web_search", "consent": True}
FORM = {"request_id": "req-1", "kind": "question", "message": "Details", "options": ["decline", "cancel"],
        "questions": [{"id": "title", "question": "Title"}]}
URL = {"request_id": "req-1", "kind": "question", "message": "Open https://example.org/login",
       "options": ["accept", "decline", "cancel"], "questions": [], "url": "https://example.org/login"}


def binding(*rules, mode=None):
    return {"cwd": "/repo", "mode": mode, "rules": [list(r) for r in rules] or None}


def test_a_mode_rule_is_a_valid_rule():
    assert policy.check_rule("allow", "mode") == ["allow", "mode"]


def test_a_mode_rule_takes_no_pattern():
    with pytest.raises(UsageError, match="no pattern"):
        policy.check_rule("allow", "mode:plan")


def test_a_mode_rule_answers_a_mode_request():
    assert policy.decide(binding(("deny", "mode")), MODE) == ("deny", {"by": "rule", "rule": "mode"})


@pytest.mark.parametrize("rules, mode", [((("allow", "*"),), None), ((("allow", "other"),), None),
                                         ((("deny", "command"),), "full"), ((), "full")])
def test_nothing_but_a_mode_rule_answers_a_mode_request(rules, mode):
    assert policy.decide(binding(*rules, mode=mode), MODE) is None


def test_a_mode_rule_answers_no_permission():
    request = {"kind": "permission", "tool": "other", "options": ["allow", "deny"]}
    assert policy.decide(binding(("allow", "mode")), request) is None


@pytest.mark.parametrize("rules, mode", [((("allow", "*"),), None), ((("allow", "web_search"),), None),
                                         ((("deny", "command"),), "full"), ((("deny", "*"),), None)])
def test_no_rule_and_no_mode_answers_a_consent_permission(rules, mode):
    assert policy.decide(binding(*rules, mode=mode), CONSENT) is None


def test_a_questions_option_is_answered_as_given():
    assert answers.validate(FORM, "decline") == "decline"


def test_a_questions_other_answer_fills_its_fields():
    assert answers.validate(FORM, "Crash") == {"title": "Crash"}


def test_a_question_with_no_field_takes_only_its_options():
    assert answers.validate(URL, "accept") == "accept"
    with pytest.raises(UsageError, match="accept, decline, cancel"):
        answers.validate(URL, "yes")


def test_a_mode_request_takes_its_options():
    assert answers.validate(MODE, "allow") == "allow"
    with pytest.raises(UsageError):
        answers.validate(MODE, "yes")


def test_a_mode_request_is_well_formed():
    line = dict(MODE, type="request", ts="2026-12-05T10:00:00.000Z", seq=1, run_id="run-1", state="pending")
    assert wellformed.problem(line) is None


def test_log_offers_a_forms_one_field_as_plain_text_and_json_then_its_options():
    commands = render.reply_commands(FORM, "f.jsonl")
    assert commands == ["harnessctl reply f.jsonl req-1 '...'", "harnessctl reply f.jsonl req-1 '{\"title\":\"...\"}'",
                        "harnessctl reply f.jsonl req-1 decline", "harnessctl reply f.jsonl req-1 cancel"]


def test_log_offers_no_plain_text_when_two_questions_must_be_answered():
    request = dict(FORM, questions=FORM["questions"] + [{"id": "note", "question": "Note"}])
    assert render.reply_commands(request, "f.jsonl")[0] == \
        "harnessctl reply f.jsonl req-1 '{\"title\":\"...\",\"note\":\"...\"}'"


def test_log_offers_a_first_option_as_the_plain_text_answer():
    assert render.reply_commands(CLAUDE_ASKS, "f.jsonl")[:2] == [
        "harnessctl reply f.jsonl req-1 Red", "harnessctl reply f.jsonl req-1 '{\"question_0\":\"Red\"}'"]


def test_log_offers_a_url_its_options_only():
    assert render.reply_commands(URL, "f.jsonl") == ["harnessctl reply f.jsonl req-1 %s" % o
                                                     for o in ("accept", "decline", "cancel")]


def test_the_mcp_server_shows_a_url_question_as_its_options():
    schema = tasks.elicitation(URL)["params"]["requestedSchema"]
    assert [o["const"] for o in schema["properties"]["answer"]["oneOf"]] == ["accept", "decline", "cancel"]


def test_the_mcp_server_takes_a_decline_of_a_question_that_offers_it():
    assert tasks.reply_answer(FORM, {"action": "decline"}) == "decline"


def test_the_mcp_server_takes_an_accepted_url():
    assert tasks.reply_answer(URL, {"action": "accept", "content": {"answer": "accept"}}) == "accept"


CLAUDE_ASKS = {"request_id": "req-1", "kind": "question", "message": "Which colour?", "options": ["decline", "cancel"],
               "questions": [{"id": "question_0", "question": "Colour", "options": ["Red", "Blue"], "optional": True},
                             {"id": "question_0_custom", "question": "Other", "optional": True}]}


def test_a_field_the_form_does_not_require_is_an_optional_question():
    questions = field_questions({"type": "object", "required": ["title"], "properties": {
        "title": {"type": "string"}, "note": {"type": "string"}}})
    assert [(q["id"], q.get("optional")) for q in questions] == [("title", None), ("note", True)]


def test_an_answer_may_leave_out_an_optional_question():
    assert answers.validate(CLAUDE_ASKS, '{"question_0": "Red"}') == {"question_0": "Red"}


def test_plain_text_answers_the_first_question_when_none_is_required():
    assert answers.validate(CLAUDE_ASKS, "Blue") == {"question_0": "Blue"}


def test_plain_text_answers_the_one_required_question():
    request = dict(FORM, questions=FORM["questions"] + [{"id": "note", "question": "Note", "optional": True}])
    assert answers.validate(request, "Crash") == {"title": "Crash"}


def test_the_mcp_server_requires_only_the_questions_that_must_be_answered():
    assert tasks.elicitation(CLAUDE_ASKS)["params"]["requestedSchema"]["required"] == []
