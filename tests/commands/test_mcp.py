"""`harnessctl mcp` over a pipe: the MCP server a client starts, spoken to
line by line as a client would (docs/PROTOCOL-MCP.md section 21), with the mock
adapter behind it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cliutil import ROOT, events, extract_archive, matching, ok, run, wait_for, wait_results
from mcp_support.client import Client, structured

# -- the lifecycle --------------------------------------------------------------------


def test_initialize_answers_with_the_clients_revision_when_supported(workdir):
    client = Client("--root", str(workdir))
    for version in ("2025-06-18", "2025-03-26", "2025-11-25", "2024-11-05"):
        assert client.initialize(version)["protocolVersion"] == version
    client.close()


def test_initialize_answers_an_unknown_revision_with_the_newest(workdir):
    client = Client("--root", str(workdir))
    result = client.initialize("1999-01-01")
    assert result["protocolVersion"] == "2025-11-25"
    assert result["serverInfo"]["name"] == "harnessctl" and "tools" in result["capabilities"]
    assert client.close() == 0


def test_ping_answers_an_empty_result(mcp):
    assert mcp.request("ping", {})["result"] == {}


def test_tools_list_gives_every_tool_an_input_schema(mcp):
    tools = {tool["name"]: tool for tool in mcp.request("tools/list", {})["result"]["tools"]}
    assert set(tools) == {"send", "wait", "status", "reply", "cancel", "log", "fork"}
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object" and tool["description"]
    assert tools["send"]["inputSchema"]["required"] == ["file", "text"]


def test_an_unknown_method_is_error_32601(mcp):
    assert mcp.request("resources/list", {})["error"]["code"] == -32601


# -- the tools with the mock adapter ---------------------------------------------------


def test_send_with_wait_gives_the_completed_result(mcp, efile):
    result = mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    found = structured(result)
    assert found["outcome"] == "completed" and found["exit_code"] == 0
    assert found["output"] == "echo: hello" and found["input_id"] in found["input_ids"]
    assert json.loads(result["content"][0]["text"]) == found


def test_send_without_wait_gives_the_accepted_input_id(mcp, efile):
    found = structured(mcp.tool("send", file=efile, text="hello", adapter="mock"))
    assert found["outcome"] == "accepted"
    assert matching(efile, "accepted", input_id=found["input_id"])


def test_a_request_is_an_outcome_then_reply_and_wait_complete_it(mcp, efile):
    asked = structured(mcp.tool("send", file=efile, text="/permission may I?", adapter="mock", wait=True))
    assert asked["outcome"] == "request" and asked["exit_code"] == 9
    assert asked["message"] == "may I?" and asked["options"] == ["allow", "deny"]
    replied = structured(mcp.tool("reply", file=efile, request_id=asked["request_id"], answer="allow"))
    assert replied["outcome"] == "replied"
    done = structured(mcp.tool("wait", file=efile, input_id=asked["input_id"]))
    assert done["outcome"] == "completed" and "permission: allow" in done["output"]


def test_status_of_several_files_gives_a_line_each(mcp, workdir):
    first, second = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    mcp.tool("send", file=first, text="one", adapter="mock", wait=True)
    mcp.tool("send", file=second, text="/permission ok?", adapter="mock", wait=True)
    found = structured(mcp.tool("status", files=[first, second, str(workdir / "none.jsonl")]))["statuses"]
    assert [line["file"] for line in found] == [first, second, str(workdir / "none.jsonl")]
    assert found[0]["state"] == "idle" and found[1]["state"] == "awaiting_reply"
    assert found[2]["exit_code"] == 4 and "no such event file" in found[2]["error"]


def test_cancel_ends_the_running_run(mcp, efile):
    sent = structured(mcp.tool("send", file=efile, text="/sleep 30", adapter="mock"))
    wait_for(lambda: matching(efile, "log", kind="text.delta"), 30, "the run working")
    assert structured(mcp.tool("cancel", file=efile))["exit_code"] == 0
    assert structured(mcp.tool("wait", file=efile, input_id=sent["input_id"]))["outcome"] == "cancelled"


def test_log_gives_the_transcript_text_and_its_entries(mcp, efile):
    mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    found = structured(mcp.tool("log", file=efile))
    assert "echo: hello" in found["text"] and "\x1b" not in found["text"]
    kinds = [entry["entry"] for entry in found["entries"]]
    assert "input" in kinds and "result" in kinds


def test_log_text_is_its_structured_content_as_json(mcp, efile):
    mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    result = mcp.tool("log", file=efile)
    assert json.loads(result["content"][0]["text"]) == structured(result)


# -- errors -----------------------------------------------------------------------------


def test_bad_arguments_are_a_tool_error_with_exit_code_2(mcp, efile):
    for arguments in ({"file": efile}, {"file": efile, "text": 5}, {"file": efile, "text": "x", "colour": "red"},
                      {"file": efile, "text": "x", "mode": "yolo"}, {"file": efile, "text": " ", "adapter": "mock"}):
        result = mcp.request("tools/call", {"name": "send", "arguments": arguments})["result"]
        assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2, arguments
    assert not os.path.exists(efile)


def test_a_schema_larger_than_a_schema_file_may_be_is_a_tool_error(mcp, efile):
    schema = {"type": "object", "description": "x" * (256 * 1024)}
    result = mcp.tool("send", file=efile, text="hi", adapter="mock", schema=schema)
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2
    assert "larger than 256 KiB" in result["structuredContent"]["error"] and not os.path.exists(efile)


def test_the_clis_error_comes_with_its_message_and_exit_code(mcp, workdir):
    result = mcp.tool("wait", file=str(workdir / "none.jsonl"))
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 4
    assert result["structuredContent"]["error"].startswith("no such event file")


@pytest.mark.parametrize("arguments, message", [
    ({"runs": 0}, "runs must be at least 1"),
    ({"since": 0}, "since must be at least 1"),
], ids=["runs", "since"])
def test_a_number_below_its_minimum_is_refused_saying_at_least(mcp, efile, arguments, message):
    mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    result = mcp.tool("log", file=efile, **arguments)
    assert result["isError"] is True and result["structuredContent"] == {"error": message, "exit_code": 2}


def test_a_number_at_its_minimum_is_accepted(mcp, efile):
    mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    assert structured(mcp.tool("log", file=efile, runs=1))["entries"]


def test_a_number_not_above_an_exclusive_minimum_is_refused_saying_more_than(mcp, efile):
    result = mcp.tool("send", file=efile, text="hello", adapter="mock", max_cost_usd=0)
    assert result["structuredContent"] == {"error": "max_cost_usd must be more than 0", "exit_code": 2}


def test_an_unknown_tool_is_error_32602(mcp):
    assert mcp.request("tools/call", {"name": "rm", "arguments": {}})["error"]["code"] == -32602


def test_a_file_outside_the_roots_is_refused(mcp, tmp_path_factory):
    outside = str(tmp_path_factory.mktemp("elsewhere") / "events.jsonl")
    result = mcp.tool("send", file=outside, text="hello", adapter="mock")
    assert result["isError"] is True and "not under the allowed roots" in result["structuredContent"]["error"]
    assert not os.path.exists(outside)


def test_a_symlink_out_of_the_roots_is_refused(mcp, workdir, tmp_path_factory):
    os.symlink(str(tmp_path_factory.mktemp("elsewhere")), str(workdir / "link"))
    result = mcp.tool("send", file=str(workdir / "link" / "events.jsonl"), text="hello", adapter="mock")
    assert result["isError"] is True and "not under the allowed roots" in result["structuredContent"]["error"]


def test_a_cwd_outside_the_roots_is_refused(mcp, efile):
    result = mcp.tool("send", file=efile, text="hello", adapter="mock", cwd="/")
    assert result["isError"] is True and "refusing cwd /" in result["structuredContent"]["error"]
    assert not os.path.exists(efile)


def test_an_agent_command_is_refused_without_allow_agent_commands(mcp, efile):
    result = mcp.tool("send", file=efile, text="hello", adapter="acp", agent="sh -c 'touch pwned'")
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2
    assert "--allow-agent-commands" in result["structuredContent"]["error"]
    assert not os.path.exists(efile)


def test_without_root_the_servers_cwd_is_the_root(workdir, tmp_path_factory):
    client = Client(cwd=str(workdir))
    client.initialize()
    inside = structured(client.tool("send", file="events.jsonl", text="hi", adapter="mock", wait=True))
    assert inside["outcome"] == "completed"
    outside = client.tool("status", files=[str(tmp_path_factory.mktemp("elsewhere") / "x.jsonl")])
    assert "not under the allowed roots" in structured(outside)["statuses"][0]["error"]
    client.close()


def test_the_clients_roots_are_asked_when_it_has_the_capability(workdir):
    client = Client(cwd=ROOT)
    client.initialize(capabilities={"roots": {}})
    call = client.start("tools/call", {"name": "send", "arguments": {
        "file": str(workdir / "events.jsonl"), "text": "hi", "adapter": "mock", "cwd": str(workdir)}})
    ask = wait_for(lambda: next((m for m in client.drain() if m.get("method") == "roots/list"), None), 30,
                   "roots/list")
    client.write(json.dumps({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "roots": [{"uri": "file://" + str(workdir), "name": "work"}]}}).encode() + b"\n")
    assert structured(client.answer(call)["result"])["outcome"] == "accepted"
    assert client.tool("status", files=[os.path.join(ROOT, "README.md")])["structuredContent"]["statuses"][0][
        "exit_code"] == 2
    client.close()


# -- waiting: progress, cancellation, concurrency ----------------------------------------


def test_a_waiting_call_sends_progress_with_its_token(mcp, efile):
    call = mcp.start("tools/call", {"name": "send", "_meta": {"progressToken": "tok-1"}, "arguments": {
        "file": efile, "text": "/sleep 5", "adapter": "mock", "wait": True}})
    assert structured(mcp.answer(call)["result"])["outcome"] == "completed"
    steps = [p["progress"] for p in mcp.progress("tok-1")]
    assert len(steps) >= 1 and steps == sorted(steps)


def test_a_cancelled_wait_ends_and_the_run_goes_on(mcp, efile):
    call = mcp.start("tools/call", {"name": "send", "_meta": {"progressToken": 7}, "arguments": {
        "file": efile, "text": "/sleep 8", "adapter": "mock", "wait": True}})
    wait_for(lambda: mcp.progress(7), 30, "a first progress notification")
    mcp.notify("notifications/cancelled", {"requestId": call, "reason": "the user stopped it"})
    assert mcp.request("ping", {})["result"] == {}
    ended = len(mcp.progress(7))
    wait_results(efile, 1, timeout=30)  # some 6 s later: a wait still going on would have said so 3 times
    assert [e["status"] for e in matching(efile, "result")] == ["completed"]
    assert structured(mcp.tool("status", files=[efile]))["statuses"][0]["state"] == "idle"
    assert len(mcp.progress(7)) <= ended + 1  # at most one was on its way when the cancel arrived
    assert all(m.get("id") != call for m in mcp.seen)  # a cancelled call gets no answer


def test_a_long_wait_does_not_hold_up_a_status(mcp, efile):
    call = mcp.start("tools/call", {"name": "send", "arguments": {
        "file": efile, "text": "/sleep 6", "adapter": "mock", "wait": True}})
    wait_for(lambda: matching(efile, "log", kind="text.delta"), 30, "the run working")
    state = structured(mcp.tool("status", files=[efile]))["statuses"][0]["state"]
    assert state == "running"
    assert all(m.get("id") != call for m in mcp.seen)  # the wait is still going on
    assert structured(mcp.answer(call)["result"])["outcome"] == "completed"


def test_a_wait_with_a_timeout_gives_outcome_timeout(mcp, efile):
    sent = structured(mcp.tool("send", file=efile, text="/sleep 10", adapter="mock"))
    found = structured(mcp.tool("wait", file=efile, input_id=sent["input_id"], timeout=0.5))
    assert found["outcome"] == "timeout" and found["exit_code"] == 10


def test_a_steer_joins_the_running_run(mcp, efile):
    first = structured(mcp.tool("send", file=efile, text="/sleep 4", adapter="mock"))
    wait_for(lambda: matching(efile, "log", kind="text.delta"), 30, "the run working")
    steer = structured(mcp.tool("send", file=efile, text="and this too"))
    done = structured(mcp.tool("wait", file=efile, input_id=first["input_id"]))
    assert steer["input_id"] in done["input_ids"] and "echo: and this too" in done["output"]
    assert matching(efile, "accepted", input_id=steer["input_id"])[0]["delivery"] == "steer"


# -- malformed input ------------------------------------------------------------------


@pytest.mark.parametrize("line, code", [
    (b"this is not json", -32700),
    (b"\xff\xfe", -32700),
    (b"[1, 2]", -32600),
    (b'"a string"', -32600),
    (b'{"jsonrpc": "2.0", "id": 9}', -32600),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "send", "arguments": 3}}', -32602),
    (b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}', -32700),
    (b"[" * 100000 + b"]" * 100000, -32700),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "pad": "' + b"x" * (16 * 1024 * 1024) + b'"}', -32700),
], ids=["not-json", "not-utf8", "array", "string", "no-method", "params-array", "arguments-number", "nan",
        "nested-too-deep", "longer-than-16-mib"])
def test_a_malformed_line_is_one_error_and_the_server_lives_on(mcp, line, code):
    mcp.write(line + b"\n")
    errors = wait_for(lambda: [m for m in mcp.drain() if "error" in m], 30, "the error")
    assert [e["error"]["code"] for e in errors] == [code]
    assert errors[0]["id"] in (None, 9)
    assert mcp.request("ping", {})["result"] == {}
    assert [e for e in mcp.seen if "error" in e] == errors  # one error, nothing more


def test_stdin_ending_ends_the_server_with_exit_0(mcp):
    assert mcp.close() == 0
    assert "Traceback" not in mcp.proc.stderr.read().decode()


def test_a_per_adapter_packages_mcp_sends_with_its_own_adapter(workdir, tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    archive = subprocess.run([sys.executable, os.path.join(ROOT, "package.py"), "--adapter", "mock", "--output-dir",
                              str(dist)], stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    extract_archive(archive, str(dist))
    client = Client("--root", str(workdir), cwd=str(workdir), entry=[str(dist / "mock" / "harnessctl")])
    client.initialize()
    file = str(workdir / "events.jsonl")
    assert structured(client.tool("send", file=file, text="hi", wait=True))["output"] == "echo: hi"
    refused = client.tool("send", file=file, text="hi", adapter="codex")
    assert refused["isError"] is True and "the mock adapter's" in refused["structuredContent"]["error"]
    client.close()


def test_mcp_help_describes_the_command():
    text = ok("mcp", "--help").stdout.decode()
    assert "harnessctl mcp" in text and "--root DIR" in text and "--allow-agent-commands" in text
    assert "--max-mode MODE" in text and "--allow-rules" in text


def test_a_root_that_is_a_file_is_exit_2_saying_not_a_directory(workdir):
    (workdir / "plain").write_text("")
    proc = run("mcp", "--root", str(workdir / "plain"))
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == b"harnessctl: mcp: --root %s: not a directory\n" % str(workdir / "plain").encode()


def test_a_missing_root_is_exit_2_with_the_reason_on_one_stderr_line(workdir):
    """`claude mcp list` says only "Failed to connect": the reason must be on stderr, before any JSON-RPC."""
    proc = run("mcp", "--root", str(workdir / "missing"))
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == b"harnessctl: mcp: --root %s: no such directory (create it first)\n" % (
        str(workdir / "missing").encode())


def test_a_root_with_a_literal_tilde_says_the_client_did_not_expand_it(workdir):
    proc = run("mcp", "--root", "~/agent", cwd=str(workdir))
    assert proc.returncode == 2
    assert proc.stderr == (b"harnessctl: mcp: --root ~/agent: no such directory "
                           b"(the client ran no shell to expand ~: give the full path)\n")


def test_events_show_the_sub_session_as_usual(mcp, efile):
    mcp.tool("send", file=efile, text="hello", adapter="mock", wait=True)
    assert [e["type"] for e in events(efile) if e["type"] in ("accepted", "result")] == ["accepted", "result"]


# -- what a call may grant a new file ---------------------------------------------------


def bound(efile):
    return json.load(open(efile + ".d/binding.json"))


def test_a_mode_beyond_max_mode_is_a_tool_error_naming_the_flag(mcp, efile):
    for mode in ("edit", "full"):
        result = mcp.tool("send", file=efile, text="hi", adapter="mock", mode=mode)
        assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2
        assert "--max-mode ask" in result["structuredContent"]["error"]
    assert not os.path.exists(efile)
    structured(mcp.tool("send", file=efile, text="hi", adapter="mock", mode="ask"))
    assert bound(efile)["mode"] == "ask"


def test_max_mode_full_lets_a_call_bind_full(workdir, efile):
    client = Client("--root", str(workdir), "--max-mode", "full", cwd=str(workdir))
    client.initialize()
    structured(client.tool("send", file=efile, text="hi", adapter="mock", mode="full"))
    assert bound(efile)["mode"] == "full"
    client.close()


def test_max_mode_edit_refuses_full_and_allows_edit(workdir, efile):
    client = Client("--root", str(workdir), "--max-mode", "edit", cwd=str(workdir))
    client.initialize()
    refused = client.tool("send", file=efile, text="hi", adapter="mock", mode="full")
    assert refused["isError"] is True and "--max-mode edit" in refused["structuredContent"]["error"]
    structured(client.tool("send", file=efile, text="hi", adapter="mock", mode="edit"))
    client.close()


def test_allow_rules_are_refused_without_allow_rules_and_deny_rules_accepted(mcp, workdir, efile):
    result = mcp.tool("send", file=efile, text="hi", adapter="mock", rules=[["deny", "command:rm*"], ["allow", "*"]])
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2
    assert "--allow-rules" in result["structuredContent"]["error"] and not os.path.exists(efile)
    structured(mcp.tool("send", file=efile, text="hi", adapter="mock", rules=[["deny", "command:rm*"]]))
    assert bound(efile)["rules"] == [["deny", "command:rm*"]]


def test_allow_rules_are_accepted_with_allow_rules(workdir, efile):
    client = Client("--root", str(workdir), "--allow-rules", cwd=str(workdir))
    client.initialize()
    structured(client.tool("send", file=efile, text="hi", adapter="mock", rules=[["allow", "command:ls*"]]))
    assert bound(efile)["rules"] == [["allow", "command:ls*"]]
    client.close()


def test_a_call_on_a_file_bound_already_is_not_held_to_the_cap(mcp, efile):
    ok("send", efile, "hi", "--adapter", "mock", "--mode", "full", "--allow", "command:ls*", "--wait")
    structured(mcp.tool("send", file=efile, text="again", wait=True))
    structured(mcp.tool("send", file=efile, text="restated", mode="full", rules=[["allow", "command:ls*"]]))
    other = mcp.tool("send", file=efile, text="other", mode="edit")
    assert other["isError"] is True and "mode is bound" in other["structuredContent"]["error"]


def test_a_max_mode_that_is_not_a_mode_is_exit_2():
    proc = run("mcp", "--max-mode", "yolo")
    assert proc.returncode == 2 and b"--max-mode must be one of ask, edit, full" in proc.stderr and proc.stdout == b""


# -- bounded threads ----------------------------------------------------------------------


def test_calls_beyond_the_cap_are_answered_busy_and_the_server_keeps_serving(mcp, efile):
    from harnessctl.mcp.server import MAX_CALLS

    sent = structured(mcp.tool("send", file=efile, text="/sleep 60", adapter="mock"))
    waits = [mcp.start("tools/call", {"name": "wait", "arguments": {"file": efile, "input_id": sent["input_id"]}})
             for _ in range(MAX_CALLS + 4)]
    refused = [mcp.answer(ident)["result"] for ident in waits[MAX_CALLS:]]
    for result in refused:
        assert result["isError"] is True and result["structuredContent"]["exit_code"] == 5
        assert "the server is busy" in result["structuredContent"]["error"] and "retry" in result["content"][0]["text"]
    assert mcp.request("ping", {})["result"] == {}
    assert all(m.get("id") not in waits[:MAX_CALLS] for m in mcp.drain())  # those still wait
    mcp.notify("notifications/cancelled", {"requestId": waits[0]})

    def status_served():
        result = mcp.tool("status", files=[efile])
        return not result["isError"] and result["structuredContent"]["statuses"][0]
    assert wait_for(status_served, 30, "a free slot")["state"] == "running"
    structured(mcp.tool("cancel", file=efile))
    assert structured(mcp.answer(waits[1])["result"])["outcome"] == "cancelled"


def test_a_call_with_no_thread_to_be_had_is_answered_busy(monkeypatch):
    import io

    from harnessctl.mcp import server as server_module

    out = io.BytesIO()
    server = server_module.Server([], False, out)

    def no_thread(self):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(server_module.threading.Thread, "start", no_thread)
    server.receive(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "status", '
                   b'"arguments": {"files": ["x"]}}}')
    answer = json.loads(out.getvalue())
    assert answer["id"] == 1 and answer["result"]["isError"] is True
    assert "can't start new thread" in answer["result"]["structuredContent"]["error"]
    assert server.running == 0 and server.calls == {}


# -- input hygiene --------------------------------------------------------------------------


def test_a_path_with_a_nul_or_a_lone_surrogate_fails_only_itself_in_status(mcp, workdir, efile):
    mcp.tool("send", file=efile, text="hi", adapter="mock", wait=True)
    nul, surrogate = str(workdir / "a\x00b.jsonl"), str(workdir / "a\ud800b.jsonl")
    found = structured(mcp.tool("status", files=[nul, efile, surrogate]))["statuses"]
    assert [line["file"] for line in found] == [nul, efile, surrogate.replace("\ud800", "\ufffd")]  # strict JSON
    assert found[0]["exit_code"] == 2 and "holds a NUL character" in found[0]["error"]
    assert found[1]["state"] == "idle"
    assert found[2]["exit_code"] == 2 and "lone surrogate" in found[2]["error"]
    assert "\x00" not in found[0]["error"] and "\ud800" not in found[2]["error"]  # shown escaped


@pytest.mark.parametrize("arguments", [{"file": "x\x00.jsonl"}, {"file": "x\udbff.jsonl"},
                                       {"file": "ok.jsonl", "cwd": "\ud800"}], ids=["nul", "surrogate", "cwd"])
def test_a_send_to_a_path_that_names_no_bytes_is_a_tool_error_exit_2(mcp, workdir, arguments):
    arguments = dict(arguments, file=str(workdir / arguments["file"]), text="hi", adapter="mock")
    result = mcp.request("tools/call", {"name": "send", "arguments": arguments})["result"]
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2, result
    assert "is not a path" in result["structuredContent"]["error"]
    assert os.listdir(str(workdir)) == []


@pytest.mark.parametrize("name, value", [("model", "m\x00"), ("model", "m\ud800"), ("text", "hi\udfff"),
                                         ("rules", [["deny", "command:\x00"]])])
def test_a_string_argument_with_a_nul_or_a_lone_surrogate_is_a_tool_error(mcp, efile, name, value):
    arguments = {"file": efile, "text": "hi", "adapter": "mock", name: value}
    result = mcp.request("tools/call", {"name": "send", "arguments": arguments})["result"]
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2, result
    assert not os.path.exists(efile)


def test_a_path_that_is_not_utf8_as_status_writes_it_still_names_its_file(mcp, workdir):
    """Given with its bytes as \\udc80-\\udcff, it works; the answer, strict UTF-8 JSON, shows each as U+FFFD."""
    path = os.fsencode(str(workdir)) + b"/caf\xe9.jsonl"
    ok("send", os.fsdecode(path), "hi", "--adapter", "mock", "--wait")
    found = structured(mcp.tool("status", files=[os.fsdecode(path)]))["statuses"][0]
    assert found["state"] == "idle" and found["file"] == str(workdir) + "/caf\ufffd.jsonl"


def test_a_tool_error_shows_the_callers_control_characters_escaped(mcp, efile):
    mcp.tool("send", file=efile, text="hi", adapter="mock", wait=True)
    result = mcp.tool("reply", file=efile, request_id="r\x1b]0;T\x07", answer="allow")
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 3
    error = result["structuredContent"]["error"]
    assert "\x1b" not in error and "\x07" not in error and "r\\x1b]0;T\\x07" in error
    assert "\x1b" not in result["content"][0]["text"]


def test_an_unknown_tool_or_method_name_is_shown_escaped(mcp):
    tool = mcp.request("tools/call", {"name": "rm\x1b[2J", "arguments": {}})["error"]
    method = mcp.request("evil\x1b]0;T\x07", {})["error"]
    assert "\x1b" not in tool["message"] and "rm\\x1b[2J" in tool["message"]
    assert "\x1b" not in method["message"] and "\x07" not in method["message"]


def test_the_status_tool_shows_that_a_hook_is_bound_never_its_command_line(mcp, efile, project):
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--wait",
       "--on-result", "sh -c 'cat >/dev/null' -- 'Authorization: Bearer s3cret'")
    result = mcp.tool("status", files=[efile])
    assert structured(result)["statuses"][0]["on_result"] is True
    assert "s3cret" not in json.dumps(result)
