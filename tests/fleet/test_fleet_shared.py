"""An event file on shared storage, seen from a node whose runtime it is not (docs/FLEET.md, "An
event file on shared storage").

Two machines cannot be had here, so the other node's runtime is played by a process that holds
what such a runtime holds as NFS shows it to this node: the sidecar's `runtime.lock` and the event
file's `flock`, and a socket file in the sidecar that nobody on this machine listens on (the one
the killed runtime left); it writes the record that runtime writes beside its lock,
`FILE.d/runtime.host` naming its node (harnessctl/store/holder.py).  That NFS
carries the locks between nodes is the kernel's part, not tested here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cliutil import cli_env, ok, run, runtime_pids, start, wait_for

HOLDER = """
import fcntl, os, sys
for path, flags in ((sys.argv[1] + ".d/runtime.lock", os.O_RDWR), (sys.argv[1], os.O_RDONLY)):
    fcntl.flock(os.open(path, flags), fcntl.LOCK_EX)
record = sys.argv[1] + ".d/runtime.host"
mine = ("%s %d\\n" % (sys.argv[2], os.getpid())).encode()
fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, mine)
os.close(fd)
print("held", flush=True)
sys.stdin.read()  # until the test lets go: then it exits as a runtime does, its record first
try:
    with open(record, "rb") as f:
        if f.read() == mine:
            os.unlink(record)
except OSError:
    pass
