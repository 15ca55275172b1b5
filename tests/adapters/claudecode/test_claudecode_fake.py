"""Races the real Claude cannot be made to hit on demand, through the CLI and
the runtime, against a fake `claude` that plays recorded frame shapes in a
scripted order (tests/support/claudecode_support/fake_claude.py)."""

from __future__ import annotations

import json
import os
import signal
import uuid

import pytest
from claudecode_support.fixtures import FAKE_CLAUDE, read_events, wait_for
from claudecode_support.session import Session
from cliutil import runtime_pids

SESSION = "11111111-2222-4333-8444-555555555555"


class NoMock:
    base_url = "http://127.0.0.1:9"  # never contacted: the fake makes no network call


@pytest.fixture
def fake(workdir):
    session = Session(str(workdir), NoMock(), FAKE_CLAUDE)
    session.env["FAKE_CLAUDE_LOG"] = os.path.join(session.root, "fake.log")
    session.env["FAKE_CLAUDE_STATE"] = os.path.join(session.root, "fake.state")
    yield session
    pid = session.runtime_pid()
    if pid:
        os.kill(pid, signal.SIGKILL)


def script(session, *spawns):
    path = os.path.join(session.root, "script.json")
    with open(path, "w") as fh:
        json.dump({"spawns": list(spawns)}, fh)
    session.env["FAKE_CLAUDE_SCRIPT"] = path


def fake_log(session):
    with open(session.env["FAKE_CLAUDE_LOG"]) as fh:
        return [json.loads(line) for line in fh]


def lc(name, state):
    return {"emit": {"type": "command_lifecycle", "command_uuid": "$" + name, "state": state, "session_id": SESSION}}


def turn_start(name):
    return [lc(name, "queued"), lc(name, "started"),
            {"emit": {"type": "system", "subtype": "init", "session_id": SESSION, "user_message_uuids": ["$" + name]}},
            {"emit": {"type": "assistant", "session_id": SESSION, "user_message_uuids": ["$" + name],
                      "message": {"id": "msg_" + name, "content": [{"type": "text", "text": "working on " + name}]}}}]


def result(*names, text="done"):
    return {"emit": {"type": "result", "subtype": "success", "is_error": False, "terminal_reason": "completed",
                     "num_turns": 1, "result": text, "session_id": SESSION,
                     "user_message_uuids": ["$" + n for n in names]}}


def test_a_receipt_after_the_turns_result_makes_the_steer_the_next_run(fake):
    script(fake, [{"expect": "user", "as": "U1"}, *turn_start("U1"),
                  {"expect": "user", "as": "U2"},
                  result("U1", text="one"), lc("U1", "completed"),
                  lc("U2", "queued"), lc("U2", "started"),
                  {"emit": {"type": "system", "subtype": "init", "session_id": SESSION, "user_message_uuids": ["$U2"]}},
                  result("U2", text="two")])
    first = fake.send("first")
    steer = fake.send("second")
    assert steer["delivery"] == "steer" and steer["run_id"] is None
    one, two = fake.wait_results(2)
    assert one["input_ids"] == [first["input_id"]] and one["run_id"] == first["run_id"]
    assert two["input_ids"] == [steer["input_id"]] and two["run_id"] != first["run_id"]
    assert fake.run_of(steer["input_id"]) == two["run_id"]


