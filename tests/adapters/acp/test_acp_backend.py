"""The ACP adapter against the wire recorded from the real agents (codex-acp 2.6.0,
claude-agent-acp 0.101.0, gemini --acp 0.61.0; trimmed in acp_support/transcripts/)
and hand-made frames of the same shapes, driven through the FakeHost: what it
writes to the agent, and what it reports."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

import pytest
from acp_support.replaybed import (
    CWD,
    Replay,
    agent_asks,
    agent_says,
    answer_to,
    frames,
    make,
    ready_agent,
    respond,
    send_prompt,
    started,
)

from adapters.acp import wire
from adapters.acp.backend import AcpBackend
from harnessctl.kit.backend import Config, Input

# -- start -----------------------------------------------------------------------------------


def test_start_initializes_with_fs_and_no_terminal_then_opens_a_session_in_the_bound_cwd(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    replay.to("session/prompt")
    init, new = frames(host, "initialize")[0], frames(host, "session/new")[0]
    assert init["jsonrpc"] == "2.0" and init["params"]["protocolVersion"] == 1
    capabilities = init["params"]["clientCapabilities"]
    assert (capabilities["fs"], capabilities["terminal"]) == ({"readTextFile": True, "writeTextFile": True}, False)
    assert new["params"] == {"cwd": CWD, "mcpServers": []}
    assert host.reports() == [("ready",)]
    assert host.children[0].argv == ["fake-agent", "--flag"] and host.children[0].cwd == CWD


def test_the_session_line_records_what_the_agent_advertises_and_its_steering(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    replay.to("session/prompt")
    (session,) = host.logged("session")
    assert session["session_id"] == "01a237c1-bf9f-7513-87c2-1f4774f22e2a"
    assert (session["harness"], session["version"]) == ("@agentclientprotocol/codex-acp", "2.6.0")
    assert session["approval_policy"] == "agent" and session["model"] == "mock-model[medium]"
    assert session["capabilities"]["steering"] == {"supported": True}
    assert session["capabilities"]["loadSession"] is True
    assert host.vocabulary_problems() == []


def test_gemini_advertises_no_steering_in_the_session_line(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__a_basic")
    replay.to("session/prompt")
    assert host.logged("session")[0]["capabilities"]["steering"] == {"supported": False}
    assert backend.steering is False


def test_a_start_without_an_agent_fails_saying_how_to_name_one(tmp_path):
    host, backend = make(tmp_path, agent=None)
    backend.start()
    ((_, message),) = host.named("start_failed")
    assert "--agent" in message and "HARNESSCTL_ACP_AGENT" in message and "codex" in message
    assert host.children == []


def test_a_preset_runs_its_command_and_its_variable_replaces_it(tmp_path):
    host, backend = make(tmp_path, agent="gemini", HARNESSCTL_ACP_ARGS="--debug 'a b'")
    backend.start()
    assert host.children[0].argv == ["gemini", "--acp", "--debug", "a b"]
    host, backend = make(tmp_path, agent="codex", HARNESSCTL_ACP_CODEX_CMD="node /opt/codex-acp/dist/index.js")
    backend.start()
    assert host.children[0].argv == ["node", "/opt/codex-acp/dist/index.js"]


def test_a_missing_agent_binary_fails_the_start_with_the_package_and_the_variable(tmp_path):
    host, backend = make(tmp_path, agent="claude")
    host.spawn_error = FileNotFoundError(2, "No such file or directory")
    backend.start()
    ((_, message),) = host.named("start_failed")
    assert "claude-agent-acp" in message and "@agentclientprotocol/claude-agent-acp" in message
    assert "HARNESSCTL_ACP_CLAUDE_CMD" in message


def test_an_agent_variable_naming_nothing_fails_the_start_blaming_the_variable(tmp_path):
    host, backend = make(tmp_path, agent="claude", HARNESSCTL_ACP_CLAUDE_CMD="/nonexistent/claude-agent-acp --x")
    host.spawn_error = FileNotFoundError(2, "No such file or directory")
    backend.start()
    assert host.named("start_failed") == [
        ("start_failed", "HARNESSCTL_ACP_CLAUDE_CMD points at nothing executable (/nonexistent/claude-agent-acp)")]


def test_an_agent_that_exits_before_answering_initialize_fails_the_start(tmp_path):
    host, backend = make(tmp_path)
    backend.start()
    backend.on_exit(0)  # codex-acp without its codex: rc 0, initialize never answered
    ((_, message),) = host.named("start_failed")
    assert "exited (code 0) before it was ready" in message


def test_the_mode_variable_selects_a_mode_the_agent_offers(tmp_path):
    host, backend, replay = started(tmp_path, "claude__a_basic", HARNESSCTL_ACP_MODE="default")
    replay.to("session/prompt")
    (set_mode,) = frames(host, "session/set_mode")
    assert set_mode["params"] == {"sessionId": "4f1a581d-5e4b-4872-8c1f-13aba8f98a64", "modeId": "default"}
    assert host.reports() == [("ready",)] and host.logged("session")[0]["approval_policy"] == "default"


def test_a_mode_the_agent_does_not_offer_fails_the_start_naming_the_offered_ones(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__a_basic", HARNESSCTL_ACP_MODE="read-only")
    replay.to("session/prompt")
    ((_, message),) = host.named("start_failed")
    assert "read-only" in message and "default, autoEdit, yolo, plan" in message
    assert frames(host, "session/set_mode") == [] and host.children[0].killed


OPENCODE_MODES = {"configOptions": [  # opencode 1.18.33 / kilo 7.7.7: modes only as a config option
    {"id": "model", "category": "model", "type": "select", "currentValue": "mock/mock-model",
     "options": [{"value": "mock/mock-model", "name": "Mock"}]},
    {"id": "mode", "category": "mode", "type": "select", "currentValue": "build",
     "options": [{"value": "build", "name": "build"}, {"value": "plan", "name": "plan"}]}]}


def test_a_mode_offered_only_as_a_config_option_is_set_through_it(tmp_path):
    host, backend = ready_agent(tmp_path, session=OPENCODE_MODES, HARNESSCTL_ACP_MODE="plan")
    (request,) = frames(host, "session/set_config_option")
    assert request["params"] == {"sessionId": "s-1", "configId": "mode", "value": "plan"}
    respond(backend, host, "session/set_config_option")
    assert host.reports() == [("ready",)] and host.logged("session")[0]["approval_policy"] == "plan"


def test_a_mode_a_config_option_does_not_offer_fails_the_start_naming_its_values(tmp_path):
    host, backend = ready_agent(tmp_path, session=OPENCODE_MODES, HARNESSCTL_ACP_MODE="yolo")
    ((_, message),) = host.named("start_failed")
    assert "does not offer mode yolo (it offers build, plan)" in message


def test_a_mode_named_by_the_fragment_of_the_agents_url_id_is_that_mode(tmp_path):
    base = "https://agentclientprotocol.com/protocol/session-modes#"  # copilot 1.0.102's mode ids
    session = {"modes": {"currentModeId": base + "agent",
                         "availableModes": [{"id": base + m, "name": m} for m in ("agent", "plan", "autopilot")]}}
    host, backend = ready_agent(tmp_path, session=session, HARNESSCTL_ACP_MODE="plan")
    assert frames(host, "session/set_mode")[0]["params"]["modeId"] == base + "plan"


def test_modes_that_are_thinking_levels_are_not_called_an_approval_policy(tmp_path):
    session = {"modes": {"currentModeId": "off", "availableModes": [{"id": "off", "name": "off"}]},  # pi-acp
               "configOptions": [{"id": "thought_level", "category": "thought_level", "type": "select",
                                  "currentValue": "off", "options": [{"value": "off", "name": "off"}]}]}
    host, backend = ready_agent(tmp_path, session=session)
    assert host.logged("session")[0]["approval_policy"] is None


def test_model_goes_to_the_option_named_model_not_the_first_of_its_category(tmp_path):
    session = {"configOptions": [  # cline 3.0.65 (without its models object): provider comes first
        {"id": "provider", "category": "model", "type": "select", "currentValue": "openai-compatible"},
        {"id": "model", "category": "model", "type": "select", "currentValue": "gpt-4o"}]}
    host, backend = ready_agent(tmp_path, session=session, model="mock-model")
    (request,) = frames(host, "session/set_config_option")
    assert request["params"]["configId"] == "model"


def test_model_goes_to_set_model_when_the_agent_lists_models(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic", model="gpt-6.1-sol[low]")
    replay.to("session/prompt")
    (request,) = frames(host, "session/set_model")
    assert request["params"] == {"sessionId": "01a237c1-bf9f-7513-87c2-1f4774f22e2a", "modelId": "gpt-6.1-sol[low]"}
    respond(backend, host, "session/set_model")
    assert host.reports() == [("ready",)] and host.logged("session")[0]["model"] == "gpt-6.1-sol[low]"


def test_model_goes_to_the_model_config_option_when_the_agent_has_one(tmp_path):
    host, backend, replay = started(tmp_path, "claude__a_basic", model="sonnet")
    replay.to("session/prompt")
    (request,) = frames(host, "session/set_config_option")
    assert request["params"] == {"sessionId": "4f1a581d-5e4b-4872-8c1f-13aba8f98a64", "configId": "model",
                                 "value": "sonnet"}


def test_a_model_the_agent_refuses_fails_the_start(tmp_path):
    host, backend = ready_agent(tmp_path, model="nope", session={"models": {"currentModelId": "a"}})
    respond(backend, host, "session/set_model", error={"code": -32602, "message": "Invalid params"})
    assert "refused model nope" in host.named("start_failed")[0][1]


def test_a_model_the_agent_cannot_select_is_a_diagnostic(tmp_path):
    host, backend = ready_agent(tmp_path, model="m1")
    assert host.reports() == [("ready",)]
    assert "offers no model selection" in host.logged("diagnostic")[0]["message"]


# -- runs --------------------------------------------------------------------------------------


def test_a_prompt_is_a_run_accepted_when_written_and_ended_by_its_response(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    send_prompt(replay, backend, "in-1")
    assert frames(host, "session/prompt")[0]["params"]["prompt"] == [{"type": "text", "text": "Say hello."}]
    assert host.reports()[-1] == ("accepted", "in-1", "start", "run-1")
    replay.to("session/prompt")
    (result,) = host.results()
    assert result[1:4] == ("run-1", ["in-1"], "completed")
    assert result[4]["output"] == "Hello from the mock."
    assert ("message", "run-1", "item_1_0", "Hello from the mock.") in host.calls


def test_codex_warnings_sent_as_assistant_text_are_warning_lines(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    send_prompt(replay, backend, "in-1")
    replay.to("session/prompt")
    (warning,) = host.logged("warning")
    assert warning["message"].startswith("Warning: Model metadata for `mock-model` not found")
    assert [t["text"] for t in host.logged("text.delta")] == ["Hello from the mock."]


def test_usage_counts_cached_input_and_the_context_and_goes_into_the_result(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    send_prompt(replay, backend, "in-1")
    replay.to("session/prompt")
    usage = host.logged("usage")[-1]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (100, 20, 10)
    assert (usage["reasoning_tokens"], usage["context_used"], usage["context_window"]) == (3, 110, 258400)
    assert host.results()[0][4]["usage"]["input_tokens"] == 100
    assert host.vocabulary_problems() == []


def test_a_codex_command_is_a_command_tool_with_its_streamed_output_and_exit_code(tmp_path):
    host, backend, replay = started(tmp_path, "codex__a_basic")
    send_prompt(replay, backend, "in-1")
    send_prompt(replay, backend, "in-2")
    replay.to("session/prompt")
    (start,), (output,), (done,) = host.logged("tool.started"), host.logged("tool.output"), \
        host.logged("tool.completed")
    assert (start["tool_id"], start["tool"], start["name"], start["title"]) == (
        "call_2_0", "command", "exec_command", "echo acplab-tool-output")
    assert start["input"]["command"] == "echo acplab-tool-output"
    assert output["text"] == "acplab-tool-output\n"
    assert (done["status"], done["exit_code"], done["output"]) == ("completed", 0, "acplab-tool-output\n")
    assert host.results()[1][4]["output"] == "The command printed acplab-tool-output."


def test_a_claude_tool_completes_with_the_title_and_output_its_updates_gave(tmp_path):
    host, backend, replay = started(tmp_path, "claude__a_basic")
    send_prompt(replay, backend, "in-1")
    send_prompt(replay, backend, "in-2")
    replay.to("session/prompt")
    (start,), (done,) = host.logged("tool.started"), host.logged("tool.completed")
    assert (start["name"], start["title"]) == ("Bash", "Terminal")  # claude names the command in an update
    assert (done["title"], done["output"], done["exit_code"]) == ("echo acplab-tool-output", "acplab-tool-output",
                                                                  None)


def test_claude_cost_is_the_difference_of_its_cumulative_session_cost(tmp_path):
    host, backend, replay = started(tmp_path, "claude__a_basic")
    send_prompt(replay, backend, "in-1")
    send_prompt(replay, backend, "in-2")
    replay.to("session/prompt")
    costs = [r[4]["cost_usd"] for r in host.results()]
    assert costs == [pytest.approx(0.00028), pytest.approx(0.00042)]


def test_gemini_text_without_message_ids_is_one_message_per_stretch_between_tools(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__a_basic")
    send_prompt(replay, backend, "in-1")
    send_prompt(replay, backend, "in-2")
    replay.to("session/prompt")
    second = [t for t in host.logged("text.delta") if t["run_id"] == "run-2"]
    assert [t["message_id"] for t in second] == ["run-2:1"]
    assert host.results()[1][4]["output"] == "The command printed acplab-tool-output."
    assert host.results()[0][4]["usage"] == {"input_tokens": 10, "output_tokens": 5}  # _meta.quota
    (done,) = host.logged("tool.completed")
    assert (done["name"], done["tool"], done["status"]) == ("run_shell_command", "command", "completed")


def test_an_unnamed_paragraph_before_the_named_message_is_a_warning_whatever_its_words(tmp_path):
    host, backend = ready_agent(tmp_path)  # @zed-industries/codex-acp 0.16.0: no "Warning: " prefix
    backend.send(Input("in-1", "go"))
    note = "Model metadata for `mock-model` not found. Defaulting to fallback metadata.\n\n"
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": note}})
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                         "content": {"type": "text", "text": "Hello."}})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    (warning,) = host.logged("warning")
    assert warning["message"] == note.strip() and warning["source"] == "agent_message"
    assert host.results()[0][4]["output"] == "Hello."


def test_an_unnamed_paragraph_followed_by_more_unnamed_text_is_message_text(tmp_path):
    host, backend = ready_agent(tmp_path)  # gemini names no message: nothing of it is a warning
    backend.send(Input("in-1", "go"))
    for text in ("First paragraph.\n\n", "Second."):
        agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert host.logged("warning") == []
    assert host.results()[0][4]["output"] == "First paragraph.\n\nSecond."


def test_an_unnamed_paragraph_that_ends_the_turn_is_its_output(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done.\n\n"}})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert host.logged("warning") == [] and host.results()[0][4]["output"] == "Done.\n\n"


def test_an_update_for_a_tool_that_already_ended_does_not_start_it_again(tmp_path):
    host, backend = ready_agent(tmp_path)  # cline 3.0.65 re-sends a declined tool as failed
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "execute", "title": "touch x"})
    agent_says(backend, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "failed"})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert len(host.logged("tool.started")) == 1 and len(host.logged("tool.completed")) == 1


def test_a_tool_run_outside_the_bound_cwd_is_a_diagnostic_once(tmp_path):
    host, backend = ready_agent(tmp_path)  # openclaw runs commands in its gateway's workspace
    backend.send(Input("in-1", "go"))
    for n in (1, 2):
        agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t%d" % n, "kind": "execute",
                             "title": "exec", "rawInput": {"command": "ls", "workdir": "/root/.openclaw/workspace"}})
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t3", "kind": "execute", "title": "exec",
                         "rawInput": {"command": "ls", "cwd": CWD + "/sub"}})
    notes = [d["message"] for d in host.logged("diagnostic") if "not in the session's cwd" in d["message"]]
    assert len(notes) == 1 and "/root/.openclaw/workspace" in notes[0] and CWD in notes[0]


def test_where_a_finished_tool_ran_and_its_exit_code_come_from_its_raw_output_details(tmp_path):
    host, backend = ready_agent(tmp_path)  # openclaw 2026.9.6: rawInput is only {"command": ...}
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "execute", "title": "exec",
                         "rawInput": {"command": "touch x"}})
    agent_says(backend, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                         "rawOutput": {"details": {"cwd": "/elsewhere", "exitCode": 0}}})
    (done,) = host.logged("tool.completed")
    assert done["exit_code"] == 0
    assert any("/elsewhere" in d["message"] for d in host.logged("diagnostic"))


def test_text_after_a_tool_call_starts_a_new_unnamed_message(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}})
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "read", "title": "x"})
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert [c[2:] for c in host.named("message")] == [("run-1:1", "a"), ("run-1:2", "b")]
    assert host.results()[0][4]["output"] == "b"


def test_thoughts_plans_and_diffs_map_to_the_vocabulary(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
    agent_says(backend, {"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "high",
                                                               "status": "in_progress"}]})
    diff = {"type": "diff", "path": "/work/project/f.txt", "oldText": "1\n", "newText": "2\n"}
    agent_says(backend, {"sessionUpdate": "tool_call", "toolCallId": "e1", "kind": "edit", "title": "Edit f.txt",
                         "status": "in_progress", "content": [diff]})
    agent_says(backend, {"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed"})
    assert host.logged("reasoning.delta")[0]["form"] == "raw"
    assert host.logged("plan")[0]["entries"] == [{"text": "a", "status": "in_progress"}]
    (change,) = host.logged("file.changed")
    assert (change["path"], change["change"], change["added"], change["removed"]) == (
        "/work/project/f.txt", "update", 1, 1)
    assert host.logged("tool.completed")[0]["tool"] == "file_change"
    assert host.vocabulary_problems() == []


def test_stop_reasons_other_than_end_turn_and_cancelled_fail_the_run_with_their_name(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    respond(backend, host, "session/prompt", {"stopReason": "max_tokens"})
    details = host.results()[0][4]
    assert host.results()[0][3] == "failed" and details["error_class"] == "max_tokens"
    assert "max_tokens" in details["error"]


def test_gemini_http_401_fails_the_run_with_http_401(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__f_http_401")
    send_prompt(replay, backend, "in-1")
    send_prompt(replay, backend, "in-2")
    replay.to()
    first, second = host.results()
    assert first[3] == "failed" and first[4]["error_class"] == "http_401"
    assert first[4]["error"] == "mock says 401 (UNAUTHENTICATED)"
    assert second[3] == "completed"


def test_claude_http_500_fails_the_run_with_its_error_kind(tmp_path):
    host, backend, replay = started(tmp_path, "claude__f_http_500", HARNESSCTL_ACP_MODE="default")
    send_prompt(replay, backend, "in-1")
    replay.to("session/prompt")
    details = host.results()[0][4]
    assert details["error_class"] == "server_error" and "API Error: 500 mock says 500" in details["error"]


def test_codex_http_500_ends_completed_with_the_error_only_as_text(tmp_path):
    host, backend, replay = started(tmp_path, "codex__f_http_500")
    send_prompt(replay, backend, "in-1")
    replay.to("session/prompt")
    result = host.results()[0]
    assert result[3] == "completed" and "high demand" in result[4]["output"]


# -- busy sends ------------------------------------------------------------------------------


def test_a_busy_send_to_a_steering_agent_is_injected_into_the_running_run(tmp_path):
    host, backend, replay = started(tmp_path, "codex__b_steer")
    send_prompt(replay, backend, "in-1")
    steer = replay.to("_session/steering")
    backend.send(Input("in-2", steer["params"]["prompt"][0]["text"]))
    (written,) = frames(host, "_session/steering")
    assert written["params"]["_meta"] == {"steering": {"idleBehavior": "promptRequired"}}
    replay.to()
    assert ("accepted", "in-2", "steer", "run-1") in host.reports()
    (result,) = host.results()
    assert result[2] == ["in-1", "in-2"] and result[4]["output"] == "Steered answer: bananas are included."


def test_a_message_a_steer_cut_off_is_never_a_message_its_fragments_stay_in_the_log(tmp_path):
    host, backend, replay = started(tmp_path, "codex__b_steer")
    send_prompt(replay, backend, "in-1")
    steer = replay.to("_session/steering")
    backend.send(Input("in-2", steer["params"]["prompt"][0]["text"]))
    replay.to()
    texts = [call[4]["text"] for call in host.logs("text.delta")]
    assert [m[3] for m in host.named("message")] == ["Steered answer: bananas are included."]
    assert any(t.startswith("PART1") for t in texts), texts  # the cut text is in the log only


def test_a_message_a_cancel_cut_off_is_never_a_message(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                         "content": {"type": "text", "text": "half a sen"}})
    backend.interrupt()
    respond(backend, host, "session/prompt", {"stopReason": "cancelled"})
    assert host.named("message") == [] and host.results()[0][3] == "cancelled"


def test_a_steer_answered_after_the_runs_response_is_still_in_its_result(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert host.results() == []
    respond(backend, host, "_session/steering", {"outcome": "injected"})
    assert host.business()[-2:] == [("accepted", "in-2", "steer", "run-1"),
                                    ("result", "run-1", ["in-1", "in-2"], "completed",
                                     {"output": "", "usage": None, "cost_usd": None, "error": None})]


def test_a_steer_the_agent_answers_prompt_required_starts_the_next_run(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    respond(backend, host, "_session/steering", {"outcome": "promptRequired", "reason": "noRunningTurn"})
    assert ("accepted", "in-2", "queued", None) in host.reports()  # its run's response is still on the way
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert host.business()[-2:] == [("result", "run-1", ["in-1"], "completed",
                                     {"output": "", "usage": None, "cost_usd": None, "error": None}),
                                    ("attributed", "in-2", "run-2")]
    assert frames(host, "session/prompt")[-1]["params"]["prompt"] == [{"type": "text", "text": "more"}]


def test_a_steer_after_the_run_ended_starts_a_run_at_once(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    respond(backend, host, "_session/steering", {"outcome": "promptRequired", "reason": "noRunningTurn"})
    assert host.business()[-2:] == [("result", "run-1", ["in-1"], "completed",
                                     {"output": "", "usage": None, "cost_usd": None, "error": None}),
                                    ("accepted", "in-2", "start", "run-2")]


def test_a_refused_steer_fails_the_send(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    respond(backend, host, "_session/steering", error={"code": -32603, "message": "Internal error"})
    assert host.reports()[-1][:2] == ("send_failed", "in-2") and host.reports()[-1][3] is True


def test_a_busy_send_to_an_agent_without_steering_is_held_and_starts_the_next_run(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__a_basic")
    send_prompt(replay, backend, "in-1")
    backend.send(Input("in-2", "second"))
    backend.send(Input("in-3", "third"))
    assert host.reports()[-2:] == [("accepted", "in-2", "queued", None), ("accepted", "in-3", "queued", None)]
    assert len(frames(host, "session/prompt")) == 1 and frames(host, "_session/steering") == []
    replay.to("session/prompt")
    assert host.business()[-3:] == [("result", "run-1", ["in-1"], "completed", host.results()[0][4]),
                                    ("attributed", "in-2", "run-2"), ("attributed", "in-3", "run-2")]
    assert frames(host, "session/prompt")[-1]["params"]["prompt"] == [{"type": "text", "text": "second"},
                                                                      {"type": "text", "text": "third"}]
    assert host.results()[0][3] == "completed"


def test_a_send_while_the_agent_is_not_ready_fails_unavailable(tmp_path):
    host, backend = make(tmp_path)
    backend.start()
    backend.send(Input("in-1", "go"))
    assert host.reports()[-1] == ("send_failed", "in-1", "the ACP agent is not running", True)


# -- cancel and permissions ---------------------------------------------------------------------


def test_cancel_is_a_session_cancel_notification_and_ends_the_run_cancelled(tmp_path):
    host, backend, replay = started(tmp_path, "codex__c_cancel_permission", HARNESSCTL_ACP_MODE="read-only")
    send_prompt(replay, backend, "in-1")
    replay.to("session/cancel")
    ((_, request_id, *_),) = host.named("request")
    backend.interrupt()
    (cancel,) = frames(host, "session/cancel")
    assert "id" not in cancel and cancel["params"] == {"sessionId": "01a237c2-3c0e-7fb2-bb3e-6900c438441d"}
    assert answer_to(host, 0)["result"] == {"outcome": {"outcome": "cancelled"}}
    assert ("request_closed", request_id) in host.reports()
    replay.to("session/prompt")  # codex's $/cancel_request for the request, then the cancelled response
    assert host.results()[0][2:4] == (["in-1"], "cancelled")
    assert host.named("request_closed") == [("request_closed", request_id)]


def test_a_request_the_agent_withdraws_is_closed(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_asks(backend, 0, "session/request_permission", {"sessionId": "s-1", "toolCall": {
        "toolCallId": "t1", "kind": "execute", "title": "rm x"}, "options": [
        {"optionId": "y", "name": "Yes", "kind": "allow_once"},
        {"optionId": "n", "name": "No", "kind": "reject_once"}]})
    backend.on_line(json.dumps({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}}))
    assert host.named("request_closed") == [("request_closed", "req-1")]


def test_an_error_answering_a_cancelled_prompt_ends_the_run_cancelled(tmp_path):
    host, backend = ready_agent(tmp_path)  # qwen 0.15.10, cancelled before the model's first byte
    backend.send(Input("in-1", "go"))
    backend.interrupt()
    respond(backend, host, "session/prompt", error={"code": -32603, "message": "Internal error",
                                                    "data": {"details": "Request was aborted."}})
    (result,) = host.results()
    assert result[3] == "cancelled" and result[4]["error"] is None
    assert "Request was aborted." in host.logged("diagnostic")[-1]["message"]


def test_an_error_answering_a_prompt_not_cancelled_fails_the_run(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    respond(backend, host, "session/prompt", error={"code": -32603, "message": "Internal error"})
    assert host.results()[0][3] == "failed"


def test_cancel_drops_held_inputs_with_their_own_cancelled_result(tmp_path):
    host, backend = ready_agent(tmp_path, init={"protocolVersion": 1, "agentCapabilities": {}})
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    backend.interrupt()
    assert host.results() == [("result", None, ["in-2"], "cancelled",
                               {"output": "", "usage": None, "cost_usd": None, "error": None})]
    respond(backend, host, "session/prompt", {"stopReason": "cancelled"})
    assert host.results()[-1][1:4] == ("run-1", ["in-1"], "cancelled")
    assert len(frames(host, "session/prompt")) == 1


def test_a_steer_in_flight_at_a_cancel_that_missed_the_turn_is_dropped(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.send(Input("in-2", "more"))
    backend.interrupt()
    respond(backend, host, "session/prompt", {"stopReason": "cancelled"})
    respond(backend, host, "_session/steering", {"outcome": "promptRequired"})
    assert host.business()[-2:] == [("accepted", "in-2", "queued", None),
                                    ("result", None, ["in-2"], "cancelled",
                                     {"output": "", "usage": None, "cost_usd": None, "error": None})]
    assert len(frames(host, "session/prompt")) == 1


def test_permission_options_are_named_from_their_acp_kinds_and_answered_with_the_option_id(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__d_permission", HARNESSCTL_ACP_MODE="default")
    send_prompt(replay, backend, "in-1")
    replay.to(reply=True)
    ((_, request_id, run_id, kind, message, options, details),) = host.named("request")
    assert (run_id, kind, message) == ("run-1", "permission", "Run: touch rejected.txt")
    assert options == ["allow-session", "allow", "deny"]
    assert details["option_descriptions"] == ["Allow for this session", "Allow", "Reject"]
    assert details["tool"] == "command" and details["tool_id"].startswith("run_shell_command__")
    backend.answer(host.token(request_id), "deny")
    assert answer_to(host, 0)["result"] == {"outcome": {"outcome": "selected", "optionId": "cancel"}}


def test_gemini_tool_calls_start_from_the_permission_request_and_a_denied_one_ends_declined(tmp_path):
    host, backend, replay = started(tmp_path, "gemini__d_permission", HARNESSCTL_ACP_MODE="default")
    send_prompt(replay, backend, "in-1")
    replay.to(reply=True)
    (start,) = host.logged("tool.started")
    assert (start["tool"], start["name"], start["title"]) == ("command", "run_shell_command", "touch rejected.txt")
    backend.answer(host.token("req-1"), "deny")
    replay.to("session/prompt")
    (done,) = host.logged("tool.completed")
    assert (done["tool_id"], done["status"]) == (start["tool_id"], "declined")
    assert host.vocabulary_problems() == []


def test_a_command_given_as_a_list_of_commands_is_their_chain():
    assert wire.command_line({"commands": ["touch asked.txt"]}) == "touch asked.txt"
    assert wire.command_line({"commands": ["make", "make test"]}) == "make && make test"  # cline 3.0.65


@pytest.mark.parametrize("key", ["cwd", "workdir"])
def test_a_command_request_carries_the_cwd_its_raw_input_names_for_the_rules(key):
    details = wire.permission_subject("execute", None, "ls", {"command": "ls", key: "/elsewhere"}, None, None)
    assert (details["command"], details["cwd"]) == ("ls", "/elsewhere")


def test_two_options_of_one_kind_are_named_by_the_agents_words_and_no_reject_option_adds_deny():
    names, texts, mapping = wire.permission_options([  # qwen 0.15.10's four options
        {"optionId": "once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "proj", "name": "Always Allow in project: touch *", "kind": "allow_always"},
        {"optionId": "user", "name": "Always Allow for user: touch *", "kind": "allow_always"},
        {"optionId": "z", "name": "Odd", "kind": "something_new"}])
    assert names == ["allow", "allow-session-in-project", "allow-session-for-user", "z", "deny"]
    assert mapping == {"allow": "once", "allow-session-in-project": "proj", "allow-session-for-user": "user",
                       "z": "z", "deny": ""}
    assert texts[1] == "Always Allow in project: touch *"


def test_many_options_alike_get_distinct_names_in_order():
    options = [{"optionId": "o%d" % i, "name": "Allow", "kind": "allow_once"} for i in range(5000)]
    names, _, mapping = wire.permission_options(options)  # a hostile agent's list: named once each, in order
    assert names[:3] == ["allow", "allow-2", "allow-3"] and names[4999] == "allow-5000" and len(set(names)) == 5001
    assert mapping["allow-5000"] == "o4999"


def test_two_options_of_one_kind_with_the_same_words_get_numbered_names():
    names, _, _ = wire.permission_options([
        {"optionId": "a1", "name": "Allow", "kind": "allow_once"}, {"optionId": "a2", "name": "Allow",
                                                                    "kind": "allow_once"},
        {"optionId": "r", "name": "No", "kind": "reject_once"}])
    assert names == ["allow", "allow-2", "deny"]


def test_deny_without_a_reject_option_answers_the_request_cancelled(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_asks(backend, 7, "session/request_permission", {"sessionId": "s-1", "toolCall": {"toolCallId": "t"},
                                                          "options": [{"optionId": "ok", "kind": "allow_once"}]})
    backend.answer(host.token("req-1"), "deny")
    assert answer_to(host, 7)["result"] == {"outcome": {"outcome": "cancelled"}}


def test_a_request_still_pending_when_its_run_ends_is_answered_cancelled(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    agent_asks(backend, 3, "session/request_permission", {"sessionId": "s-1", "toolCall": {"toolCallId": "t"},
                                                          "options": [{"optionId": "ok", "kind": "allow_once"}]})
    respond(backend, host, "session/prompt", {"stopReason": "end_turn"})
    assert answer_to(host, 3)["result"] == {"outcome": {"outcome": "cancelled"}}


# -- the agent's other requests -----------------------------------------------------------------------


def test_gemini_reads_a_missing_file_as_empty_and_writes_through_the_client(tmp_path):
    cwd = str(tmp_path / "work")
    os.mkdir(cwd)
    host, backend = ready_agent(tmp_path, cwd=cwd)
    backend.send(Input("in-1", "go"))
    target = os.path.join(cwd, "sub", "new.txt")
    agent_asks(backend, 0, "fs/read_text_file", {"path": target, "sessionId": "s-1"})
    assert answer_to(host, 0)["result"] == {"content": ""}
    agent_asks(backend, 1, "fs/write_text_file", {"path": target, "content": "hi\n", "sessionId": "s-1"})
    assert answer_to(host, 1)["result"] == {}
    with open(target, encoding="utf-8") as f:
        assert f.read() == "hi\n"


def test_fs_reads_honour_line_and_limit(tmp_path):
    (tmp_path / "f.txt").write_text("1\n2\n3\n4\n")
    params = {"path": str(tmp_path / "f.txt"), "line": 2, "limit": 2}
    config = Config(str(tmp_path), None, str(tmp_path / "e.jsonl.d"), {}, False)
    assert wire.read_text(config, params) == {"content": "2\n3\n"}


def test_fs_outside_the_bound_cwd_is_refused(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    (tmp_path / "secret").write_text("x")
    os.symlink(str(tmp_path / "secret"), str(cwd / "link"))
    host, backend = ready_agent(tmp_path, cwd=str(cwd))
    for n, path in enumerate([str(tmp_path / "secret"), str(cwd / "link"), str(cwd / ".." / "secret"), "rel.txt"]):
        agent_asks(backend, n, "fs/read_text_file", {"path": path, "sessionId": "s-1"})
        assert answer_to(host, n)["error"]["code"] == -32602, path
    agent_asks(backend, 9, "fs/write_text_file", {"path": str(tmp_path / "out"), "content": "x"})
    assert answer_to(host, 9)["error"]["code"] == -32602 and not (tmp_path / "out").exists()


def test_fs_refuses_a_file_with_other_hard_links_to_read_and_to_write(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    (tmp_path / "outside").write_text("mine")
    os.link(str(tmp_path / "outside"), str(cwd / "link"))
    config = Config(str(cwd), None, str(tmp_path / "e.jsonl.d"), {}, False)
    with pytest.raises(PermissionError, match="hard links"):
        wire.read_text(config, {"path": str(cwd / "link")})
    with pytest.raises(PermissionError, match="hard links"):
        wire.write_text(config, {"path": str(cwd / "link"), "content": "x"})
    assert (tmp_path / "outside").read_text() == "mine"


def test_terminal_and_unknown_agent_requests_are_method_not_found(tmp_path):
    host, backend = ready_agent(tmp_path)
    agent_asks(backend, 4, "terminal/create", {"sessionId": "s-1", "command": "ls"})
    assert answer_to(host, 4)["error"]["code"] == -32601


# -- resume ---------------------------------------------------------------------------------------------


def test_the_session_id_is_kept_and_the_next_start_resumes_it(tmp_path):
    host, backend, replay = started(tmp_path, "claude__e_resume", HARNESSCTL_ACP_MODE="default")
    send_prompt(replay, backend, "in-1")
    host2, backend2 = make(tmp_path)
    backend2.start()
    replay2 = Replay("claude__e_resume", host2, backend2)
    replay2.at = next(i for i, e in enumerate(replay2.entries) if e["msg"].get("method") == "session/list") - 1
    replay2.requests[0] = ("initialize", 0)
    msg = replay2.to("session/prompt")
    (resume,) = frames(host2, "session/resume")
    assert resume["params"]["sessionId"] == "9889e820-32c2-4820-8d0e-24fd2a28e034"
    assert frames(host2, "session/new") == [] and host2.reports() == [("ready",)]
    assert msg is not None


def test_a_load_replays_history_that_is_not_logged_again(tmp_path):
    host, backend = make(tmp_path)
    backend.save_resume("acp-session.json", json.dumps({"session_id": "old"}))
    backend = AcpBackend(host, backend.config)
    backend.start()
    respond(backend, host, "initialize", {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}})
    agent_says(backend, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "old answer"}})
    respond(backend, host, "session/load", {"sessionId": "old"})
    assert host.logged("text.delta") == [] and host.reports() == [("ready",)]


def test_a_session_the_agent_cannot_reopen_is_replaced_by_a_new_one_with_a_diagnostic(tmp_path):
    host, backend = make(tmp_path)
    backend.save_resume("acp-session.json", json.dumps({"session_id": "old"}))
    backend = AcpBackend(host, backend.config)
    backend.start()
    respond(backend, host, "initialize", {"protocolVersion": 1, "agentCapabilities": {
        "loadSession": True, "sessionCapabilities": {"resume": {}}}})
    respond(backend, host, "session/resume", error={"code": -32002, "message": "Resource not found"})
    respond(backend, host, "session/load", error={"code": -32603, "message": "Internal error", "data": {
        "details": "No previous sessions found for this project."}})
    respond(backend, host, "session/new", {"sessionId": "new"})
    (note,) = host.logged("diagnostic")
    assert "cannot resume session old" in note["message"] and "No previous sessions found" in note["message"]
    assert host.reports() == [("ready",)]
    assert json.loads(backend.load_resume("acp-session.json") or "")["session_id"] == "new"


def test_a_preset_that_records_a_broken_resume_starts_a_new_session_without_trying(tmp_path):
    host, backend = make(tmp_path, agent="gemini")
    backend.save_resume("acp-session.json", json.dumps({"session_id": "old"}))
    backend = AcpBackend(host, backend.config)
    backend.start()
    respond(backend, host, "initialize", {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}})
    respond(backend, host, "session/new", {"sessionId": "new"})
    assert frames(host, "session/load") == []  # gemini 0.61.0's load works only when a race goes its way
    (note,) = host.logged("diagnostic")
    assert "cannot resume session old" in note["message"] and "not tried" in note["message"]
    assert host.reports() == [("ready",)]


# -- fork -------------------------------------------------------------------------------------------------

FORKING = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True,
                                                       "sessionCapabilities": {"resume": {}, "fork": {}}}}


def forked(tmp_path, own: Optional[str] = None, **kwargs: Any):
    """A backend over a sidecar as `harnessctl fork` leaves it (the source's
    session in fork-acp-session.json), with a session of its own since if `own`."""
    host, backend = make(tmp_path, **kwargs)
    backend.save_resume("fork-acp-session.json", json.dumps({"session_id": "src"}))
    if own:
        backend.save_resume("acp-session.json", json.dumps({"session_id": own}))
    backend = AcpBackend(host, backend.config)
    backend.start()
    return host, backend


def test_a_forked_file_opens_its_session_by_session_fork_of_the_source_in_its_own_cwd(tmp_path):
    host, backend = forked(tmp_path)
    respond(backend, host, "initialize", FORKING)
    (fork,) = frames(host, "session/fork")
    assert fork["params"] == {"sessionId": "src", "cwd": CWD, "mcpServers": []}
    respond(backend, host, "session/fork", {"sessionId": "new", "modes": None, "configOptions": []})
    assert frames(host, "session/new") == [] and frames(host, "session/resume") == []
    assert host.reports() == [("ready",)]
    assert json.loads(backend.load_resume("acp-session.json") or "")["session_id"] == "new"


def test_a_forked_file_with_a_session_of_its_own_resumes_it_and_forks_no_more(tmp_path):
    host, backend = forked(tmp_path, own="mine")
    respond(backend, host, "initialize", FORKING)
    assert frames(host, "session/fork") == []
    assert frames(host, "session/resume")[0]["params"]["sessionId"] == "mine"


def test_a_forked_file_of_an_agent_that_offers_no_fork_fails_the_start_saying_why(tmp_path):
    host, backend = forked(tmp_path, agent="gemini")
    respond(backend, host, "initialize", {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}})
    assert frames(host, "session/fork") == [] and frames(host, "session/new") == []
    (failed,) = host.named("start_failed")
    assert "cannot fork session src: it does not offer session/fork" in failed[1]


def test_a_fork_the_agent_refuses_fails_the_start_with_its_words(tmp_path):
    host, backend = forked(tmp_path)
    respond(backend, host, "initialize", FORKING)
    respond(backend, host, "session/fork", error={"code": -32002, "message": "Resource not found"})
    (failed,) = host.named("start_failed")
    assert "cannot fork session src: Resource not found" in failed[1]
    assert backend.load_resume("acp-session.json") is None


def test_stop_cancels_a_running_turn_before_closing_stdin(tmp_path):
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    backend.stop()
    assert frames(host, "session/cancel") and host.children[0].stdin_closed


# -- the permission policy: --mode and what a request is about ---------------------------------------

OFFERED = {  # the modes each agent offered in session/new (root, trusted folder: claude lacks bypassPermissions)
    "codex": ["read-only", "workspace-write", "agent", "agent-full-access"],
    "claude": ["default", "acceptEdits", "plan", "auto", "bypassPermissions"],
    "gemini": ["default", "autoEdit", "yolo", "plan"],
}
TABLE = {("codex", "ask"): "read-only", ("codex", "edit"): "workspace-write", ("codex", "full"): "agent-full-access",
         ("claude", "ask"): "default", ("claude", "edit"): "acceptEdits", ("claude", "full"): "bypassPermissions",
         ("gemini", "ask"): "default", ("gemini", "edit"): "autoEdit", ("gemini", "full"): "yolo"}


def moded_agent(tmp_path, agent: str, mode: Optional[str], offered: List[str], **env: str):
    """A preset whose hand-made agent opened a session offering `offered` modes."""
    modes = {"currentModeId": offered[0], "availableModes": [{"id": m, "name": m} for m in offered]}
    return ready_agent(tmp_path, agent=agent, mode=mode, session={"modes": modes}, **env)


@pytest.mark.parametrize("agent,mode", sorted(TABLE))
def test_mode_sets_the_presets_own_mode_id(tmp_path, agent, mode):
    host, backend = moded_agent(tmp_path, agent, mode, OFFERED[agent])
    (set_mode,) = frames(host, "session/set_mode")
    assert set_mode["params"] == {"sessionId": "s-1", "modeId": TABLE[agent, mode]}
    respond(backend, host, "session/set_mode")
    assert host.reports() == [("ready",)] and host.logged("session")[0]["approval_policy"] == TABLE[agent, mode]


def test_mode_wins_over_the_mode_variable_and_a_diagnostic_says_so(tmp_path):
    host, backend = moded_agent(tmp_path, "codex", "ask", OFFERED["codex"], HARNESSCTL_ACP_MODE="agent-full-access")
    assert [f["params"]["modeId"] for f in frames(host, "session/set_mode")] == ["read-only"]
    (note,) = host.logged("diagnostic")
    assert "HARNESSCTL_ACP_MODE=agent-full-access is not applied: --mode ask" in note["message"]


def test_without_mode_the_mode_variable_is_applied_as_before(tmp_path):
    host, backend = moded_agent(tmp_path, "codex", None, OFFERED["codex"], HARNESSCTL_ACP_MODE="agent")
    assert [f["params"]["modeId"] for f in frames(host, "session/set_mode")] == ["agent"]


def test_without_mode_or_variable_no_mode_is_set(tmp_path):
    host, backend = moded_agent(tmp_path, "codex", None, OFFERED["codex"])
    assert frames(host, "session/set_mode") == [] and host.reports() == [("ready",)]


def test_a_mode_the_agent_does_not_offer_fails_the_start_with_the_modes_it_offers(tmp_path):
    host, backend = moded_agent(tmp_path, "claude", "full", OFFERED["claude"][:4])  # claude-agent-acp as root
    ((_, message),) = host.named("start_failed")
    assert "--mode full" in message and "does not offer mode bypassPermissions" in message
    assert "default, acceptEdits, plan, auto" in message and frames(host, "session/set_mode") == []


def test_a_mode_the_agent_refuses_fails_the_start_with_its_reason(tmp_path):
    host, backend = moded_agent(tmp_path, "gemini", "edit", OFFERED["gemini"])
    untrusted = "Cannot enable privileged approval modes in an untrusted folder."
    respond(backend, host, "session/set_mode", error={"code": -32603, "message": "Internal error: " + untrusted})
    ((_, message),) = host.named("start_failed")
    assert "--mode edit" in message and "refused mode autoEdit" in message and untrusted in message


def test_mode_for_an_agent_without_a_table_fails_the_start_naming_the_variable(tmp_path):
    host, backend = moded_agent(tmp_path, "fake-agent --flag", "ask", ["read-only"])
    ((_, message),) = host.named("start_failed")
    assert "has no mode for it" in message and "HARNESSCTL_ACP_MODE" in message
    assert frames(host, "session/set_mode") == []


def asked(tmp_path, tool_call: Dict[str, Any], updates: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The details of the permission request an agent asks about `tool_call`
    (after `updates` about it, if any)."""
    host, backend = ready_agent(tmp_path)
    backend.send(Input("in-1", "go"))
    for update in updates or []:
        agent_says(backend, update)
    options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
               {"optionId": "no", "name": "No", "kind": "reject_once"}]
    agent_asks(backend, 0, "session/request_permission",
               {"sessionId": "s-1", "toolCall": tool_call, "options": options})
    ((_, _, _, _, _, names, details),) = host.named("request")
    assert names == ["allow", "deny"]  # what the runtime answers rules with
    return details


