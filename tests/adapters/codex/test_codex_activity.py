"""The Codex adapter's activity vocabulary: each codex notification as the
`log` line it becomes (EVENT.md, "Activity"), against a scripted app-server.

Every test ends with the host's vocabulary check: no line carries a field
outside its kind's schema (schema/events.schema.json)."""

from __future__ import annotations

import pytest
from codex_support.fake_host import FakeHost, Wire, make_config, open_run

from adapters.codex.backend import CodexBackend

T1 = "turn-1"


@pytest.fixture
def host():
    fake = FakeHost()
    yield fake
    assert fake.vocabulary_problems() == []


@pytest.fixture
def wire(tmp_path, host):
    """A backend with an open run (run-1, codex turn turn-1)."""
    return open_run(tmp_path, host, T1)


def note(wire, method, **params):
    wire.notify(method, dict({"threadId": "thr-1", "turnId": T1}, **params))


def item(wire, stage, **fields):
    wire.notify("item/" + stage, {"item": fields, "threadId": "thr-1", "turnId": T1})


COMMAND = {"type": "commandExecution", "id": "call_1", "command": "/bin/bash -c 'ls -la'", "cwd": "/w",
           "status": "inProgress", "aggregatedOutput": None, "exitCode": None, "commandActions": []}


# -- session ------------------------------------------------------------------------


def test_session_line_once_per_start_from_the_thread_start_answer(tmp_path, host):
    backend = CodexBackend(host, make_config(tmp_path))
    w = Wire(backend, host)
    backend.start()
    w.respond("initialize", {"userAgent": "harnessctl/0.171.0 (Debian 12.0.0; x86_64) xterm (harnessctl; 0.1.0)"})
    w.respond("thread/start", {"thread": {"id": "thr-5"}, "model": "gpt-5.5", "approvalPolicy": "on-request",
                               "sandbox": {"type": "workspaceWrite", "networkAccess": False}})
    (session,) = host.logged("session")
    assert (session["session_id"], session["harness"], session["version"]) == ("thr-5", "codex", "0.171.0")
    assert (session["model"], session["approval_policy"], session["sandbox"]) == \
        ("gpt-5.5", "on-request", "workspaceWrite")


def test_session_version_prefers_the_threads_cli_version(tmp_path, host):
    backend = CodexBackend(host, make_config(tmp_path))
    w = Wire(backend, host)
    backend.start()
    w.respond("initialize", {"userAgent": "x/0.1.0"})
    w.respond("thread/start", {"thread": {"id": "thr-5", "cliVersion": "0.171.0"},
                               "approvalPolicy": {"granular": {"rules": True}}})
    (session,) = host.logged("session")
    assert session["version"] == "0.171.0" and session["approval_policy"] == "granular"


# -- text and reasoning ----------------------------------------------------------------


def test_agent_message_delta_is_text_with_the_message_id_of_its_message(wire, host):
    wire.agent_message(T1, "msg_1", "Hello.")
    (delta,) = host.logged("text.delta")
    (message,) = host.named("message")
    assert (delta["text"], delta["message_id"], delta["run_id"]) == ("Hello.", message[2], "run-1")


def test_reasoning_summary_and_raw_deltas_say_which_they_are(wire, host):
    note(wire, "item/reasoning/summaryTextDelta", itemId="rs_1", summaryIndex=0, delta="Thinking about it")
    note(wire, "item/reasoning/textDelta", itemId="rs_1", contentIndex=0, delta="raw thought")
    assert [(e["form"], e["text"]) for e in host.logged("reasoning.delta")] == \
        [("summary", "Thinking about it"), ("raw", "raw thought")]


# -- tools -------------------------------------------------------------------------------


@pytest.mark.parametrize("command,title", [
    ("/bin/bash -c 'ls -la'", "ls -la"),
    ("/bin/zsh -lc 'git status'", "git status"),
    ("/bin/bash -c 'echo '\"'\"'hi'\"'\"''", "echo 'hi'"),  # quoted inside: unquoted as bash would
    ("/bin/bash -c 'a' 'b'", "/bin/bash -c 'a' 'b'"),  # more than the wrapper: kept whole
    ("/bin/bash -c 'unclosed", "/bin/bash -c 'unclosed"),
    ("python3 x.py", "python3 x.py"),
])
def test_command_title_drops_codexs_shell_wrapper(wire, host, command, title):
    item(wire, "started", **dict(COMMAND, command=command))
    (started,) = host.logged("tool.started")
    assert started["title"] == title and started["input"]["command"] == command


