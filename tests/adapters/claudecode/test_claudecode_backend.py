"""The claudecode backend against recorded Claude Code 2.1.332 output.

Each test replays a transcript recorded from the real binary (every
recorded cell gave the same frames in 5 of 5 runs) through the
backend with a fake Host, and checks what the backend reported.  No process,
no timing: the races are exactly the recorded ones.
"""

from __future__ import annotations

import json
import os

from claudecode_support.replay import feed, initialize, make_backend, replay


def started(tmp_path, env=None, model=None):
    backend, host = make_backend(tmp_path, env=env, model=model)
    initialize(backend)
    return backend, host


def written(host):
    return [json.loads(line) for child in host.children for line in child.lines]


# -- start ---------------------------------------------------------------------------


def test_start_spawns_claude_with_the_forced_stream_json_flags(tmp_path):
    backend, host = make_backend(tmp_path, env={"HARNESSCTL_CLAUDE_ARGS": "--allowedTools 'Bash Edit'"},
                                 model="claude-sonnet-4-5")
    backend.start()
    argv = host.children[0].argv
    assert argv[1:11] == ["-p", "--input-format", "stream-json", "--output-format", "stream-json",
                          "--verbose", "--replay-user-messages", "--permission-prompt-tool", "stdio",
                          "--include-partial-messages"]
    assert argv[11] == "--settings" and argv[13:] == ["--model", "claude-sonnet-4-5", "--allowedTools", "Bash Edit"]
    assert host.children[0].cwd == str(tmp_path)


def test_claude_is_denied_edits_of_the_event_file_and_its_sidecar(tmp_path):
    backend, host = make_backend(tmp_path)
    backend.start()
    argv = host.children[0].argv
    sidecar = backend.config.sidecar
    rules = json.loads(argv[argv.index("--settings") + 1])["permissions"]["deny"]
    assert rules == ["Edit(/%s)" % sidecar[:-2], "Edit(/%s/**)" % sidecar]


def test_start_sends_initialize_and_is_ready_on_its_response_not_on_init(tmp_path):
    backend, host = make_backend(tmp_path)
    backend.start()
    assert host.calls == []
    first = written(host)[0]
    assert first["type"] == "control_request" and first["request"]["subtype"] == "initialize"
    feed(backend, {"type": "control_response", "response": {"subtype": "success",
                                                             "request_id": first["request_id"], "response": {}}})
    assert host.calls == [("ready",)]


def test_start_fails_when_the_binary_is_missing(tmp_path):
    backend, host = make_backend(tmp_path, env={"HARNESSCTL_CLAUDE_BIN": "no-such-claude-binary"})
    host.spawn_error = FileNotFoundError(2, "No such file or directory", "no-such-claude-binary")  # as Popen says
    backend.start()
    assert host.calls[0][0] == "start_failed" and "no-such-claude-binary" in host.calls[0][1]
    assert host.children == []


def test_resume_of_an_unknown_session_fails_start_with_claudes_reason(tmp_path):
    backend, host = make_backend(tmp_path)
    backend.start()
    feed(backend, {"type": "result", "subtype": "error_during_execution", "is_error": True, "num_turns": 0,
                   "session_id": "00000000-0000-4000-8000-000000000000",
                   "errors": ["No conversation found with session ID: 00000000-0000-4000-8000-000000000000"]})
    backend.on_exit(1)
    reason = "No conversation found with session ID: 00000000-0000-4000-8000-000000000000"
    assert host.calls == [("start_failed", reason)]
    assert not os.path.exists(os.path.join(backend.config.sidecar, "claude-session-id"))


def test_session_id_is_kept_in_the_sidecar_and_resumed_by_the_next_start(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "simple__plain")
    with open(os.path.join(backend.config.sidecar, "claude-session-id")) as fh:
        assert fh.read().strip() == "b008af47-9a3e-4a67-8da5-89cad43d99e5"
    backend.start()
    argv = host.children[-1].argv
    assert argv[argv.index("--resume") + 1] == "b008af47-9a3e-4a67-8da5-89cad43d99e5"


def test_a_stored_session_id_that_would_be_an_option_is_not_resumed(tmp_path):
    backend, host = make_backend(tmp_path)
    with open(os.path.join(backend.config.sidecar, "claude-session-id"), "w") as fh:
        fh.write("--dangerously-skip-permissions\n")
    backend.start()
    assert "--dangerously-skip-permissions" not in host.children[-1].argv


def fork_file(backend, source="5f0c2d8e-1111-4222-8333-444455556666"):
    """What `harnessctl fork` leaves in the sidecar: the source's session id."""
    with open(os.path.join(backend.config.sidecar, "fork-claude-session-id"), "w") as fh:
        fh.write(source + "\n")


