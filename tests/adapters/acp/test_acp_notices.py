"""The ACP adapter's notices, compactions, tool names and runs that make no
progress, driven through the FakeHost with frames of the shapes the ACP v1
schema and the pinned agents use (claude-agent-acp 0.101.0, codex-acp 2.6.0):
nothing that is not the agent's reply lands in `output`, and an agent that
cannot reach its model is heard of within seconds."""

from __future__ import annotations

from typing import Any, List, Tuple

from acp_support.replaybed import agent_asks, agent_says, frames, ready_agent, respond

from adapters.acp import progress, wire
from harnessctl.kit.backend import Input

BILLING = ("**Warning:** We're changing auto mode to no longer charge for classifier requests in Claude Code. "
           "However, this session isn't eligible because your requests go through 127.0.0.1:37409.")


def started_run(tmp_path, **env: str):
    host, backend = ready_agent(tmp_path, **env)
    backend.send(Input("in-1", "go"))
    return host, backend


def answer(backend, host, stop: str = "end_turn") -> None:
    respond(backend, host, "session/prompt", {"stopReason": stop})


def timers(host, seconds: float) -> List[Tuple[float, Any]]:
    return [t for t in host.timers if t[0] == seconds]


def fire(host, seconds: float) -> None:
    for _, callback in timers(host, seconds):
        callback()


# -- what the client advertises ------------------------------------------------------------------


def test_initialize_advertises_session_notices_and_compaction(tmp_path):
    host, backend = ready_agent(tmp_path)
    session = frames(host, "initialize")[0]["params"]["clientCapabilities"]["session"]
    assert session == {"notices": {}, "compaction": {}}


# -- notices -----------------------------------------------------------------------------------


def test_a_warning_notice_is_a_warning_line_and_not_the_answer(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                         "content": {"type": "text", "text": "Hello."}})
    agent_says(backend, {"sessionUpdate": "notice", "severity": "warning", "title": "Claude reported a warning",
                         "description": "We're changing auto mode."})
    answer(backend, host)
    (warning,) = host.logged("warning")
    assert (warning["message"], warning["source"], warning["run_id"]) == (
        "Claude reported a warning: We're changing auto mode.", "notice", "run-1")
    assert host.results()[0][4]["output"] == "Hello."
    assert host.vocabulary_problems() == []


def test_an_error_notice_is_a_warning_line_with_its_own_source(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "error", "title": "Answer not sent"})
    (warning,) = host.logged("warning")
    assert (warning["message"], warning["source"]) == ("Answer not sent", "error_notice")


def test_an_info_notice_is_a_notice_line(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "info", "title": "Context compacted",
                         "description": "Conversation compacted to fit the model's context window."})
    (notice,) = host.logged("notice")
    assert notice["message"] == "Context compacted: Conversation compacted to fit the model's context window."
    assert (notice["level"], notice["severity"], notice["run_id"]) == ("info", "info", "run-1")
    assert host.logged("warning") == []


def test_a_notice_of_an_unknown_severity_is_a_notice_line(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "_vendor_loud", "title": "Hi"})
    assert [n["severity"] for n in host.logged("notice")] == ["info"]


def test_a_notice_between_runs_is_logged_without_a_run(tmp_path):
    host, backend = ready_agent(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "warning",
                         "title": 'MCP server "docs" failed to start'})
    (warning,) = host.logged("warning")
    assert warning["run_id"] is None and warning["message"] == 'MCP server "docs" failed to start'


def test_claudes_notice_sent_as_message_text_after_the_answer_is_a_warning_not_the_output(tmp_path):
    host, backend = started_run(tmp_path)  # claude-agent-acp to a client without session.notices
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "messageId": "msg_1",
                         "content": {"type": "text", "text": "Hello from the mock."}})
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": BILLING},
                         "_meta": {"claudeCode": {"kind": "informational", "level": "warning"}}})
    answer(backend, host)
    assert host.results()[0][4]["output"] == "Hello from the mock."
    (warning,) = host.logged("warning")
    assert warning["message"] == BILLING and warning["source"] == "notice"
    assert [t["text"] for t in host.logged("text.delta")] == ["Hello from the mock."]


def test_claudes_informational_text_of_a_lower_level_is_a_notice_line(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "FYI"},
                         "_meta": {"claudeCode": {"kind": "informational", "level": "suggestion"}}})
    answer(backend, host)
    assert [n["message"] for n in host.logged("notice")] == ["FYI"]
    assert host.results()[0][4]["output"] == ""


