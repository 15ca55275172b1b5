"""`send --wait`, `--print-id` and `wait`: a script gets the answer to ITS input
with one command (docs/PROTOCOL-COMMANDS.md section 9), black-box through the CLI with
the mock adapter."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import cliutil
import pytest
from cliutil import cli_env, interruptible, of_type, ok, results, run, runtime_pids, status, wait_for, wait_results

M = ("--adapter", "mock")


def line_in_file(path, event_type, **fields):
    """The raw line (without newline) of the event of that type with those fields."""
    with open(path, "rb") as f:
        for raw in f:
            event = json.loads(raw)
            if event["type"] == event_type and all(event.get(k) == v for k, v in fields.items()):
                return raw.rstrip(b"\n")
    raise AssertionError("no %s line with %s in %s" % (event_type, fields, path))


def start(*args, env=None):
    """A command left running: its stdout is read line by line."""
    return cliutil.start(*args, env=env, preexec_fn=interruptible)


def test_send_wait_prints_the_completed_result_line_as_in_the_file_and_exits_0(efile):
    proc = run("send", efile, "hello", "--wait", *M)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["output"] == "echo: hello"
    assert proc.stdout == line_in_file(efile, "result", run_id=result["run_id"]) + b"\n"
    assert result["input_ids"] == [of_type(efile, "accepted")[0]["input_id"]]


def test_send_wait_on_a_failing_run_prints_the_failed_result_and_exits_7(efile):
    proc = run("send", efile, "/fail boom", "--wait", *M)
    assert proc.returncode == 7, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "failed" and result["error"] == "boom"


def test_cancel_from_another_shell_makes_a_waiting_send_wait_exit_8(efile):
    waiting = start("send", efile, "/sleep 8", "--wait", *M)
    wait_for(lambda: of_type(efile, "accepted"), what="the input accepted")
    ok("cancel", efile)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 8, err
    assert json.loads(out)["status"] == "cancelled"


def test_send_wait_returns_the_pending_request_line_with_exit_9(efile):
    proc = run("send", efile, "/permission ok?", "--wait", *M)
    assert proc.returncode == 9, proc.stderr
    request = json.loads(proc.stdout)
    assert request["type"] == "request" and request["state"] == "pending" and request["message"] == "ok?"
    assert proc.stdout == line_in_file(efile, "request", request_id=request["request_id"], state="pending") + b"\n"
    assert status(efile)["state"] == "awaiting_reply"


def test_approval_loop_send_wait_9_then_reply_then_wait_gives_the_result(efile):
    sent = run("send", efile, "/permission ok?", "--print-id", "--wait", *M)
    assert sent.returncode == 9, sent.stderr
    input_id, request_line = sent.stdout.decode().splitlines()
    ok("reply", efile, json.loads(request_line)["request_id"], "allow")
    waited = run("wait", efile, input_id)
    assert waited.returncode == 0, waited.stderr
    result = json.loads(waited.stdout)
    assert input_id in result["input_ids"] and "permission: allow" in result["output"]


def test_timeout_passing_first_exits_10_with_nothing_printed_and_the_run_goes_on(efile):
    proc = run("send", efile, "/sleep 6", "--wait", "--timeout", "1", *M)
    assert (proc.returncode, proc.stdout, proc.stderr) == (10, b"", b"")
    assert status(efile)["state"] == "running"  # it returned before the run ended, which goes on


def test_a_wait_of_no_time_is_answered_by_the_runtime_parked_or_running(efile):
    """`--timeout 0` asks the runtime to answer at once, and gives it the usual
    time to: a busy runtime's late answer is never taken for a timeout."""
    parked = run("send", efile, "/permission ok?", "--print-id", "--wait", *M)
    input_id = parked.stdout.decode().splitlines()[0]
    for _ in range(5):
        proc = run("wait", efile, input_id, "--timeout", "0")
        assert proc.returncode == 9 and json.loads(proc.stdout)["type"] == "request", proc.stderr
    ok("reply", efile, json.loads(parked.stdout.decode().splitlines()[1])["request_id"], "allow")
    ok("wait", efile, input_id)
    busy = ok("send", efile, "/sleep 30", "--print-id", *M).stdout.decode().strip()
    assert run("wait", efile, busy, "--timeout", "0").returncode == 10


def test_print_id_prints_the_accepted_input_id_alone(efile):
    proc = ok("send", efile, "hello", "--print-id", *M)
    assert proc.stdout.decode() == of_type(efile, "accepted")[0]["input_id"] + "\n"


def test_print_id_then_a_steer_with_wait_returns_the_one_result_covering_both(efile):
    first = ok("send", efile, "/sleep 3", "--print-id", *M).stdout.decode().strip()
    steer = run("send", efile, "also this", "--print-id", "--wait")
    assert steer.returncode == 0, steer.stderr
    second, result_line = steer.stdout.decode().splitlines()
    result = json.loads(result_line)
    assert result["input_ids"] == [first, second] and len(results(efile)) == 1


