"""An event file on shared storage, seen from a node whose runtime it is not (docs/FLEET.md, "An
event file on shared storage").

Two machines cannot be had here, so the other node's runtime is played by a process that holds
what such a runtime holds as NFS shows it to this node: the sidecar's `runtime.lock` and the event
file's `flock`, and a socket file in the sidecar that nobody on this machine listens on (the one
the killed runtime left).  That NFS
carries the locks between nodes is the kernel's part, not tested here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from cliutil import cli_env, ok, run, runtime_pids, start, wait_for

HOLDER = """
import fcntl, os, sys
for path, flags in ((sys.argv[1] + ".d/runtime.lock", os.O_RDWR), (sys.argv[1], os.O_RDONLY)):
    fcntl.flock(os.open(path, flags), fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test lets go
"""


@pytest.fixture
def elsewhere(efile):
    """A session whose runtime (with a parked approval) is, for this node, one on another node:
    the real one killed (-9, so it leaves its work open) and its locks taken by a holder."""
    assert run("send", efile, "/permission command:make test", "--adapter", "mock", "--wait").returncode == 9
    (pid,) = runtime_pids(efile)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to die")
    assert os.path.exists(efile + ".d/runtime.sock")  # left behind: ECONNREFUSED, as from another node
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, efile], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    with open(efile, "rb") as f:
        before = f.read()
    yield efile, holder, before
    holder.stdin.close()
    holder.wait()


@pytest.mark.parametrize("args", [["status"], ["reply", "{file}", "req-1", "allow"], ["cancel"]],
                         ids=lambda args: args[0])
def test_a_command_from_another_node_exits_6_after_the_timeout_and_changes_nothing(elsewhere, args):
    efile, _, before = elsewhere
    argv = [a.format(file=efile) for a in args] if "{file}" in args else args + [efile]
    proc = run(*argv, env=cli_env(HARNESSCTL_TIMEOUT="1"))
    assert proc.returncode == 6, proc.stderr
    assert b"timed out waiting for the runtime" in proc.stderr
    with open(efile, "rb") as f:
        assert f.read() == before


def test_a_send_from_another_node_sends_nothing(elsewhere):
    efile, _, before = elsewhere
    proc = run("send", efile, "now the docs", env=cli_env(HARNESSCTL_TIMEOUT="1"))
    assert proc.returncode in (5, 6), proc.stderr  # 5 when the deadline passes while it looks at the lock
    with open(efile, "rb") as f:
        assert f.read() == before


def test_wait_from_another_node_answers_once_that_runtime_has_exited(elsewhere):
    efile, holder, _ = elsewhere
    assert run("wait", efile, "--timeout", "0.5").returncode == 10
    waiting = start("wait", efile)
    holder.stdin.close()  # that runtime exits: the wait applies the lost-runtime rule and answers
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0, err
    assert b'"runtime":"stopped"' in out


def test_log_from_another_node_reads_the_file(elsewhere):
    efile, _, _ = elsewhere
    proc = ok("log", efile)
    assert "Run: make test" in proc.stdout.decode()

