"""Unit tests of the Codex backend against a scripted app-server (no processes).

Each test plays the app-server's side with the shapes recorded from codex
0.171.0 (recorded from the real binary) and checks what the backend reports to
the runtime.  Races that are hard to time with the real binary are scripted
here line by line.
"""

from __future__ import annotations

import json

import pytest
from codex_support.fake_host import FakeHost, Wire, make_config

from adapters.codex.backend import CodexBackend
from harnessctl.kit.backend import Input

T1, T2 = "turn-1", "turn-2"


@pytest.fixture
def host():
    """The fake runtime; every log line the test made the backend write must
    fit the activity vocabulary of schema/events.schema.json."""
    fake = FakeHost()
    yield fake
    assert fake.vocabulary_problems() == []


def make(tmp_path, host, **kw):
    backend = CodexBackend(host, make_config(tmp_path, **kw))
    return backend, Wire(backend, host)


@pytest.fixture
def ready(tmp_path, host):
    """A backend whose app-server finished the handshake on thread thr-1."""
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.handshake()
    assert host.named("ready")
    return backend, wire


def run_turn(backend, wire, input_id="in-1", turn_id=T1, text="hello"):
    backend.send(Input(input_id, text))
    wire.start_turn(turn_id)
    wire.user_message(turn_id, text, input_id)


# -- start ---------------------------------------------------------------------


def test_start_spawns_app_server_with_binary_and_extra_args_in_bound_cwd(tmp_path, host):
    env = {"HARNESSCTL_CODEX_ARGS": "-c 'model=\"gpt 5\"' --flag", "CODEX_HOME": "/h"}
    backend, wire = make(tmp_path, host, env=env)
    backend.start()
    child = wire.child
    assert child.argv == ["/opt/codex", "app-server", "-c", 'model="gpt 5"', "--flag"]
    assert child.cwd == backend.config.cwd
    assert child.env["CODEX_HOME"] == "/h"


def test_start_initializes_as_harnessctl_then_starts_thread_with_cwd_and_model(tmp_path, host):
    backend, wire = make(tmp_path, host, model="gpt-5.5")
    backend.start()
    init = wire.last("initialize")
    assert init["params"]["clientInfo"]["name"] == "harnessctl"
    assert not host.named("ready")
    wire.respond("initialize", {"userAgent": "x"})
    assert wire.child.frames()[1] == {"method": "initialized"}
    params = wire.last("thread/start")["params"]
    assert params == {"cwd": backend.config.cwd, "model": "gpt-5.5"}
    assert "approvalPolicy" not in params and "sandbox" not in params  # the user's config decides
    wire.respond("thread/start", {"thread": {"id": "thr-9"}})
    assert host.reports() == [("ready",)]


def test_thread_id_is_kept_in_sidecar_and_resumed_by_the_next_backend(tmp_path, host):
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.handshake(thread_id="thr-7")
    saved = json.loads((tmp_path / "events.jsonl.d" / "codex-thread.json").read_text())
    assert saved == {"thread_id": "thr-7"}

    host2 = FakeHost()
    backend2, wire2 = make(tmp_path, host2)
    backend2.start()
    wire2.respond("initialize", {})
    params = wire2.last("thread/resume")["params"]
    assert params["threadId"] == "thr-7" and params["excludeTurns"] is True
    assert not wire2.requests("thread/start")
    wire2.respond("thread/resume", {"thread": {"id": "thr-7"}})
    assert host2.named("ready")


def test_resume_of_a_thread_without_history_starts_a_new_thread(tmp_path, host):
    (tmp_path / "events.jsonl.d").mkdir()
    (tmp_path / "events.jsonl.d" / "codex-thread.json").write_text('{"thread_id": "thr-old"}')
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.respond("initialize", {})
    wire.fail("thread/resume", "no rollout found for thread id thr-old")
    wire.respond("thread/start", {"thread": {"id": "thr-new"}})
    assert host.named("ready")
    assert any("thr-old" in entry["message"] for entry in host.logged("diagnostic"))
    assert backend.thread_id == "thr-new"