def test_a_forked_file_starts_claude_with_resume_of_the_source_and_fork_session(tmp_path):
    backend, host = make_backend(tmp_path)
    fork_file(backend)
    backend.start()
    argv = host.children[-1].argv
    assert argv[argv.index("--resume"):argv.index("--resume") + 3] == [
        "--resume", "5f0c2d8e-1111-4222-8333-444455556666", "--fork-session"]


def test_a_forked_file_keeps_the_new_session_id_and_resumes_it_without_forking_again(tmp_path):
    backend, host = make_backend(tmp_path)
    fork_file(backend)
    initialize(backend)
    assert "--fork-session" in host.children[-1].argv
    replay(backend, "simple__plain")  # the fork's first turn: Claude names the new session
    backend.start()
    argv = host.children[-1].argv
    assert argv[argv.index("--resume") + 1] == "b008af47-9a3e-4a67-8da5-89cad43d99e5"
    assert "--fork-session" not in argv


def test_a_fork_source_that_would_be_an_option_is_not_passed(tmp_path):
    backend, host = make_backend(tmp_path)
    fork_file(backend, "--dangerously-skip-permissions")
    backend.start()
    argv = host.children[-1].argv
    assert "--dangerously-skip-permissions" not in argv and "--fork-session" not in argv


# -- sends and attribution -----------------------------------------------------------------


def test_idle_send_is_accepted_as_start_on_the_queued_receipt(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "simple__plain")
    assert host.business()[1:] == [
        ("accepted", "u-simple-1", "start", "run-1"),
        ("result", "run-1", ["u-simple-1"], "completed", host.results()[0][4]),
        ("accepted", "u-simple-2", "start", "run-2"),
        ("result", "run-2", ["u-simple-2"], "completed", host.results()[1][4]),
    ]
    assert host.results()[0][4]["output"] == "Hello from mock!"
    assert host.named("message")[0] == ("message", "run-1", "msg_mock_001_47c8e5b9", "Hello from mock!")


def test_user_line_carries_the_input_id_as_uuid(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "simple__plain")
    users = [f for f in written(host) if f["type"] == "user"]
    assert users[0] == {"type": "user", "message": {"role": "user", "content": "hi there"},
                        "parent_tool_use_id": None, "uuid": "u-simple-1"}