def recorded_request(tmp_path, name: str, mode: str) -> Dict[str, Any]:
    """The details of the first permission request of a recorded transcript."""
    host, backend, replay = started(tmp_path, name, HARNESSCTL_ACP_MODE=mode)
    send_prompt(replay, backend, "in-1")
    while not host.named("request"):
        assert replay.to(reply=True) is not None
    return host.named("request")[0][6]


def test_a_recorded_codex_command_request_carries_its_command_line(tmp_path):
    details = recorded_request(tmp_path, "codex__c_cancel_permission", "read-only")
    assert (details["tool"], details["command"]) == ("command", "touch cancelled.txt")
    assert not {"name", "paths", "mcp_tool"} & set(details)  # codex-acp names no tool it escalates


def test_a_recorded_claude_command_request_carries_its_command_but_no_paths(tmp_path):
    details = recorded_request(tmp_path, "claude__d_permission", "default")
    assert (details["tool"], details["name"], details["command"]) == ("command", "Bash", "touch rejected.txt")
    assert "paths" not in details  # claude names the file a command may touch: that is no file change


def test_a_recorded_gemini_command_request_names_no_command_since_only_its_title_says_it(tmp_path):
    details = recorded_request(tmp_path, "gemini__d_permission", "default")
    assert (details["tool"], details["name"]) == ("command", "run_shell_command") and "command" not in details


