"""A session page draws what `log` renders: the colours as names, a pending request's answers."""

from __future__ import annotations

from harnessctl.log.render import render
from harnessctl.serve.follow import Marks, answers, drawn, pieces


def test_a_rendered_line_is_cut_where_its_colours_change():
    style = Marks("f.jsonl")
    line = "x" + style.paint("ok", "bold", "green") + " y " + style.paint("no", "red")
    assert pieces(line) == [("x", ""), ("ok", "bold green"), (" y ", ""), ("no", "red")]
    assert pieces("") == [("", "")]


def test_agent_text_cannot_forge_a_colour_mark():
    entry = {"entry": "message", "role": "assistant", "text": "\x01red\x02fake\x03 <script>\x1b[31m"}
    lines = drawn("message:1", entry, Marks("f.jsonl"))["lines"]
    text = "".join(piece for line in lines for piece, _ in line)
    assert "\\x01red\\x02fake\\x03 <script>\\x1b[31m" in text
    assert all(colours in ("", "bold green") for line in lines for _, colours in line)


def test_a_permission_request_is_answered_with_its_options_or_allow_and_deny():
    bare = {"entry": "request", "kind": "permission", "request_id": "req-1", "state": "pending", "options": []}
    assert [o["answer"] for o in answers(bare)["options"]] == ["allow", "deny"]
    given = dict(bare, options=["allow", "allow_always\x1b", "deny"])
    shown = answers(given)["options"]
    assert [o["answer"] for o in shown] == ["allow", "allow_always\x1b", "deny"]
    assert shown[1]["label"] == "allow_always\\x1b"


def test_a_question_is_answered_with_its_fields():
    entry = {"entry": "request", "kind": "question", "request_id": "q", "state": "pending", "options": ["decline"],
             "questions": [{"id": "color", "question": "Which?", "options": ["red", "blue"]}]}
    found = answers(entry)
    assert found["questions"] == [{"id": "color", "label": "Which?", "options": ["red", "blue"], "optional": False}]
    assert [o["answer"] for o in found["options"]] == ["decline"]


def test_only_a_pending_request_gets_buttons():
    entry = {"entry": "request", "kind": "permission", "request_id": "req-1", "state": "replied", "answer": "allow",
             "by": "reply"}
    assert "request" not in drawn("request:req-1", entry, Marks("f.jsonl"))
    assert render(entry, Marks("f.jsonl"))  # drawn as log draws it
