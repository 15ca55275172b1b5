"""Every line `harnessctl mcp` writes, held to the official MCP schema of the
revision the client speaks (tests/support/mcp_support/schemas/, checked with the
PyPI jsonschema package): one conversation per revision, with every tool's
successes and errors, a progress notification and protocol errors, then one
test per kind of line; under 2026-07-28 also a task's every line.  And every
tool's results fit the outputSchema it declares (issue 34, item 4)."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from cliutil import kill_all_under, wait_for
from mcp_support.client import MODERN, Client, modern_meta
from mcp_support.schemas import LEGACY, REVISIONS, check_message, check_tool_result, jsonschema_or_skip

from harnessctl.mcp.protocol import BY_NAME
from harnessctl.mcp.results import output_schemas


class Recorder(Client):
    """A client that remembers the method of each request it sent, so each
    answer can be held to that method's result."""

    def __init__(self, *args: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.methods: Dict[Any, str] = {}
        self.tools: Dict[Any, str] = {}  # tools/call ids: the tool called
        self.meta: Dict[str, Any] = {}  # what a 2026-07-28 client puts in every request's _meta

    def start(self, method: str, params: Dict[str, Any]) -> int:
        if self.meta:
            params = dict(params, _meta=dict(self.meta, **params.get("_meta", {})))
        ident = super().start(method, params)
        self.methods[ident] = method
        if method == "tools/call":
            self.tools[ident] = params["name"]
        return ident

    def answers(self, method: str) -> List[Dict[str, Any]]:
        return [m for m in self.drain() if "method" not in m and self.methods.get(m.get("id")) == method]


def converse(client: Recorder, root: str, revision: str) -> None:
    """The conversation: initialize, tools/list, each tool's success and
    error results (mock adapter), a progress notification, protocol errors;
    a 2026-07-28 client opens with server/discover, and its calls wait as a
    legacy client's do (no Tasks extension: the tasks have their own test)."""
    if BY_NAME[revision].modern:
        client.meta = modern_meta(tasks=False)
        client.request("server/discover", {})
    else:
        client.initialize(revision)
    client.request("ping", {})
    client.request("tools/list", {})
    done, asked, slow = root + "/done.jsonl", root + "/asked.jsonl", root + "/slow.jsonl"
    client.tool("send", file=done, text="hello", adapter="mock", mode="ask", rules=[["deny", "command:rm*"]],
                max_tokens=100000, wait=True)  # completed, the status shows a full binding
    request = client.tool("send", file=asked, text="/permission may I?", adapter="mock", wait=True)  # request
    request_id, input_id = request["structuredContent"]["request_id"], request["structuredContent"]["input_id"]
    client.tool("reply", file=asked, request_id=request_id, answer="allow")
    client.tool("wait", file=asked, input_id=input_id)  # completed
    sent = client.tool("send", file=slow, text="/sleep 30", adapter="mock")  # accepted
    client.tool("wait", file=slow, input_id=sent["structuredContent"]["input_id"], timeout=0.2)  # timeout
    client.tool("cancel", file=slow)
    client.tool("wait", file=slow, input_id=sent["structuredContent"]["input_id"])  # cancelled
    client.tool("wait", file=done)  # status: no input id
    client.tool("status", files=[done, asked, root + "/none.jsonl"])  # a status line and an error line
    client.tool("log", file=done)
    client.tool("log", file=done, runs=1)
    progressed = client.start("tools/call", {"name": "send", "_meta": {"progressToken": "p"}, "arguments": {
        "file": root + "/progress.jsonl", "text": "/sleep 3", "adapter": "mock", "wait": True}})
    client.answer(progressed)
    wait_for(lambda: client.progress("p"), 30, "a progress notification")
    # tool errors: arguments, the CLI's own errors, paths, the operator's caps
    client.tool("send", file=done, text="hi", adapter="mock", mode="yolo")
    client.tool("log", file=done, runs=0)
    client.tool("reply", file=done, request_id="no-such-request", answer="allow")
    client.tool("status", files=[])
    client.tool("send", file="/elsewhere.jsonl", text="hi", adapter="mock")
    client.tool("send", file=root + "/full.jsonl", text="hi", adapter="mock", mode="full")
    client.tool("wait", file=root + "/none.jsonl")
    # protocol errors
    client.request("tools/call", {"name": "no-such-tool", "arguments": {}})
    client.request("resources/list", {})


@pytest.fixture(scope="module", params=REVISIONS)
def conversation(request, tmp_path_factory) -> Iterator[Tuple[str, Recorder]]:
    """One conversation per revision, shared by the tests below."""
    jsonschema_or_skip()
    root = tmp_path_factory.mktemp("mcp-" + request.param)
    client = Recorder("--root", str(root), cwd=str(root))
    try:
        converse(client, str(root), request.param)
        yield request.param, client
    finally:
        client.proc.kill()
        client.proc.wait()
        kill_all_under(str(root))


def checked(revision: str, lines: List[Dict[str, Any]], client: Recorder) -> int:
    """Check each line; how many there were (a test that checks none fails)."""
    assert lines, "the conversation had no such line"
    for line in lines:
        check_message(line, revision, client.methods.get(line.get("id")))
    return len(lines)


def test_the_opening_result_is_valid(conversation):
    revision, client = conversation
    assert checked(revision, client.answers("server/discover" if BY_NAME[revision].modern else "initialize"),
                   client) == 1


def test_the_ping_result_is_valid(conversation):
    revision, client = conversation
    checked(revision, client.answers("ping"), client)


def test_the_tools_list_result_is_valid(conversation):
    revision, client = conversation
    checked(revision, client.answers("tools/list"), client)


def test_every_tool_success_result_is_valid(conversation):
    revision, client = conversation
    successes = [m for m in client.answers("tools/call") if m.get("result", {}).get("isError") is False]
    assert {client.tools[m["id"]] for m in successes} == {"send", "wait", "status", "reply", "cancel", "log"}
    checked(revision, successes, client)


def test_every_tool_error_result_is_valid(conversation):
    revision, client = conversation
    errors = [m for m in client.answers("tools/call") if m.get("result", {}).get("isError") is True]
    assert {client.tools[m["id"]] for m in errors} == {"send", "wait", "status", "reply", "log"}
    checked(revision, errors, client)


def test_a_progress_notification_is_valid(conversation):
    revision, client = conversation
    checked(revision, [m for m in client.drain() if m.get("method") == "notifications/progress"], client)


def test_a_protocol_error_answering_a_request_is_valid(conversation):
    revision, client = conversation
    errors = [m for m in client.drain() if "error" in m]
    assert {e["error"]["code"] for e in errors} == {-32601, -32602}
    checked(revision, errors, client)


def test_the_conversation_holds_no_other_line(conversation):
    """Every line was one the tests above check: none escaped them."""
    revision, client = conversation
    kinds = {m.get("method") or client.methods.get(m.get("id")) for m in client.drain()}
    opening = "server/discover" if BY_NAME[revision].modern else "initialize"
    assert kinds == {opening, "ping", "tools/list", "tools/call", "resources/list", "notifications/progress"}


@pytest.mark.parametrize("revision", [r for r in LEGACY if BY_NAME[r].id_optional])
def test_the_error_answering_an_unreadable_line_is_valid(workdir, revision):
    """From 2025-11-25 on its `id` is left out, as the schema allows."""
    jsonschema_or_skip()
    client = Recorder("--root", str(workdir), cwd=str(workdir))
    client.initialize(revision)
    client.write(b"this is not json\n")
    error = wait_for(lambda: [m for m in client.drain() if "error" in m], 30, "the error")[0]
    assert "id" not in error
    check_message(error, revision)
    assert client.close() == 0


@pytest.mark.parametrize("revision", [r for r in LEGACY if not BY_NAME[r].id_optional])
def test_the_error_answering_an_unreadable_line_has_a_valid_error_object(workdir, revision):
    """Its envelope's `id` is JSON-RPC's null, as no schema before 2025-11-25
    lets an error go without a string or number id: only the error object
    is held here."""
    from mcp_support.schemas import find, validate

    jsonschema_or_skip()
    client = Recorder("--root", str(workdir), cwd=str(workdir))
    client.initialize(revision)
    client.write(b"this is not json\n")
    error = wait_for(lambda: [m for m in client.drain() if "error" in m], 30, "the error")[0]
    assert error["id"] is None
    file, envelope = find(revision, "JSONRPCErrorResponse", "JSONRPCError")
    validate(dict(error, id=0), file, envelope, "the error line (its id aside)")
    assert client.close() == 0


# -- outputSchema -----------------------------------------------------------------------


def test_every_tool_declares_an_output_schema_where_the_revision_has_them(conversation):
    revision, client = conversation
    tools = client.answers("tools/list")[0]["result"]["tools"]
    if BY_NAME[revision].output_schemas:
        assert [tool["name"] for tool in tools if tool.get("outputSchema", {}).get("type") != "object"] == []
    else:
        assert [tool["name"] for tool in tools if "outputSchema" in tool] == []


def test_every_tool_success_result_fits_its_output_schema(conversation):
    _, client = conversation
    schemas = output_schemas()
    successes = [m for m in client.answers("tools/call") if m.get("result", {}).get("isError") is False]
    assert len(successes) >= 12
    for message in successes:
        check_tool_result(message["result"], schemas[client.tools[message["id"]]])


def test_every_tool_success_result_fits_its_output_schema_read_as_draft_07(conversation):
    """A client may validate with a draft-07 validator (the TypeScript SDK's Ajv)."""
    _, client = conversation
    schemas = output_schemas()
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#"}
    for message in client.answers("tools/call"):
        if message.get("result", {}).get("isError") is False:
            check_tool_result(message["result"], dict(schemas[client.tools[message["id"]]], **draft7))


def test_every_tool_error_result_fits_its_output_schema(conversation):
    """The TypeScript SDK holds an error's structuredContent to the outputSchema too."""
    _, client = conversation
    schemas = output_schemas()
    errors = [m for m in client.answers("tools/call") if m.get("result", {}).get("isError") is True]
    assert errors
    for message in errors:
        check_tool_result(message["result"], schemas[client.tools[message["id"]]])


@pytest.mark.parametrize("structured", [
    {"outcome": "completed", "exit_code": 7},
    {"outcome": "accepted", "exit_code": 0},
    {"outcome": "request", "exit_code": 9, "input_id": "i"},
    {"error": "no such event file"},
], ids=["wrong-exit-code", "accepted-without-input-id", "request-without-its-line", "error-without-exit-code"])
def test_an_output_schema_refuses_a_result_that_breaks_it(structured):
    jsonschema_or_skip()
    with pytest.raises(AssertionError, match="does not fit"):
        check_tool_result({"structuredContent": structured}, output_schemas()["send"])


def test_every_tool_result_text_is_its_structured_content(conversation):
    _, client = conversation
    results = [m["result"] for m in client.answers("tools/call") if "result" in m]
    assert {result["isError"] for result in results} == {False, True}
    for result in results:
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


# -- a task's lines (2026-07-28 and the Tasks extension) ------------------------------------


@pytest.fixture(scope="module")
def task_conversation(tmp_path_factory) -> Iterator[Recorder]:
    """A task client's conversation: a task that works, parks a permission,
    is answered and completes, followed by a subscription; one cancelled;
    the errors of the tasks methods."""
    jsonschema_or_skip()
    root = str(tmp_path_factory.mktemp("mcp-tasks"))
    client = Recorder("--root", root, cwd=root)
    client.meta = modern_meta(tasks=True)
    try:
        asked = client.tool("send", file=root + "/asked.jsonl", text="/permission may I?", adapter="mock", wait=True)
        listen = client.start("subscriptions/listen", {"notifications": {"taskIds": [asked["taskId"]]}})
        parked = wait_for(lambda: (lambda t: t if t["status"] == "input_required" else None)(
            client.request("tasks/get", {"taskId": asked["taskId"]})["result"]), 60, "input_required")
        client.request("tasks/update", {"taskId": asked["taskId"], "inputResponses": {
            key: {"action": "accept", "content": {"answer": "allow"}} for key in parked["inputRequests"]}})
        wait_for(lambda: client.request("tasks/get", {"taskId": asked["taskId"]})["result"]["status"] == "completed",
                 60, "completed")
        client.answer(listen)
        slow = client.tool("send", file=root + "/slow.jsonl", text="/sleep 60", adapter="mock", wait=True)
        client.request("tasks/get", {"taskId": slow["taskId"]})
        client.request("tasks/cancel", {"taskId": slow["taskId"]})
        wait_for(lambda: client.request("tasks/get", {"taskId": slow["taskId"]})["result"]["status"] == "cancelled",
                 60, "cancelled")
        client.request("tasks/get", {"taskId": "no-such-task"})
        client.request("tasks/get", {"taskId": asked["taskId"], "_meta": modern_meta(tasks=False)})
        client.request("tools/list", {"_meta": modern_meta(version="2099-01-01")})
        yield client
    finally:
        client.proc.kill()
        client.proc.wait()
        kill_all_under(root)


@pytest.mark.parametrize("method", ["tools/call", "tasks/get", "tasks/update", "tasks/cancel",
                                    "subscriptions/listen"])
def test_every_answer_of_a_task_client_is_valid(task_conversation, method):
    checked(MODERN, task_conversation.answers(method), task_conversation)


@pytest.mark.parametrize("method", ["notifications/tasks", "notifications/subscriptions/acknowledged"])
def test_every_notification_of_a_subscription_is_valid(task_conversation, method):
    checked(MODERN, [m for m in task_conversation.drain() if m.get("method") == method], task_conversation)


def test_the_task_statuses_seen_cover_the_lifecycle(task_conversation):
    statuses = {m["result"].get("status") for m in task_conversation.answers("tasks/get") if "result" in m}
    assert statuses == {"working", "input_required", "completed", "cancelled"}


def test_the_errors_of_a_task_client_are_valid(task_conversation):
    errors = [m for m in task_conversation.drain() if "error" in m]
    assert {e["error"]["code"] for e in errors} == {-32602, -32021, -32022}
    checked(MODERN, errors, task_conversation)