def test_a_call_labelled_edit_that_carries_a_command_is_a_command(tmp_path):
    details = asked(tmp_path, {"toolCallId": "t", "kind": "edit", "title": "Edit notes.txt",
                               "rawInput": {"command": "rm -rf ~"}, "locations": [{"path": CWD + "/notes.txt"}]})
    assert (details["tool"], details["command"]) == ("command", "rm -rf ~") and "paths" not in details


def test_a_title_is_never_taken_for_a_command(tmp_path):
    details = asked(tmp_path, {"toolCallId": "t", "kind": "execute", "title": "pytest -q"})
    assert details["tool"] == "command" and "command" not in details


def test_a_recorded_gemini_write_request_carries_its_path(tmp_path):
    details = recorded_request(tmp_path, "gemini__i_fs_missing_as_empty", "default")
    assert (details["tool"], details["name"]) == ("file_change", "write_file")
    assert details["paths"] == ["/work/project/fs_written.txt"] and "command" not in details


def test_a_codex_edit_request_carries_the_paths_of_its_locations(tmp_path):
    details = asked(tmp_path, {"toolCallId": "call_patch", "title": "Edit files", "kind": "edit", "status": "pending",
                               "locations": [{"path": CWD + "/w.txt"}, {"path": CWD + "/sub/v.txt"}]})
    assert (details["tool"], details["paths"]) == ("file_change", [CWD + "/w.txt", CWD + "/sub/v.txt"])