def test_other_resume_errors_fail_the_start(tmp_path, host):
    (tmp_path / "events.jsonl.d").mkdir()
    (tmp_path / "events.jsonl.d" / "codex-thread.json").write_text('{"thread_id": "thr-old"}')
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.respond("initialize", {})
    wire.fail("thread/resume", "rollout is corrupt")
    assert host.named("start_failed") == [("start_failed", "codex refused the session: rollout is corrupt")]
    assert wire.child.killed


def forked_file(tmp_path, own=None):
    """A sidecar as `harnessctl fork` leaves it: the source's thread in
    fork-codex-thread.json, and (own) a thread of the file's own since."""
    sidecar = tmp_path / "events.jsonl.d"
    sidecar.mkdir()
    (sidecar / "fork-codex-thread.json").write_text('{"thread_id": "thr-src"}')
    if own:
        (sidecar / "codex-thread.json").write_text('{"thread_id": "%s"}' % own)


def test_a_forked_file_starts_with_thread_fork_of_the_source_in_its_own_cwd_and_mode(tmp_path, host):
    forked_file(tmp_path)
    backend, wire = make(tmp_path, host, model="gpt-5.5", mode="full")
    backend.start()
    wire.respond("initialize", {})
    assert not wire.requests("thread/start") and not wire.requests("thread/resume")
    params = wire.last("thread/fork")["params"]
    assert params == {"threadId": "thr-src", "cwd": backend.config.cwd, "excludeTurns": True, "model": "gpt-5.5",
                      "approvalPolicy": "never", "sandbox": "danger-full-access", "approvalsReviewer": "user"}
    wire.respond("thread/fork", {"thread": {"id": "thr-fork", "forkedFromId": "thr-src"}})
    assert host.named("ready")
    saved = json.loads((tmp_path / "events.jsonl.d" / "codex-thread.json").read_text())
    assert saved == {"thread_id": "thr-fork"} and backend.thread_id == "thr-fork"


def test_a_forked_file_with_a_thread_of_its_own_resumes_it_and_forks_no_more(tmp_path, host):
    forked_file(tmp_path, own="thr-fork")
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.respond("initialize", {})
    assert wire.last("thread/resume")["params"]["threadId"] == "thr-fork"
    assert not wire.requests("thread/fork")


def test_a_fork_codex_refuses_fails_the_start_with_its_words(tmp_path, host):
    forked_file(tmp_path)
    backend, wire = make(tmp_path, host)
    backend.start()
    wire.respond("initialize", {})
    wire.fail("thread/fork", "no rollout found for thread id thr-src")
    assert host.named("start_failed") == [
        ("start_failed", "codex cannot fork thread thr-src: no rollout found for thread id thr-src")]
    assert wire.child.killed and not (tmp_path / "events.jsonl.d" / "codex-thread.json").exists()


def test_a_binary_variable_naming_nothing_fails_the_start_blaming_the_variable(tmp_path, host):
    host.spawn_error = FileNotFoundError(2, "No such file or directory")
    backend, wire = make(tmp_path, host)
    backend.start()
    (event,) = host.named("start_failed")
    assert event[1] == "HARNESSCTL_CODEX_BIN points at nothing executable (/opt/codex)"


def test_unsplittable_extra_args_fail_the_start_with_a_clear_message(tmp_path, host):
    backend, wire = make(tmp_path, host, env={"HARNESSCTL_CODEX_ARGS": "-c 'unclosed"})
    backend.start()
    (event,) = host.named("start_failed")
    assert "HARNESSCTL_CODEX_ARGS" in event[1] and not host.children


def test_exit_during_start_is_left_to_the_runtime_and_logged(tmp_path, host):
    backend, wire = make(tmp_path, host)
    backend.start()
    backend.on_exit(1)
    assert host.reports() == []  # the runtime fails the start and its waiting sends itself
    assert host.logged("diagnostic")[-1]["level"] == "error"


def test_send_before_ready_waits_for_the_thread(tmp_path, host):
    backend, wire = make(tmp_path, host)
    backend.start()
    backend.send(Input("in-1", "early"))
    assert not wire.requests("turn/start")
    wire.handshake()
    assert wire.last("turn/start")["params"]["clientUserMessageId"] == "in-1"


# -- sends -----------------------------------------------------------------------


