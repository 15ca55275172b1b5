"""The claudecode adapter end to end: the CLI, the runtime, the REAL `claude`
binary, and a loopback mock of the Messages API started by each test.

Slow tools are shell commands that wait for a flag file the test creates, and
slow answers wait at a mock gate the test opens, so every race here is timed
by the test, not by sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import Any, Dict, Optional

import pytest
from claudecode_support.fixtures import wait_for
from claudecode_support.mock_messages import (
    ask,
    bash,
    conversation_texts,
    last_user_texts,
    reply,
    text,
    tool_results,
    tool_use,
    wait_file_command,
)
from claudecode_support.session import real_session

pytestmark = pytest.mark.real

ALLOW_BASH = "--allowedTools Bash"  # read-only steps need no prompt; side effects still ask without it


@pytest.fixture
def cc(workdir):
    with real_session(str(workdir)) as session:
        yield session


def slow_tool(cc, then="echo step1-done"):
    """A Bash call that runs until the test creates the returned flag file."""
    flag = os.path.join(cc.root, "go.flag")
    return flag, bash(wait_file_command(flag, then), "Run step one")


def test_plain_run_gives_accepted_message_and_completed_result(cc):
    cc.mock.script(reply(text("Hello from mock!")))
    accepted = cc.send("hi there")
    assert accepted["delivery"] == "start" and accepted["run_id"] and accepted["text"] == "hi there"
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and result["output"] == "Hello from mock!"
    assert result["input_ids"] == [accepted["input_id"]] and result["run_id"] == accepted["run_id"]
    assert result["usage"]["output_tokens"] == 5 and result["cost_usd"] > 0
    [message] = cc.events("message")
    assert message["text"] == "Hello from mock!" and message["run_id"] == accepted["run_id"]
    assert "hi there" in last_user_texts(cc.mock.bodies()[0])


def test_steer_during_a_slow_tool_lands_in_the_same_run(cc):
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = ALLOW_BASH
    flag, tool = slow_tool(cc)
    cc.mock.script(reply(text("Starting step one."), tool), reply(text("Did both.")))
    first = cc.send("FIRST: run step one")
    cc.wait_log("tool.started")
    steer = cc.send("SECOND: also do this")
    assert steer["delivery"] == "steer" and steer["run_id"] is None
    report = cc.status()
    assert report["state"] == "running" and report["run_id"] == first["run_id"] and report["queued"] == 1
    open(flag, "w").close()
    [result] = cc.wait_results(1)
    assert result["run_id"] == first["run_id"] and result["status"] == "completed"
    assert result["input_ids"] == [first["input_id"], steer["input_id"]]
    assert cc.run_of(steer["input_id"]) == first["run_id"]
    second_request = cc.mock.bodies()[1]
    assert any("SECOND: also do this" in t for t in last_user_texts(second_request))
    assert tool_results(second_request) == ["step1-done"]


def test_steer_during_the_final_answer_becomes_the_next_run(cc):
    cc.mock.script(reply(text("Answer one."), gate="final", gate_after=1), reply(text("Answer two.")))
    first = cc.send("FIRST question")
    cc.mock.wait_gate("final")
    steer = cc.send("SECOND question")
    assert steer["delivery"] == "steer" and steer["run_id"] is None
    cc.mock.release("final")
    one, two = cc.wait_results(2)
    assert one["input_ids"] == [first["input_id"]] and one["output"] == "Answer one."
    assert two["input_ids"] == [steer["input_id"]] and two["output"] == "Answer two."
    assert two["run_id"] != first["run_id"] and cc.run_of(steer["input_id"]) == two["run_id"]
    assert last_user_texts(cc.mock.bodies()[1])[-1] == "SECOND question"


def test_three_quick_sends_are_each_covered_by_exactly_one_result(cc):
    cc.mock.script(reply(text("A1"), gate="slow"), reply(text("A2")), reply(text("A3")))
    ids = [cc.send("message %d" % n)["input_id"] for n in range(3)]
    cc.mock.release("slow")
    wait_for(lambda: sorted(i for r in cc.results() for i in r["input_ids"]) == sorted(ids), 60, "all covered")
    covered = [i for r in cc.results() for i in r["input_ids"]]
    assert sorted(covered) == sorted(ids) and len(covered) == 3
    assert all(r["status"] == "completed" for r in cc.results())
    for input_id in ids:  # every input ends up with a confirmed run id, the one of its result
        [result] = [r for r in cc.results() if input_id in r["input_ids"]]
        assert cc.run_of(input_id) == result["run_id"]


def test_permission_allow_by_reply_from_another_process_runs_the_tool(cc):
    cc.mock.script(reply(text("I'll create it."), bash("touch approved.txt", "Create approved.txt")),
                   reply(text("Created.")))
    accepted = cc.send("please create approved.txt")
    request = cc.wait_request()
    assert request["kind"] == "permission" and request["run_id"] == accepted["run_id"]
    assert request["name"] == "Bash" and request["input"]["command"] == "touch approved.txt"
    assert request["options"][:2] == ["allow", "deny"]
    assert cc.status()["state"] == "awaiting_reply"
    cc.reply(request["request_id"], "allow")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed"
    assert os.path.exists(os.path.join(cc.work, "approved.txt"))
    replied = [e for e in cc.events("request") if e["state"] == "replied"]
    assert replied[0]["answer"] == "allow"


def test_steer_while_a_permission_waits_is_folded_after_the_answer(cc):
    cc.mock.script(reply(bash("touch approved.txt", "Create approved.txt")), reply(text("Created, and noted.")))
    first = cc.send("please create approved.txt")
    request = cc.wait_request()
    steer = cc.send("SECOND: then stop")
    assert steer["run_id"] is None
    cc.reply(request["request_id"], "allow")
    [result] = cc.wait_results(1)
    assert result["input_ids"] == [first["input_id"], steer["input_id"]]
    assert any("SECOND: then stop" in t for t in last_user_texts(cc.mock.bodies()[1]))


def test_permission_deny_by_reply_does_not_run_the_tool(cc):
    cc.mock.script(reply(text("I'll create it."), bash("touch denied.txt", "Create denied.txt")),
                   reply(text("OK, I won't.")))
    cc.send("please create denied.txt")
    request = cc.wait_request()
    cc.reply(request["request_id"], "deny")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed"
    assert not os.path.exists(os.path.join(cc.work, "denied.txt"))
    assert tool_results(cc.mock.bodies()[1]) == ["The user denied this action."]


def test_allow_session_stops_asking_for_the_same_command(cc):
    cc.mock.script(reply(bash("touch again.txt", "Create again.txt")), reply(text("Done once.")),
                   reply(bash("touch again.txt", "Create again.txt")), reply(text("Done twice.")))
    cc.send("create again.txt")
    request = cc.wait_request()
    assert "allow-session" in request["options"]
    cc.reply(request["request_id"], "allow-session")
    cc.wait_results(1)
    cc.send("and once more")
    [_, second] = cc.wait_results(2)
    assert second["status"] == "completed" and len(cc.events("request")) == 2  # pending + replied, no new one
    assert not os.path.exists(os.path.join(cc.work, ".claude", "settings.local.json"))


def test_ask_user_question_is_answered_by_reply(cc):
    cc.mock.script(reply(text("Let me ask."), ask("Which color should the button be?", ["Red", "Blue"])),
                   reply(text("Blue it is.")))
    cc.send("make a button")
    request = cc.wait_request()
    assert request["kind"] == "question"
    assert request["questions"] == [{"id": "q1", "question": "Which color should the button be?",
                                     "options": ["Red", "Blue"]}]
    cc.reply(request["request_id"], "Blue")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and result["output"] == "Blue it is."
    [answered] = tool_results(cc.mock.bodies()[1])
    assert '"Which color should the button be?"="Blue"' in answered


def test_cancel_mid_tool_gives_a_cancelled_result_and_keeps_the_session(cc):
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = ALLOW_BASH
    flag, tool = slow_tool(cc, then="touch late.txt")
    cc.mock.script(reply(tool), reply(text("After cancel.")))
    first = cc.send("start a long task")
    cc.wait_log("tool.started")
    cc.cancel()
    [result] = cc.wait_results(1)
    assert result["status"] == "cancelled" and result["input_ids"] == [first["input_id"]]
    assert cc.status()["state"] == "idle"
    open(flag, "w").close()  # the tool was killed: creating the flag now changes nothing
    cc.send("next task")
    [_, after] = cc.wait_results(2)
    assert after["status"] == "completed" and after["output"] == "After cancel."
    assert not os.path.exists(os.path.join(cc.work, "late.txt"))


def test_cancel_drops_a_queued_input_with_its_own_cancelled_result(cc):
    cc.mock.script(reply(text("Working..."), gate="hold", gate_after=1))
    first = cc.send("long answer please")
    cc.mock.wait_gate("hold")
    queued = cc.send("queued behind it")
    cc.cancel()
    wait_for(lambda: len(cc.results()) == 2, 60, "two results")
    by_input = {r["input_ids"][0]: r for r in cc.results()}
    assert by_input[first["input_id"]]["status"] == "cancelled"
    assert by_input[queued["input_id"]]["status"] == "cancelled"
    assert by_input[queued["input_id"]]["run_id"] is None  # no run ever consumed it
    cc.mock.release("hold")
    assert len(cc.mock.requests) == 1  # the dropped input never reached the model


def test_idle_exit_then_resume_keeps_the_history(cc):
    cc.env["HARNESSCTL_IDLE_TIMEOUT"] = "1"
    cc.mock.script(reply(text("The secret word is PINEAPPLE.")), reply(text("It was PINEAPPLE.")))
    cc.send("remember PINEAPPLE")
    cc.wait_results(1)
    cc.wait_runtime_gone()
    assert open(cc.path + ".d/claude-session-id").read().strip()
    cc.send("what was the word?")
    [_, result] = cc.wait_results(2)
    assert result["status"] == "completed"
    history = conversation_texts(cc.mock.bodies()[1])
    assert any("remember PINEAPPLE" in t for t in history)
    assert "The secret word is PINEAPPLE." in history


def test_kill_9_of_the_runtime_fails_the_open_input_and_never_replays_it(cc):
    cc.mock.script(reply(text("..."), gate="hang"), reply(text("Fresh answer.")))
    first = cc.send("this one is lost")
    cc.mock.wait_gate("hang")
    claude = cc.claude_pid()
    os.kill(cc.runtime_pid(), signal.SIGKILL)
    wait_for(lambda: claude is None or not os.path.exists("/proc/%d" % claude), 30, "claude to die with the runtime")
    assert cc.status()["state"] == "failed"
    [lost] = cc.results()
    assert lost["status"] == "failed" and lost["input_ids"] == [first["input_id"]]
    assert lost["error"] == "runtime lost; input outcome is uncertain"
    cc.mock.release("hang")
    second = cc.send("a new question")
    [_, result] = cc.wait_results(2)
    assert result["input_ids"] == [second["input_id"]] and result["status"] == "completed"
    assert [e["input_id"] for e in cc.accepted()].count(first["input_id"]) == 1
    assert last_user_texts(cc.mock.bodies()[-1])[-1] == "a new question"


def test_claude_crash_mid_turn_fails_the_run_and_the_next_send_resumes(cc):
    cc.mock.script(reply(text("The word is MANGO.")), reply(text("..."), gate="hang"), reply(text("Back.")))
    cc.send("remember MANGO")
    cc.wait_results(1)
    second = cc.send("now hang")
    cc.mock.wait_gate("hang")
    os.kill(cc.claude_pid(), signal.SIGKILL)
    [_, crashed] = cc.wait_results(2)
    assert crashed["status"] == "failed" and crashed["input_ids"] == [second["input_id"]]
    cc.mock.release("hang")
    cc.send("are you back?")
    [_, _, back] = cc.wait_results(3)
    assert back["status"] == "completed" and back["output"] == "Back."
    assert "The word is MANGO." in conversation_texts(cc.mock.bodies()[-1])


def test_401_gives_a_failed_result(cc):
    cc.mock.script(reply(status=401, error_type="authentication_error", error_message="invalid x-api-key"))
    cc.send("hello")
    [result] = cc.wait_results(1)
    assert result["status"] == "failed" and "401" in result["error"]
    assert cc.events("message") == []
    assert cc.status()["state"] == "failed"


def test_after_a_failed_first_turn_and_idle_exit_the_session_resumes(cc):
    cc.env["HARNESSCTL_IDLE_TIMEOUT"] = "1"
    cc.mock.script(reply(status=401, error_type="authentication_error", error_message="invalid x-api-key"),
                   reply(text("Now it works.")))
    cc.send("hello")
    cc.wait_results(1)
    cc.wait_runtime_gone()
    cc.send("again")
    [_, result] = cc.wait_results(2)
    assert result["status"] == "completed" and result["output"] == "Now it works."


def test_a_run_stuck_in_api_retries_can_be_cancelled(cc):
    cc.env["CLAUDE_CODE_MAX_RETRIES"] = "8"
    cc.mock.set_default(reply(status=500, error_message="down"))
    first = cc.send("hello")
    cc.wait_log("warning")
    assert cc.status()["state"] == "running"
    cc.cancel()
    [result] = cc.wait_results(1, timeout=30)
    assert result["input_ids"] == [first["input_id"]] and result["status"] == "cancelled"


def test_api_retries_are_logged_and_the_run_completes(cc):
    cc.env["CLAUDE_CODE_MAX_RETRIES"] = "1"
    cc.mock.script(reply(status=500, error_message="boom"), reply(text("Recovered.")))
    cc.send("hello")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and result["output"] == "Recovered."
    retry = [e for e in cc.events("log") if e.get("kind") == "warning" and e["source"] == "api_retry"]
    assert retry and "HTTP 500" in retry[0]["message"] and retry[0]["level"] == "warning"


def test_a_claude_bin_variable_naming_nothing_exits_5_blaming_the_variable(cc):
    missing = os.path.join(cc.root, "no-such-claude")
    cc.env["HARNESSCTL_CLAUDE_BIN"] = missing
    proc = cc.run("send", cc.path, "hello", "--adapter", "claudecode", "--cwd", cc.work)
    assert proc.returncode == 5
    assert proc.stderr.decode() == "harnessctl: HARNESSCTL_CLAUDE_BIN points at nothing executable (%s)\n" % missing


def test_with_edits_allowed_claude_cannot_rewrite_the_sidecar_or_the_event_file(cc):
    cc.path = os.path.join(cc.work, "events.jsonl")  # the layout: the record inside the workspace
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = "--permission-mode acceptEdits"
    binding = cc.path + ".d/binding.json"
    forged = '{"adapter": "acp", "cwd": "/", "model": null, "agent": "sh -c id"}'
    cc.mock.script(reply(text("Rebinding."), tool_use("Write", {"file_path": binding, "content": forged})),
                   reply(text("Truncating."), tool_use("Write", {"file_path": cc.path, "content": ""})),
                   reply(text("Done.")))
    cc.send("rewrite harnessctl's files")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and not cc.events("request")
    assert json.load(open(binding))["adapter"] == "claudecode" and len(cc.events("accepted")) == 1
    assert all("denied" in r or "deny" in r for r in tool_results(cc.mock.bodies()[1]) +
               tool_results(cc.mock.bodies()[2])), cc.mock.bodies()[1:]


# -- send --schema: Claude's --json-schema, one process per schema --------------------------

FILES = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
         "required": ["files"]}
VERDICT = {"type": "object", "properties": {"ok": {"type": "boolean"}, "why": {"type": "string"}},
           "required": ["ok", "why"]}


def send_schema(cc, text_: str, schema: Dict[str, Any]) -> subprocess.CompletedProcess:
    """`send --wait --schema` with `schema` written to a file beside the event file."""
    path = os.path.join(cc.root, "schema-%d.json" % len(cc.accepted()))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(schema, f)
    return cc.run("send", cc.path, text_, "--adapter", "claudecode", "--cwd", cc.work, "--schema", path, "--wait")


def structured_tool(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The StructuredOutput tool Claude offered the model in a request, if any."""
    return next((t for t in body.get("tools") or [] if t.get("name") == "StructuredOutput"), None)


