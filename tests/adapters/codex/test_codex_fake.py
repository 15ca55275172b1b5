"""The Codex adapter end to end through the CLI, over a fake app-server that
speaks the recorded codex shapes (tests/support/codex_support/fake_app_server.py).

These are the races the real binary cannot be timed into; the same behaviours
against the real codex are in test_codex_real.py.
"""

from __future__ import annotations

import os

import pytest
from cliutil import cli_env, run, status, wait_for, wait_matching
from codex_support.fixtures import fake_factory, fake_requests, recent, schema_errors


@pytest.fixture
def fake_codex(workdir):
    make = fake_factory(workdir)
    yield make
    assert schema_errors(str(workdir / "events.jsonl")) == []


def methods(home):
    return [m.get("method") for m in fake_requests(home)]


def test_plain_run_through_the_cli(fake_codex):
    s = fake_codex()
    s.send("hello", first=True)
    (accepted,) = s.events("accepted")
    assert accepted["delivery"] == "start" and accepted["run_id"]
    (result,) = s.wait("result")
    assert result["status"] == "completed" and result["output"] == "echo: hello"
    assert result["input_ids"] == [accepted["input_id"]] and result["run_id"] == accepted["run_id"]
    assert result["usage"]["total_tokens"] == 110
    turn_start = [m for m in fake_requests(fake_codex.home) if m.get("method") == "turn/start"][0]
    assert turn_start["params"]["clientUserMessageId"] == accepted["input_id"]