def test_failed_command_completes_failed_with_its_exit_code_and_output(wire, host):
    item(wire, "started", **COMMAND)
    item(wire, "completed", **dict(COMMAND, status="failed", exitCode=2, aggregatedOutput="no such file\n",
                                   durationMs=12))
    (completed,) = host.logged("tool.completed")
    assert (completed["status"], completed["exit_code"], completed["output"]) == ("failed", 2, "no such file\n")
    assert completed["duration_ms"] == 12


def test_declined_command_has_no_exit_code(wire, host):
    item(wire, "started", **COMMAND)
    item(wire, "completed", **dict(COMMAND, status="declined"))
    (completed,) = host.logged("tool.completed")
    assert completed["status"] == "declined" and completed["exit_code"] is None


def test_command_output_deltas_are_tool_output_of_the_same_tool(wire, host):
    item(wire, "started", **COMMAND)
    note(wire, "item/commandExecution/outputDelta", itemId="call_1", delta="total 0\n")
    (started,) = host.logged("tool.started")
    (output,) = host.logged("tool.output")
    assert output["tool_id"] == started["tool_id"] == "turn-1:call_1" and output["text"] == "total 0\n"


def test_completed_command_without_aggregated_output_keeps_its_streamed_output(wire, host):
    item(wire, "started", **COMMAND)
    note(wire, "item/commandExecution/outputDelta", itemId="call_1", delta="a\n")
    note(wire, "item/commandExecution/outputDelta", itemId="call_1", delta="b\n")
    item(wire, "completed", **dict(COMMAND, status="completed", exitCode=0, aggregatedOutput=None))
    assert host.logged("tool.completed")[0]["output"] == "a\nb\n"


def test_item_completed_without_a_start_still_gives_a_started_and_completed_pair(wire, host):
    item(wire, "completed", type="webSearch", id="ws_1", query="harnessctl", action=None, results=None)
    (started,) = host.logged("tool.started")
    (completed,) = host.logged("tool.completed")
    assert (started["tool"], started["title"]) == ("web_search", "harnessctl")
    assert completed["tool_id"] == started["tool_id"] and completed["status"] == "completed"


@pytest.mark.parametrize("fields,tool,name,title", [
    ({"type": "mcpToolCall", "server": "docs", "tool": "search", "arguments": {"q": "x"}, "status": "inProgress"},
     "mcp", "docs.search", "docs.search"),
    ({"type": "webSearch", "query": "", "action": {"type": "openPage", "url": "https://example.org"}},
     "web_search", "webSearch", "https://example.org"),
    ({"type": "collabAgentToolCall", "tool": "spawnAgent", "prompt": "review the diff", "status": "inProgress",
      "senderThreadId": "thr-1", "receiverThreadIds": [], "agentsStates": {}},
     "subagent", "spawnAgent", "spawnAgent: review the diff"),
    ({"type": "dynamicToolCall", "namespace": "app", "tool": "lookup", "arguments": {}, "status": "inProgress"},
     "other", "app.lookup", "app.lookup"),
    ({"type": "imageView", "path": "/w/shot.png"}, "read", "imageView", "/w/shot.png"),
    ({"type": "sleep", "durationMs": 500}, "other", "sleep", "sleep 500 ms"),
])
def test_each_tool_like_item_has_its_kind_name_and_title(wire, host, fields, tool, name, title):
    item(wire, "started", id="it_1", **fields)
    (started,) = host.logged("tool.started")
    assert (started["tool"], started["name"], started["title"]) == (tool, name, title)


