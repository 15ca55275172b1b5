"""The claudecode backend's activity vocabulary (harnessctl/kit/activity.py), from
transcripts recorded from the real Claude Code 2.1.332 with
`--include-partial-messages` (activity__*, permission__suppressed) and from
single frames of the recorded shapes."""

from __future__ import annotations

import os

from claudecode_support.replay import feed, initialize, make_backend, replay

from adapters.claudecode.wire import bash_exit_code, file_change, plan_entries, tool_kind
from harnessctl.kit.backend import Input


def replayed(tmp_path, name, answers=None):
    backend, host = make_backend(tmp_path)
    initialize(backend)
    replay(backend, name, answers=answers)
    assert host.vocabulary_problems() == []
    return backend, host


def running(tmp_path):
    """A backend with run-1 started for input in-1 (no transcript)."""
    backend, host = make_backend(tmp_path)
    initialize(backend)
    backend.send(Input("in-1", "go"))
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "queued"})
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "started"})
    return backend, host


def tool_use(tool_id, name, tool_input, parent=None):
    return {"type": "assistant", "parent_tool_use_id": parent,
            "message": {"id": "msg_" + tool_id, "content": [{"type": "tool_use", "id": tool_id, "name": name,
                                                             "input": tool_input}]}}


def tool_result(tool_id, content, is_error=False, detail=None, meta=None):
    frame = {"type": "user", "parent_tool_use_id": None,
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                      "content": content, "is_error": is_error}]}}
    if detail is not None:
        frame["tool_use_result"] = detail
    if meta is not None:
        frame["tool_result_meta"] = meta
    return frame


# -- text and reasoning -----------------------------------------------------------------


def test_partial_text_deltas_are_text_delta_lines_under_the_message_id(tmp_path):
    _, host = replayed(tmp_path, "activity__bash")
    deltas = [(d["message_id"], d["text"]) for d in host.logged("text.delta")]
    assert deltas[:3] == [("msg_mock_001_ab116852", "Running "), ("msg_mock_001_ab116852", "it "),
                          ("msg_mock_001_ab116852", "now.")]
    messages = [(m[2], m[3]) for m in host.named("message")]
    assert messages == [("msg_mock_001_ab116852", "Running it now."), ("msg_mock_003_07c411e8", "Both ran.")]


def test_streamed_text_is_not_logged_again_from_the_whole_frame(tmp_path):
    _, host = replayed(tmp_path, "activity__bash")
    texts = "".join(d["text"] for d in host.logged("text.delta"))
    assert texts == "Running it now.Both ran."


def test_thinking_deltas_are_raw_reasoning_and_the_whole_block_is_not_repeated(tmp_path):
    _, host = replayed(tmp_path, "activity__bash")
    reasoning = host.logged("reasoning.delta")
    assert {r["form"] for r in reasoning} == {"raw"}
    assert "".join(r["text"] for r in reasoning) == "I should run a command first."


def test_a_thinking_block_without_deltas_is_logged_whole(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, {"type": "assistant", "message": {"id": "m1", "content": [{"type": "thinking", "thinking": "Hmm."}]}})
    assert [(r["text"], r["form"]) for r in host.logged("reasoning.delta")] == [("Hmm.", "raw")]


def test_redacted_thinking_is_marked_redacted_not_logged_as_empty_text(tmp_path):
    _, host = replayed(tmp_path, "activity__redacted")
    assert [(r["form"], r["text"]) for r in host.logged("reasoning.delta")] == [("redacted", ""),
                                                                                ("raw", "visible thought")]
    assert all(d["text"] for d in host.logged("text.delta"))


def test_sub_agent_text_carries_the_tool_that_runs_it(tmp_path):
    _, host = replayed(tmp_path, "activity__subagent")
    [sub] = [d for d in host.logged("text.delta") if "parent_tool_id" in d]
    assert sub["text"] == "The agent said hi." and sub["parent_tool_id"] == "toolu_mock_001_0_f880527b"
    assert "The agent said hi." not in [m[3] for m in host.named("message")]


def test_sub_agent_partial_text_is_not_logged_twice(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, {"type": "stream_event", "parent_tool_use_id": "toolu_1", "api_message_id": "msg_sub",
                   "event": {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "sub says"}}})
    feed(backend, {"type": "assistant", "parent_tool_use_id": "toolu_1",
                   "message": {"id": "msg_sub", "content": [{"type": "text", "text": "sub says"}]}})
    assert [(d["text"], d["parent_tool_id"]) for d in host.logged("text.delta")] == [("sub says", "toolu_1")]


# -- tools -------------------------------------------------------------------------------


