"""Issue 19, sections 2, 3 and 7: a runtime that never wedges, and that
respects the caller's process.  Black-box through the CLI, one behaviour a
test; the hostile ACP agent they drive is tests/support/wedge_agent.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

import pytest
from cliutil import ROOT, cli_env, kill_all_under, matching, ok, run, runtime_pids, wait_for, wait_results

LOG_LIMIT = 4 * 1024 * 1024 + 64 * 1024  # harnessctl/runtime/runtimelog.py LIMIT, and one write beyond it

MOCK = cli_env(HARNESSCTL_ADAPTER="mock")


def cli(*args: str, closed=(), env=None, pass_fds=()) -> subprocess.CompletedProcess:
    """The CLI with the std fds in `closed` closed, as `<&-`, `>&-`, `2>&-` leave them."""
    def close() -> None:
        for fd in closed:
            os.close(fd)
    return run(*args, env=env or MOCK, stdin=subprocess.DEVNULL, preexec_fn=close, pass_fds=pass_fds, timeout=120)


# -- 3. the caller's process is respected ---------------------------------------------


@pytest.mark.parametrize("closed", [(0,), (1,), (2,), (0, 1, 2)], ids=["stdin", "stdout", "stderr", "all"])
def test_a_first_send_with_closed_std_fds_starts_the_runtime_and_exits_0(closed, efile):
    proc = cli("send", efile, "hello", closed=closed)
    assert proc.returncode == 0, proc.stderr
    assert wait_results(efile, 1)[0]["status"] == "completed"


@pytest.mark.parametrize("closed", [(2,), (0, 1, 2)], ids=["stderr", "all"])
def test_a_missing_file_exits_4_with_stderr_closed(closed, workdir):
    assert cli("status", str(workdir / "none.jsonl"), closed=closed).returncode == 4


def test_status_with_stdout_closed_still_says_it_cannot_print(efile):
    ok("send", efile, "hello", env=MOCK)
    proc = cli("status", efile, closed=(1,))
    assert proc.returncode == 2 and b"cannot write to stdout" in proc.stderr, proc.stderr


def fds_of(pid: int):
    """What each descriptor of `pid` is open on (`pipe:[inode]`, a path, ...)."""
    found = set()
    for name in os.listdir("/proc/%d/fd" % pid):
        try:
            found.add(os.readlink("/proc/%d/fd/%s" % (pid, name)))
        except OSError:
            pass
    return found


def test_the_runtime_holds_none_of_the_callers_inherited_descriptors(efile, workdir):
    read_end, write_end = os.pipe()
    lock = os.open(str(workdir / "lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        proc = cli("send", efile, "hello", pass_fds=(write_end, lock))
        assert proc.returncode == 0, proc.stderr
        [pid] = runtime_pids(efile)
        held = fds_of(pid)
        assert os.readlink("/proc/self/fd/%d" % write_end) not in held  # a parent reading to EOF would hang
        assert str(workdir / "lock") not in held  # `exec 9>lock; flock -n 9` would stay locked
    finally:
        for fd in (read_end, write_end, lock):
            os.close(fd)


# -- 2. a runtime that never wedges -----------------------------------------------------

WEDGE = os.path.join(ROOT, "tests", "support", "wedge_agent.py")


class Wedge:
    """One event file driven through the ACP adapter by tests/support/wedge_agent.py."""

    def __init__(self, directory, **env: str) -> None:
        self.path = os.path.join(str(directory), "events.jsonl")
        self.env = cli_env(**env)

    def send(self, text: str, *flags: str) -> subprocess.CompletedProcess:
        return run("send", self.path, text, "--adapter", "acp", "--agent", "%s %s" % (sys.executable, WEDGE),
                   *flags, env=self.env)

    def ask(self, text: str) -> Dict[str, Any]:
        """Send and wait: the result."""
        proc = self.send(text, "--wait")
        assert proc.returncode in (0, 7, 8), proc.stderr
        return json.loads(proc.stdout)

    def runtime(self) -> int:
        [pid] = runtime_pids(self.path)
        return pid


def peak_rss_mib(pid: int) -> float:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM for %d" % pid)


def test_a_line_longer_than_64_mib_is_discarded_with_a_diagnostic_and_the_next_line_is_read(workdir):
    wedge = Wedge(workdir)
    assert wedge.ask("hello")["output"] == "echo: hello"
    junk = 160 * 1024 * 1024
    result = wedge.ask("/noline %d" % junk)
    assert result["status"] == "completed" and result["output"] == "after the junk"
    [said] = matching(wedge.path, "log", "diagnostic", bytes=junk)
    assert "discarded" in said["message"] and "x" * 100 not in json.dumps(said)
    # never the whole line in memory: 64 MiB at most, plus what the runtime needs anyway
    assert peak_rss_mib(wedge.runtime()) < 64 + 64


def test_a_harness_that_floods_stderr_never_grows_the_runtime_log_beyond_its_cap(workdir):
    wedge = Wedge(workdir)
    result = wedge.ask("/stderr %d" % (40 * 1024 * 1024))
    assert result["output"] == "said plenty"
    log = os.path.join(wedge.path + ".d", "runtime.log")
    assert os.path.getsize(log) <= LOG_LIMIT
    assert os.path.getsize(log + ".1") <= LOG_LIMIT
    assert wedge.ask("still there?")["output"] == "echo: still there?"


def test_after_a_failed_harness_start_the_runtime_exits_and_a_send_with_a_fixed_environment_works(workdir):
    path = os.path.join(str(workdir), "events.jsonl")
    broken = cli_env(HARNESSCTL_ACP_CODEX_CMD=os.path.join(str(workdir), "no-such-agent"))
    proc = run("send", path, "hello", "--adapter", "acp", "--agent", "codex", env=broken)
    assert proc.returncode == 5 and b"HARNESSCTL_ACP_CODEX_CMD" in proc.stderr, proc.stderr
    wait_for(lambda: not runtime_pids(path), what="the runtime with no harness to exit")
    fixed = cli_env(HARNESSCTL_ACP_CODEX_CMD="%s %s" % (sys.executable, WEDGE))
    proc = run("send", path, "hello again", "--wait", env=fixed)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == "echo: hello again"


def test_a_cancel_the_agent_ignores_ends_the_run_cancelled_after_the_grace_period(workdir):
    wedge = Wedge(workdir, HARNESSCTL_CANCEL_GRACE="1")
    proc = wedge.send("/deaf", "--print-id")
    assert proc.returncode == 0, proc.stderr
    input_id = proc.stdout.decode().strip()
    assert run("cancel", wedge.path, env=wedge.env).returncode == 0
    waited = run("wait", wedge.path, input_id, "--timeout", "60", env=wedge.env)
    assert waited.returncode == 8, (waited.returncode, waited.stderr)
    result = json.loads(waited.stdout)
    assert result["status"] == "cancelled" and "did not end the run" in result["error"]
    assert json.loads(run("status", wedge.path, env=wedge.env).stdout)["state"] == "idle"
    assert wedge.ask("awake?")["output"] == "echo: awake?"  # a new harness


# -- 7. smaller -------------------------------------------------------------------------


def test_status_is_answered_in_the_middle_of_a_storm_of_20000_messages(workdir):
    """Each message is an fsynced line; the storm takes seconds, a status
    between two of its lines a moment (tests/unit/test_loop.py: the mechanism)."""
    wedge = Wedge(workdir)
    assert wedge.ask("hello")["output"] == "echo: hello"
    proc = wedge.send("/storm 20000", "--print-id")
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: len(matching(wedge.path, "message")) > 50, what="the storm to begin")
    status = run("status", wedge.path, env=wedge.env)
    assert status.returncode == 0, status.stderr
    assert len(matching(wedge.path, "message")) < 20000, "status waited for the whole storm"
    assert json.loads(status.stdout)["state"] == "running"
    # 20000 fsyncs: seconds on a quiet disk, over a minute on one CI shares with two more suites
    assert run("wait", wedge.path, proc.stdout.decode().strip(), env=wedge.env, timeout=600).returncode == 0
    assert len(matching(wedge.path, "message")) == 20002  # hello's, the storm's and "calm"


def other_python():
    """An interpreter another user can run (ours may live under a 0700 home)."""
    import shutil

    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    probe = subprocess.run([found, "-c", "import sys; sys.exit(sys.version_info < (3, 9))"]) if found else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no Python 3.9+ outside our home for another user to run")
    return found


def test_a_send_at_the_thread_limit_is_served_or_refused_clearly_never_left_to_time_out():
    """`ulimit -u` counts threads.  The runtime starts its own before it says
    `ok` to its spawner (a refusal reaches the send: exit 5), and a command
    whose connection gets no thread of its own is answered on the accepting
    one.  Root is not held to the limit: a throw-away user is."""
    import resource
    import shutil
    import tempfile

    from torture_users import other_user, unavailable

    if unavailable():
        pytest.skip(unavailable())
    python = other_python()
    with other_user() as user:
        directory = tempfile.mkdtemp(prefix="htctl-nproc-")
        os.chown(directory, user.uid, user.gid)
        path = os.path.join(directory, "events.jsonl")

        def as_them(*args: str, limit: int = 0) -> subprocess.CompletedProcess:
            def become() -> None:
                os.setgroups([])
                os.setgid(user.gid)
                os.setuid(user.uid)
                if limit:
                    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
            env = cli_env(HOME=directory, HARNESSCTL_STATE_DIR=directory + "/state")  # their passwd home is none
            # not cliutil.run: the other user runs an interpreter it can read (other_python)
            return subprocess.run([python, "-m", "harnessctl", *args], env=env, cwd=directory,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  preexec_fn=become, timeout=120)

        try:
            # the send, its runtime, the runtime's accepting thread, the harness and its reader:
            # no thread left for the send's connection
            proc = as_them("send", path, "hello", "--adapter", "mock", limit=5)
            assert proc.returncode in (0, 5), (proc.returncode, proc.stderr)
            assert b"timed out" not in proc.stderr and b"Traceback" not in proc.stderr, proc.stderr
            if runtime_pids(path):  # alive: it answers, also beyond its limit
                status = as_them("status", path)
                assert status.returncode == 0, status.stderr
            else:
                assert not os.path.exists(path + ".d/runtime.sock")
        finally:
            kill_all_under(directory)
            shutil.rmtree(directory, ignore_errors=True)


def test_waits_beyond_the_descriptor_limit_are_refused_and_status_and_cancel_still_answer(workdir):
    """A hard limit of 1024 the runtime cannot raise: it keeps descriptors in
    reserve for the commands that answer at once, and refuses (exit 5) the
    waits that would take them (tests/torture/test_torture_waiters.py: 2000 held)."""
    from torture_waiters import ManyWaiters, limit_descriptors

    with ManyWaiters(str(workdir), 1100, limit_descriptors(1024, 1024)) as game:
        input_id = game.start()
        game.hold(input_id)
        code, lines, err = game.command("status", game.path)
        assert code == 0 and json.loads(lines[0])["state"] == "running", (code, err)
        assert game.command("cancel", game.path)[0] == 0
        replies = game.replies()
    refused = [r for r in replies if r.startswith("5 ")]
    assert refused and all("descriptor limit" in r for r in refused)
    assert all(r.startswith("0 cancelled ") for r in replies if not r.startswith("5 "))
    assert len(refused) < 1100 - 800  # the others were held until the result


def test_a_runtime_whose_sidecar_moved_with_its_file_takes_its_socket_along_when_it_stops(workdir):
    old, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    assert cli("send", old, "/sleep 30").returncode == 0
    [pid] = runtime_pids(old)
    os.rename(old, new)
    os.rename(old + ".d", new + ".d")
    wait_for(lambda: not os.path.exists("/proc/%d" % pid), 30, "the runtime to notice and stop")
    assert not os.path.exists(os.path.join(new + ".d", "runtime.sock"))


def test_a_command_that_connected_before_the_runtime_stopped_is_told_to_retry_however_slow_it_sends(efile):
    """A runtime exiting (here: idle) waits for a command it accepted but
    whose request has not come yet, and tells it to retry; it once gave such
    a command 2 s, then exited and left it unable to tell whether its
    request was applied (exit 6)."""
    import socket
    import time

    from harnessctl.store import ipc
    from harnessctl.store.address import Address

    env = cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_IDLE_TIMEOUT="0.5", HARNESSCTL_TIMEOUT="60")
    ok("send", efile, "hello", "--wait", env=env)
    addr = Address(os.path.realpath(efile))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(addr.socket)
    with conn:
        wait_for(lambda: b"shutting down: idle" in open(addr.runtime_log, "rb").read(), 30, "the idle exit")
        time.sleep(3)  # longer than the 2 s a runtime used to give; it gives the read timeout (60 s)
        assert runtime_pids(efile)
        conn.sendall(ipc.encode_request(["status"]))
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(60)
        assert ipc.read_all(conn) == ipc.RETRY.encode()
    wait_for(lambda: not runtime_pids(efile), 30, "the runtime to exit once it answered")
