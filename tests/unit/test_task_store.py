"""harnessctl/mcp/tasks.py in-process: what a connection keeps of its tasks
and for how long, a parked request as an elicitation and its answer back,
and the status text read from the end of an event file."""

from __future__ import annotations

import json
import time

from harnessctl import sessions
from harnessctl.mcp import tasks
from harnessctl.mcp.call import Deferred

PERMISSION = {"request_id": "req-1", "kind": "permission", "message": "Run: rm -rf build",
              "options": ["allow", "allow-session", "deny"], "option_descriptions": {"allow-session": "Always"}}
QUESTION = {"request_id": "req-2", "kind": "question", "message": "Pick",
            "questions": [{"id": "q1", "question": "Colour?", "options": ["Red", "Blue"]},
                          {"id": "q2", "question": "Why?"}]}


def deferred(file: str = "/nowhere.jsonl") -> Deferred:
    return Deferred(sessions.Local(file), "in-1", None, lambda found: ({"outcome": found[0]}, found[0]))


def test_a_connection_holds_at_most_max_tasks():
    store = tasks.Tasks()
    for _ in range(tasks.MAX_TASKS):
        assert store.reserve()
        store.create(deferred())
    assert not store.reserve()


def test_a_released_place_is_free_again():
    store = tasks.Tasks()
    for _ in range(tasks.MAX_TASKS):
        assert store.reserve()
    store.release()
    assert store.reserve()


def test_an_ended_task_is_forgotten_a_while_after_its_end_was_given_out():
    store = tasks.Tasks()
    store.reserve()
    task = store.create(deferred())
    task.end("completed", {"content": [], "isError": False})
    task.detailed()
    assert store.find(task.id) is task
    task.given = time.monotonic() - tasks.KEEP_GIVEN
    assert store.find(task.id) is None


def test_a_task_is_forgotten_after_its_ttl_even_while_working():
    store = tasks.Tasks()
    store.reserve()
    task = store.create(deferred())
    task.started = time.monotonic() - tasks.TTL
    assert store.find(task.id) is None


def test_a_working_task_is_not_given_out_as_ended():
    store = tasks.Tasks()
    store.reserve()
    task = store.create(deferred())
    task.detailed()
    assert task.given is None


def test_an_id_that_is_not_a_string_finds_nothing():
    assert tasks.Tasks().find({"taskId": 1}) is None


def test_a_permission_asks_for_one_of_its_options_titled_by_their_descriptions():
    asked = tasks.elicitation(PERMISSION)
    schema = asked["params"]["requestedSchema"]
    assert asked["method"] == "elicitation/create" and asked["params"]["message"] == "Run: rm -rf build"
    assert schema["required"] == ["answer"]
    assert schema["properties"]["answer"]["oneOf"] == [
        {"const": "allow", "title": "allow"}, {"const": "allow-session", "title": "Always"},
        {"const": "deny", "title": "deny"}]


def test_a_question_asks_for_a_string_per_question_id():
    schema = tasks.elicitation(QUESTION)["params"]["requestedSchema"]
    assert schema["required"] == ["q1", "q2"]
    assert schema["properties"]["q1"] == {"type": "string", "title": "Colour?", "enum": ["Red", "Blue"]}
    assert schema["properties"]["q2"] == {"type": "string", "title": "Why?"}


def test_a_request_message_with_control_characters_is_made_inert():
    asked = tasks.elicitation(dict(PERMISSION, message="evil\x1b[2Jtext"))
    assert "\x1b" not in asked["params"]["message"] and "\\x1b" in asked["params"]["message"]


def test_accept_answers_a_permission_with_its_answer():
    assert tasks.reply_answer(PERMISSION, {"action": "accept", "content": {"answer": "allow-session"}}) == \
        "allow-session"


def test_accept_answers_a_question_with_the_object_reply_takes():
    answer = tasks.reply_answer(QUESTION, {"action": "accept", "content": {"q1": "Red", "q2": "because"}})
    assert json.loads(answer) == {"q1": "Red", "q2": "because"}


def test_decline_denies_a_permission():
    assert tasks.reply_answer(PERMISSION, {"action": "decline"}) == "deny"


def test_decline_and_cancel_leave_a_question_parked():
    assert tasks.reply_answer(QUESTION, {"action": "decline"}) is None
    assert tasks.reply_answer(QUESTION, {"action": "cancel"}) is None


def test_cancel_leaves_a_permission_parked():
    assert tasks.reply_answer(PERMISSION, {"action": "cancel"}) is None


def test_a_response_to_a_key_that_is_not_the_parked_request_is_ignored():
    task = tasks.Task(deferred(), time.time())
    task.request = PERMISSION
    assert task.answers({"req-9": {"action": "accept", "content": {"answer": "allow"}}}) == []
    assert task.answers({"req-1": {"action": "accept", "content": {"answer": "allow"}}}) == [("req-1", "allow")]


def test_the_status_text_is_the_latest_tools_title(tmp_path):
    file = tmp_path / "events.jsonl"
    lines = [{"type": "log", "kind": "tool.started", "title": "npm test"},
             {"type": "log", "kind": "text.delta", "text": "hi"},
             {"type": "log", "kind": "tool.started", "title": "make \x1b[31mall"}]
    file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert sessions.latest_activity(str(file)) == "running: make \\x1b[31mall"


def test_the_status_text_reads_only_the_end_of_a_long_file(tmp_path):
    file = tmp_path / "events.jsonl"
    early = json.dumps({"type": "log", "kind": "tool.completed", "title": "early"}) + "\n"
    filler = json.dumps({"type": "log", "kind": "text.delta", "text": "x" * 1000}) + "\n"
    file.write_text(early + filler * (sessions.ACTIVITY_TAIL // len(filler) + 2))
    assert sessions.latest_activity(str(file)) == "working"


def test_the_status_text_of_a_missing_or_hostile_file_is_working(tmp_path):
    assert sessions.latest_activity(str(tmp_path / "none.jsonl")) == "working"
    file = tmp_path / "events.jsonl"
    file.write_bytes(b'{"kind":"tool.started","title":\n\xff\xfe"tool.started"\n[1,2]"tool.completed"\n')
    assert sessions.latest_activity(str(file)) == "working"
