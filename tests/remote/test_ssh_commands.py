"""Every command on an ssh:// address, black-box through the CLI against real sshd on the loopback
interface (tests/support/ssh_support.py): the remote harnessctl does the work, the event file (on this same
machine, read at its local path) shows it was done, and the output and exit code come back as locally."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

from cliutil import interruptible, of_type, run, start, wait_for, wait_results
from ssh_support import address, commands_on

M = ("--adapter", "mock")


def ok(*args, env, **kwargs):
    proc = run(*args, env=env, **kwargs)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def remote_status(addr, env):
    (line,) = ok("status", addr, env=env).stdout.decode().splitlines()
    return json.loads(line)


def test_send_wait_over_ssh_runs_the_mock_and_prints_the_result_line_as_in_the_file(efile, ssh_env):
    proc = ok("send", address("h1", efile), "hello", "--wait", *M, env=ssh_env)
    result = json.loads(proc.stdout)
    assert (result["status"], result["output"]) == ("completed", "echo: hello")
    assert result.get("file", address("h1", efile)) == address("h1", efile)
    (in_file,) = of_type(efile, "result")
    assert {k: v for k, v in result.items() if k != "file"} == in_file
    assert of_type(efile, "accepted")[0]["text"] == "hello"


def test_wait_over_ssh_prints_the_status_line_with_the_address_as_file(efile, ssh_env):
    addr = address("h1", efile)
    ok("send", addr, "hello", *M, env=ssh_env)
    line = json.loads(ok("wait", addr, env=ssh_env).stdout)
    assert list(line)[0] == "file" and line["file"] == addr
    assert (line["state"], line["adapter"]) == ("idle", "mock")


def test_status_over_ssh_is_the_remote_status_line_with_the_address_as_file(efile, ssh_env):
    addr = address("h2", efile)
    ok("send", addr, "/sleep 60", *M, env=ssh_env)
    line = remote_status(addr, ssh_env)
    assert list(line)[0] == "file" and line["file"] == addr
    assert (line["state"], line["runtime"]) == ("running", "alive")
    assert line["run_id"] == of_type(efile, "accepted")[0]["run_id"]
    ok("cancel", addr, env=ssh_env)


def test_a_send_over_ssh_into_a_running_run_steers_into_it(efile, ssh_env):
    addr = address("h1", efile)
    ok("send", addr, "/sleep 60\nfirst", *M, env=ssh_env)
    ok("send", addr, "second", env=ssh_env)
    first, second = of_type(efile, "accepted")
    assert (second["text"], second["delivery"], second["run_id"]) == ("second", "steer", first["run_id"])
    ok("cancel", addr, env=ssh_env)
    (result,) = wait_results(efile, 1)
    assert result["input_ids"] == [first["input_id"], second["input_id"]]


def test_a_parked_approval_is_answered_over_ssh_by_reply(efile, ssh_env):
    addr = address("h1", efile)
    sent = run("send", addr, "/permission run it?", "--wait", *M, env=ssh_env)
    assert sent.returncode == 9, sent.stderr
    request = json.loads(sent.stdout)
    assert (request["type"], request["state"], request["message"]) == ("request", "pending", "run it?")
    assert remote_status(addr, ssh_env)["state"] == "awaiting_reply"
    ok("reply", addr, request["request_id"], "deny", env=ssh_env)
    (result,) = wait_results(efile, 1)
    assert "permission: deny" in result["output"]
    replied = of_type(efile, "request")[-1]
    assert (replied["state"], replied["answer"], replied["by"]) == ("replied", "deny", "reply")


def test_cancel_over_ssh_ends_the_run_cancelled(efile, ssh_env):
    addr = address("h2", efile)
    ok("send", addr, "/sleep 60", *M, env=ssh_env)
    proc = ok("cancel", addr, env=ssh_env)
    assert (proc.stdout, proc.stderr) == (b"", b"")
    (result,) = wait_results(efile, 1)
    assert result["status"] == "cancelled"
    assert remote_status(addr, ssh_env)["state"] == "idle"


def test_a_waiting_send_over_ssh_exits_8_when_its_run_is_cancelled(efile, ssh_env):
    addr = address("h1", efile)
    waiting = start("send", addr, "/sleep 60", "--wait", *M, env=ssh_env)
    wait_for(lambda: of_type(efile, "accepted"), what="the input accepted")
    ok("cancel", addr, env=ssh_env)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 8, err
    assert json.loads(out)["status"] == "cancelled"


def test_log_over_ssh_prints_what_log_prints_on_the_host(efile, ssh_env):
    addr = address("h1", efile)
    ok("send", addr, "/tool make\nhello", "--wait", *M, env=ssh_env)
    remote = ok("log", addr, env=ssh_env).stdout
    assert b"echo: hello" in remote and b"$ make" in remote
    assert remote == ok("log", efile, env=ssh_env).stdout


class Follower:
    """`log --follow` of an address in the background, its output collected as it comes."""

    def __init__(self, addr, env):
        self.proc = start("log", addr, "--follow", env=env, preexec_fn=interruptible)
        self.out = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.out += chunk

    def has(self, text):
        return wait_for(lambda: text in self.out.decode(errors="replace"), 60, "%r in the followed output" % text)

    def interrupt(self):
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=30)
        return code, self.proc.stderr.read()


def test_log_follow_over_ssh_prints_a_run_that_ends_after_it_started(efile, ssh_env):
    addr = address("h2", efile)
    ok("send", addr, "first", "--wait", *M, env=ssh_env)
    follower = Follower(addr, ssh_env)
    follower.has("echo: first")
    ok("send", addr, "/tool make\nsecond", env=ssh_env)
    follower.has("echo: second")
    assert follower.out.count(b"$ make") == 1
    follower.interrupt()


def test_ctrl_c_of_log_follow_over_ssh_exits_130_quietly_and_leaves_no_remote_follower(efile, ssh_env):
    addr = address("h1", efile)
    ok("send", addr, "first", "--wait", *M, env=ssh_env)
    follower = Follower(addr, ssh_env)
    follower.has("echo: first")
    assert follower.interrupt() == (130, b"")
    wait_for(lambda: not commands_on(efile, "log", "--follow"), 30, "the remote `log --follow` gone")


def test_a_local_schema_file_is_read_locally_and_sent(efile, ssh_env):
    """The schema comes through a pipe only this process holds (/dev/fd/N, as a shell's
    `<(...)` gives it): the remote end could never open that path itself."""
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    read, write = os.pipe()
    os.write(write, json.dumps(schema).encode())
    os.close(write)
    try:
        proc = run("send", address("h1", efile), '/json {"n": 3}', "--schema", "/dev/fd/%d" % read, "--wait", *M,
                   env=ssh_env, pass_fds=(read,))
    finally:
        os.close(read)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output_json"] == {"n": 3}
    assert of_type(efile, "accepted")[0]["schema"] == schema


def test_a_missing_remote_file_exits_4_with_the_remote_error_line_naming_its_address(workdir, ssh_env):
    missing = str(workdir / "none.jsonl")
    for args in (("status", address("h1", missing)), ("cancel", address("h1", missing)),
                 ("reply", address("h1", missing), "req-1", "allow")):
        proc = run(*args, env=ssh_env)
        assert (proc.returncode, proc.stdout) == (4, b""), (args, proc.stderr)
        assert proc.stderr == b"harnessctl: no such event file: %s (a send creates it)\n" % os.fsencode(
            address("h1", missing)), proc.stderr
    assert not os.path.exists(missing)


def test_a_remote_error_about_the_file_by_another_name_still_names_the_address(workdir, ssh_env):
    """The remote names the file by its resolved path: the address asked leads the line."""
    os.symlink(str(workdir), str(workdir / "link"))
    missing = str(workdir / "link" / "none.jsonl")
    proc = run("status", address("h1", missing), env=ssh_env)
    assert (proc.returncode, proc.stdout) == (4, b""), proc.stderr
    assert proc.stderr.startswith(b"harnessctl: %s: no such event file: " % os.fsencode(address("h1", missing)))
    assert proc.stderr.count(b"\n") == 1, proc.stderr


def test_an_answer_the_remote_request_does_not_allow_exits_2_and_changes_nothing(efile, ssh_env):
    addr = address("h1", efile)
    assert run("send", addr, "/permission run it?", "--wait", *M, env=ssh_env).returncode == 9
    before = open(efile, "rb").read()
    proc = run("reply", addr, "req-1", "maybe", env=ssh_env)
    assert proc.returncode == 2 and b"allow, deny" in proc.stderr, proc.stderr
    assert open(efile, "rb").read() == before
    ok("cancel", addr, env=ssh_env)


def test_a_failed_remote_run_exits_7_as_locally(efile, ssh_env):
    proc = run("send", address("h2", efile), "/fail boom", "--wait", *M, env=ssh_env)
    assert proc.returncode == 7, proc.stderr
    assert (json.loads(proc.stdout)["status"], of_type(efile, "result")[0]["error"]) == ("failed", "boom")


def test_ctrl_c_of_a_waiting_send_over_ssh_exits_130_the_run_goes_on_and_no_remote_waiter_stays(efile, ssh_env):
    addr = address("h1", efile)
    waiting = start("send", addr, "/sleep 60", "--print-id", "--wait", *M, env=ssh_env, preexec_fn=interruptible)
    input_id = waiting.stdout.readline().decode().strip()
    wait_for(lambda: commands_on(efile, "--wait"), 30, "the remote waiter")
    out = err = b""
    for _ in range(120):  # Ctrl-C, again each half second until it exits (a loaded machine may be slow to act)
        waiting.send_signal(signal.SIGINT)
        try:
            out, err = waiting.communicate(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            continue
    assert (waiting.returncode, out) == (130, b""), err
    wait_for(lambda: not commands_on(efile, "--wait"), 30, "the remote waiter gone")
    assert remote_status(addr, ssh_env)["state"] == "running"
    ok("cancel", addr, env=ssh_env)
    proc = run("wait", addr, input_id, env=ssh_env)
    assert proc.returncode == 8 and json.loads(proc.stdout)["input_ids"] == [input_id]
