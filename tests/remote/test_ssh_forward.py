"""The forwarded runtime socket (harnessctl/remote/tunnel.py, docs/FLEET.md "What is forwarded"), on the
loopback sshd: a warm `status`, `send`, `reply` and `cancel` to a live remote session run no remote
command; a stopped one is asked with the remote command; a master that dies mid-command costs one clear
line and nothing in the file; another local user cannot use the forward."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess

import cliutil
import pytest
import torture_users
from cliutil import of_type, run, runtime_pids, start, wait_for
from ssh_support import address, remote_commands

M = ("--adapter", "mock")


@pytest.fixture
def logged(ssh_bed, tmp_path):
    """A test environment whose remote commands are each logged first: (env, the log's path)."""
    log = str(tmp_path / "remote.log")
    return ssh_bed.logged_env(cliutil.cli_env(), log), log


def ok(*args, env):
    proc = run(*args, env=env)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def forward_of(env):
    """The folder of forwarded sockets and the one made last (the socket folder is the test worker's)."""
    folder = os.path.join(env["HARNESSCTL_SOCKET_DIR"], "fw")
    paths = [os.path.join(folder, name) for name in os.listdir(folder)]
    return folder, max(paths, key=lambda path: os.stat(path).st_mtime_ns)


def master_pid(ssh_bed, host):
    proc = subprocess.run([*ssh_bed.ssh(), "-O", "check", host], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    text = proc.stderr.decode()
    return int(text.split("pid=")[1].split(")")[0])


def test_a_warm_status_send_reply_and_cancel_run_no_remote_command(efile, logged):
    env, log = logged
    addr = address("h1", efile)
    ok("send", addr, "/sleep 60", *M, env=env)  # the first: run there, and the forward learned
    assert remote_commands(log)
    line = json.loads(ok("status", addr, env=env).stdout)
    assert (line["file"], line["state"], line["runtime"]) == (addr, "running", "alive")
    input_id = ok("send", addr, "more", "--queue", "--print-id", env=env).stdout.decode().strip()
    refused = run("reply", addr, "req-9", "allow", env=env)
    ok("cancel", addr, env=env)
    assert remote_commands(log) == []
    assert (refused.returncode, refused.stderr) == (3, b"harnessctl: unknown request id req-9\n")
    assert [e["input_id"] for e in of_type(efile, "accepted")][1:] == [input_id]


def test_a_stopped_remote_session_is_asked_with_the_remote_command(efile, ssh_bed, tmp_path):
    log = str(tmp_path / "remote.log")
    env = ssh_bed.logged_env(cliutil.cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5"), log)
    addr = address("h2", efile)
    ok("send", addr, "hello", "--wait", *M, env=env)
    ok("status", addr, env=env)  # the forward is known now
    wait_for(lambda: not runtime_pids(efile), 30, "the runtime's idle exit")
    remote_commands(log)
    line = json.loads(ok("status", addr, env=env).stdout)
    assert (line["file"], line["runtime"]) == (addr, "stopped")
    assert [words.split()[-3:] for words in remote_commands(log)] == [["status", "--", efile]]


def test_the_forward_is_a_0600_socket_in_a_0700_folder_another_user_cannot_connect_to(efile, logged):
    reason = torture_users.unavailable()
    if reason:
        pytest.skip(reason)
    env, _ = logged
    ok("send", address("h1", efile), "/sleep 60", *M, env=env)
    folder, forward = forward_of(env)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(forward).st_mode) == 0o600 and stat.S_ISSOCK(os.stat(forward).st_mode)
    with torture_users.other_user() as user:
        torture_users.as_user(user, "/", refused_connect, forward)
    ok("cancel", address("h1", efile), env=env)


def refused_connect(path):
    conn = socket.socket(socket.AF_UNIX)
    try:
        conn.connect(path)
    except PermissionError:
        return
    raise AssertionError("another user connected to %s" % path)


def test_a_master_that_dies_mid_command_costs_one_line_and_the_file_keeps_the_input_at_most_once(
        efile, logged, ssh_bed):
    env, _ = logged
    addr = address("h1", efile)
    ok("send", addr, "/sleep 60", *M, env=env)
    ok("status", addr, env=env)  # forwarded now
    (runtime,) = runtime_pids(efile)
    os.kill(runtime, signal.SIGSTOP)  # the request reaches its socket and waits there
    try:
        sending = start("send", addr, "steer me", env=env)
        wait_for(lambda: reading(sending.pid), 30, "the send waiting for its answer")
        os.kill(master_pid(ssh_bed, "h1"), signal.SIGKILL)
        out, err = sending.communicate(timeout=30)
    finally:
        os.kill(runtime, signal.SIGCONT)
    assert sending.returncode == 6 and out == b""
    assert err.decode().count("\n") == 1 and "may have been applied: read %s" % addr in err.decode(), err
    ok("status", addr, env=env)  # the next command reaches the session again (a new master)
    texts = [e["text"] for e in of_type(efile, "accepted")]
    assert texts.count("steer me") <= 1 and texts[0] == "/sleep 60"
    ok("cancel", addr, env=env)


def reading(pid):
    """Whether process `pid` sleeps waiting for input (the send, its request sent: it polls its socket,
    which has a timeout, and reads it), and has no child (no ssh: the forward carries it)."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            waiting = f.read().startswith(("poll_schedule_timeout", "do_sys_poll", "unix_stream_read_generic"))
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return waiting and not f.read().strip()
    except OSError:
        return False


def test_a_status_through_a_symlinked_path_never_uses_a_forward(efile, logged, tmp_path):
    env, log = logged
    link = str(tmp_path / "link.jsonl")
    ok("send", address("h1", efile), "/sleep 60", *M, env=env)
    os.symlink(efile, link)
    ok("status", address("h1", link), env=env)
    remote_commands(log)
    ok("status", address("h1", link), env=env)
    assert len(remote_commands(log)) == 1  # the link may name another session by now: asked there each time
    ok("cancel", address("h1", efile), env=env)
