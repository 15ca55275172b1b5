"""Every line `harnessctl mcp` writes, held to the official MCP schema of the
revision the client asked for (tests/mcp_support/schemas/, checked with
the PyPI jsonschema package): one conversation per revision, with every
tool's successes and errors, a progress notification and protocol errors,
then one test per kind of line.  And every tool's results fit the
outputSchema it declares (issue 34, item 4)."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from cliutil import kill_all_under, wait_for
from mcp_support.schemas import LEGACY, check_message, check_tool_result, jsonschema_or_skip
from test_mcp import Client


class Recorder(Client):
    """A client that remembers the method of each request it sent, so each
    answer can be held to that method's result."""

    def __init__(self, *args: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.methods: Dict[Any, str] = {}
        self.tools: Dict[Any, str] = {}  # tools/call ids: the tool called

    def start(self, method: str, params: Dict[str, Any]) -> int:
        ident = super().start(method, params)
        self.methods[ident] = method
        if method == "tools/call":
            self.tools[ident] = params["name"]
        return ident

    def answers(self, method: str) -> List[Dict[str, Any]]:
        return [m for m in self.drain() if "method" not in m and self.methods.get(m.get("id")) == method]


def converse(client: Recorder, root: str, revision: str) -> None:
    """The conversation: initialize, tools/list, each tool's success and
    error results (mock adapter), a progress notification, protocol errors."""
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


@pytest.fixture(scope="module", params=LEGACY)
def conversation(request, tmp_path_factory) -> Iterator[Tuple[str, Recorder]]:
    """One conversation per legacy revision, shared by the tests below."""
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


def test_the_initialize_result_is_valid(conversation):
    revision, client = conversation
    assert checked(revision, client.answers("initialize"), client) == 1


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
    _, client = conversation
    kinds = {m.get("method") or client.methods.get(m.get("id")) for m in client.drain()}
    assert kinds == {"initialize", "ping", "tools/list", "tools/call", "resources/list", "notifications/progress"}


@pytest.mark.parametrize("revision", LEGACY)
def test_the_error_answering_an_unreadable_line_has_a_valid_error_object(workdir, revision):
    """Its envelope's `id` is JSON-RPC's null, which no legacy schema allows
    (2025-11-25 lets it be left out): only the error object is held here."""
    from mcp_support.schemas import find, validate

    client = Recorder("--root", str(workdir), cwd=str(workdir))
    client.initialize(revision)
    client.write(b"this is not json\n")
    error = wait_for(lambda: [m for m in client.drain() if "error" in m], 30, "the error")[0]
    file, envelope = find(revision, "JSONRPCErrorResponse", "JSONRPCError")
    validate(dict(error, id=0), file, envelope, "the error line (its id aside)")
    assert client.close() == 0


# -- outputSchema -----------------------------------------------------------------------


def test_every_tool_declares_an_output_schema(conversation):
    _, client = conversation
    tools = client.answers("tools/list")[0]["result"]["tools"]
    assert [tool["name"] for tool in tools if tool.get("outputSchema", {}).get("type") != "object"] == []


def test_every_tool_success_result_fits_its_output_schema(conversation):
    _, client = conversation
    schemas = {tool["name"]: tool["outputSchema"] for tool in client.answers("tools/list")[0]["result"]["tools"]}
    successes = [m for m in client.answers("tools/call") if m.get("result", {}).get("isError") is False]
    assert len(successes) >= 12
    for message in successes:
        check_tool_result(message["result"], schemas[client.tools[message["id"]]])


def test_every_tool_success_result_fits_its_output_schema_read_as_draft_07(conversation):
    """A client may validate with a draft-07 validator (the TypeScript SDK's Ajv)."""
    _, client = conversation
    schemas = {tool["name"]: tool["outputSchema"] for tool in client.answers("tools/list")[0]["result"]["tools"]}
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#"}
    for message in client.answers("tools/call"):
        if message.get("result", {}).get("isError") is False:
            check_tool_result(message["result"], dict(schemas[client.tools[message["id"]]], **draft7))


def test_every_tool_error_result_fits_its_output_schema(conversation):
    """The TypeScript SDK holds an error's structuredContent to the outputSchema too."""
    _, client = conversation
    schemas = {tool["name"]: tool["outputSchema"] for tool in client.answers("tools/list")[0]["result"]["tools"]}
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
    from harnessctl.mcp.results import output_schemas

    jsonschema_or_skip()
    with pytest.raises(AssertionError, match="does not fit"):
        check_tool_result({"structuredContent": structured}, output_schemas()["send"])


def test_every_tool_result_text_is_its_structured_content(conversation):
    _, client = conversation
    successes = [m["result"] for m in client.answers("tools/call") if m.get("result", {}).get("isError") is False]
    for result in successes:
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