def test_a_long_notice_is_cut(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "info", "title": "x" * 10000})
    (notice,) = host.logged("notice")
    assert len(notice["message"]) == wire.NOTICE_LIMIT and notice["message"].endswith("…")


# -- compaction --------------------------------------------------------------------------------


def test_a_compaction_is_a_line_per_status_with_its_streamed_summary_at_the_end(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})
    for text in ("The user asked ", "for a greeting."):
        agent_says(backend, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
                             "content": {"type": "text", "text": text}})
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"})
    started, done = host.logged("compaction")
    assert (started["compaction_id"], started["status"], "summary" in started) == ("c1", "in_progress", False)
    assert (done["status"], done["summary"]) == ("completed", "The user asked for a greeting.")
    assert host.vocabulary_problems() == []


def test_a_compaction_summary_given_whole_is_kept(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed",
                         "summary": [{"type": "text", "text": "Summary."}]})
    assert host.logged("compaction")[0]["summary"] == "Summary."


def test_a_failed_compaction_is_a_warning_with_its_error(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "failed",
                         "error": "prompt too long"})
    (warning,) = host.logged("warning")
    assert (warning["message"], warning["source"]) == ("context compaction failed: prompt too long", "compaction")
    assert host.logged("compaction") == []


def test_a_compaction_with_fields_of_the_wrong_type_is_logged_with_plain_values(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": {"x": 1}, "status": ["done"]})
    (line,) = host.logged("compaction")
    assert (line["compaction_id"], line["status"]) == ("", "in_progress")


def test_a_notice_with_fields_of_the_wrong_type_is_still_a_notice_line(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": {"loud": True}, "title": 7, "description": [1]})
    (notice,) = host.logged("notice")
    assert (notice["message"], notice["severity"]) == ("notice", "info")


def test_a_compaction_of_an_idle_session_is_logged_without_a_run(tmp_path):
    host, backend = ready_agent(tmp_path)
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})
    (line,) = host.logged("compaction")
    assert (line["run_id"], line["status"]) == (None, "in_progress")


def test_a_compaction_is_progress_and_a_notice_is_not(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "notice", "severity": "info", "title": "Model rerouted"})
    assert backend.run is not None and not backend.run.progressed
    agent_says(backend, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})
    assert backend.run.progressed


# -- tool names --------------------------------------------------------------------------------


def test_a_tool_named_by_a_later_update_completes_under_that_name(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Terminal", "kind": "execute"})
    agent_says(backend, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "name": "Bash",
                         "status": "completed"})
    (started,), (done,) = host.logged("tool.started"), host.logged("tool.completed")
    assert started["name"] == "execute" and (done["name"], done["tool"]) == ("Bash", "command")


def test_a_tools_v1_name_field_names_it_from_the_start(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "name": "exec_command",
                         "title": "ls", "kind": "execute", "status": "completed"})
    (started,), (done,) = host.logged("tool.started"), host.logged("tool.completed")
    assert started["name"] == done["name"] == "exec_command"


# -- a run that makes no progress ----------------------------------------------------------------


def test_a_run_without_progress_gets_a_warning_quoting_the_agents_stderr_line_that_says_why(tmp_path):
    """claude-agent-acp goes on writing after its reason: the end alone missed it."""
    host, backend = started_run(tmp_path)
    host.children[-1].stderr = ("[session/create] phase=register\n\nAPI Error: Connection refused (ECONNREFUSED)\n"
                                + "[idle-compaction] skip: cache TTL is unknown, not 1h\n" * 3)
    fire(host, progress.QUIET)
    (warning,) = host.logged("warning")
    assert warning["source"] == "no_progress" and warning["run_id"] == "run-1"
    assert warning["message"] == ("the ACP agent fake-agent has shown no progress 10 s after the prompt; its "
                                  "stderr says: API Error: Connection refused (ECONNREFUSED)")


def test_the_no_progress_warning_quotes_fast_agents_missing_model_not_its_advice(tmp_path):
    """fast-agent-mcp 0.10.48 without a model (its stderr as recorded)."""
    host, backend = started_run(tmp_path)
    host.children[-1].stderr = (
        "\nModel Configuration Error:\nNo model configured\n\nDetails:\nSet an agent model, --model, "
        "FAST_AGENT_MODEL, or default_model in \nfast-agent.yaml.\n\nCommon models: gpt-5.5, kimi, sonnet, "
        "haiku. Set reasoning effort on supported \nmodels with gpt-5.4-mini?reasoning=high\n\n"
        "Visit https://fast-agent.ai/ for more information\n")
    fire(host, progress.QUIET)
    assert host.logged("warning")[0]["message"].endswith(
        "; its stderr says: Model Configuration Error: No model configured")