def test_mcp_tool_call_completes_with_its_result_text_or_error(wire, host):
    call = {"type": "mcpToolCall", "id": "mcp_1", "server": "docs", "tool": "search", "arguments": {},
            "status": "inProgress"}
    item(wire, "started", **call)
    item(wire, "completed", **dict(call, status="failed", error={"message": "server down"}))
    (completed,) = host.logged("tool.completed")
    assert (completed["status"], completed["output"], completed["exit_code"]) == ("failed", "server down", None)


def test_messages_reasoning_and_plan_items_are_no_tools(wire, host):
    item(wire, "started", type="reasoning", id="rs_1", summary=[], content=[])
    item(wire, "completed", type="reasoning", id="rs_1", summary=["s"], content=[])
    item(wire, "completed", type="plan", id="pl_1", text="1. do it")
    assert not host.logged("tool.started") and not host.logged("tool.completed")
    assert {e["level"] for e in host.logged("native")} == {"debug"}


# -- file changes ------------------------------------------------------------------------


def patch_item(changes, status="inProgress"):
    return {"type": "fileChange", "id": "call_patch", "changes": changes, "status": status}


def test_added_file_content_becomes_a_unified_diff(wire, host):
    changes = [{"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"}]
    item(wire, "started", **patch_item(changes))
    item(wire, "completed", **patch_item(changes, "completed"))
    (changed,) = host.logged("file.changed")
    assert (changed["path"], changed["change"], changed["move_path"]) == ("/w/new.txt", "add", None)
    assert changed["diff"] == "--- /dev/null\n+++ b/w/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    assert (changed["added"], changed["removed"], changed["tool_id"]) == (2, 0, "turn-1:call_patch")
    (started,) = host.logged("tool.started")
    assert (started["tool"], started["title"]) == ("file_change", "/w/new.txt")


def test_update_hunks_get_file_headers_and_a_move_keeps_its_move_path(wire, host):
    hunk = "@@ -1 +1 @@\n-old\n+new\n"
    changes = [{"path": "/w/a.txt", "kind": {"type": "update", "move_path": None}, "diff": hunk},
               {"path": "/w/b.txt", "kind": {"type": "update", "move_path": "/w/c.txt"}, "diff": hunk}]
    item(wire, "completed", **patch_item(changes, "completed"))
    update, move = host.logged("file.changed")
    assert update["change"] == "update" and update["diff"] == "--- a/w/a.txt\n+++ b/w/a.txt\n" + hunk
    assert (move["change"], move["move_path"]) == ("move", "/w/c.txt")
    assert move["diff"].startswith("--- a/w/b.txt\n+++ b/w/c.txt\n")


def test_deleted_file_content_becomes_a_diff_removing_it(wire, host):
    changes = [{"path": "/w/old.txt", "kind": {"type": "delete"}, "diff": "bye\n"}]
    item(wire, "completed", **patch_item(changes, "completed"))
    (changed,) = host.logged("file.changed")
    assert changed["change"] == "delete" and "-bye\n" in changed["diff"] and changed["removed"] == 1


def test_patch_updated_replaces_the_changes_file_changed_reports(wire, host):
    item(wire, "started", **patch_item([{"path": "/w/n.txt", "kind": {"type": "add"}, "diff": "draft\n"}]))
    note(wire, "item/fileChange/patchUpdated", itemId="call_patch",
         changes=[{"path": "/w/n.txt", "kind": {"type": "add"}, "diff": "final\n"}])
    item(wire, "completed", **patch_item([], "completed"))
    (changed,) = host.logged("file.changed")
    assert "+final\n" in changed["diff"] and "draft" not in changed["diff"]


def test_patch_updated_changes_are_what_the_approval_shows(wire, host):
    item(wire, "started", **patch_item([{"path": "/w/n.txt", "kind": {"type": "add"}, "diff": "draft\n"}]))
    note(wire, "item/fileChange/patchUpdated", itemId="call_patch",
         changes=[{"path": "/w/m.txt", "kind": {"type": "add"}, "diff": "final\n"}])
    wire.ask(0, "item/fileChange/requestApproval", {"threadId": "thr-1", "turnId": T1, "itemId": "call_patch"})
    (request,) = host.named("request")
    assert "/w/m.txt" in request[4] and request[6]["input"]["changes"][0]["diff"] == "final\n"


