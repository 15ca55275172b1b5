"""The MCP tools' `queue`, `interrupt` (send) and `input_id` (cancel): the
same as `send --queue`, `send --interrupt` and `cancel FILE INPUT_ID`
(docs/PROTOCOL-COMMANDS.md sections 6 and 8), over a pipe with the mock adapter."""

from __future__ import annotations

from cliutil import of_type, ok, results, wait_results


def busy(efile):
    ok("send", efile, "/sleep 30\nfirst", "--adapter", "mock")


def test_send_with_queue_is_accepted_queued_in_no_run(mcp, efile):
    busy(efile)
    found = mcp.tool("send", file=efile, text="later", queue=True)["structuredContent"]
    line = [e for e in of_type(efile, "accepted") if e["input_id"] == found["input_id"]][-1]
    assert (line["delivery"], line["run_id"]) == ("queued", None)
    ok("cancel", efile)


def test_send_with_interrupt_cancels_the_run_and_gives_the_new_runs_result(mcp, efile):
    busy(efile)
    found = mcp.tool("send", file=efile, text="instead", interrupt=True, wait=True)["structuredContent"]
    assert (found["outcome"], found["output"]) == ("completed", "echo: instead")
    assert results(efile)[0]["status"] == "cancelled"


def test_send_with_queue_and_interrupt_is_a_tool_error(mcp, efile):
    result = mcp.tool("send", file=efile, text="x", adapter="mock", queue=True, interrupt=True)
    assert result["isError"] is True and "give one" in result["content"][0]["text"]


def test_cancel_with_input_id_revokes_that_queued_input(mcp, efile):
    busy(efile)
    input_id = mcp.tool("send", file=efile, text="never", queue=True)["structuredContent"]["input_id"]
    found = mcp.tool("cancel", file=efile, input_id=input_id)["structuredContent"]
    assert found == {"outcome": "revoked", "exit_code": 0, "input_id": input_id}
    assert wait_results(efile, 1)[0]["error_class"] == "revoked"
    ok("cancel", efile)


def test_cancel_with_the_input_id_of_a_delivered_input_is_a_tool_error_with_exit_3(mcp, efile):
    busy(efile)
    result = mcp.tool("cancel", file=efile, input_id=of_type(efile, "accepted")[0]["input_id"])
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 3
    ok("cancel", efile)