def test_claude_crash_with_a_queued_steer_fails_both_and_the_next_send_resumes(fake):
    script(fake, [{"plain": True},
                  {"expect": "user", "as": "U1"}, *turn_start("U1"),
                  {"expect": "user", "as": "U2"}, lc("U2", "queued"),
                  {"sleep": 0.2}, {"exit": 1}])
    fake.send("warm up")
    fake.wait_results(1)
    first = fake.send("crashes")
    steer = fake.send("queued behind")
    _, crashed, dropped = fake.wait_results(3)
    by_input = {r["input_ids"][0]: r for r in (crashed, dropped)}
    assert by_input[first["input_id"]]["status"] == "failed"
    assert by_input[first["input_id"]]["run_id"] == first["run_id"]
    assert by_input[steer["input_id"]]["status"] == "failed" and by_input[steer["input_id"]]["run_id"] is None
    fake.send("again")
    results = fake.wait_results(4)
    assert results[-1]["status"] == "completed" and results[-1]["output"] == "echo: again"
    argvs = [entry["argv"] for entry in fake_log(fake) if "argv" in entry]
    assert "--resume" not in argvs[0] and argvs[1][argvs[1].index("--resume") + 1] == SESSION


def test_a_prompt_claude_withdraws_expires_and_cannot_be_answered(fake):
    can_use = {"type": "control_request", "request_id": "perm-1", "request": {
        "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "touch x"}, "description": "touch x"}}
    script(fake, [{"expect": "user", "as": "U1"}, *turn_start("U1"), {"emit": can_use},
                  {"expect": "user", "as": "U2"},  # the test's signal that the request was seen
                  lc("U2", "queued"),
                  {"emit": {"type": "control_cancel_request", "request_id": "perm-1"}},
                  result("U1"), lc("U2", "started"), result("U2")])
    fake.send("do it")
    request = fake.wait_request()
    fake.send("never mind")
    fake.wait_event(lambda e: e["type"] == "request" and e["state"] == "expired", 30, "expired request")
    proc = fake.run("reply", fake.path, request["request_id"], "allow")
    assert proc.returncode == 3
    fake.wait_results(2)
    assert not any(json.loads(e["stdin"]).get("type") == "control_response"
                   for e in fake_log(fake) if "stdin" in e)


def test_a_start_that_claude_refuses_exits_5_with_its_reason(fake):
    script(fake, [{"emit": {"type": "result", "subtype": "error_during_execution", "is_error": True, "num_turns": 0,
                            "errors": ["No conversation found with session ID: x"]}}, {"exit": 1}])
    proc = fake.run("send", fake.path, "hello", "--adapter", "claudecode", "--cwd", fake.work)
    assert proc.returncode == 5 and b"No conversation found" in proc.stderr


def test_harness_args_and_model_reach_claude(fake):
    fake.env["HARNESSCTL_CLAUDE_ARGS"] = "--permission-mode acceptEdits --append-system-prompt 'be brief'"
    fake.ok("send", fake.path, "hi", "--adapter", "claudecode", "--cwd", fake.work, "--model", "claude-x")
    fake.wait_results(1)
    argv = [entry["argv"] for entry in fake_log(fake) if "argv" in entry][0]
    assert argv[-6:] == ["--model", "claude-x", "--permission-mode", "acceptEdits", "--append-system-prompt",
                         "be brief"]
    wait_for(lambda: fake.status()["state"] == "idle", 30, "idle")


def test_a_command_the_fake_runs_is_logged_with_its_exit_code(fake):
    fake.send("/tool exit 2")
    [result] = fake.wait_results(1)
    assert result["status"] == "completed" and result["output"] == "ran: exit 2"
    [started] = [e for e in fake.events("log") if e["kind"] == "tool.started"]
    [done] = [e for e in fake.events("log") if e["kind"] == "tool.completed"]
    assert (started["tool"], started["title"]) == ("command", "exit 2")
    assert (done["tool_id"], done["status"], done["exit_code"]) == (started["tool_id"], "failed", 2)


# -- send --schema: --json-schema is a process flag -------------------------------------

def argvs(session):
    return [entry["argv"] for entry in fake_log(session) if "argv" in entry]


def schema_flag(argv):
    return json.loads(argv[argv.index("--json-schema") + 1]) if "--json-schema" in argv else None


def send_schema(session, text, schema, *flags):
    path = os.path.join(session.root, "schema.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(schema, f)
    return session.run("send", session.path, text, "--adapter", "claudecode", "--cwd", session.work,
                       "--schema", path, "--wait", *flags)


OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def test_a_first_send_with_a_schema_starts_claude_once_with_it(fake):
    proc = send_schema(fake, '{"ok": true}', OK)
    assert proc.returncode == 0 and json.loads(proc.stdout)["output_json"] == {"ok": True}
    assert [schema_flag(argv) for argv in argvs(fake)] == [OK]


def test_a_schema_send_on_a_live_runtime_restarts_claude_with_it_and_resumes_the_session(fake):
    fake.send("plain first")
    fake.wait_results(1)
    wait_for(fake.status_idle, 30, "idle")
    proc = send_schema(fake, '{"ok": false}', OK)
    assert proc.returncode == 0 and json.loads(proc.stdout)["output_json"] == {"ok": False}
    first, second = argvs(fake)
    assert schema_flag(first) is None and schema_flag(second) == OK
    assert second[second.index("--resume") + 1] == SESSION


def test_a_plain_send_after_a_schema_send_restarts_claude_without_one(fake):
    assert send_schema(fake, '{"ok": true}', OK).returncode == 0
    proc = fake.run("send", fake.path, "in words", "--wait")
    assert json.loads(proc.stdout)["output"] == "echo: in words"
    assert [schema_flag(argv) for argv in argvs(fake)] == [OK, None]


def test_an_interrupt_with_a_schema_restarts_claude_with_it_for_its_own_run(fake):
    fake.send("/slow")
    wait_for(lambda: fake.status()["state"] == "running", 30, "the slow run")
    proc = send_schema(fake, '{"ok": true}', OK, "--interrupt")
    assert proc.returncode == 0 and json.loads(proc.stdout)["output_json"] == {"ok": True}
    assert [schema_flag(argv) for argv in argvs(fake)] == [None, OK]


def test_sends_with_the_same_schema_share_one_claude(fake):
    assert send_schema(fake, '{"ok": true}', OK).returncode == 0
    assert send_schema(fake, '{"ok": false}', OK).returncode == 0
    assert len(argvs(fake)) == 1


def test_a_result_without_structured_output_fails_with_error_class_schema(fake):
    proc = send_schema(fake, "just prose", OK)
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["error_class"] == "schema" and result["output"] == "just prose" and "output_json" not in result


def test_the_users_claude_args_cannot_set_a_schema_for_every_run(fake):
    fake.env["HARNESSCTL_CLAUDE_ARGS"] = "--json-schema '{\"type\": \"object\"}' --append-system-prompt brief"
    fake.send("hi")
    fake.wait_results(1)
    (argv,) = argvs(fake)
    assert "--json-schema" not in argv and argv[-2:] == ["--append-system-prompt", "brief"]


def test_a_fork_starts_claude_with_fork_session_of_the_source_and_then_resumes_its_own(fake):
    fake.env["HARNESSCTL_IDLE_TIMEOUT"] = "1"  # each send below starts a new claude
    fake.send("hello")
    fake.wait_results(1)
    new = os.path.join(fake.root, "forked.jsonl")
    assert fake.run("fork", fake.path, new).returncode == 0
    assert fake.run("send", new, "one").returncode == 0
    wait_for(lambda: len([e for e in read_events(new) if e["type"] == "result"]) == 1, 30, "the fork's result")
    forked = str(uuid.uuid5(uuid.NAMESPACE_URL, SESSION))  # the fake's new session for a fork of SESSION
    with open(new + ".d/claude-session-id") as fh:
        assert fh.read().strip() == forked
    cut = argvs(fake)[-1]
    assert cut[cut.index("--resume"):cut.index("--resume") + 3] == ["--resume", SESSION, "--fork-session"]
    wait_for(lambda: not runtime_pids(new), 30, "the fork's runtime to exit")
    assert fake.run("send", new, "two").returncode == 0
    again = argvs(fake)[-1]
    assert again[again.index("--resume") + 1] == forked and "--fork-session" not in again
