"""`harnessctl mcp` under MCP 2026-07-28 and its Tasks extension
(docs/PROTOCOL-MCP.md section 21): server/discover, requests that each carry
their revision, and a run as a task its caller polls, answers and cancels."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any, Dict

import pytest
from cliutil import matching, ok, wait_for
from mcp_support.client import MODERN, TASKS, Client, modern_meta


@pytest.fixture
def mcp(workdir):
    client = Client("--root", str(workdir), cwd=str(workdir))
    yield client
    client.stop()


@pytest.fixture
def efile(workdir):
    return str(workdir / "events.jsonl")


def task_of(mcp: Client, **arguments: Any) -> Dict[str, Any]:
    """A tool call a task client makes: the task handle it is answered with."""
    handle = mcp.modern_tool(**arguments)
    assert handle["resultType"] == "task", handle
    return handle


def get(mcp: Client, task_id: str) -> Dict[str, Any]:
    return mcp.modern("tasks/get", {"taskId": task_id})["result"]


def until(mcp: Client, task_id: str, *statuses: str) -> Dict[str, Any]:
    """tasks/get until the task is in one of `statuses`."""
    return wait_for(lambda: (lambda t: t if t["status"] in statuses else None)(get(mcp, task_id)), 60,
                    "task %s %s" % (task_id, "/".join(statuses)))


# -- the 2026-07-28 line -------------------------------------------------------------


def test_server_discover_names_every_revision_and_the_tasks_extension(mcp):
    result = mcp.modern("server/discover")["result"]
    assert result["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    assert result["capabilities"]["extensions"] == {TASKS: {}} and result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "harnessctl"


def test_a_modern_request_needs_no_initialize(mcp):
    tools = mcp.modern("tools/list")["result"]
    assert tools["resultType"] == "complete" and {t["name"] for t in tools["tools"]} >= {"send", "wait"}


def test_an_unsupported_revision_is_error_32022_listing_the_supported(mcp):
    answer = mcp.request("tools/list", {"_meta": modern_meta(version="2099-01-01")})
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                                     "2024-11-05"], "requested": "2099-01-01"}


def test_a_legacy_revision_named_in_meta_is_error_32022(mcp):
    answer = mcp.request("tools/list", {"_meta": modern_meta(version="2025-11-25")})
    assert answer["error"]["code"] == -32022


def test_the_legacy_line_still_works_on_the_same_server(mcp, efile):
    assert mcp.initialize("2025-06-18")["protocolVersion"] == "2025-06-18"
    result = mcp.tool("send", file=efile, text="hi", adapter="mock", wait=True)
    assert result["structuredContent"]["outcome"] == "completed" and "resultType" not in result


def test_a_modern_call_without_the_extension_blocks_as_today(mcp, efile):
    result = mcp.modern_tool("send", tasks=False, file=efile, text="hi", adapter="mock", wait=True)
    assert result["resultType"] == "complete" and result["structuredContent"]["outcome"] == "completed"


def test_a_send_without_wait_is_no_task(mcp, efile):
    result = mcp.modern_tool("send", file=efile, text="hi", adapter="mock")
    assert result["resultType"] == "complete" and result["structuredContent"]["outcome"] == "accepted"


# -- runs as tasks ---------------------------------------------------------------------


def test_a_send_with_wait_is_a_task_that_works_then_completes_with_the_calls_result(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/sleep 4", adapter="mock", wait=True)
    assert handle["status"] == "working" and handle["pollIntervalMs"] > 0 and handle["ttlMs"] > 0
    assert get(mcp, handle["taskId"])["status"] == "working"
    done = until(mcp, handle["taskId"], "completed")
    result = done["result"]
    assert result["isError"] is False and json.loads(result["content"][0]["text"]) == result["structuredContent"]
    [accepted] = matching(efile, "accepted")
    assert result["structuredContent"]["outcome"] == "completed"
    assert result["structuredContent"]["input_id"] == accepted["input_id"]
    assert result["structuredContent"]["exit_code"] == 0


def test_a_task_id_is_unguessable_and_names_nothing_on_disk(mcp, efile, workdir):
    ids = [task_of(mcp, name="send", file=efile, text="hi", adapter="mock", wait=True)["taskId"] for _ in range(3)]
    assert len(set(ids)) == 3 and all(len(i) >= 32 for i in ids)
    on_disk = [name for _, dirs, files in os.walk(str(workdir)) for name in dirs + files]
    assert not any(i in name for i in ids for name in on_disk)


def test_a_guessed_task_id_is_an_error_that_says_nothing(mcp, efile):
    task_of(mcp, name="send", file=efile, text="hi", adapter="mock", wait=True)
    answer = mcp.modern("tasks/get", {"taskId": secrets.token_urlsafe(24)})
    assert answer["error"]["code"] == -32602 and "no such task" in answer["error"]["message"]


def test_a_task_of_another_connection_is_the_same_error(workdir, efile):
    first, second = Client("--root", str(workdir), cwd=str(workdir)), Client("--root", str(workdir), cwd=str(workdir))
    handle = task_of(first, name="send", file=efile, text="/sleep 5", adapter="mock", wait=True)
    answer = second.modern("tasks/get", {"taskId": handle["taskId"]})
    guessed = second.modern("tasks/get", {"taskId": "x" * len(handle["taskId"])})
    assert answer["error"] == guessed["error"]
    first.modern_tool("cancel", file=efile)
    assert first.close() == 0 and second.close() == 0


def test_tasks_methods_need_the_extension_in_the_request(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="hi", adapter="mock", wait=True)
    answer = mcp.modern("tasks/get", {"taskId": handle["taskId"]}, tasks=False)
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


def test_a_parked_permission_makes_the_task_input_required_with_its_options(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy to staging?", adapter="mock", wait=True)
    task = until(mcp, handle["taskId"], "input_required")
    [(key, asked)] = task["inputRequests"].items()
    [request] = matching(efile, "request")
    assert key == request["request_id"] and asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == "deploy to staging?"
    schema = asked["params"]["requestedSchema"]
    assert [o["const"] for o in schema["properties"]["answer"]["oneOf"]] == ["allow", "deny"]


def test_tasks_update_answers_the_request_as_reply_does_and_the_run_completes(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy?", adapter="mock", wait=True)
    key = next(iter(until(mcp, handle["taskId"], "input_required")["inputRequests"]))
    ack = mcp.modern("tasks/update", {"taskId": handle["taskId"], "inputResponses": {
        key: {"action": "accept", "content": {"answer": "allow"}}}})["result"]
    assert ack == {"resultType": "complete"}
    done = until(mcp, handle["taskId"], "completed")
    assert "permission: allow" in done["result"]["structuredContent"]["output"]
    replied = matching(efile, "request", request_id=key, state="replied")
    assert len(replied) == 1 and replied[0]["by"] == "reply" and replied[0]["answer"] == "allow"


def test_a_declined_permission_is_denied(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy?", adapter="mock", wait=True)
    key = next(iter(until(mcp, handle["taskId"], "input_required")["inputRequests"]))
    mcp.modern("tasks/update", {"taskId": handle["taskId"], "inputResponses": {key: {"action": "decline"}}})
    assert "permission: deny" in until(mcp, handle["taskId"], "completed")["result"]["structuredContent"]["output"]


def test_an_answer_that_is_not_an_option_is_an_invalid_params_error(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy?", adapter="mock", wait=True)
    key = next(iter(until(mcp, handle["taskId"], "input_required")["inputRequests"]))
    answer = mcp.modern("tasks/update", {"taskId": handle["taskId"], "inputResponses": {
        key: {"action": "accept", "content": {"answer": "maybe"}}}})
    assert answer["error"]["code"] == -32602 and "maybe" in answer["error"]["message"]
    assert get(mcp, handle["taskId"])["status"] == "input_required"


def test_a_reply_from_a_shell_moves_the_task_on_and_is_recorded_once(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy?", adapter="mock", wait=True)
    key = next(iter(until(mcp, handle["taskId"], "input_required")["inputRequests"]))
    ok("reply", efile, key, "allow")
    done = until(mcp, handle["taskId"], "completed")
    assert "permission: allow" in done["result"]["structuredContent"]["output"]
    late = mcp.modern("tasks/update", {"taskId": handle["taskId"], "inputResponses": {
        key: {"action": "accept", "content": {"answer": "deny"}}}})
    assert late["result"] == {"resultType": "complete"}  # answered already: ignored, as the extension says
    assert len(matching(efile, "request", request_id=key, state="replied")) == 1


def test_tasks_cancel_ends_the_run_cancelled(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/sleep 60", adapter="mock", wait=True)
    assert mcp.modern("tasks/cancel", {"taskId": handle["taskId"]})["result"] == {"resultType": "complete"}
    done = until(mcp, handle["taskId"], "cancelled", "completed")
    assert done["status"] == "cancelled" and "result" not in done
    assert [e["status"] for e in matching(efile, "result")] == ["cancelled"]


def test_a_run_cancelled_from_a_shell_completes_the_task_with_the_cancelled_outcome(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/sleep 60", adapter="mock", wait=True)
    ok("cancel", efile)
    done = until(mcp, handle["taskId"], "completed", "cancelled")
    assert done["status"] == "completed" and done["result"]["structuredContent"]["outcome"] == "cancelled"
    assert done["result"]["structuredContent"]["exit_code"] == 8


def test_a_wait_is_a_task_too(mcp, efile):
    sent = mcp.modern_tool("send", file=efile, text="/sleep 1", adapter="mock")["structuredContent"]
    handle = task_of(mcp, name="wait", file=efile, input_id=sent["input_id"])
    done = until(mcp, handle["taskId"], "completed")
    assert done["result"]["structuredContent"]["outcome"] == "completed"


def test_a_task_past_its_timeout_completes_with_the_timeout_outcome(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/sleep 60", adapter="mock", wait=True, timeout=0.5)
    done = until(mcp, handle["taskId"], "completed")
    assert done["result"]["structuredContent"]["outcome"] == "timeout"
    mcp.modern_tool("cancel", file=efile)


def test_a_send_refused_is_a_tool_error_and_no_task(mcp, workdir):
    result = mcp.modern_tool("send", file=str(workdir / "x.jsonl"), text="hi", adapter="mock", wait=True,
                             mode="full")
    assert result["resultType"] == "complete" and result["isError"] is True
    assert "--max-mode" in result["structuredContent"]["error"]


def test_past_the_task_limit_a_call_is_refused_and_nothing_is_sent(mcp, efile, workdir):
    from harnessctl.mcp.tasks import MAX_TASKS

    sent = mcp.modern_tool("send", file=efile, text="/sleep 60", adapter="mock")["structuredContent"]
    for _ in range(MAX_TASKS):
        task_of(mcp, name="wait", file=efile, input_id=sent["input_id"])
    other = str(workdir / "other.jsonl")
    refused = mcp.modern_tool("send", file=other, text="hi", adapter="mock", wait=True)
    assert refused["isError"] is True and refused["structuredContent"]["exit_code"] == 5
    assert "%d tasks" % MAX_TASKS in refused["structuredContent"]["error"]
    assert not os.path.exists(other)
    mcp.modern_tool("cancel", file=efile)


# -- pushed status ---------------------------------------------------------------------------


def test_a_subscription_pushes_each_change_until_the_task_ends(mcp, efile):
    handle = task_of(mcp, name="send", file=efile, text="/permission deploy?", adapter="mock", wait=True)
    ident = mcp.start("subscriptions/listen", {"_meta": modern_meta(), "notifications": {
        "taskIds": [handle["taskId"]]}})

    def pushed(status: str) -> Any:
        return next((m["params"] for m in mcp.drain() if m.get("method") == "notifications/tasks"
                     and m["params"]["status"] == status), None)
    asked = wait_for(lambda: pushed("input_required"), 60, "input_required pushed")
    assert asked["_meta"] == {"io.modelcontextprotocol/subscriptionId": ident}
    ok("reply", efile, next(iter(asked["inputRequests"])), "allow")
    done = wait_for(lambda: pushed("completed"), 60, "completed pushed")
    assert done["taskId"] == handle["taskId"] and done["result"]["structuredContent"]["outcome"] == "completed"
    assert mcp.answer(ident)["result"]["resultType"] == "complete"
    acks = [m for m in mcp.seen if m.get("method") == "notifications/subscriptions/acknowledged"]
    assert acks[0]["params"]["notifications"] == {"taskIds": [handle["taskId"]]}


def test_an_unreadable_line_gets_an_error_without_an_id(mcp):
    mcp.write(b"{not json\n")
    error = wait_for(lambda: next((m for m in mcp.drain() if "error" in m), None), 30, "the parse error")
    assert "id" not in error and error["error"]["code"] == -32700


def test_modern_results_say_their_result_type(mcp, efile):
    assert mcp.modern("ping")["result"] == {"resultType": "complete"}
    assert mcp.modern_tool("status", files=[efile])["resultType"] == "complete"
    assert MODERN == "2026-07-28"
