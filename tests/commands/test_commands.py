"""The commands, black-box through the CLI with the mock adapter (docs/PROTOCOL.md sections 2 and 14,
docs/PROTOCOL-COMMANDS.md sections 6 to 8)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import tempfile

import pytest
from cliutil import cli_env, critical, events, of_type, ok, results, run, runtime_pids, status, wait_for, wait_results


def send(path, text, *flags, env=None):
    return ok("send", path, text, *flags, env=env)


def test_send_exits_0_with_empty_stdout_and_writes_accepted_message_result(efile):
    proc = ok("send", efile, "hello", "--adapter", "mock")
    assert proc.stdout == b"" and proc.stderr == b""
    accepted = of_type(efile, "accepted")
    assert len(accepted) == 1 and accepted[0]["text"] == "hello" and accepted[0]["delivery"] == "start"
    result = wait_results(efile, 1)[0]
    assert result["status"] == "completed"
    assert result["input_ids"] == [accepted[0]["input_id"]]
    assert result["output"] == "echo: hello"
    message = of_type(efile, "message")[0]
    assert message["text"] == "echo: hello" and message["run_id"] == result["run_id"] == accepted[0]["run_id"]


def test_every_line_has_type_ts_and_consecutive_seq(efile):
    send(efile, "one", "--adapter", "mock")
    send(efile, "two")
    wait_results(efile, 2)
    lines = events(efile)
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    for event in lines:
        assert event["ts"].endswith("Z") and len(event["ts"]) == len("2026-12-02T10:40:33.794Z")


def test_event_file_is_0600_and_sidecar_0700(efile):
    send(efile, "hello", "--adapter", "mock")
    assert stat.S_IMODE(os.stat(efile).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(efile + ".d").st_mode) == 0o700


def test_text_is_read_from_stdin_when_omitted(efile):
    ok("send", efile, "--adapter", "mock", input="line one\nline two\n".encode())
    assert of_type(efile, "accepted")[0]["text"] == "line one\nline two\n"


def test_status_prints_one_json_line_with_the_binding(efile, workdir):
    send(efile, "hello", "--adapter", "mock", "--cwd", str(workdir), "--model", "m1")
    wait_results(efile, 1)
    report = status(efile)
    assert report["state"] == "idle" and report["runtime"] == "alive"
    assert report["cwd"] == os.path.realpath(str(workdir)) and report["model"] == "m1" and report["adapter"] == "mock"
    assert report["requests"] == [] and report["queued"] == 0 and report["run_id"] is None
    assert report["last_activity"].endswith("Z")


def test_commands_on_a_missing_file_exit_4(workdir):
    missing = str(workdir / "none.jsonl")
    for args in (("status", missing), ("cancel", missing), ("reply", missing, "req-1", "allow")):
        proc = run(*args)
        assert proc.returncode == 4, args
        assert proc.stderr.decode().startswith("harnessctl: ") and proc.stderr.count(b"\n") == 1
    assert not os.path.exists(missing)


def test_send_during_a_run_steers_into_the_same_run(efile):
    send(efile, "/sleep 3\nfirst", "--adapter", "mock")
    send(efile, "second")
    first, second = of_type(efile, "accepted")
    assert second["delivery"] == "steer" and second["run_id"] == first["run_id"]
    result = wait_results(efile, 1)[0]
    assert result["input_ids"] == [first["input_id"], second["input_id"]]
    assert result["output"] == "echo: first\necho: second"


def test_status_is_running_during_a_run(efile):
    send(efile, "/sleep 30", "--adapter", "mock")
    report = status(efile)
    assert report["state"] == "running" and report["run_id"] == of_type(efile, "accepted")[0]["run_id"]
    ok("cancel", efile)


def test_permission_request_is_answered_by_reply(efile):
    send(efile, "/permission run it?", "--adapter", "mock")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="awaiting_reply")
    report = status(efile)
    assert report["requests"] == [{"request_id": "req-1", "kind": "permission", "message": "run it?"}]
    request = of_type(efile, "request")[0]
    assert request["state"] == "pending" and request["options"] == ["allow", "deny"]
    ok("reply", efile, "req-1", "deny")
    result = wait_results(efile, 1)[0]
    assert "permission: deny" in result["output"]
    replied = of_type(efile, "request")[-1]
    assert replied["state"] == "replied" and replied["answer"] == "deny"


def test_replying_twice_exits_3(efile):
    send(efile, "/permission run it?", "--adapter", "mock")
    wait_for(lambda: of_type(efile, "request"), what="request")
    ok("reply", efile, "req-1", "allow")
    proc = run("reply", efile, "req-1", "allow")
    assert proc.returncode == 3 and b"already replied" in proc.stderr


def test_reply_with_an_answer_the_request_does_not_allow_exits_2(efile):
    send(efile, "/permission run it?", "--adapter", "mock")
    wait_for(lambda: of_type(efile, "request"), what="request")
    before = open(efile, "rb").read()
    proc = run("reply", efile, "req-1", "maybe")
    assert proc.returncode == 2 and b"allow, deny" in proc.stderr
    assert open(efile, "rb").read() == before
    ok("cancel", efile)


def test_reply_to_an_unknown_request_exits_3(efile):
    send(efile, "hello", "--adapter", "mock")
    assert run("reply", efile, "req-9", "allow").returncode == 3


def test_question_is_answered_with_plain_text(efile):
    send(efile, "/question which colour?", "--adapter", "mock")
    wait_for(lambda: of_type(efile, "request"), what="request")
    request = of_type(efile, "request")[0]
    assert request["kind"] == "question" and request["questions"] == [{"id": "q1", "question": "which colour?"}]
    ok("reply", efile, "req-1", input=b"blue\n")
    assert "answer: blue" in wait_results(efile, 1)[0]["output"]


def test_question_is_answered_with_json(efile):
    send(efile, "/question go or stop?", "--adapter", "mock")
    wait_for(lambda: of_type(efile, "request"), what="request")
    ok("reply", efile, "req-1", '{"q1": "Go"}')
    assert "answer: Go" in wait_results(efile, 1)[0]["output"]
    assert of_type(efile, "request")[-1]["answer"] == {"q1": "Go"}


def test_cancel_ends_the_run_cancelled_and_status_goes_idle(efile):
    send(efile, "/sleep 30", "--adapter", "mock")
    ok("cancel", efile)
    result = wait_results(efile, 1, timeout=5)[0]
    assert result["status"] == "cancelled"
    assert status(efile)["state"] == "idle"


def test_cancel_expires_a_pending_request(efile):
    send(efile, "/permission run it?", "--adapter", "mock")
    wait_for(lambda: of_type(efile, "request"), what="request")
    ok("cancel", efile)
    wait_results(efile, 1)
    assert of_type(efile, "request")[-1]["state"] == "expired"
    assert run("reply", efile, "req-1", "allow").returncode == 3


def test_cancel_with_nothing_running_exits_0_and_writes_nothing(efile):
    send(efile, "hello", "--adapter", "mock")
    wait_results(efile, 1)
    before = open(efile, "rb").read()
    ok("cancel", efile)
    assert open(efile, "rb").read() == before


def test_fail_directive_gives_a_failed_result_and_failed_status(efile):
    send(efile, "/fail model exploded", "--adapter", "mock")
    result = wait_results(efile, 1)[0]
    assert result["status"] == "failed" and result["error"] == "model exploded"
    assert status(efile)["state"] == "failed"


def test_harness_crash_fails_the_run_and_the_next_send_resumes(efile):
    send(efile, "/crash", "--adapter", "mock")
    result = wait_results(efile, 1)[0]
    assert result["status"] == "failed" and "exited unexpectedly" in result["error"]
    send(efile, "after the crash")
    assert wait_results(efile, 2)[1]["output"] == "echo: after the crash"


def test_kill_9_of_the_runtime_fails_open_inputs_and_never_replays_them(efile):
    send(efile, "/sleep 30\nlost input", "--adapter", "mock")
    [pid] = runtime_pids(efile)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(efile), what="runtime gone")
    report = status(efile)
    assert report["runtime"] == "stopped" and report["state"] == "failed"
    result = results(efile)[0]
    assert result["status"] == "failed" and result["error"] == "runtime lost; input outcome is uncertain"
    assert result["input_ids"] == [of_type(efile, "accepted")[0]["input_id"]]
    send(efile, "fresh")
    second = wait_results(efile, 2)[1]
    assert second["output"] == "echo: fresh" and second["run_id"] != result["run_id"]
    assert not any("lost input" in m["text"] for m in of_type(efile, "message"))


def test_runtime_exits_when_idle_and_the_next_send_resumes(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="1")
    send(efile, "hello", "--adapter", "mock", env=env)
    wait_for(lambda: not runtime_pids(efile), timeout=15, what="idle exit")
    assert status(efile)["runtime"] == "stopped"
    send(efile, "again", env=env)
    assert wait_results(efile, 2)[1]["output"] == "echo: again"
    resumed = [e for e in of_type(efile, "log") if e.get("resumed_turns")]
    assert resumed and resumed[0]["resumed_turns"] == 1


def test_adapter_can_come_from_the_environment(efile):
    ok("send", efile, "hello", env=cli_env(HARNESSCTL_ADAPTER="mock"))
    assert status(efile)["adapter"] == "mock"


def test_later_sends_may_omit_the_binding(efile, workdir):
    send(efile, "one", "--adapter", "mock", "--cwd", str(workdir))
    send(efile, "two")
    assert len(of_type(efile, "accepted")) == 2


def test_concurrent_first_sends_start_one_runtime(efile):
    from cliutil import start

    procs = [start("send", efile, "n%d" % i, "--adapter", "mock", stdout=None) for i in range(8)]
    for proc in procs:
        assert proc.wait(60) == 0, proc.stderr.read()
    assert sorted(e["text"] for e in of_type(efile, "accepted")) == sorted("n%d" % i for i in range(8))
    assert len(runtime_pids(efile)) == 1


def test_long_event_path_uses_a_fallback_socket(workdir):
    deep = workdir / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = str(deep / "events.jsonl")
    send(path, "hello", "--adapter", "mock")
    assert wait_results(path, 1)[0]["status"] == "completed"
    assert not os.path.exists(path + ".d/runtime.sock")


def test_harnessctl_socket_dir_moves_the_fallback_socket_folder(workdir):
    deep = workdir / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path, short = str(deep / "events.jsonl"), tempfile.mkdtemp(dir="/tmp")
    folder = os.path.join(short, "sockets")
    env = cli_env(HARNESSCTL_SOCKET_DIR=folder)
    try:
        ok("send", path, "hello", "--adapter", "mock", "--wait", env=env)
        assert [n for n in os.listdir(folder) if n.endswith(".sock")]
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert json.loads(ok("status", path, env=env).stdout)["runtime"] == "alive"
    finally:  # the workdir fixture stops the runtime
        shutil.rmtree(short)


@pytest.mark.parametrize("folder, words", [("s", b"must be an absolute path"), ("/tmp/" + "s" * 41, b"longer than 45")])
def test_a_socket_dir_that_is_relative_or_too_long_is_refused(workdir, folder, words):
    deep = workdir / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    proc = run("send", str(deep / "events.jsonl"), "hi", "--adapter", "mock", env=cli_env(HARNESSCTL_SOCKET_DIR=folder))
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_a_symlinked_event_path_is_the_same_session(efile, workdir):
    send(efile, "one", "--adapter", "mock")
    link = str(workdir / "link.jsonl")
    os.symlink(efile, link)
    send(link, "two")
    assert len(of_type(efile, "accepted")) == 2 and not os.path.exists(link + ".d")


def test_torn_tail_is_terminated_before_the_next_append(efile):
    send(efile, "one", "--adapter", "mock")
    wait_results(efile, 1)
    with open(efile, "ab") as f:
        f.write(b'{"type":"message","partial')
    send(efile, "two")
    wait_results(efile, 2)
    raw = open(efile, "rb").read().split(b"\n")
    assert raw[-1] == b""
    assert b'{"type":"message","partial' in raw
    assert len(critical(efile)) == 6


def test_help_and_version_exit_0():
    assert ok("--help").stdout.startswith(b"usage: harnessctl send")
    assert ok("--version").stdout.startswith(b"harnessctl ")
    assert ok("send", "--help").stdout.startswith(b"usage:")


def test_no_arguments_prints_usage_and_exits_2():
    proc = run()
    assert proc.returncode == 2 and b"usage:" in proc.stderr


def test_status_line_is_valid_json_after_recovery_of_an_empty_file(workdir):
    path = str(workdir / "empty.jsonl")
    open(path, "w").close()
    report = status(path)
    assert report["state"] == "idle" and report["runtime"] == "stopped" and report["adapter"] is None
    assert report == {"file": path, "state": "idle", "run_id": None, "queued": 0, "requests": [], "cwd": None,
                      "model": None, "adapter": None, "mode": None, "runtime": "stopped", "last_activity": None,
                      "totals": {"tokens": 0, "cost_usd": None}}


def test_an_adapter_that_drives_one_harness_refuses_agent(workdir):
    proc = run("send", str(workdir / "a.jsonl"), "hi", "--adapter", "mock", "--agent", "gemini")
    assert proc.returncode == 2 and b"the mock adapter takes no --agent" in proc.stderr
    assert not (workdir / "a.jsonl").exists()