def test_steer_during_a_tool_is_attributed_to_the_running_run_when_claude_folds_it(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn__during_tool__none__0")
    assert host.business()[1:] == [
        ("accepted", "u1-a1997805", "start", "run-1"),
        ("accepted", "u2-1209205c", "steer", None),
        ("attributed", "u2-1209205c", "run-1"),
        ("result", "run-1", ["u1-a1997805", "u2-1209205c"], "completed", host.results()[0][4]),
    ]


def test_steer_attribution_waits_for_claudes_started_frame(tmp_path):
    seen = []
    backend, host = started(tmp_path)

    def check(frame):
        if frame.get("type") == "command_lifecycle" and frame.get("command_uuid") == "u2-1209205c" \
                and frame["state"] == "started":
            seen.append([c for c in host.calls if c[0] == "attributed"])

    replay(backend, "midturn__during_tool__none__0", on_frame=check)
    assert seen == [[]]  # no attribution before Claude said where the steer went


def test_steer_during_the_final_answer_becomes_the_next_run(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn__r2_streaming__none__0")
    assert host.business()[1:] == [
        ("accepted", "u1-12d15b31", "start", "run-1"),
        ("accepted", "u2-4114c3a4", "steer", None),
        ("result", "run-1", ["u1-12d15b31"], "completed", host.results()[0][4]),
        ("attributed", "u2-4114c3a4", "run-2"),
        ("result", "run-2", ["u2-4114c3a4"], "completed", host.results()[1][4]),
    ]


def test_two_waiting_inputs_share_one_new_run(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn_multi__r2_streaming__0")
    assert host.business()[1:] == [
        ("accepted", "first", "start", "run-1"),
        ("accepted", "second", "steer", None),
        ("accepted", "third", "steer", None),
        ("result", "run-1", ["first"], "completed", host.results()[0][4]),
        ("attributed", "second", "run-2"),
        ("attributed", "third", "run-2"),
        ("result", "run-2", ["second", "third"], "completed", host.results()[1][4]),
    ]


def test_three_quick_sends_are_covered_by_results_exactly_once(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn_multi__burst_textonly__0")
    covered = [i for r in host.results() for i in r[2]]
    assert sorted(covered) == ["first", "second", "third"]
    assert [c[2] for c in host.named("accepted")] == ["start", "steer", "steer"]


def test_three_sends_during_a_tool_all_fold_into_one_run(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn_multi__during_tool__0")
    assert [(r[1], r[2]) for r in host.results()] == [("run-1", ["first", "second", "third"])]


def test_send_while_waiting_inputs_are_unattributed_is_a_steer(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn_multi__burst_at_start__0")
    deliveries = [c[2] for c in host.named("accepted")]
    assert deliveries[0] == "start" and set(deliveries[1:]) == {"steer"}


# -- results ----------------------------------------------------------------------------


def test_api_error_is_a_failed_result_although_subtype_says_success(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "errors__401_max_retries_0")
    [result] = host.results()
    assert result[2:4] == (["u-err-1"], "failed")
    assert "Invalid API key" in result[4]["error"] and "401" in result[4]["error"]
    assert host.named("message") == []  # the synthetic error text is not an assistant message


def test_usage_and_per_turn_cost_come_from_the_result(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "simple__plain")
    first, second = host.results()
    assert first[4]["usage"] == {"input_tokens": 123, "output_tokens": 7, "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0}
    assert first[4]["cost_usd"] == 0.000632
    assert second[4]["cost_usd"] == 0.00014  # total_cost_usd is per process: 0.000772


def test_api_retry_frames_are_warnings(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "errors__500_then_ok")
    [retry] = host.logged("warning")
    assert retry["level"] == "warning" and retry["source"] == "api_retry"
    assert retry["message"] == "API request failed (HTTP 500, server_error); retry 1 of 10 in 515 ms"
    assert host.results()[0][3] == "completed"


def test_tools_and_thinking_go_to_the_log(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn__during_tool__none__0")
    [tool] = host.logged("tool.started")
    assert tool["tool"] == "command" and tool["name"] == "Bash" and "step1-done" in tool["input"]["command"]
    [done] = host.logged("tool.completed")
    assert done["output"] == "step1-done" and done["status"] == "completed" and done["exit_code"] == 0
    backend2, host2 = started(tmp_path)
    replay(backend2, "misc__thinking")
    assert host2.logged("reasoning.delta")[0]["text"] == "Let me think about this."
    assert host.vocabulary_problems() == [] and host2.vocabulary_problems() == []


def test_text_blocks_of_one_assistant_message_make_one_message_snapshot(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "midturn__during_tool__none__0")
    messages = host.named("message")
    assert [m[2] for m in messages] == ["msg_mock_001_154d7b24", "msg_mock_002_8177bf28"]
    assert messages[1][3] == "Turn one finished."


# -- permissions and questions ----------------------------------------------------------------


def test_can_use_tool_becomes_a_permission_request(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "permission__allow")
    [request] = host.named("request")
    _, req_id, run_id, kind, message, options, details = request
    assert (req_id, run_id, kind) == ("req-1", "run-1", "permission")
    assert message == "Claude wants to use Bash: touch approved.txt"
    assert options == ["allow", "deny", "allow-session"]
    assert details["name"] == "Bash" and details["input"]["command"] == "touch approved.txt"


def test_allow_answers_with_the_original_input(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "permission__allow", answers=["allow"])
    [answer] = [f for f in written(host) if f["type"] == "control_response"]
    assert answer["response"]["request_id"] == "5f2694e6-319d-49ce-8de3-d7214d58d7af"
    assert answer["response"]["response"] == {
        "behavior": "allow", "updatedInput": {"command": "touch approved.txt", "description": "Create approved.txt"}}
    assert host.results()[0][3] == "completed"
    assert host.named("request_closed") == []  # the echo of our answer is filtered


def test_deny_answers_with_a_message(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "permission__deny", answers=["deny"])
    [answer] = [f for f in written(host) if f["type"] == "control_response"]
    assert answer["response"]["response"]["behavior"] == "deny"
    assert answer["response"]["response"]["message"]


def test_allow_session_adds_claudes_rule_for_this_session_only(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "permission__allow", answers=["allow-session"])
    [answer] = [f for f in written(host) if f["type"] == "control_response"]
    assert answer["response"]["response"]["updatedPermissions"] == [
        {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch approved.txt"}],
         "behavior": "allow", "destination": "session"}]


def test_ask_user_question_becomes_a_question_answered_by_question_text(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "askuser__answers", answers=[{"q1": "Blue"}])
    [request] = host.named("request")
    assert request[3] == "question"
    assert request[6]["questions"] == [{"id": "q1", "question": "Which color should the button be?",
                                        "options": ["Red", "Blue"]}]
    [answer] = [f for f in written(host) if f["type"] == "control_response"]
    assert answer["response"]["response"]["updatedInput"]["answers"] == {"Which color should the button be?": "Blue"}


def test_a_withdrawn_prompt_closes_the_request(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "interrupt__permission_pending")
    assert host.named("request_closed") == [("request_closed", "req-1")]
    assert host.results()[0][3] == "cancelled"


def test_unknown_frame_types_are_logged_and_change_nothing(tmp_path):
    backend, host = started(tmp_path)
    for kind in ("initialized", "receipt", "started", "brand_new"):
        feed(backend, {"type": kind, "subtype": "error", "response": {}})
    assert [c[1] for c in host.calls[1:]] == ["native"] * 4
    assert not host.children[0].killed


def test_other_control_requests_get_an_error_response(tmp_path):
    backend, host = started(tmp_path)
    feed(backend, {"type": "control_request", "request_id": "hk1", "request": {"subtype": "hook_callback"}})
    [response] = [f for f in written(host) if f["type"] == "control_response"]
    assert response["response"]["subtype"] == "error" and response["response"]["request_id"] == "hk1"


# -- cancel ---------------------------------------------------------------------------------


def test_interrupt_asks_claude_to_cancel_queued_inputs_too(tmp_path):
    backend, host = started(tmp_path)
    backend.interrupt()
    frame = written(host)[-1]
    assert frame["request"] == {"subtype": "interrupt", "cancel_queued": True}


def test_cancel_gives_the_running_and_each_queued_input_a_cancelled_result(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "interrupt__queued_cancel")
    results = [(r[1], r[2], r[3]) for r in host.results()]
    assert results == [(None, ["u-int-q"], "cancelled"), ("run-1", ["u-int-1"], "cancelled"),
                       ("run-2", ["u-int-2"], "completed")]
    assert host.named("attributed") == []  # no run ever consumed the dropped input


def test_text_cut_off_by_an_interrupt_is_logged_not_a_message(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "interrupt__queued_cancel")
    assert [m[3] for m in host.named("message")] == ["After interrupt answer."]
    [fragment] = host.logs("text.delta")
    assert fragment[4]["text"].startswith("This is a long streamed answer")


def test_sub_agent_text_is_logged_not_a_message_of_the_run(tmp_path):
    from harnessctl.kit.backend import Input

    backend, host = started(tmp_path)
    backend.send(Input("in-1", "go"))
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "queued"})
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "started"})
    feed(backend, {"type": "assistant", "parent_tool_use_id": "toolu_1",
                   "message": {"id": "msg_sub", "content": [{"type": "text", "text": "sub-agent says"}]}})
    assert host.named("message") == []
    assert host.logs("text.delta")[0][4]["text"] == "sub-agent says"


def test_stop_mid_run_interrupts_before_closing_stdin(tmp_path):
    from harnessctl.kit.backend import Input

    backend, host = started(tmp_path)
    backend.send(Input("in-1", "go"))
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "queued"})
    backend.stop()
    assert written(host)[-1]["request"]["subtype"] == "interrupt" and host.children[0].stdin_closed


def test_cancel_mid_tool_is_a_cancelled_result(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "interrupt__tool")
    assert [(r[2], r[3]) for r in host.results()] == [(["u-int-1"], "cancelled"), (["u-int-2"], "completed")]


# -- crash -------------------------------------------------------------------------------------


def test_after_claude_exits_the_next_start_resumes_the_session(tmp_path):
    backend, host = started(tmp_path)
    replay(backend, "simple__plain")  # ends with Claude's exit
    assert host.calls[-1][0] == "result"  # nothing reported: the runtime fails open work itself
    backend.start()
    assert "--resume" in host.children[-1].argv and backend.ready is False


def test_late_receipt_after_a_newer_send_is_still_accepted(tmp_path):
    from harnessctl.kit.backend import Input

    backend, host = started(tmp_path)
    backend.send(Input("in-1", "first"))
    backend.send(Input("in-2", "second"))  # the runtime gave up on in-1 (exit 6) and moved on
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-1", "state": "queued"})
    feed(backend, {"type": "command_lifecycle", "command_uuid": "in-2", "state": "queued"})
    assert host.named("accepted") == [("accepted", "in-1", "start", "run-1"), ("accepted", "in-2", "steer", None)]


def test_every_line_written_to_claude_is_one_valid_json_object(tmp_path):
    from harnessctl.kit.backend import Input

    backend, host = started(tmp_path)
    backend.send(Input("in-1", "line one\nline two \u2028 \ud800 \"quoted\" \x00"))
    for line in host.children[0].lines:
        assert "\n" not in line and isinstance(json.loads(line), dict)


def test_an_unwritable_input_is_refused_not_sent(tmp_path):
    from harnessctl.kit.backend import Input

    backend, host = started(tmp_path)
    count = len(host.children[0].lines)
    backend.send(Input("in-1", "   "))
    assert host.calls[-1][0:2] == ("send_failed", "in-1")
    assert len(host.children[0].lines) == count