"""
NODE = "node7"  # the other node's name, in the record its runtime writes beside its lock
HERE = os.uname().nodename


def hold(efile, host):
    """A session whose runtime (with a parked approval) is, for this node, one on `host`:
    the real one killed (-9, so it leaves its work open) and its locks and record taken by a holder."""
    assert run("send", efile, "/permission command:make test", "--adapter", "mock", "--wait").returncode == 9
    (pid,) = runtime_pids(efile)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to die")
    assert os.path.exists(efile + ".d/runtime.sock")  # left behind: ECONNREFUSED, as from another node
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, efile, host], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    with open(efile, "rb") as f:
        before = f.read()
    return holder, before


@pytest.fixture
def elsewhere(efile):
    """(FILE, the holder playing its runtime on NODE, FILE's bytes)."""
    holder, before = hold(efile, NODE)
    yield efile, holder, before
    holder.stdin.close()
    holder.wait()


@pytest.fixture
def held_here(efile):
    """As `elsewhere`, the record naming this machine: a runtime starting or exiting here, for all a command knows."""
    holder, before = hold(efile, HERE)
    yield efile, holder, before
    holder.stdin.close()
    holder.wait()


def unchanged(efile, before):
    with open(efile, "rb") as f:
        return f.read() == before


def address(efile):
    return "ssh://%s%s" % (NODE, os.path.realpath(efile))


PATIENT = cli_env(HARNESSCTL_TIMEOUT="60")  # a command that waited for it would fail the run's 20 s, not race it


def test_status_from_another_node_says_at_once_where_the_session_is_held(elsewhere):
    efile, holder, before = elsewhere
    proc = run("status", efile, env=PATIENT, timeout=20)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["runtime"] == "elsewhere"
    assert report["held_by"] == {"host": NODE, "pid": holder.pid, "address": address(efile)}
    assert unchanged(efile, before)


def test_status_from_another_node_shows_the_work_open_without_the_lost_runtime_rule(elsewhere):
    efile, _, _ = elsewhere
    report = json.loads(run("status", efile, env=PATIENT, timeout=20).stdout)
    assert report["state"] == "awaiting_reply" and len(report["requests"]) == 1


def test_status_from_another_node_puts_held_by_after_runtime(elsewhere):
    efile, _, _ = elsewhere
    keys = list(json.loads(run("status", efile, env=PATIENT, timeout=20).stdout))
    assert keys[keys.index("runtime") + 1] == "held_by"


@pytest.mark.parametrize("args", [["send", "{file}", "now the docs"], ["reply", "{file}", "req-1", "allow"],
                                  ["cancel", "{file}"]], ids=lambda args: args[0])
def test_a_command_from_another_node_exits_5_at_once_naming_the_address(elsewhere, args):
    efile, holder, before = elsewhere
    proc = run(*[a.format(file=efile) for a in args], env=PATIENT, timeout=20)
    assert proc.returncode == 5, proc.stderr
    assert address(efile).encode() in proc.stderr and b"pid %d" % holder.pid in proc.stderr
    assert unchanged(efile, before)


@pytest.mark.parametrize("args", [["status"], ["reply", "{file}", "req-1", "allow"], ["cancel"]],
                         ids=lambda args: args[0])
def test_a_command_on_the_node_of_a_runtime_starting_or_exiting_exits_6_after_the_timeout(held_here, args):
    efile, _, before = held_here
    argv = [a.format(file=efile) for a in args] if "{file}" in args else args + [efile]
    proc = run(*argv, env=cli_env(HARNESSCTL_TIMEOUT="1"))
    assert proc.returncode == 6, proc.stderr
    assert b"timed out waiting for the runtime" in proc.stderr
    assert unchanged(efile, before)


def test_a_send_on_the_node_of_a_runtime_starting_or_exiting_sends_nothing(held_here):
    efile, _, before = held_here
    proc = run("send", efile, "now the docs", env=cli_env(HARNESSCTL_TIMEOUT="1"))
    assert proc.returncode in (5, 6), proc.stderr  # 5 when the deadline passes while it looks at the lock
    assert unchanged(efile, before)


def plant_link(record):
    target = record + ".target"
    with open(target, "w") as f:
        f.write("%s 4242\n" % NODE)
    os.chmod(target, 0o600)
    os.symlink(target, record)


def plant_text(text, mode=0o600):
    def plant(record):
        with open(record, "wb") as f:
            f.write(text)
        os.chmod(record, mode)
    return plant


IGNORED = {
    "writable_by_others": plant_text(b"node7 4242\n", 0o622),
    "a_symlink": plant_link,
    "no_pid": plant_text(b"node7\n"),
    "pid_zero": plant_text(b"node7 0\n"),
    "three_words": plant_text(b"node7 4242 1\n"),
    "a_slash_in_the_host": plant_text(b"no/de 4242\n"),
    "a_control_char": plant_text(b"no\x1bde 4242\n"),
    "not_ascii": plant_text("n\u00f6de 4242\n".encode()),
    "too_long": plant_text(b"n" * 400 + b" 4242\n"),
    "two_lines": plant_text(b"node7 4242\nnode8 4243\n"),
}


@pytest.mark.parametrize("plant", list(IGNORED.values()), ids=list(IGNORED))
def test_a_record_not_ours_or_malformed_is_ignored(held_here, plant):
    efile, _, before = held_here
    record = efile + ".d/runtime.host"
    os.unlink(record)
    plant(record)
    proc = run("status", efile, env=cli_env(HARNESSCTL_TIMEOUT="1"))
    assert proc.returncode == 6, proc.stderr
    assert unchanged(efile, before)


def sleeping_wait(efile, out, *args):
    """`wait FILE ARGS`, its stdout the file `out`, once it sleeps on the lock: its second thread
    (stdout is no pipe, so stdio.end_with_reader starts no thread of its own)."""
    waiting = start("wait", efile, *args, stdout=out, env=PATIENT)
    wait_for(lambda: threads(waiting.pid) > 1 or waiting.poll() is not None, what="the wait to sleep on the lock")
    assert waiting.poll() is None, waiting.stderr.read()
    return waiting


def threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def test_wait_from_another_node_answers_once_that_runtime_has_exited(elsewhere, tmp_path):
    efile, holder, _ = elsewhere
    with open(tmp_path / "out", "wb") as out:
        waiting = sleeping_wait(efile, out)
        holder.stdin.close()  # that runtime exits: the wait applies the lost-runtime rule and answers
        assert waiting.wait(timeout=20) == 0, waiting.stderr.read()
    assert b'"runtime":"stopped"' in (tmp_path / "out").read_bytes()


def test_wait_from_another_node_exits_10_at_its_timeout(elsewhere):
    efile, _, _ = elsewhere
    assert run("wait", efile, "--timeout", "0.5", env=PATIENT, timeout=20).returncode == 10


def switches(pid):
    """The voluntary context switches of all of a process's threads: one a wake-up."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, task)) as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
    return total


def test_wait_from_another_node_sleeps_on_the_lock_without_polling(elsewhere):
    efile, _, _ = elsewhere
    waiting = sleeping_wait(efile, subprocess.DEVNULL, "req-none-such")
    try:
        first = switches(waiting.pid)
        time.sleep(3)  # a window to count wake-ups in, not a wait for anything
        assert switches(waiting.pid) - first < 30  # one look a second; polling every 10 ms wakes 300 times
        assert waiting.poll() is None
    finally:
        waiting.kill()
        waiting.wait()


def test_log_from_another_node_reads_the_file(elsewhere):
    efile, _, _ = elsewhere
    proc = ok("log", efile)
    assert "Run: make test" in proc.stdout.decode()


def test_a_runtime_records_its_host_and_pid_beside_its_lock(efile):
    ok("send", efile, "hello", "--adapter", "mock", "--wait")
    (pid,) = runtime_pids(efile)
    with open(efile + ".d/runtime.host") as f:
        assert f.read() == "%s %d\n" % (HERE, pid)
    assert os.stat(efile + ".d/runtime.host").st_mode & 0o777 == 0o600


def test_a_runtime_removes_its_record_when_it_exits(efile):
    ok("send", efile, "hello", "--adapter", "mock", "--wait")
    (pid,) = runtime_pids(efile)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to exit")
    assert not os.path.exists(efile + ".d/runtime.host")