def test_idle_send_starts_a_turn_and_is_accepted_after_codex_names_it(ready, host):
    backend, wire = ready
    backend.send(Input("in-1", "Say hello."))
    params = wire.last("turn/start")["params"]
    assert params == {"threadId": "thr-1", "clientUserMessageId": "in-1",
                      "input": [{"type": "text", "text": "Say hello.", "text_elements": []}]}
    assert not host.named("accepted")
    wire.respond("turn/start", {"turn": wire.turn(T1)})
    assert host.named("accepted") == [("accepted", "in-1", "start", "run-1")]


def test_send_while_running_steers_the_active_turn_into_the_same_run(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "also bananas"))
    params = wire.last("turn/steer")["params"]
    assert params["expectedTurnId"] == T1 and params["clientUserMessageId"] == "in-2"
    wire.respond("turn/steer", {"turnId": T1})
    assert host.named("accepted")[-1] == ("accepted", "in-2", "steer", "run-1")
    wire.user_message(T1, "also bananas", "in-2")
    wire.agent_message(T1, "item_2_0", "Bananas.")
    wire.complete_turn(T1)
    assert host.results() == [("result", "run-1", ["in-1", "in-2"], "completed",
                               {"output": "Bananas.", "usage": None, "cost_usd": None, "error": None})]


@pytest.mark.parametrize("message", [
    "no active turn to steer",
    "expected active turn id `turn-1` but found `turn-0`",
])
def test_steer_that_lost_the_race_with_turn_end_starts_a_new_run(ready, host, message):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "late"))
    wire.complete_turn(T1)  # the turn ends while the steer is on its way
    wire.fail("turn/steer", message)
    assert host.named("result")[0][1:4] == ("run-1", ["in-1"], "completed")
    assert wire.last("turn/start")["params"]["clientUserMessageId"] == "in-2"
    wire.respond("turn/start", {"turn": wire.turn(T2)})
    assert host.named("accepted")[-1] == ("accepted", "in-2", "start", "run-2")


def test_steer_refused_for_another_reason_fails_the_send_without_retry(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "x"))
    wire.fail("turn/steer", "input must not be empty")
    (failed,) = host.named("send_failed")
    assert failed[1] == "in-2" and "input must not be empty" in failed[2]
    assert len(wire.requests("turn/start")) == 1


def test_turn_end_racing_a_successful_steer_waits_so_the_result_covers_it(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "steer"))
    wire.user_message(T1, "steer", "in-2")  # codex consumed it ...
    wire.complete_turn(T1)  # ... and finished before its steer answer was read
    assert not host.named("result")
    wire.respond("turn/steer", {"turnId": T1})
    assert host.named("accepted")[-1] == ("accepted", "in-2", "steer", "run-1")
    assert host.named("result")[0][2] == ["in-1", "in-2"]


def test_steer_accepted_after_its_turn_ended_is_attributed_when_codex_runs_it(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "steer"))
    wire.complete_turn(T1)
    wire.respond("turn/steer", {"turnId": T1})
    assert host.named("result")[0][2] == ["in-1"]
    assert host.named("accepted")[-1] == ("accepted", "in-2", "steer", None)
    wire.notify("turn/started", {"threadId": "thr-1", "turn": wire.turn(T2)})
    wire.user_message(T2, "steer", "in-2")
    assert host.named("attributed") == [("attributed", "in-2", "run-2")]
    wire.complete_turn(T2)
    assert host.named("result")[1][1:3] == ("run-2", ["in-2"])


def test_cancel_ends_a_steer_codex_holds_without_a_turn(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "steer"))
    wire.complete_turn(T1)
    wire.respond("turn/steer", {"turnId": T1})
    backend.interrupt()
    assert host.named("result")[-1][1:4] == (None, ["in-2"], "cancelled")
    wire.notify("turn/started", {"threadId": "thr-1", "turn": wire.turn(T2)})
    wire.user_message(T2, "steer", "in-2")
    assert not host.named("attributed")


def test_notifications_before_the_turn_start_answer_wait_for_the_run_id(ready, host):
    backend, wire = ready
    backend.send(Input("in-1", "hi"))
    wire.notify("turn/started", {"threadId": "thr-1", "turn": wire.turn(T1)})
    wire.agent_message(T1, "item_1_0", "early")
    assert not host.named("message")
    wire.respond("turn/start", {"turn": wire.turn(T1)})
    assert [e[0] for e in host.reports()[-2:]] == ["accepted", "message"]
    assert host.named("message")[0][1] == "run-1"
    assert len(host.named("accepted")) == 1  # no second run was adopted


