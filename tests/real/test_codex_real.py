"""The Codex adapter end to end through the CLI against the real `codex
app-server` (pinned 0.171.0) and a loopback mock of the Responses API.

Skipped when codex is not installed, failed instead under
HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).  Each test gets a fresh
CODEX_HOME whose config.toml points codex at the mock (retries off, no
plugins, no login shell: nothing leaves 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from typing import Any, Dict

import pytest
from cliutil import alive, runtime_pids, status, wait_for
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session, recent

pytestmark = pytest.mark.real


@pytest.fixture
def real_codex(workdir):
    with real_session(workdir) as pair:
        yield pair

LONG = "word " * 60
ESCALATED_TOUCH = mr.function_call(
    "exec_command",
    {"cmd": "touch approved.txt", "sandbox_permissions": "require_escalated", "justification": "needs to write"},
    "call_touch",
)
QUESTION = {"id": "color", "header": "Color", "question": "Which color?",
            "options": [{"label": "Red (Recommended)", "description": "warm"},
                        {"label": "Blue", "description": "cool"}]}


def test_plain_run_gives_message_and_completed_result_with_usage(real_codex):
    s, mock = real_codex
    mock.add(mr.text("Hello from the mock.", chunks=3))
    s.send("Say hello.", first=True)
    (result,) = s.wait("result")
    (accepted,) = s.events("accepted")
    assert accepted["delivery"] == "start" and accepted["run_id"] == result["run_id"]
    assert result["status"] == "completed" and result["output"] == "Hello from the mock."
    assert result["input_ids"] == [accepted["input_id"]] and result["error"] is None
    assert result["usage"] == {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 10,
                               "reasoning_output_tokens": 3, "total_tokens": 110}
    assert [m["text"] for m in s.events("message")] == ["Hello from the mock."]
    assert "".join(e["text"] for e in s.events("log", kind="text.delta")) == "Hello from the mock."
    (request,) = mock.requests
    assert mr.user_texts(request)[-1] == "Say hello." and request["headers"]["originator"] == "harnessctl"


def test_steer_lands_in_the_same_run_with_one_result_for_both_inputs(real_codex):
    s, mock = real_codex
    mock.add(mr.text(LONG, chunks=60, delay=0.1), mr.text("Acknowledged the steer."))
    s.send("Write a long answer.", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    s.send("STEER: please also mention bananas")
    first, second = s.events("accepted")
    assert second["delivery"] == "steer" and second["run_id"] == first["run_id"]
    (result,) = s.wait("result")
    assert result["status"] == "completed" and result["output"] == "Acknowledged the steer."
    assert result["input_ids"] == [first["input_id"], second["input_id"]]
    assert [m["text"] for m in s.events("message")] == ["Acknowledged the steer."]  # the cut stream is no message
    one, two = mock.wait_for_requests(2)
    assert two["turn_id"] == one["turn_id"]  # the same codex turn
    assert mr.user_texts(two)[-2:] == ["Write a long answer.", "STEER: please also mention bananas"]


def approval_session(real_codex):
    s, mock = real_codex
    s.configure(approval_policy="on-request", sandbox_mode="read-only")
    mock.add(ESCALATED_TOUCH, mr.text("Done."))
    s.send("Run touch approved.txt", first=True)
    (request,) = s.wait("request", state="pending")
    assert request["kind"] == "permission" and request["tool"] == "command"
    assert request["options"] == ["allow", "allow-always", "deny", "cancel"]  # what codex 0.171.0 offers, and deny
    assert request["approval_kind"] == "command"
    assert "touch approved.txt" in request["message"] and "needs to write" in request["message"]
    time.sleep(2)  # the point: the reply comes seconds later, from another process
    assert status(s.path, env=s.env)["state"] == "awaiting_reply"
    return s, mock, request


def test_approval_allowed_by_a_later_reply_runs_the_command(real_codex):
    s, mock, request = approval_session(real_codex)
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    (result,) = s.wait("result")
    assert result["status"] == "completed" and result["output"] == "Done."
    assert os.path.exists(os.path.join(s.cwd, "approved.txt"))
    assert s.events("request")[-1]["state"] == "replied" and s.events("request")[-1]["answer"] == "allow"
    assert "exited with code 0" in mr.tool_outputs(mock.requests[1])["call_touch"]


def test_approval_denied_by_a_later_reply_does_not_run_the_command(real_codex):
    s, mock, request = approval_session(real_codex)
    assert s.cmd("reply", s.path, request["request_id"], "deny").returncode == 0
    (result,) = s.wait("result")
    assert result["status"] == "completed"
    assert not os.path.exists(os.path.join(s.cwd, "approved.txt"))
    assert "rejected by user" in mr.tool_outputs(mock.requests[1])["call_touch"]
    (completed,) = s.events("log", kind="tool.completed")  # codex took `decline` though it did not list it
    assert (completed["tool"], completed["status"], completed["exit_code"]) == ("command", "declined", None)


def test_file_change_approval_shows_the_diff(real_codex):
    s, mock = real_codex
    s.configure(approval_policy="on-request", sandbox_mode="read-only")
    patch = "*** Begin Patch\n*** Add File: patched.txt\n+hello from apply_patch\n*** End Patch\n"
    mock.add(mr.apply_patch(patch), mr.text("Patched."))
    proc = s.cmd("send", s.path, "add a file", "--adapter", "codex", "--cwd", s.cwd, "--model", "gpt-5.5")
    assert proc.returncode == 0, proc.stderr.decode()
    (request,) = s.wait("request", state="pending")
    assert request["tool"] == "file_change" and "patched.txt" in request["message"]
    (change,) = request["input"]["changes"]
    assert change["kind"] == "add" and change["diff"] == "hello from apply_patch\n"
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    assert s.wait("result")[0]["output"] == "Patched."
    assert os.path.exists(os.path.join(s.cwd, "patched.txt"))


def test_question_answered_by_reply_reaches_the_model(real_codex):
    s, mock = real_codex
    s.configure(features={"default_mode_request_user_input": True})
    mock.add(mr.user_input([QUESTION]), mr.text("Blue it is."))
    s.send("Ask me a color.", first=True)
    (request,) = s.wait("request", state="pending")
    assert request["kind"] == "question" and request["message"] == "Which color?"
    assert request["questions"][0]["options"] == ["Red (Recommended)", "Blue"]
    assert s.cmd("reply", s.path, request["request_id"], "Blue").returncode == 0
    assert s.wait("result")[0]["output"] == "Blue it is."
    answer = json.loads(mr.tool_outputs(mock.requests[1])["call_rui"])
    assert answer == {"answers": {"color": {"answers": ["Blue"]}}}


def test_cancel_mid_stream_gives_a_cancelled_result_and_no_half_message(real_codex):
    s, mock = real_codex
    mock.add(mr.text(LONG, chunks=60, delay=0.1))
    s.send("Long answer please.", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    assert s.cmd("cancel", s.path).returncode == 0
    (result,) = s.wait("result")
    assert result["status"] == "cancelled" and result["error"] is None
    assert s.events("message") == []
    mock.add(mr.text("post-interrupt answer"))
    s.send("Continue.")
    assert s.wait("result", 2)[1]["output"] == "post-interrupt answer"


def test_idle_exit_then_send_resumes_the_thread_with_its_history(real_codex):
    s, mock = real_codex
    s.env["HARNESSCTL_IDLE_TIMEOUT"] = "2"
    mock.add(mr.text("Noted: the secret word is PINEAPPLE."), mr.text("The word was PINEAPPLE."))
    s.send("Remember the secret word PINEAPPLE.", first=True)
    s.wait("result")
    s.runtime_gone()
    s.send("What was the secret word?")
    assert s.wait("result", 2)[1]["output"] == "The word was PINEAPPLE."
    first, second = mock.requests
    assert second["headers"]["thread-id"] == first["headers"]["thread-id"]
    assert mr.user_texts(second)[-2:] == ["Remember the secret word PINEAPPLE.", "What was the secret word?"]
    assert "Noted: the secret word is PINEAPPLE." in mr.assistant_texts(second)


def test_kill_9_of_the_runtime_fails_the_run_without_replay_and_the_next_send_resumes(real_codex):
    s, mock = real_codex
    mock.add(mr.text(LONG, chunks=60, delay=0.1))
    s.send("Doomed request.", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    codex_pid = int(re.search(r"started harness pid (\d+)", s.runtime_log()).group(1))
    for pid in runtime_pids(s.path):
        os.kill(pid, signal.SIGKILL)
    s.runtime_gone()
    # codex's stdin closes with the runtime: the app-server exits by itself, mid-turn, no command needed
    wait_for(lambda: not alive(codex_pid), 30, "codex to exit after its runtime")
    assert status(s.path, env=s.env)["runtime"] == "stopped"
    (result,) = s.wait("result")
    assert result["status"] == "failed" and "runtime lost" in result["error"]
    mock.add(mr.text("Fresh answer."))
    s.send("Fresh request.")
    assert s.wait("result", 2)[1]["output"] == "Fresh answer."
    requests = mock.requests
    assert [mr.user_texts(r)[-1] for r in requests].count("Doomed request.") == 1  # never replayed
    assert mr.user_texts(requests[-1])[-1] == "Fresh request."
    assert requests[-1]["headers"]["thread-id"] == requests[0]["headers"]["thread-id"]


def test_401_from_the_model_gives_a_failed_result_with_codex_message(real_codex):
    s, mock = real_codex
    mock.add(mr.http_error(401, "Incorrect API key provided: sk-mock"))
    s.send("trigger error", first=True)
    (result,) = s.wait("result")
    assert result["status"] == "failed"
    assert "401 Unauthorized: Incorrect API key provided: sk-mock" in result["error"]
    assert status(s.path, env=s.env)["state"] == "failed"
    assert result["error_class"] == "httpConnectionFailed"


def test_unreachable_model_endpoint_retries_visibly_and_cancel_ends_it(real_codex):
    s, mock = real_codex
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d/v1" % probe.getsockname()[1]
    s.configure(base_url=closed)
    s.send("hello?", first=True)
    retry = s.wait_log(lambda e: e.get("kind") == "warning" and e.get("source") == "error")
    assert retry["level"] == "warning" and "Reconnecting" in retry["message"]
    report = status(s.path, env=s.env)
    assert report["state"] == "running" and recent(report["last_activity"], retry["ts"])
    assert s.cmd("cancel", s.path).returncode == 0
    assert s.wait("result")[0]["status"] == "cancelled"


# -- send --schema: codex's outputSchema on turn/start -----------------------------------

FILES_SCHEMA = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
                "required": ["files"], "additionalProperties": False}


def send_with_schema(s, text: str, schema: Dict[str, Any], *flags: str):
    path = os.path.join(s.cwd, "..", "schema-%d.json" % len(s.events("accepted")))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(schema, f)
    return s.cmd("send", s.path, text, "--schema", path, "--wait", "--adapter", "codex", "--cwd", s.cwd, *flags)


def test_schema_send_prints_a_result_whose_output_json_is_the_answer(real_codex):
    s, mock = real_codex
    mock.add(mr.structured({"files": ["src/a.py", "tests/test_a.py"]}))
    proc = send_with_schema(s, "Which files fail?", FILES_SCHEMA)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["output_json"] == {"files": ["src/a.py", "tests/test_a.py"]}
    assert json.loads(result["output"]) == result["output_json"]
    (accepted,) = s.events("accepted")
    assert accepted["schema"] == FILES_SCHEMA


def test_schema_send_reaches_the_model_as_the_responses_json_schema_format(real_codex):
    s, mock = real_codex
    mock.add(mr.structured({"files": []}))
    assert send_with_schema(s, "Which files fail?", FILES_SCHEMA).returncode == 0
    (request,) = mock.requests
    assert request["body"]["text"]["format"] == {"type": "json_schema", "strict": True, "schema": FILES_SCHEMA,
                                                 "name": "codex_output_schema"}


def test_schema_holds_for_its_own_run_only(real_codex):
    s, mock = real_codex
    mock.add(mr.structured({"files": []}), mr.text("plain prose"))
    assert send_with_schema(s, "Which files fail?", FILES_SCHEMA).returncode == 0
    proc = s.cmd("send", s.path, "Now in words.", "--wait")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["output"] == "plain prose" and "output_json" not in result
    assert "format" not in (mock.requests[1]["body"].get("text") or {})


def test_schema_answer_that_is_not_json_fails_the_run_with_exit_7(real_codex):
    s, mock = real_codex
    mock.add(mr.text("Sure! The files are a.py and b.py."))
    proc = send_with_schema(s, "Which files fail?", FILES_SCHEMA)
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and result["error_class"] == "schema"
    assert result["output"] == "Sure! The files are a.py and b.py." and "output_json" not in result