def test_a_stderr_that_names_no_error_is_quoted_by_its_end_bounded_and_cleaned(tmp_path):
    host, backend = started_run(tmp_path)
    host.children[-1].stderr = "one\ntwo\nthree\nfour \x1b]52;c;eA==\x07" + "x" * 1000 + "\n"
    fire(host, progress.QUIET)
    quoted = host.logged("warning")[0]["message"].split("; its stderr ends: ", 1)[1]
    assert quoted.startswith("two | three | four \\x1b]52;c;eA==\\x07xxx") and quoted.endswith("…")
    assert len(quoted) == 300


def test_a_silent_agent_is_said_to_have_written_nothing_on_stderr(tmp_path):
    host, backend = started_run(tmp_path)
    fire(host, progress.QUIET)
    assert host.logged("warning")[0]["message"].endswith("; it wrote nothing on stderr")


def test_the_no_progress_warning_quotes_the_error_the_agent_reports(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "session_info_update", "_meta": {"codex": {"error": {
        "message": "Reconnecting... waiting for network", "additionalDetails": "Connection failed"}}}})
    fire(host, progress.QUIET)
    assert "; it reports: Reconnecting... waiting for network (Connection failed);" in \
        host.logged("warning")[0]["message"]


def test_a_run_that_shows_text_gets_no_no_progress_warning(tmp_path):
    host, backend = started_run(tmp_path)
    agent_says(backend, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Hmm"}})
    fire(host, progress.QUIET)
    assert host.logged("warning") == []


def test_a_permission_request_is_progress(tmp_path):
    host, backend = started_run(tmp_path)
    agent_asks(backend, 7, "session/request_permission", {"sessionId": "s-1", "toolCall": {"toolCallId": "t1"},
                                                           "options": [{"optionId": "a", "kind": "allow_once",
                                                                        "name": "Allow"}]})
    fire(host, progress.QUIET)
    fire(host, progress.NO_PROGRESS)
    assert host.logged("warning") == [] and frames(host, "session/cancel") == []


def test_an_answered_run_gets_no_no_progress_warning(tmp_path):
    host, backend = started_run(tmp_path)
    answer(backend, host)
    fire(host, progress.QUIET)
    assert host.logged("warning") == []


def test_a_run_without_progress_at_the_limit_is_cancelled_and_ends_failed_with_the_reason(tmp_path):
    host, backend = started_run(tmp_path)
    host.children[-1].stderr = "API Error: Connection refused\n"
    fire(host, progress.NO_PROGRESS)
    assert len(frames(host, "session/cancel")) == 1
    answer(backend, host, "cancelled")
    (result,) = host.results()
    assert (result[3], result[4]["error_class"]) == ("failed", "no_progress")
    assert result[4]["error"] == ("the ACP agent fake-agent showed no progress in 300 s "
                                  "(HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT); its stderr says: API Error: "
                                  "Connection refused")


def test_an_agent_that_ignores_the_cancel_is_stopped_and_the_run_fails(tmp_path):
    host, backend = started_run(tmp_path)
    fire(host, progress.NO_PROGRESS)
    fire(host, backend.STOP_GRACE)
    (result,) = host.results()
    assert (result[3], result[4]["error_class"]) == ("failed", "no_progress")
    assert host.children[-1].killed


def test_the_no_progress_limit_is_the_knobs(tmp_path):
    host, backend = started_run(tmp_path, HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT="42")
    assert timers(host, 42.0) and timers(host, progress.QUIET) and not timers(host, progress.NO_PROGRESS)


def test_a_limit_shorter_than_twice_the_quiet_time_warns_at_half_of_it(tmp_path):
    host, backend = started_run(tmp_path, HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT="3")
    fire(host, 1.5)
    assert host.logged("warning")[0]["message"].startswith("the ACP agent fake-agent has shown no progress "
                                                           "1.5 s after the prompt;")


def test_a_knob_that_is_no_positive_number_of_seconds_is_the_default():
    assert [wire.seconds(v, 300.0) for v in (None, "", "x", "0", "-5", "nan", "inf", "1e99", "2.5")] == [
        300.0, 300.0, 300.0, 300.0, 300.0, 300.0, 300.0, 365 * 86400.0, 2.5]