def test_refused_turn_start_fails_the_send_as_unavailable(ready, host):
    backend, wire = ready
    backend.send(Input("in-1", "hi"))
    wire.fail("turn/start", "thread not found: thr-1")
    (failed,) = host.named("send_failed")
    assert failed[1] == "in-1" and failed[3] is True and "thread not found" in failed[2]


# -- what the agent does ----------------------------------------------------------


def test_completed_agent_message_is_a_message_and_deltas_only_logs(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.agent_message(T1, "item_1_0", "Hello from the mock.")
    assert host.named("message") == [("message", "run-1", "turn-1:item_1_0", "Hello from the mock.")]
    (delta,) = host.logged("text.delta")
    assert delta["text"] == "Hello from the mock." and delta["run_id"] == "run-1"
    assert delta["message_id"] == "turn-1:item_1_0"


def test_dangling_streamed_message_never_becomes_a_message(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.agent_message(T1, "item_1_0", "word0 w", complete=False)  # steer / interrupt cut it
    wire.agent_message(T1, "item_2_0", "Acknowledged the steer.")
    wire.complete_turn(T1)
    assert [e[3] for e in host.named("message")] == ["Acknowledged the steer."]
    assert host.results()[0][4]["output"] == "Acknowledged the steer."


def test_result_usage_sums_the_turns_model_responses_and_ignores_other_turns(ready, host):
    backend, wire = ready
    wire.usage("old-turn", 5)  # resumed threads repeat the last turn's usage
    run_turn(backend, wire)
    wire.usage(T1, 6)
    wire.usage(T1, 7)
    wire.complete_turn(T1)
    usage = host.results()[0][4]["usage"]
    assert usage == {"input_tokens": 200, "cached_input_tokens": 40, "output_tokens": 20,
                     "reasoning_output_tokens": 6, "total_tokens": 220}


def test_failed_turn_result_carries_codex_error_message_and_class(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    error = {"message": "unexpected status 401 Unauthorized: Incorrect API key provided: sk-mock",
             "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 401}},
             "additionalDetails": None}
    wire.notify("error", {"error": error, "willRetry": False, "threadId": "thr-1", "turnId": T1})
    wire.complete_turn(T1, status="failed", error=error)
    (result,) = host.named("result")
    assert result[3] == "failed" and result[4]["error"] == error["message"]
    assert result[4]["error_class"] == "httpConnectionFailed"
    assert not host.logged("warning")


def test_retrying_errors_are_warnings_and_the_run_stays_open(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    error = {"message": "Reconnecting... waiting for network", "additionalDetails": "Connection failed"}
    wire.notify("error", {"error": error, "willRetry": True, "threadId": "thr-1", "turnId": T1})
    (logged,) = host.logged("warning")
    assert logged["level"] == "warning" and logged["source"] == "error" and logged["run_id"] == "run-1"
    assert "Reconnecting" in logged["message"] and "Connection failed" in logged["message"]
    assert not host.named("result")


def test_command_execution_is_logged_as_tool_events(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    item = {"type": "commandExecution", "id": "call_sleep", "command": "/bin/bash -c 'echo slept'",
            "cwd": "/w", "status": "inProgress", "aggregatedOutput": None, "exitCode": None}
    wire.notify("item/started", {"item": item, "threadId": "thr-1", "turnId": T1})
    wire.notify("item/commandExecution/outputDelta", {"threadId": "thr-1", "turnId": T1,
                                                      "itemId": "call_sleep", "delta": "slept\n"})
    done = dict(item, status="completed", aggregatedOutput="slept\n", exitCode=0)
    wire.notify("item/completed", {"item": done, "threadId": "thr-1", "turnId": T1})
    started, = host.logged("tool.started")
    assert (started["tool"], started["name"], started["title"]) == ("command", "commandExecution", "echo slept")
    assert started["input"] == {"command": "/bin/bash -c 'echo slept'", "cwd": "/w"}
    assert started["tool_id"] == "turn-1:call_sleep"
    assert [(e["tool_id"], e["text"]) for e in host.logged("tool.output")] == [("turn-1:call_sleep", "slept\n")]
    completed, = host.logged("tool.completed")
    assert (completed["tool_id"], completed["tool"], completed["title"]) == ("turn-1:call_sleep", "command",
                                                                            "echo slept")
    assert completed["exit_code"] == 0 and completed["status"] == "completed" and completed["output"] == "slept\n"


# -- cancel -------------------------------------------------------------------------


def test_cancel_interrupts_the_active_turn_and_the_result_is_cancelled(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.agent_message(T1, "item_1_0", "partial", complete=False)
    backend.interrupt()
    assert wire.last("turn/interrupt")["params"] == {"threadId": "thr-1", "turnId": T1}
    wire.respond("turn/interrupt", {})
    wire.complete_turn(T1, status="interrupted")
    assert host.results() == [("result", "run-1", ["in-1"], "cancelled",
                               {"output": "", "usage": None, "cost_usd": None, "error": None})]
    assert not host.named("message")


def test_cancel_before_the_turn_id_is_known_interrupts_once_it_is(ready, host):
    backend, wire = ready
    backend.send(Input("in-1", "hi"))
    backend.interrupt()
    assert not wire.requests("turn/interrupt")
    wire.respond("turn/start", {"turn": wire.turn(T1)})
    assert host.named("accepted") == [("accepted", "in-1", "start", "run-1")]
    assert wire.last("turn/interrupt")["params"]["turnId"] == T1


def test_cancel_after_turn_ended_is_harmless(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.interrupt()
    wire.complete_turn(T1)
    wire.fail("turn/interrupt", "no active turn to interrupt")
    assert host.named("result")[0][3] == "completed"


def test_cancel_while_a_steer_is_in_flight_drops_it_if_the_turn_ended(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.send(Input("in-2", "steer"))
    backend.interrupt()
    wire.complete_turn(T1, status="interrupted")
    wire.fail("turn/steer", "no active turn to steer")
    assert len(wire.requests("turn/start")) == 1  # not restarted
    assert host.named("accepted")[-1] == ("accepted", "in-2", "queued", None)
    assert host.named("result")[-1][1:4] == (None, ["in-2"], "cancelled")


# -- approvals and questions ---------------------------------------------------------

COMMAND_APPROVAL = {  # as recorded from codex 0.171.0 (availableDecisions included)
    "kind": "command", "threadId": "thr-1", "turnId": T1, "itemId": "call_touch",
    "command": "/bin/bash -c 'touch approved.txt'", "cwd": "/w", "reason": "need to write",
    "commandActions": [{"type": "unknown", "command": "touch approved.txt"}],
    "proposedExecpolicyAmendment": ["touch", "approved.txt"],
    "availableDecisions": ["accept", {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch",
                                                                                                  "approved.txt"]}},
                           "cancel"],
}
AMENDMENT = {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch", "approved.txt"]}}


@pytest.mark.parametrize("reply,decision", [
    ("allow", "accept"), ("deny", "decline"), ("allow-always", AMENDMENT), ("cancel", "cancel"),
])
def test_command_approval_offers_codexs_decisions_and_reply_maps_to_decision(ready, host, reply, decision):
    backend, wire = ready
    run_turn(backend, wire)
    wire.ask(0, "item/commandExecution/requestApproval", COMMAND_APPROVAL)
    (request,) = host.named("request")
    _, request_id, run_id, kind, message, options, details = request
    assert (run_id, kind) == ("run-1", "permission")
    assert options == ["allow", "allow-always", "deny", "cancel"]
    assert "touch approved.txt" in message and "need to write" in message
    assert details["tool"] == "command" and details["input"]["cwd"] == "/w"
    assert details["approval_kind"] == "command" and len(details["option_descriptions"]) == 4
    backend.answer(host.token(request_id), reply)
    assert wire.replies()[-1] == {"id": 0, "result": {"decision": decision}}
    wire.notify("serverRequest/resolved", {"threadId": "thr-1", "requestId": 0})
    assert not host.named("request_closed")


def test_file_change_approval_carries_the_diff_remembered_from_item_started(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    changes = [{"path": "/w/patched.txt", "kind": {"type": "add"}, "diff": "hello from apply_patch\n"}]
    wire.notify("item/started", {"item": {"type": "fileChange", "id": "call_patch", "changes": changes,
                                          "status": "inProgress"}, "threadId": "thr-1", "turnId": T1})
    wire.ask(0, "item/fileChange/requestApproval", {"threadId": "thr-1", "turnId": T1,
                                                     "itemId": "call_patch", "reason": None,
                                                     "grantRoot": None})
    (request,) = host.named("request")
    assert "/w/patched.txt" in request[4]
    assert request[6]["tool"] == "file_change"
    assert request[6]["input"]["changes"] == [{"path": "/w/patched.txt", "kind": "add",
                                               "diff": "hello from apply_patch\n"}]
    backend.answer(host.token(request[1]), "deny")
    assert wire.replies()[-1] == {"id": 0, "result": {"decision": "decline"}}


def test_request_withdrawn_by_codex_is_closed(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.ask(0, "item/commandExecution/requestApproval", COMMAND_APPROVAL)
    wire.notify("serverRequest/resolved", {"threadId": "thr-1", "requestId": 0})
    assert host.named("request_closed") == [("request_closed", "req-1")]


def test_pending_request_is_left_to_the_result_when_the_turn_ends(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.ask(0, "item/commandExecution/requestApproval", COMMAND_APPROVAL)
    backend.interrupt()
    wire.complete_turn(T1, status="interrupted")
    wire.notify("serverRequest/resolved", {"threadId": "thr-1", "requestId": 0})  # after turn/completed
    assert host.named("result")[0][3] == "cancelled"
    assert not host.named("request_closed")  # the result already expired it
    backend.answer(host.token("req-1"), "allow")  # a late reply reaches nobody
    assert not wire.replies()


def test_question_lists_questions_with_option_labels_and_reply_maps_to_answers(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.ask(0, "item/tool/requestUserInput", {
        "threadId": "thr-1", "turnId": T1, "itemId": "call_rui", "isBlocking": True,
        "questions": [{"id": "color", "header": "Color", "question": "Which color?", "isOther": True,
                       "isSecret": False, "options": [{"label": "Red (Recommended)", "description": "warm"},
                                                      {"label": "Blue", "description": "cool"}]}]})
    (request,) = host.named("request")
    assert request[3] == "question" and request[4] == "Which color?" and request[5] is None
    (question,) = request[6]["questions"]
    assert question["id"] == "color" and question["options"] == ["Red (Recommended)", "Blue"]
    backend.answer(host.token(request[1]), {"color": "Blue"})
    assert wire.replies()[-1] == {"id": 0, "result": {"answers": {"color": {"answers": ["Blue"]}}}}


def test_unknown_server_request_is_refused_so_codex_does_not_wait(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.ask(3, "item/tool/call", {"threadId": "thr-1", "turnId": T1, "callId": "c", "tool": "t"})
    reply = wire.replies()[-1]
    assert reply["id"] == 3 and reply["error"]["code"] == -32601
    assert not host.named("request")


# -- robustness ------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"id": 99, "result": {}}', "   ",
                                  "[" * 100000 + "]" * 100000])
def test_malformed_or_unexpected_lines_are_logged_not_fatal(ready, host, line):
    backend, wire = ready
    backend.on_line(line)
    run_turn(backend, wire)
    assert host.named("accepted")


def test_a_line_nested_too_deep_to_parse_is_said_in_a_diagnostic(ready, host):
    backend, _ = ready
    backend.on_line('{"a":' * 100000 + "1" + "}" * 100000)
    assert any(d["message"].startswith("unreadable line") for d in host.logged("diagnostic"))


def test_a_message_that_breaks_a_handler_is_logged_and_the_next_one_works(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    wire.notify("item/completed", {"item": "not-a-dict", "threadId": "thr-1", "turnId": T1})
    wire.notify("turn/completed", {"threadId": "thr-1", "turn": 5})
    wire.agent_message(T1, "item_1_0", "still fine")
    assert host.named("message")


def test_app_server_exit_resets_and_the_next_start_resumes_the_thread(ready, host):
    backend, wire = ready
    run_turn(backend, wire)
    backend.on_exit(-9)
    assert any(e["level"] == "error" for e in host.logged("diagnostic"))
    assert not host.named("result")  # the runtime fails open runs itself
    backend.start()
    wire.respond("initialize", {})
    assert wire.last("thread/resume")["params"]["threadId"] == "thr-1"
    wire.respond("thread/resume", {"thread": {"id": "thr-1"}})
    backend.send(Input("in-2", "again"))
    assert wire.last("turn/start")["params"]["clientUserMessageId"] == "in-2"  # no steer into the dead turn


def test_debug_mode_copies_the_wire_to_the_runtime_log(tmp_path, host):
    backend, wire = make(tmp_path, host, debug=True)
    backend.start()
    wire.handshake()
    assert any(d.startswith("codex< ") and '"initialize"' in d for d in host.debugs)
    assert any(d.startswith("codex> ") and '"thread"' in d for d in host.debugs)


def test_stop_closes_stdin_and_waits(ready, host):
    backend, wire = ready
    backend.stop()
    assert wire.child.stdin_closed and not wire.child.killed


# -- a sandbox codex cannot use (issue 47) ---------------------------------------------

# codex 0.171.0's stderr and a command's item with bubblewrap installed and CODEX_HOME under $TMPDIR (recorded)
REFUSED = ('WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries '
           'under temporary dir "/tmp" (codex_home: AbsolutePathBuf("/tmp/t/codex_home"))\n')
BWRAP = "bwrap: execvp codex-linux-sandbox: No such file or directory\n"


def unsandboxed_item(status):
    return {"type": "commandExecution", "id": "call_echo", "command": "/bin/bash -c 'echo hi'", "cwd": "/w",
            "source": "unifiedExecStartup", "status": status, "commandActions": [],
            "aggregatedOutput": BWRAP if status == "failed" else None, "exitCode": 1 if status == "failed" else None}


def test_a_command_codex_could_not_sandbox_is_one_warning_and_in_a_failed_runs_error(tmp_path, host):
    backend, wire = make(tmp_path, host, env={"PATH": str(tmp_path / "nobwrap")})
    backend.start()
    wire.child.stderr = REFUSED
    wire.handshake()
    assert not host.logged("warning")  # no bubblewrap on PATH: codex uses its own, which works
    run_turn(backend, wire)
    for _ in range(2):
        wire.notify("item/started", {"item": unsandboxed_item("inProgress"), "threadId": "thr-1", "turnId": T1})
        wire.notify("item/completed", {"item": unsandboxed_item("failed"), "threadId": "thr-1", "turnId": T1})
    (warning,) = host.logged("warning")
    assert (warning["source"], warning["run_id"]) == ("sandbox", "run-1")
    assert warning["message"] == ("codex cannot sandbox its commands, so each one fails: " + BWRAP.strip()
                                  + '; at start codex said: Refusing to create helper binaries under temporary dir '
                                  '"/tmp" (codex_home: AbsolutePathBuf("/tmp/t/codex_home")) '
                                  "(CODEX_HOME must lie outside $TMPDIR, else /tmp)")
    wire.complete_turn(T1, status="failed", error={"message": "unexpected status 401 Unauthorized"})
    (result,) = host.named("result")
    assert result[4]["error"] == "unexpected status 401 Unauthorized; " + warning["message"]


def test_codexs_refusal_to_make_helpers_with_bubblewrap_on_path_is_said_at_start(tmp_path, host):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text("#!/bin/sh\n")
    (bin_dir / "bwrap").chmod(0o755)
    backend, wire = make(tmp_path, host, env={"PATH": str(bin_dir)})
    backend.start()
    wire.child.stderr = REFUSED
    wire.handshake()
    (warning,) = host.logged("warning")
    assert warning["source"] == "sandbox" and warning["run_id"] is None
    assert warning["message"].startswith("codex cannot sandbox its commands, so each one fails; at start codex "
                                         "said: Refusing to create helper binaries")


@pytest.mark.parametrize("status, items", [({"state": "done"}, 5), (["completed"], "text"), (None, {"a": 1})])
def test_a_turn_whose_status_or_items_are_no_string_or_list_fails_the_run(ready, host, status, items):
    backend, wire = ready
    run_turn(backend, wire)
    wire.notify("turn/completed", {"threadId": "thr-1", "turn": {"id": T1, "status": status, "items": items}})
    ((_, run_id, input_ids, result, fields),) = host.named("result")
    assert (run_id, input_ids, result, fields["output"]) == ("run-1", ["in-1"], "failed", "")
    assert fields["error"].startswith("codex ended the turn with status ")