def test_declined_file_change_reports_no_changed_file(wire, host):
    changes = [{"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "x\n"}]
    item(wire, "started", **patch_item(changes))
    item(wire, "completed", **patch_item(changes, "declined"))
    assert not host.logged("file.changed")
    assert host.logged("tool.completed")[0]["status"] == "declined"


def test_deprecated_file_change_output_delta_is_tool_output(wire, host):
    note(wire, "item/fileChange/outputDelta", itemId="call_patch", delta="Success. Updated the following files")
    (output,) = host.logged("tool.output")
    assert output["tool_id"] == "turn-1:call_patch"


# -- plan, usage, warnings -----------------------------------------------------------------


def test_plan_update_maps_step_statuses_and_keeps_the_explanation(wire, host):
    note(wire, "turn/plan/updated", explanation="two steps",
         plan=[{"step": "read", "status": "completed"}, {"step": "write", "status": "inProgress"},
               {"step": "test", "status": "pending"}])
    (plan,) = host.logged("plan")
    assert plan["entries"] == [{"text": "read", "status": "completed"}, {"text": "write", "status": "in_progress"},
                               {"text": "test", "status": "pending"}]
    assert plan["explanation"] == "two steps" and plan["run_id"] == "run-1"


def test_usage_sums_the_runs_responses_with_window_and_last_context_fill(wire, host):
    wire.usage(T1, 1)
    wire.usage(T1, 2)
    last = host.logged("usage")[-1]
    assert (last["input_tokens"], last["cached_input_tokens"], last["output_tokens"], last["reasoning_tokens"]) == \
        (200, 40, 20, 6)
    assert (last["context_window"], last["context_used"]) == (258400, 110)


def test_usage_repeated_for_an_old_turn_after_resume_is_not_a_usage_line(wire, host):
    wire.usage("old-turn", 5)
    assert not host.logged("usage")


@pytest.mark.parametrize("method,params,message", [
    ("warning", {"message": "model is slow", "threadId": "thr-1"}, "model is slow"),
    ("configWarning", {"summary": "unknown key", "details": "foo", "path": "/h/config.toml"},
     "unknown key: foo (/h/config.toml)"),
    ("deprecationNotice", {"summary": "Full-history hydration is deprecated", "details": None},
     "Full-history hydration is deprecated"),
    ("guardianWarning", {"message": "risky", "threadId": "thr-1"}, "risky"),
])
def test_codex_warnings_are_warning_lines_naming_their_method(wire, host, method, params, message):
    wire.notify(method, params)
    (warning,) = host.logged("warning")
    assert (warning["message"], warning["source"], warning["level"]) == (message, method, "warning")


@pytest.mark.parametrize("info,expected", [
    ("usageLimitExceeded", "usageLimitExceeded"),
    ("contextWindowExceeded", "contextWindowExceeded"),
    ({"responseStreamDisconnected": {"httpStatusCode": 502}}, "responseStreamDisconnected"),
    (None, None),
])
def test_failed_turn_result_carries_codex_error_info_as_error_class(wire, host, info, expected):
    error = {"message": "it broke", "codexErrorInfo": info, "additionalDetails": None}
    wire.complete_turn(T1, status="failed", error=error)
    (result,) = host.results()
    assert result[4]["error"] == "it broke" and result[4].get("error_class") == expected


def test_error_class_comes_from_the_error_notification_when_the_turn_lacks_it(wire, host):
    note(wire, "error", willRetry=False, error={"message": "quota", "codexErrorInfo": "usageLimitExceeded"})
    wire.complete_turn(T1, status="failed", error=None)
    (result,) = host.results()
    assert (result[4]["error"], result[4]["error_class"]) == ("quota", "usageLimitExceeded")


def test_unnamed_notifications_are_native_at_debug(wire, host):
    note(wire, "turn/diff/updated", diff="diff --git a/x b/x\n")
    wire.notify("thread/status/changed", {"threadId": "thr-1", "status": {"type": "active"}})
    natives = host.logged("native")
    assert [e["method"] for e in natives][-2:] == ["turn/diff/updated", "thread/status/changed"]
    assert {e["level"] for e in natives} == {"debug"}