def test_steer_joins_the_running_turn_with_one_result(fake_codex):
    s = fake_codex()
    s.send("/slow", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    s.send("and bananas")
    first, second = s.events("accepted")
    assert second["delivery"] == "steer" and second["run_id"] == first["run_id"]
    (result,) = s.wait("result")
    assert result["input_ids"] == [first["input_id"], second["input_id"]]
    assert result["output"] == "steered: and bananas"
    assert [m["text"] for m in s.events("message")] == ["steered: and bananas"]  # no half message


def test_steer_that_loses_the_race_with_turn_end_starts_a_new_run(fake_codex):
    s = fake_codex(FAKE_CODEX_STEER_RACE="error")
    s.send("/slow", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    s.send("too late")
    results = s.wait("result", 2)
    first, second = s.events("accepted")
    assert second["delivery"] == "start" and second["run_id"] != first["run_id"]
    assert results[0]["input_ids"] == [first["input_id"]]
    assert results[1]["input_ids"] == [second["input_id"]] and results[1]["output"] == "echo: too late"
    assert methods(fake_codex.home).count("turn/start") == 2


def test_steer_answered_after_its_turn_ended_still_counts_in_that_run(fake_codex):
    s = fake_codex(FAKE_CODEX_STEER_RACE="late-ok")
    s.send("/slow", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    s.send("just in time")
    (result,) = s.wait("result")
    first, second = s.events("accepted")
    assert second["delivery"] == "steer" and second["run_id"] == first["run_id"]
    assert result["input_ids"] == [first["input_id"], second["input_id"]]


def test_cancel_while_the_turn_id_is_unknown_interrupts_once_codex_names_it(fake_codex):
    s = fake_codex(FAKE_CODEX_START_DELAY="1.0")
    s.send("warm up", first=True)
    s.wait("result")
    sender = s.send_later("/slow")
    wait_for(lambda: methods(fake_codex.home).count("turn/start") == 2, 30, "second turn/start")
    assert s.cmd("cancel", s.path).returncode == 0
    assert sender.wait(30) == 0
    result = s.wait("result", 2)[1]
    assert result["status"] == "cancelled"
    assert "turn/interrupt" in methods(fake_codex.home)


def test_cancel_mid_turn_gives_a_cancelled_result(fake_codex):
    s = fake_codex()
    s.send("/slow", first=True)
    s.wait_log(lambda e: e.get("kind") == "text.delta")
    assert s.cmd("cancel", s.path).returncode == 0
    (result,) = s.wait("result")
    assert result["status"] == "cancelled" and s.events("message") == []


def test_endless_retry_loop_stays_visible_and_cancellable(fake_codex):
    s = fake_codex()
    s.send("/retry", first=True)
    warning = s.wait_log(lambda e: e.get("kind") == "warning" and e.get("source") == "error")
    assert warning["level"] == "warning" and "waiting for network" in warning["message"]
    report = status(s.path, env=s.env)
    assert report["state"] == "running" and recent(report["last_activity"], warning["ts"])
    assert s.cmd("cancel", s.path).returncode == 0
    assert s.wait("result")[0]["status"] == "cancelled"


def test_app_server_crash_fails_the_run_and_the_next_send_resumes_the_thread(fake_codex):
    s = fake_codex()
    s.send("/crash", first=True)
    (result,) = s.wait("result")
    assert result["status"] == "failed" and "exit" in result["error"]
    s.send("after the crash")
    assert s.wait("result", 2)[1]["status"] == "completed"
    sent = fake_requests(fake_codex.home)
    thread_id = [m for m in sent if m.get("method") == "turn/start"][0]["params"]["threadId"]
    resumes = [m for m in sent if m.get("method") == "thread/resume"]
    assert len(resumes) == 1 and resumes[0]["params"]["threadId"] == thread_id
    assert methods(fake_codex.home).count("turn/start") == 2  # the crashed input was not replayed


def test_garbage_on_stdout_is_logged_and_the_run_completes(fake_codex):
    s = fake_codex()
    s.send("/garbage", first=True)
    (result,) = s.wait("result")
    assert result["status"] == "completed" and result["output"] == "echo: /garbage"
    diagnostics = s.events("log", kind="diagnostic")
    assert any(d.get("line") == "this is not json" for d in diagnostics)


def test_approval_answered_by_reply_from_another_process(fake_codex):
    s = fake_codex()
    s.send("/approve", first=True)
    (request,) = s.wait("request", state="pending")
    assert request["kind"] == "permission" and request["options"] == ["allow", "allow-always", "deny", "cancel"]
    assert request["tool"] == "command" and "touch x" in request["message"]
    assert status(s.path, env=s.env)["state"] == "awaiting_reply"
    assert s.cmd("reply", s.path, request["request_id"], "allow-always").returncode == 0
    (result,) = s.wait("result")
    assert result["output"] == 'decision: {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch", "x"]}}'


def test_a_shell_command_is_one_tool_started_output_and_completed_with_its_exit_code(fake_codex):
    s = fake_codex()
    s.send("/tool ls /nonexistent-harnessctl-dir", first=True)
    s.wait("result")
    (started,) = s.events("log", kind="tool.started")
    assert (started["tool"], started["title"]) == ("command", "ls /nonexistent-harnessctl-dir")
    (output,) = s.events("log", kind="tool.output")
    (completed,) = s.events("log", kind="tool.completed")
    assert output["tool_id"] == completed["tool_id"] == started["tool_id"]
    assert completed["status"] == "failed" and completed["exit_code"] == 2
    assert "nonexistent-harnessctl-dir" in completed["output"]


def test_a_file_change_is_logged_with_the_diff_of_its_latest_patch(fake_codex):
    s = fake_codex()
    s.send("/edit notes.txt", first=True)
    s.wait("result")
    (changed,) = s.events("log", kind="file.changed")
    assert changed["path"].endswith("/notes.txt") and changed["change"] == "add"
    assert "+hello\n+world\n" in changed["diff"] and (changed["added"], changed["removed"]) == (2, 0)
    (plan,) = s.events("log", kind="plan")
    assert plan["entries"] == [{"text": "write the file", "status": "in_progress"}]
    (warning,) = s.events("log", kind="warning")
    assert warning["source"] == "warning" and warning["message"] == "the fake wrote nothing"


def test_the_session_line_names_thread_version_model_and_policies(fake_codex):
    s = fake_codex()
    s.send("hello", first=True)
    s.wait("result")
    (session,) = s.events("log", kind="session")
    thread_id = [m for m in fake_requests(fake_codex.home) if m.get("method") == "turn/start"][0]["params"]["threadId"]
    assert (session["session_id"], session["harness"], session["version"]) == (thread_id, "codex", "0.171.0")
    assert (session["model"], session["approval_policy"], session["sandbox"]) == ("mock-model", "never", "readOnly")


def test_idle_exit_then_send_resumes_the_same_thread(fake_codex):
    s = fake_codex(HARNESSCTL_IDLE_TIMEOUT="1")
    s.send("one", first=True)
    s.wait("result")
    s.runtime_gone()
    s.send("two")
    assert s.wait("result", 2)[1]["output"] == "echo: two"
    assert methods(fake_codex.home).count("thread/resume") == 1
    assert methods(fake_codex.home).count("thread/start") == 1


def test_a_codex_bin_variable_naming_nothing_makes_send_exit_5_blaming_the_variable(workdir):
    missing = str(workdir / "no-such-codex")
    proc = run("send", str(workdir / "events.jsonl"), "hello", "--adapter", "codex",
               env=cli_env(HARNESSCTL_CODEX_BIN=missing))
    assert proc.returncode == 5
    assert proc.stderr.decode() == "harnessctl: HARNESSCTL_CODEX_BIN points at nothing executable (%s)\n" % missing


def test_a_codex_missing_from_path_makes_send_exit_5_saying_how_to_get_it(workdir):
    empty = workdir / "empty-path"
    empty.mkdir()
    proc = run("send", str(workdir / "events.jsonl"), "hello", "--adapter", "codex", env=cli_env(PATH=str(empty)))
    assert proc.returncode == 5
    assert proc.stderr.decode() == "harnessctl: codex not found (codex): install Codex or set HARNESSCTL_CODEX_BIN\n"


def fork(s, new, *flags):
    """`harnessctl fork` of the session's file into `new`; must succeed."""
    proc = s.cmd("fork", s.path, new, *flags)
    assert proc.returncode == 0, proc.stderr.decode()


def test_a_fork_continues_the_thread_in_its_own_cwd_and_the_original_goes_on_without_it(fake_codex, workdir):
    s = fake_codex()
    s.send("remember PINEAPPLE", first=True)
    s.wait("result")
    other, new = workdir / "other", str(workdir / "new.jsonl")
    other.mkdir()
    fork(s, new, "--cwd", str(other))
    assert s.cmd("send", new, "FORKTEXT").returncode == 0
    assert s.cmd("send", new, "/history").returncode == 0
    assert wait_matching(new, "result", 2)[1]["output"] == "history: remember PINEAPPLE | FORKTEXT"
    sent = fake_requests(fake_codex.home)
    source = next(m for m in sent if m.get("method") == "turn/start")["params"]["threadId"]
    (forked,) = [m for m in sent if m.get("method") == "thread/fork"]
    assert forked["params"]["threadId"] == source and forked["params"]["cwd"] == str(other.resolve())
    s.send("/history")
    assert s.wait("result", 2)[1]["output"] == "history: remember PINEAPPLE"


def test_a_fork_codex_cannot_make_fails_the_first_send_with_its_words(fake_codex, workdir):
    s = fake_codex()
    s.send("hello", first=True)
    s.wait("result")
    new = str(workdir / "new.jsonl")
    fork(s, new)
    elsewhere = workdir / "other_home"  # a CODEX_HOME that never saw the thread
    elsewhere.mkdir()
    proc = run("send", new, "hello", env=dict(s.env, FAKE_CODEX_HOME=str(elsewhere)))
    assert proc.returncode == 5
    assert "codex cannot fork thread" in proc.stderr.decode() and "no rollout found" in proc.stderr.decode()


def test_a_codex_that_exits_at_start_fails_the_send_with_its_own_words(fake_codex):
    """codex 0.171.0 refuses `approval_policy = "untrusted"` by exiting 1 at start, its
    reason on stderr before a stack backtrace: the send's error quotes that reason."""
    s = fake_codex()
    with open(os.path.join(fake_codex.home, "config.toml"), "w") as f:
        f.write('approval_policy = "untrusted"\n')
    proc = run("send", s.path, "hello", "--adapter", "codex", "--cwd", s.cwd, env=s.env)
    stderr = proc.stderr.decode()
    assert proc.returncode == 5 and stderr.count("\n") == 1, stderr
    assert ('(exit code 1); its stderr says: Error: approval_policy = "untrusted" is no longer supported; '
            "remove this setting; see %s.d/runtime.log" % os.path.realpath(s.path)) in stderr
