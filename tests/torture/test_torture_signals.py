"""Torture scenario 8: signals and lifecycle (issue 5).

SIGTERM stops the runtime gracefully (open work gets its result, the harness
is stopped, the lock released), a hang-up of the sending shell does not reach
the detached runtime, a sender killed while it waits leaves its input whole or
absent, and a cron-like job (no TTY, minimal environment) gets a working,
fully detached runtime."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest
from cliutil import ROOT, cli_env, ok, run, runtime_pids, session_dirs, start, wait_for
from torture_support import assert_no_leftovers, check, count, idle_race, kill_senders, of_kind, status_of, wait_results

pytestmark = pytest.mark.torture

MOCK = ("--adapter", "mock")


def sigterm_and_wait(path):
    [pid] = runtime_pids(path)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(path), timeout=15, what="the runtime exits on SIGTERM")


def test_sigterm_ends_the_active_run_with_a_result_and_leaves_nothing_running(efile, workdir):
    ok("send", efile, "/sleep 30\nlong job", *MOCK)
    ok("send", efile, "steered in")
    sigterm_and_wait(efile)
    [result] = of_kind(efile, "result")
    assert result["status"] == "failed" and "SIGTERM" in result["error"]
    assert len(result["input_ids"]) == 2
    assert_no_leftovers(str(workdir), [efile])
    check(efile)


def test_sigterm_expires_a_pending_request(efile, workdir):
    ok("send", efile, "/permission deploy?", *MOCK)
    wait_for(lambda: of_kind(efile, "request"), what="request")
    sigterm_and_wait(efile)
    assert [r["state"] for r in of_kind(efile, "request")] == ["pending", "expired"]
    assert run("reply", efile, "req-1", "allow").returncode == 3
    assert_no_leftovers(str(workdir), [efile])
    check(efile)


def test_after_sigterm_the_next_send_resumes_the_conversation(efile):
    ok("send", efile, "finished before", *MOCK)
    wait_results(efile, 1)
    ok("send", efile, "/sleep 30\nlong job")
    sigterm_and_wait(efile)
    ok("send", efile, "next")
    assert wait_results(efile, 3)[-1]["output"] == "echo: next"
    assert any(e.get("resumed_turns") == 1 for e in of_kind(efile, "log"))
    check(efile)


def test_sighup_of_the_sending_shell_does_not_reach_the_runtime(efile):
    """The send runs in an interactive-like shell on a pseudo-terminal; the
    terminal hangs up (SIGHUP to its session) while the run is going."""
    pid, master = pty.fork()
    if pid == 0:
        os.environ.update(cli_env())
        # through a shell on purpose: the shell's session is the one that hangs up
        os.execv("/bin/sh", ["sh", "-c", '"$0" -m harnessctl send "$1" "/sleep 1.5\nsurvivor" --adapter mock '
                             '&& echo SENT; sleep 60', sys.executable, efile])
    output = b""
    deadline = time.monotonic() + 30
    while b"SENT" not in output and time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            try:
                output += os.read(master, 1024)
            except OSError:
                break
    assert b"SENT" in output, output
    runtime = runtime_pids(efile)
    os.close(master)  # the terminal hangs up: the kernel sends SIGHUP to the shell's session
    os.killpg(pid, signal.SIGHUP)
    os.waitpid(pid, 0)
    [result] = wait_results(efile, 1)
    assert result["status"] == "completed" and result["output"] == "echo: survivor"
    assert runtime_pids(efile) == runtime
    check(efile)


def test_sighup_sent_to_the_runtime_itself_is_ignored(efile):
    ok("send", efile, "/sleep 1\nstill here", *MOCK)
    [pid] = runtime_pids(efile)
    os.kill(pid, signal.SIGHUP)
    assert wait_results(efile, 1)[0]["status"] == "completed"
    assert runtime_pids(efile) == [pid]
    check(efile)


def test_a_sender_killed_while_it_waits_leaves_its_input_whole_or_absent(workdir):
    """kill -9 of `send` at random moments: each input is accepted whole exactly once, or not at all."""
    print(kill_senders(str(workdir), count(8, 40)))


def test_a_cron_like_job_without_tty_or_environment_gets_a_detached_runtime(efile, workdir):
    # cron's bare environment, but this test session's state folder (conftest.py): the runtime answers only
    # a command that reads the state folder it uses, and the user's own is no test's to write
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "SHELL": "/bin/sh", "LOGNAME": "root",
           "PYTHONPATH": ROOT, **session_dirs()}
    job = start("send", efile, "/sleep 1\nfrom cron", *MOCK, stdin=subprocess.DEVNULL, env=env, cwd="/",
                start_new_session=True)
    out, err = job.communicate(timeout=20)  # returns only once nobody holds the job's pipes any more
    assert job.returncode == 0 and out == b"", err
    # the workspace is / (cron's cwd), which holds the event file: the one line is that warning
    assert err.startswith(b"harnessctl: warning: the event file") and err.count(b"\n") == 1, err
    [pid] = runtime_pids(efile)
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    session, tty = int(fields[3]), int(fields[4])
    assert session == pid and tty == 0, "the runtime must lead its own session without a terminal"
    for fd in (0, 1, 2):
        target = os.readlink("/proc/%d/fd/%d" % (pid, fd))
        assert not target.startswith(("pipe:", "/dev/pts", "/dev/tty")), (fd, target)
    assert wait_results(efile, 1)[0]["output"] == "echo: from cron"
    assert status_of(efile)["cwd"] == "/"
    check(efile)


def test_sends_racing_the_idle_exit_are_never_left_in_doubt(workdir):
    """A send that reaches an exiting runtime is handed to the next one: exit 0, never 6."""
    print(idle_race(str(workdir), count(8, 12), count(8, 25)))