def test_wait_for_an_input_after_its_runtime_idled_out_returns_its_result(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5")
    input_id = ok("send", efile, "hello", "--print-id", *M, env=env).stdout.decode().strip()
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to idle out")
    proc = run("wait", efile, input_id)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["input_ids"] == [input_id]


def test_wait_for_an_input_left_open_by_a_killed_runtime_exits_7_runtime_lost(efile):
    input_id = ok("send", efile, "/sleep 30", "--print-id", *M).stdout.decode().strip()
    for pid in runtime_pids(efile):
        os.kill(pid, signal.SIGKILL)
    proc = run("wait", efile, input_id)
    assert proc.returncode == 7, proc.stderr
    assert json.loads(proc.stdout)["error"] == "runtime lost; input outcome is uncertain"


def test_a_waiter_whose_runtime_is_killed_returns_the_runtime_lost_result(efile):
    waiting = start("send", efile, "/sleep 30", "--print-id", "--wait", *M)
    waiting.stdout.readline()  # the id: it waits now
    for pid in runtime_pids(efile):
        os.kill(pid, signal.SIGKILL)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 7, err
    assert json.loads(out)["error"] == "runtime lost; input outcome is uncertain"


def test_ctrl_c_of_a_waiting_send_exits_130_and_the_run_goes_on(efile):
    waiting = start("send", efile, "/sleep 60", "--print-id", "--wait", *M)
    input_id = waiting.stdout.readline().decode().strip()
    out = err = b""
    for _ in range(120):  # Ctrl-C, again each half second until it exits (a loaded machine may be slow to act)
        waiting.send_signal(signal.SIGINT)
        try:
            out, err = waiting.communicate(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            continue
    assert (waiting.returncode, out) == (130, b""), err
    assert status(efile)["state"] == "running"  # the run went on; now end it rather than wait a minute
    ok("cancel", efile)
    proc = run("wait", efile, input_id)
    assert proc.returncode == 8 and json.loads(proc.stdout)["input_ids"] == [input_id]


def test_wait_without_an_id_returns_the_status_line_once_the_run_ended(efile):
    ok("send", efile, "/sleep 2", *M)
    proc = run("wait", efile)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["state"] == "idle"
    assert [r["status"] for r in results(efile)] == ["completed"]


def test_wait_without_an_id_returns_awaiting_reply_at_once(efile):
    ok("send", efile, "/permission ok?", *M)
    wait_for(lambda: of_type(efile, "request"), what="the request")
    proc = run("wait", efile)
    assert proc.returncode == 0 and json.loads(proc.stdout)["state"] == "awaiting_reply"


def test_wait_without_an_id_times_out_with_10_while_running(efile):
    ok("send", efile, "/sleep 6", *M)
    proc = run("wait", efile, "--timeout", "0.5")
    assert (proc.returncode, proc.stdout) == (10, b"")


def test_wait_on_a_stopped_idle_file_prints_its_status_at_once(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5")
    ok("send", efile, "hello", *M, env=env)
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to idle out")
    proc = run("wait", efile)
    assert proc.returncode == 0 and json.loads(proc.stdout)["runtime"] == "stopped"


def test_wait_on_a_file_no_send_created_exits_4(workdir):
    assert run("wait", str(workdir / "none.jsonl")).returncode == 4


def test_wait_for_an_input_id_the_file_never_accepted_exits_3(efile):
    ok("send", efile, "hello", "--wait", *M)
    proc = run("wait", efile, "not-an-input")
    assert proc.returncode == 3 and b"unknown input id" in proc.stderr


def test_waiters_that_gave_up_leave_no_thread_in_the_runtime(efile):
    ok("send", efile, "/sleep 20", *M)
    (pid,) = runtime_pids(efile)

    def threads():
        return len(os.listdir("/proc/%d/task" % pid))

    before = threads()
    for _ in range(5):
        assert run("wait", efile, "--timeout", "0.1").returncode == 10
    # at most as many as before: the send's own handler thread may still have been ending then
    wait_for(lambda: threads() <= before, what="the waiters' threads to end")


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon", ""])
def test_a_bad_timeout_exits_2(efile, value):
    ok("send", efile, "hello", "--wait", *M)
    proc = run("wait", efile, "--timeout=" + value)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1


def test_timeout_without_wait_on_send_exits_2_and_sends_nothing(efile):
    proc = run("send", efile, "hello", "--timeout", "3", *M)
    assert proc.returncode == 2 and not os.path.exists(efile)


def test_wait_for_an_older_input_of_a_live_runtime_finds_its_result_in_the_file(efile):
    first = ok("send", efile, "first", "--print-id", *M).stdout.decode().strip()
    for i in range(20):  # more results than the runtime keeps at hand
        ok("send", efile, "next %d" % i, "--wait")
    proc = run("wait", efile, first)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == line_in_file(efile, "result", input_ids=[first]) + b"\n"
