"""Issue 19, sections 2, 3 and 7: a runtime that never wedges, and that
respects the caller's process.  Black-box through the CLI, one behaviour a
test; the hostile ACP agent they drive is tests/wedge_agent.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cliutil import ROOT, cli_env, ok, runtime_pids, wait_results

MOCK = cli_env(HARNESSCTL_ADAPTER="mock")


def cli(*args: str, closed=(), env=None, pass_fds=()) -> subprocess.CompletedProcess:
    """The CLI with the std fds in `closed` closed, as `<&-`, `>&-`, `2>&-` leave them."""
    def close() -> None:
        for fd in closed:
            os.close(fd)
    return subprocess.run([sys.executable, "-m", "harnessctl", *args], env=env or MOCK, cwd=ROOT,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=close, pass_fds=pass_fds, timeout=120)


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