def test_a_bash_call_is_a_command_that_completes_with_exit_code_0_and_its_output(tmp_path):
    _, host = replayed(tmp_path, "activity__bash")
    started = host.logged("tool.started")[0]
    assert (started["tool"], started["name"], started["title"]) == ("command", "Bash", "echo hi")
    assert started["input"] == {"command": "echo hi", "description": "Say hi"}
    done = host.logged("tool.completed")[0]
    assert (done["tool_id"], done["status"], done["exit_code"], done["output"]) == (
        started["tool_id"], "completed", 0, "hi")


def test_a_failed_bash_call_has_the_exit_code_claude_states(tmp_path):
    _, host = replayed(tmp_path, "activity__bash")
    failed = host.logged("tool.completed")[1]
    assert (failed["tool"], failed["status"], failed["exit_code"]) == ("command", "failed", 3)
    assert failed["output"] == "Exit code 3\noops"


def test_a_denied_tool_is_declined(tmp_path):
    _, host = replayed(tmp_path, "permission__suppressed", answers=["deny"])
    [done] = host.logged("tool.completed")
    assert (done["tool"], done["status"], done["exit_code"]) == ("command", "declined", None)


def test_a_tool_claude_refused_by_policy_is_declined_with_a_warning(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, tool_use("toolu_p", "Bash", {"command": "touch x"}))
    feed(backend, {"type": "system", "subtype": "permission_denied", "tool_name": "Bash", "tool_use_id": "toolu_p",
                   "message": "touch needs approval"})
    feed(backend, tool_result("toolu_p", "touch needs approval", is_error=True))
    [warning] = host.logged("warning")
    assert warning["source"] == "permission_denied" and "touch needs approval" in warning["message"]
    assert host.logged("tool.completed")[0]["status"] == "declined"


def test_a_rejected_permission_decision_in_the_result_meta_is_declined(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, tool_use("toolu_r", "Write", {"file_path": "/w/a.txt", "content": "x"}))
    feed(backend, tool_result("toolu_r", "nope", is_error=True,
                              meta=[{"id": "toolu_r", "permission_decision": {"decision": "reject"}}]))
    assert host.logged("tool.completed")[0]["status"] == "declined"
    assert host.logged("file.changed") == []


def test_an_interrupted_tool_failed_without_an_exit_code(tmp_path):
    _, host = replayed(tmp_path, "interrupt__tool")
    [done] = host.logged("tool.completed")
    assert (done["tool"], done["status"], done["exit_code"]) == ("command", "failed", None)


def test_tool_names_map_to_vocabulary_kinds_and_titles():
    assert tool_kind("Bash", {"command": "ls -la\necho more"}) == ("command", "ls -la\necho more")
    assert tool_kind("Edit", {"file_path": "/w/a.py"}) == ("file_change", "/w/a.py")
    assert tool_kind("MultiEdit", {"file_path": "/w/a.py"}) == ("file_change", "/w/a.py")
    assert tool_kind("NotebookEdit", {"notebook_path": "/w/n.ipynb"}) == ("file_change", "/w/n.ipynb")
    assert tool_kind("Read", {"file_path": "/w/a.py"}) == ("read", "/w/a.py")
    assert tool_kind("Grep", {"pattern": "TODO"}) == ("search", "TODO")
    assert tool_kind("Glob", {"pattern": "**/*.py"}) == ("search", "**/*.py")
    assert tool_kind("LS", {"path": "/w"}) == ("search", "/w")
    assert tool_kind("WebSearch", {"query": "python"}) == ("web_search", "python")
    assert tool_kind("WebFetch", {"url": "https://example.org"}) == ("web_search", "https://example.org")
    assert tool_kind("Task", {"description": "Explore"}) == ("subagent", "Explore")
    assert tool_kind("Agent", {"prompt": "Look"}) == ("subagent", "Look")
    assert tool_kind("mcp__github__create_issue", {}) == ("mcp", "github.create_issue")
    assert tool_kind("TodoWrite", {"todos": []}) == ("other", "TodoWrite")
    assert tool_kind("BashOutput", {"bash_id": "b1"}) == ("other", "BashOutput")


def test_a_sub_agents_tool_carries_its_parent_tool(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, tool_use("toolu_s", "Read", {"file_path": "/w/a.py"}, parent="toolu_task"))
    [started] = host.logged("tool.started")
    assert (started["tool"], started["parent_tool_id"]) == ("read", "toolu_task")
    assert host.vocabulary_problems() == []


def test_an_mcp_tool_is_titled_server_dot_tool(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, tool_use("toolu_m", "mcp__files__read_file", {"path": "a"}))
    feed(backend, tool_result("toolu_m", [{"type": "text", "text": "contents"}]))
    [done] = host.logged("tool.completed")
    assert (done["tool"], done["name"], done["title"], done["output"]) == (
        "mcp", "mcp__files__read_file", "files.read_file", "contents")


