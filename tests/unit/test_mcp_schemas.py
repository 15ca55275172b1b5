"""The schema check of tests/support/mcp_support/schemas.py itself, on lines made
by hand: it finds each revision's definitions under their own names (and
the Tasks extension's for 2026-07-28), and it refuses what they refuse."""

from __future__ import annotations

import pytest
from mcp_support.schemas import check_message, jsonschema_or_skip


@pytest.fixture(autouse=True)
def needs_jsonschema():
    jsonschema_or_skip()


TASK = {"taskId": "t-1", "status": "working", "createdAt": "2026-12-05T07:00:00Z",
        "lastUpdatedAt": "2026-12-05T07:00:01Z", "ttlMs": None, "pollIntervalMs": 500}


def response(result):
    return {"jsonrpc": "2.0", "id": 1, "result": result}


@pytest.mark.parametrize("revision, envelope", [("2024-11-05", "JSONRPCError"), ("2025-11-25", "JSONRPCErrorResponse")])
def test_an_error_is_held_to_the_error_envelope_of_its_revision(revision, envelope):
    with pytest.raises(AssertionError, match=envelope):
        check_message({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}, revision)


def test_an_error_without_id_is_valid_from_2025_11_25_on_only():
    line = {"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}}
    check_message(line, "2025-11-25")
    check_message(line, "2026-07-28")
    with pytest.raises(AssertionError, match="'id' is a required property"):
        check_message(line, "2025-06-18")


def test_a_result_is_held_to_the_definition_of_its_requests_method():
    with pytest.raises(AssertionError, match="ListToolsResult"):
        check_message(response({"tools": [{"name": "x"}]}), "2025-06-18", "tools/list")


def test_a_2026_07_28_result_needs_its_result_type():
    with pytest.raises(AssertionError, match="resultType"):
        check_message(response({"tools": []}), "2026-07-28", "tools/list")
    check_message(response({"tools": [], "resultType": "complete", "cacheScope": "private", "ttlMs": 0}),
                  "2026-07-28", "tools/list")


@pytest.mark.parametrize("missing", ["cacheScope", "ttlMs"])
def test_a_2026_07_28_tools_list_needs_its_cache_hints(missing):
    result = {"tools": [], "resultType": "complete", "cacheScope": "private", "ttlMs": 0}
    del result[missing]
    with pytest.raises(AssertionError, match="'%s' is a required property" % missing):
        check_message(response(result), "2026-07-28", "tools/list")


def test_a_task_handle_answering_tools_call_is_held_to_create_task_result():
    check_message(response(dict(TASK, resultType="task")), "2026-07-28", "tools/call")
    with pytest.raises(AssertionError, match="CreateTaskResult of tasks-draft"):
        check_message(response({"taskId": "t-1", "status": "working", "resultType": "task"}), "2026-07-28",
                      "tools/call")


def test_tasks_get_is_held_to_the_tasks_extensions_get_task_result():
    check_message(response(dict(TASK, resultType="complete")), "2026-07-28", "tasks/get")
    with pytest.raises(AssertionError, match="GetTaskResult of tasks-draft"):
        check_message(response(dict(TASK, status="asleep", resultType="complete")), "2026-07-28", "tasks/get")


def test_a_tasks_notification_is_held_to_its_definition():
    line = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": TASK}
    check_message(line, "2026-07-28")
    with pytest.raises(AssertionError, match="TaskStatusNotification of tasks-draft"):
        check_message(dict(line, params={"taskId": "t-1"}), "2026-07-28")


def test_a_progress_notification_is_held_to_its_definition():
    with pytest.raises(AssertionError, match="ProgressNotification"):
        check_message({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}, "2025-03-26")