def test_schema_send_prints_a_result_whose_output_json_is_the_structured_output(cc):
    cc.mock.script(reply(tool_use("StructuredOutput", {"files": ["src/a.py"]})))
    proc = send_schema(cc, "Which files fail?", FILES)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["output_json"] == {"files": ["src/a.py"]}
    assert json.loads(result["output"]) == result["output_json"]
    assert cc.accepted()[0]["schema"] == FILES


def test_schema_send_reaches_the_model_as_claudes_structured_output_tool(cc):
    cc.mock.script(reply(tool_use("StructuredOutput", {"files": []})))
    assert send_schema(cc, "Which files fail?", FILES).returncode == 0
    assert structured_tool(cc.mock.bodies()[0])["input_schema"] == FILES


def test_schema_answer_in_prose_fails_the_run_with_exit_7(cc):
    cc.mock.script(reply(text("The files are a.py and b.py.")), reply(text("Still prose.")))
    proc = send_schema(cc, "Which files fail?", FILES)
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and result["error_class"] == "schema" and "output_json" not in result
    assert result["output"] == "Still prose."


def test_two_sends_with_different_schemas_on_one_file_are_both_honoured(cc):
    cc.mock.script(reply(tool_use("StructuredOutput", {"files": ["a.py"]})),
                   reply(tool_use("StructuredOutput", {"ok": False, "why": "a.py fails"})))
    first = json.loads(send_schema(cc, "Which files fail?", FILES).stdout)
    second = json.loads(send_schema(cc, "Is it fine?", VERDICT).stdout)
    assert first["output_json"] == {"files": ["a.py"]}
    assert second["output_json"] == {"ok": False, "why": "a.py fails"}
    bodies = cc.mock.bodies()
    assert structured_tool(bodies[0])["input_schema"] == FILES
    assert structured_tool(bodies[1])["input_schema"] == VERDICT
    assert any("Which files fail?" in t for t in conversation_texts(bodies[1]))  # one conversation, resumed


def test_send_without_schema_after_one_with_a_schema_gets_a_plain_answer(cc):
    cc.mock.script(reply(tool_use("StructuredOutput", {"files": []})), reply(text("In words: none.")))
    assert send_schema(cc, "Which files fail?", FILES).returncode == 0
    proc = cc.run("send", cc.path, "Say it in words.", "--wait")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["output"] == "In words: none." and "output_json" not in result
    assert structured_tool(cc.mock.bodies()[1]) is None


def test_schema_answers_that_never_fit_fail_the_run_after_claudes_retries_with_exit_7(cc):
    cc.mock.script(*[reply(tool_use("StructuredOutput", {"wrong": n})) for n in range(5)])
    proc = send_schema(cc, "Which files fail?", FILES)
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and result["error_class"] == "schema"
    assert "Failed to provide valid structured output after 5 attempts" in result["error"]