def test_todowrite_becomes_a_plan_and_an_other_tool(tmp_path):
    backend, host = running(tmp_path)
    todos = [{"content": "Write tests", "status": "completed", "activeForm": "Writing tests"},
             {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug"},
             {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]
    feed(backend, tool_use("toolu_t", "TodoWrite", {"todos": todos}))
    [plan] = host.logged("plan")
    assert plan["entries"] == [{"text": "Write tests", "status": "completed"},
                               {"text": "Fix bug", "status": "in_progress"}, {"text": "Ship", "status": "pending"}]
    assert host.logged("tool.started")[0]["tool"] == "other"
    assert host.vocabulary_problems() == []


def test_plan_entries_default_an_unknown_status_to_pending():
    assert plan_entries({"todos": [{"content": "A", "status": "blocked"}, {"status": "done"}]}) == [("A", "pending")]
    assert plan_entries({}) is None


def test_exit_codes_are_inferred_only_from_what_claude_states():
    assert bash_exit_code("completed", "hi", {"stdout": "hi"}) == 0
    assert bash_exit_code("failed", "Exit code 127\nbash: nope: command not found", None) == 127
    assert bash_exit_code("failed", "Command timed out", None) is None
    assert bash_exit_code("declined", "Exit code 1", None) is None
    assert bash_exit_code("completed", "Command running in background with ID: b1",
                          {"backgroundTaskId": "b1"}) is None


# -- file changes ------------------------------------------------------------------------


def test_write_of_a_new_file_is_an_add_with_the_whole_file_as_diff(tmp_path):
    _, host = replayed(tmp_path, "activity__files")
    created = host.logged("file.changed")[0]
    assert (created["path"], created["change"], created["added"], created["removed"]) == (
        "$LAB/work/notes.txt", "add", 3, 0)
    assert created["diff"].startswith("--- /dev/null\n+++ b/$LAB/work/notes.txt\n@@ -0,0 +1,3 @@\n+one\n")
    assert created["tool_id"] == host.logged("tool.started")[0]["tool_id"]


def test_edit_is_an_update_with_claudes_patch_as_diff(tmp_path):
    _, host = replayed(tmp_path, "activity__files")
    edited = host.logged("file.changed")[1]
    assert edited["change"] == "update"
    assert edited["diff"] == ("--- a/$LAB/work/notes.txt\n+++ b/$LAB/work/notes.txt\n"
                              "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")


def test_write_over_an_existing_file_is_an_update(tmp_path):
    _, host = replayed(tmp_path, "activity__files")
    rewritten = host.logged("file.changed")[2]
    assert (rewritten["change"], rewritten["added"], rewritten["removed"]) == ("update", 1, 3)


def test_file_tools_are_file_change_tools_without_exit_codes(tmp_path):
    _, host = replayed(tmp_path, "activity__files")
    assert [(d["tool"], d["name"], d["status"], d["exit_code"]) for d in host.logged("tool.completed")] == [
        ("file_change", "Write", "completed", None), ("file_change", "Edit", "completed", None),
        ("file_change", "Write", "completed", None)]


def test_a_change_without_hunks_is_diffed_from_the_original_file():
    path, change, diff = file_change({"filePath": "/w/a.txt", "originalFile": "a\n", "content": "b\n",
                                      "type": "update", "structuredPatch": []}, {})
    assert (path, change) == ("/w/a.txt", "update")
    assert diff == "--- a/w/a.txt\n+++ b/w/a.txt\n@@ -1 +1 @@\n-a\n+b\n"


# -- usage, session, warnings, errors ------------------------------------------------------


def test_usage_counts_sub_agents_and_agrees_with_the_cost(tmp_path):
    _, host = replayed(tmp_path, "activity__subagent")
    usage = host.logged("usage")[-1]  # the result's: the exact total
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_input_tokens"]) == (30, 15, 0)
    assert (usage["context_window"], usage["context_used"], usage["reasoning_tokens"]) == (1000000, 10, None)
    [result] = host.results()
    assert result[4]["usage"]["input_tokens"] == 30 and result[4]["cost_usd"] == 0.00042  # $4 in, $20 out per Mtok


def test_usage_streams_as_each_api_call_reports_its_prompt_and_output(tmp_path):
    backend, host = running(tmp_path)
    start = {"type": "message_start", "message": {"id": "m1", "usage": {
        "input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 1}}}
    feed(backend, {"type": "stream_event", "api_message_id": "m1", "event": start})
    feed(backend, {"type": "stream_event", "api_message_id": "m1",
                   "event": {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 7}}})
    feed(backend, {"type": "stream_event", "api_message_id": "m2",
                   "event": dict(start, message={"id": "m2", "usage": {"input_tokens": 3}})})
    assert [(u["input_tokens"], u["cached_input_tokens"], u["output_tokens"]) for u in host.logged("usage")] == [
        (125, 100, 0), (125, 100, 7), (128, 100, 7)]


def test_usage_input_counts_cache_reads_and_writes_and_cached_the_reads(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "hi"}],
                                                    "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,
                                                              "cache_creation_input_tokens": 20}}})
    since = {"m": {"inputTokens": 5, "outputTokens": 3, "cacheReadInputTokens": 100, "cacheCreationInputTokens": 20,
                   "costUSD": 0.5, "contextWindow": 200000}}
    feed(backend, {"type": "result", "is_error": False, "terminal_reason": "completed", "result": "hi",
                   "user_message_uuids": ["in-1"], "model_usage_since_last_result": since})
    [usage] = host.logged("usage")
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (125, 100, 3)
    assert (usage["context_window"], usage["context_used"]) == (200000, 125)
    assert host.results()[0][4]["cost_usd"] == 0.5


