"""Torture scenario 5: the disk fills up (issue 5).

A send whose `accepted` cannot be written exits non-zero with one clear line,
no torn line is ever left behind, events that could not be written while the
disk was full land once space returns, and the next send works.  The disk is a
tiny tmpfs the test mounts (root only) or, everywhere, RLIMIT_FSIZE on the
runtime (which ignores SIGXFSZ)."""

from __future__ import annotations

import os
import pathlib
import resource
import shutil
import signal

import pytest
from cliutil import ROOT, cli_env, events, of_type, ok, run, runtime_pids, wait_for, wait_results
from torture_support import check, fill, one_clear_line, settle, status_of, tmpfs

pytestmark = pytest.mark.torture

BIG = "x" * 12000  # needs fresh pages of a full tmpfs, and more than the RLIMIT_FSIZE slack


@pytest.fixture
def tiny_fs(workdir):
    """A 512 KiB tmpfs under the test directory; skipped where mount is not allowed."""
    with tmpfs(str(workdir / "fs"), "size=512k,mode=0755") as mountpoint:
        yield pathlib.Path(mountpoint)


def test_disk_full_send_exits_nonzero_with_a_clear_line_and_no_torn_line(tiny_fs):
    path = str(tiny_fs / "events.jsonl")
    env = cli_env(HARNESSCTL_ADAPTER="mock")  # no idle exit while the disk is filled: "alive" is checked below
    ok("send", path, "before", env=env)
    wait_results(path, 1)
    filler = fill(tiny_fs)
    before = open(path, "rb").read()
    proc = run("send", path, BIG, env=env)
    assert proc.returncode != 0
    assert one_clear_line(proc.stderr, "No space left on device"), proc.stderr
    after = open(path, "rb").read()
    assert after.startswith(before) and after.count(b"\n") == len(after.splitlines()), "torn line"
    assert BIG.encode() not in after
    assert status_of(path, env)["runtime"] == "alive"
    shutil.rmtree(filler)
    ok("send", path, "after the disk was freed", env=env)
    assert wait_results(path, 2)[-1]["output"] == "echo: after the disk was freed"
    settle(path)
    check(path)
    assert BIG.encode() not in open(path, "rb").read(), "the failed send's run reached the file"


def test_a_held_send_that_cannot_be_recorded_leaves_no_trace_once_space_returns(tiny_fs, workdir):
    """An ACP agent without steering: a send into its busy run is held by the
    adapter.  Its `accepted` cannot be written, so the send fails, the busy run
    is interrupted, and the held input is dropped without a result of its own
    (a result that covers no recorded input would say nothing)."""
    path = str(tiny_fs / "events.jsonl")
    fake = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")
    agent = ["--adapter", "acp", "--agent", "%s --no-steering" % fake]
    env = cli_env(FAKE_ACP_HOME=str(workdir / "sessions"))
    ok("send", path, "/slow 1", *agent, env=env)
    wait_for(lambda: any(e.get("kind") == "text.delta" for e in of_type(path, "log")), what="the busy run streams")
    filler = fill(tiny_fs)
    proc = run("send", path, BIG, *agent, env=env)
    assert proc.returncode == 1 and one_clear_line(proc.stderr, "No space left on device"), proc.stderr
    shutil.rmtree(filler)
    [result] = wait_results(path, 1)
    assert result["status"] == "cancelled"
    settle(path)
    check(path)
    assert all(r["input_ids"] for r in of_type(path, "result"))
    assert BIG.encode() not in open(path, "rb").read()


def test_disk_full_mid_run_records_the_run_once_space_returns(tiny_fs):
    path = str(tiny_fs / "events.jsonl")
    env = cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_IDLE_TIMEOUT="1")
    ok("send", path, "/sleep 1\n" + BIG, env=env)
    filler = fill(tiny_fs)  # the answer (a message and a result echoing BIG) cannot be written now
    wait_for(lambda: b"No space left on device" in open(path + ".d/runtime.log", "rb").read(), timeout=10,
             what="a failed write")
    assert not of_type(path, "result")
    shutil.rmtree(filler)
    [result] = wait_results(path, 1, timeout=10)
    assert result["status"] == "completed" and result["output"] == "echo: " + BIG
    wait_for(lambda: not runtime_pids(path), timeout=15, what="the runtime idles out")
    check(path)


def limited(limit):
    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return preexec


