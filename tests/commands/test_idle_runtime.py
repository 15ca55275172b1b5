"""An idle runtime sleeps (issue 50): nothing wakes it on a timer, and it
still stops as soon as it cannot be reached for its file (inotify tells it,
harnessctl/runtime/reachwatch.py)."""

from __future__ import annotations

import os
import shutil
import signal
import time

from cliutil import cli_env, ok, runtime_pids, wait_for

MOCK = ("--adapter", "mock")


def switches(pid: int) -> int:
    """Context switches of every thread of `pid` so far: each time one of them woke."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            total += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
    return total


def idle_runtime(path: str, sends: int = 1, **env: str) -> int:
    for i in range(sends):
        ok("send", path, "hello %d" % i, "--wait", *MOCK, env=cli_env(**env))
    return runtime_pids(path)[0]


def quiet(pid: int) -> bool:
    """No thread of `pid` woke for 0.3 s: what the last run left to do (a log flush) is done."""
    before = switches(pid)
    time.sleep(0.3)
    return switches(pid) == before


def test_an_idle_runtime_does_not_wake_on_a_timer(workdir):
    """The check each second it made before woke it 3 times in 3 s."""
    pid = idle_runtime(str(workdir / "a.jsonl"))
    wait_for(lambda: quiet(pid), 10, "the runtime's last work done")
    before = switches(pid)
    time.sleep(3)
    assert switches(pid) - before <= 1


def test_sends_confirmed_in_time_leave_no_timer_to_wake_an_idle_runtime(workdir):
    """Each send armed its confirmation deadline (HARNESSCTL_TIMEOUT, 2 s here), which fired later
    whether or not the harness had confirmed it: five wakes within the 3 s looked at."""
    pid = idle_runtime(str(workdir / "a.jsonl"), 5, HARNESSCTL_TIMEOUT="2")
    wait_for(lambda: quiet(pid), 10, "the runtime's last work done")
    before = switches(pid)
    time.sleep(3)
    assert switches(pid) - before <= 1


def test_a_runtime_whose_sidecar_is_removed_while_idle_stops(workdir):
    path = str(workdir / "a.jsonl")
    pid = idle_runtime(path)
    shutil.rmtree(path + ".d")
    wait_for(lambda: pid not in runtime_pids(path), 10, "the runtime's exit")


def test_a_runtime_whose_folder_is_renamed_while_idle_stops(workdir):
    os.mkdir(str(workdir / "in"))
    path = str(workdir / "in" / "a.jsonl")
    pid = idle_runtime(path)
    os.rename(str(workdir / "in"), str(workdir / "moved"))
    wait_for(lambda: pid not in runtime_pids(path), 10, "the runtime's exit")


def test_a_sigterm_taken_by_another_thread_stops_an_idle_runtime_at_once(workdir):
    """The kernel may hand a signal to any thread; Python runs its handler on the main one, which an
    idle runtime keeps asleep until its deadline (HARNESSCTL_IDLE_TIMEOUT, 600 s here)."""
    path = str(workdir / "a.jsonl")
    pid = idle_runtime(path)
    wait_for(lambda: quiet(pid), 10, "the runtime's last work done")
    other = min(int(tid) for tid in os.listdir("/proc/%d/task" % pid) if int(tid) != pid)
    os.kill(other, signal.SIGTERM)  # kill() of a thread's id: delivered to that thread
    wait_for(lambda: pid not in runtime_pids(path), 10, "the runtime's exit")
