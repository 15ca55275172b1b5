"""Sessions on many hosts in one command (`status`, `wait --any`), and a host that cannot be reached:
black-box through the CLI against two real sshd on the loopback interface ("h1", "h2") and a port
that refuses every connection ("down")."""

from __future__ import annotations

import json
import os
import shlex
import stat

from cliutil import of_type, run, start, wait_for
from ssh_support import DOWN, address, commands_on

M = ("--adapter", "mock")


def ok(*args, env, **kwargs):
    proc = run(*args, env=env, **kwargs)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def lines(proc):
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def test_status_of_two_hosts_and_a_local_file_gives_a_line_each_in_the_order_given(workdir, ssh_env):
    a, b, c, d = (str(workdir / name) for name in ("a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"))
    ok("send", address("h1", a), "/sleep 60", *M, env=ssh_env)
    ok("send", address("h2", b), "hello", "--wait", *M, env=ssh_env)
    ok("send", c, "hello", "--wait", *M, env=ssh_env)
    ok("send", address("h1", d), "hello", "--wait", *M, env=ssh_env)
    given = [address("h2", b), c, address("h1", a), address("h1", d)]
    found = lines(ok("status", *given, env=ssh_env))
    assert [line["file"] for line in found] == given
    assert [line["state"] for line in found] == ["idle", "idle", "running", "idle"]
    assert all(list(line)[0] == "file" for line in found)
    ok("cancel", address("h1", a), env=ssh_env)


def test_status_asks_each_host_once_for_all_its_files(workdir, ssh_bed, ssh_env):
    """A wrapper in place of ssh counts the connections: two hosts, five files, two ssh."""
    files = [str(workdir / ("s%d.jsonl" % i)) for i in range(5)]
    for path in files:
        ok("send", path, "hello", "--wait", *M, env=ssh_env)
    calls = str(workdir / "calls")
    wrapper = str(workdir / "ssh-counting")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\necho "$*" >> %s\nexec %s "$@"\n' % (shlex.quote(calls), shlex.join(ssh_bed.ssh())))
    os.chmod(wrapper, stat.S_IRWXU)
    given = [address("h1", files[0]), address("h2", files[1]), address("h1", files[2]), address("h2", files[3]),
             address("h1", files[4])]
    found = lines(ok("status", *given, env=dict(ssh_env, HARNESSCTL_SSH=wrapper)))
    assert [line["file"] for line in found] == given
    with open(calls) as f:
        assert len(f.read().splitlines()) == 2


def test_wait_any_across_two_hosts_returns_the_session_that_finished(workdir, ssh_env):
    a, b = address("h1", str(workdir / "a.jsonl")), address("h2", str(workdir / "b.jsonl"))
    for addr in (a, b):
        ok("send", addr, "/sleep 60", *M, env=ssh_env)
    waiting = start("wait", "--any", a, b, env=ssh_env)
    ok("cancel", b, env=ssh_env)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    (line,) = [json.loads(x) for x in out.decode().splitlines()]
    assert (line["file"], line["state"]) == (b, "idle")
    assert of_type(str(workdir / "a.jsonl"), "result") == []
    ok("cancel", a, env=ssh_env)


def test_wait_any_leaves_no_remote_waiter_once_it_returned(workdir, ssh_env):
    a, b = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    for path, host in ((a, "h1"), (b, "h2")):
        ok("send", address(host, path), "/sleep 60", *M, env=ssh_env)
    waiting = start("wait", "--any", address("h1", a), address("h2", b), env=ssh_env)
    wait_for(lambda: commands_on(a, "wait") and commands_on(b, "wait"), 30, "a remote waiter on each host")
    ok("cancel", address("h2", b), env=ssh_env)
    assert waiting.wait(timeout=60) == 0
    wait_for(lambda: not commands_on(a, "wait"), 30, "the remote `wait --any` on h1 gone")
    ok("cancel", address("h1", a), env=ssh_env)


def test_wait_any_over_a_host_and_a_local_file_returns_the_local_one_that_finished(workdir, ssh_env):
    a, b = address("h1", str(workdir / "a.jsonl")), str(workdir / "b.jsonl")
    for path in (a, b):
        ok("send", path, "/sleep 60", *M, env=ssh_env)
    waiting = start("wait", "--any", a, b, env=ssh_env)
    ok("cancel", b, env=ssh_env)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    (line,) = [json.loads(x) for x in out.decode().splitlines()]
    assert (line["file"], line["state"]) == (b, "idle")
    ok("cancel", a, env=ssh_env)


def test_an_unreachable_host_in_status_is_a_line_with_exit_code_5_and_the_others_are_answered(workdir, ssh_env):
    a, b = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    ok("send", address("h1", a), "hello", "--wait", *M, env=ssh_env)
    ok("send", b, "hello", "--wait", *M, env=ssh_env)
    given = [address(DOWN, str(workdir / "x.jsonl")), address("h1", a), address(DOWN, str(workdir / "y.jsonl")), b]
    proc = run("status", *given, env=ssh_env)
    assert proc.returncode == 5, proc.stderr
    found = lines(proc)
    assert [line["file"] for line in found] == given
    for line in (found[0], found[2]):
        assert set(line) == {"file", "error", "exit_code"} and line["exit_code"] == 5, line
        assert DOWN in line["error"]
    assert (found[1]["state"], found[3]["state"]) == ("idle", "idle")


def test_a_command_to_an_unreachable_host_exits_5_with_one_line_on_stderr(workdir, ssh_env):
    target = address(DOWN, str(workdir / "x.jsonl"))
    for args in (("status", target), ("send", target, "hello", *M), ("cancel", target),
                 ("reply", target, "req-1", "allow"), ("log", target), ("wait", target)):
        proc = run(*args, env=ssh_env)
        assert (proc.returncode, proc.stdout) == (5, b""), (args, proc.returncode, proc.stderr)
        assert proc.stderr.startswith(b"harnessctl: cannot reach %s over ssh" % DOWN.encode()), (args, proc.stderr)
        assert proc.stderr.count(b"\n") == 1, (args, proc.stderr)


def test_wait_any_leaves_out_an_unreachable_host_with_a_warning(workdir, ssh_env):
    a = address("h1", str(workdir / "a.jsonl"))
    ok("send", a, "hello", "--wait", *M, env=ssh_env)
    proc = run("wait", "--any", address(DOWN, str(workdir / "x.jsonl")), a, env=ssh_env)
    assert proc.returncode == 0, proc.stderr
    (line,) = lines(proc)
    assert (line["file"], line["state"]) == (a, "idle")
    assert b"cannot reach %s over ssh" % DOWN.encode() in proc.stderr


def test_a_remote_command_that_is_not_there_exits_5(workdir, ssh_bed, ssh_env):
    missing = str(workdir / "no-such-harnessctl")
    proc = run("status", address("h1", str(workdir / "a.jsonl")), env=dict(ssh_env, HARNESSCTL_REMOTE_COMMAND=missing))
    assert (proc.returncode, proc.stdout) == (5, b""), proc.stderr
    assert proc.stderr.startswith(b"harnessctl: ") and proc.stderr.count(b"\n") == 1, proc.stderr