def test_the_session_line_is_written_once_per_start_from_the_first_init(tmp_path):
    _, host = replayed(tmp_path, "midturn_multi__burst_textonly__0")
    [session] = host.logged("session")
    assert (session["harness"], session["version"], session["model"], session["approval_policy"]) == (
        "claude", "2.1.332", "claude-opus-5-5", "default")
    assert session["session_id"] and session["sandbox"] == "disabled"


def test_an_interrupt_notice_is_a_warning(tmp_path):
    _, host = replayed(tmp_path, "interrupt__tool")
    assert [(w["source"], w["message"]) for w in host.logged("warning")] == [
        ("interrupt", "[Request interrupted by user for tool use]")]
    assert host.logged("diagnostic") == []


def test_task_frames_keep_their_own_kinds_tied_to_the_tool(tmp_path):
    _, host = replayed(tmp_path, "activity__subagent")
    [started] = host.logged("task.started")
    assert started["tool_id"] == "toolu_mock_001_0_f880527b" and started["task_type"] == "local_agent"
    assert host.logged("task.notification")[0]["status"] == "completed"


def test_a_failed_api_call_gives_the_apis_error_type_as_error_class(tmp_path):
    _, host = replayed(tmp_path, "errors__401_max_retries_0")
    [result] = host.results()
    assert result[3] == "failed" and result[4]["error_class"] == "authentication_error"


def test_a_dropped_connection_gives_claudes_class_of_it(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, {"type": "result", "subtype": "success", "is_error": True, "terminal_reason": "api_error",
                   "api_error": "connection_failed", "result": "API Error: Connection dropped",
                   "user_message_uuids": ["in-1"]})
    assert host.results()[0][4]["error_class"] == "connection_failed"


def test_a_failed_turn_without_an_api_error_is_classed_by_its_terminal_reason(tmp_path):
    backend, host = running(tmp_path)
    feed(backend, {"type": "result", "subtype": "error_max_turns", "is_error": True, "terminal_reason": "max_turns",
                   "user_message_uuids": ["in-1"]})
    assert host.results()[0][4]["error_class"] == "max_turns"


# -- approvals -----------------------------------------------------------------------------


def test_a_prompt_that_suppresses_always_allow_offers_no_allow_session(tmp_path):
    _, host = replayed(tmp_path, "permission__suppressed", answers=["deny"])
    [request] = host.named("request")
    assert request[5] == ["allow", "deny"]


def test_a_prompt_that_requires_user_interaction_offers_no_allow_session(tmp_path):
    backend, host = running(tmp_path)
    rule = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "ls"}], "behavior": "allow",
            "destination": "localSettings"}
    for n, flag in enumerate((None, "requires_user_interaction", "suppress_always_allow_rule")):
        request = {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"},
                   "permission_suggestions": [rule], "tool_use_id": "toolu_%d" % n}
        if flag:
            request[flag] = True
        feed(backend, {"type": "control_request", "request_id": "r%d" % n, "request": request})
    assert [r[5] for r in host.named("request")] == [["allow", "deny", "allow-session"], ["allow", "deny"],
                                                     ["allow", "deny"]]


def test_every_recorded_transcript_keeps_to_the_vocabulary_schema(tmp_path):
    from claudecode_support.replay import FIXTURES

    names = sorted(n[:-6] for n in os.listdir(FIXTURES) if n.endswith(".jsonl"))
    assert len(names) >= 20
    for name in names:
        backend, host = make_backend(tmp_path)
        initialize(backend)
        replay(backend, name, answers=["deny"] if name == "permission__deny" else None)
        assert (name, host.vocabulary_problems()) == (name, [])