def test_a_claude_write_request_names_its_file_once(tmp_path):
    path = CWD + "/w.txt"
    details = asked(tmp_path, {"toolCallId": "toolu_1", "name": "Write", "kind": "edit", "title": "Write w.txt",
                               "rawInput": {"file_path": path, "content": "hi\n"},
                               "content": [{"type": "diff", "path": path, "oldText": None, "newText": "hi\n"}],
                               "locations": [{"path": path}]})
    assert (details["tool"], details["name"], details["paths"]) == ("file_change", "Write", [path])


def test_a_command_the_agent_gave_as_a_shell_argv_is_its_line(tmp_path):
    details = asked(tmp_path, {"toolCallId": "t", "kind": "execute", "title": "bash",
                               "rawInput": {"command": ["/bin/bash", "-lc", "npm test -- --watch"]}})
    assert details["command"] == "npm test -- --watch"
    other = asked(tmp_path / "2", {"toolCallId": "t", "kind": "execute", "title": "x",
                                   "rawInput": {"command": ["git", "commit", "-m", "a b"]}})
    assert other["command"] == "git commit -m 'a b'"


def test_a_command_whose_title_filled_in_later_is_matched_on_the_updated_line(tmp_path):
    started_ = {"sessionUpdate": "tool_call", "toolCallId": "toolu_2", "name": "Bash", "kind": "execute",
                "title": "Terminal", "status": "pending", "rawInput": {}}
    details = asked(tmp_path, {"toolCallId": "toolu_2", "kind": "execute", "title": "rm -rf build",
                               "rawInput": {"command": "rm -rf build"}}, [started_])
    assert (details["name"], details["command"]) == ("Bash", "rm -rf build")


def test_an_mcp_tool_request_is_kind_mcp_with_its_server_and_tool(tmp_path):
    details = asked(tmp_path, {"toolCallId": "toolu_3", "kind": "other", "title": "lookup",
                               "_meta": {"claudeCode": {"toolName": "mcp__docs__search_pages"}}})
    assert (details["tool"], details["mcp_tool"], details["name"]) == ("mcp", "docs.search_pages",
                                                                       "mcp__docs__search_pages")