def test_file_size_limit_refuses_the_send_cleanly_and_a_new_runtime_works(efile):
    env = cli_env(HARNESSCTL_ADAPTER="mock")
    ok("send", efile, "create the file", env=env)
    wait_results(efile, 1)
    [pid] = runtime_pids(efile)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(efile), what="runtime stopped")
    before = open(efile, "rb").read()
    limit = len(before) + 4096
    spawn = run("send", efile, "small enough", env=env, preexec_fn=limited(limit))
    assert spawn.returncode == 0, spawn.stderr  # this send starts a runtime that inherits the limit
    wait_results(efile, 2)
    proc = run("send", efile, BIG, env=env)
    assert proc.returncode != 0
    assert one_clear_line(proc.stderr, "File too large"), proc.stderr
    data = open(efile, "rb").read()
    assert len(data) <= limit and data.endswith(b"\n") and BIG.encode() not in data
    for pid in runtime_pids(efile):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(efile), what="limited runtime stopped")
    ok("send", efile, "/sleep 0\n" + BIG, env=env)
    assert wait_results(efile, 3)[-1]["output"] == "echo: " + BIG
    settle(efile)
    check(efile)


def lost_run_on_a_full_disk(fs):
    """An event file whose runtime was killed mid-run, on a filesystem that is now
    full.  Its sidecar lives elsewhere (a symlink), so that only the event file
    needs space: the recovering command frees sidecar files, which on the same
    tmpfs would give it back a page."""
    path = str(fs / "events.jsonl")
    sidecar = fs.parent / "sidecar"
    sidecar.mkdir(mode=0o700)
    os.symlink(str(sidecar), path + ".d")
    ok("send", path, "/sleep 30\n" + BIG, env=cli_env(HARNESSCTL_ADAPTER="mock"))
    for pid in runtime_pids(path):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(path), what="runtime killed")
    pad = -(os.path.getsize(path) + 1) % 4096 + 1  # end the file on a page boundary: any append needs a page
    with open(path, "ab") as f:
        f.write(b"#" * (pad - 1) + b"\n")
    return path, fill(fs), b"#" * (pad - 1)


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_recovering_a_lost_runtime_on_a_full_disk_says_what_is_wrong(command, tiny_fs):
    path, filler, padding = lost_run_on_a_full_disk(tiny_fs)
    before = open(path, "rb").read()
    proc = run(command, path)
    assert proc.returncode != 0
    assert one_clear_line(proc.stderr, "No space left on device"), proc.stderr
    assert b"internal error" not in proc.stderr
    assert open(path, "rb").read() == before
    shutil.rmtree(filler)
    assert status_of(path)["state"] == "failed"
    check(path, foreign=[padding])


def test_a_send_on_a_full_disk_after_a_lost_runtime_fails_cleanly_and_works_later(tiny_fs):
    path, filler, padding = lost_run_on_a_full_disk(tiny_fs)
    proc = run("send", path, "small")
    assert proc.returncode != 0
    assert one_clear_line(proc.stderr, "No space left on device"), proc.stderr
    shutil.rmtree(filler)
    ok("send", path, "space is back")
    assert wait_results(path, 2)[-1]["output"] == "echo: space is back"
    settle(path)
    check(path, foreign=[padding])


def test_commands_on_a_full_disk_leave_no_temporary_files_behind(tiny_fs):
    path = str(tiny_fs / "events.jsonl")
    ok("send", path, "hello", env=cli_env(HARNESSCTL_ADAPTER="mock"))
    wait_results(path, 1)
    for pid in runtime_pids(path):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(path), what="runtime killed")
    status_of(path)
    with open(path, "ab") as f:  # a line the snapshot does not cover: each status would like to save a new one
        f.write(b'{"type":"log","ts":"2026-12-02T10:00:00.000Z","seq":%d,"level":"info","kind":"diagnostic"}\n'
                % (events(path)[-1]["seq"] + 1))
    filler = fill(tiny_fs)
    for _ in range(3):
        assert status_of(path)["state"] == "idle"  # the snapshot cannot be refreshed: status works regardless
    assert [n for n in os.listdir(path + ".d") if n.endswith(".tmp")] == []
    shutil.rmtree(filler)


def test_a_rule_answer_that_cannot_be_recorded_parks_the_request_for_reply(tiny_fs):
    """The durability promise of `reply` holds for rules: an answer is given
    only once it is in the file.  On a full disk it is not, so the request
    stays pending (written once space returns) and a reply answers it."""
    path = str(tiny_fs / "events.jsonl")
    env = cli_env(HARNESSCTL_ADAPTER="mock")
    ok("send", path, "/sleep 1\n/permission command:touch ok.txt\n" + BIG, "--allow", "command:touch ok*", env=env)
    filler = fill(tiny_fs)
    wait_for(lambda: b"could not be written" in open(path + ".d/runtime.log", "rb").read(), timeout=10,
             what="the policy's answer fails to be written")
    shutil.rmtree(filler)
    wait_for(lambda: status_of(path, env)["state"] == "awaiting_reply", timeout=10, what="the request parked")
    ok("reply", path, "req-1", "allow", env=env)
    [result] = wait_results(path, 1, timeout=10)
    assert "permission: allow" in result["output"]
    assert [(r["state"], r.get("by")) for r in of_type(path, "request")] == [("pending", None), ("replied", "reply")]
    settle(path)
    check(path)
