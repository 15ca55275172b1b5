"""Torture scenario 4: the harness crashes or never answers (issue 5).

A harness that dies mid-run (the mock's `/crash`, or a kill -9 of the harness
process: the mock's stand-in, and the Codex adapter's app-server played by the
fake of tests/support/codex_support) gets its run a `failed` result promptly and the
next send resumes the conversation; a harness that never answers the start makes the send exit 5 or
6 with one clear line within HARNESSCTL_TIMEOUT and leaves nothing running.

The mock stand-in cannot be told to hang at start (and no test-only adapter
may live under adapters/), so the hanging harness is a small script given to
the Codex and Claude Code adapters through HARNESSCTL_CODEX_BIN /
HARNESSCTL_CLAUDE_BIN: exactly how a user would point them at a broken binary.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest
from cliutil import ROOT, cli_env, ok, run, runtime_pids, wait_for
from torture_support import assert_no_leftovers, check, of_kind, status_of, wait_results

pytestmark = pytest.mark.torture

MOCK = ("--adapter", "mock")


def children(pid):
    """The live processes whose parent is `pid` (a runtime's harness)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    state, ppid = f.read().rsplit(") ", 1)[1].split()[:2]
            except (OSError, IndexError, ValueError):
                continue
            if int(ppid) == pid and state != "Z":
                found.append(int(entry))
    return found


def test_harness_crash_fails_every_input_of_the_run_promptly(efile):
    ok("send", efile, "/sleep 0.5\n/crash\nfirst", *MOCK)
    ok("send", efile, "steered before the crash")
    started = time.monotonic()
    [result] = wait_results(efile, 1, timeout=5)
    assert time.monotonic() - started < 2.0
    assert result["status"] == "failed" and "exited unexpectedly" in result["error"]
    assert len(result["input_ids"]) == 2
    assert status_of(efile)["state"] == "failed"
    check(efile)


def test_harness_killed_with_sigkill_mid_run_fails_the_run_and_the_next_send_resumes(efile):
    ok("send", efile, "done before", *MOCK)
    wait_results(efile, 1)
    ok("send", efile, "/sleep 30\nkilled run")
    runtime = runtime_pids(efile)
    [harness] = wait_for(lambda: children(runtime[0]), what="the stand-in")
    os.kill(harness, signal.SIGKILL)
    result = wait_results(efile, 2, timeout=5)[-1]
    assert result["status"] == "failed" and "exited unexpectedly" in result["error"]
    assert runtime_pids(efile) == runtime, "the runtime outlives its harness"
    ok("send", efile, "after the kill")
    assert wait_results(efile, 3)[-1]["output"] == "echo: after the kill"
    assert [e["resumed_turns"] for e in of_kind(efile, "log") if "resumed_turns" in e] == [1]
    check(efile)


def test_harness_killed_while_a_request_is_pending_expires_the_request(efile):
    ok("send", efile, "/permission delete everything?", *MOCK)
    wait_for(lambda: of_kind(efile, "request"), what="request")
    [harness] = children(runtime_pids(efile)[0])
    os.kill(harness, signal.SIGKILL)
    result = wait_results(efile, 1, timeout=5)[0]  # written right after the request expired
    assert [r["state"] for r in of_kind(efile, "request")] == ["pending", "expired"]
    assert result["status"] == "failed"
    proc = run("reply", efile, "req-1", "allow")
    assert proc.returncode == 3 and b"expired" in proc.stderr
    check(efile)


def test_codex_killed_with_sigkill_mid_turn_fails_the_run_and_the_next_send_resumes_the_thread(efile, workdir):
    fake = os.path.join(ROOT, "tests", "support", "codex_support", "fake_app_server.py")
    if not os.path.isfile(fake):
        pytest.skip("no fake codex app-server")
    env = cli_env(HARNESSCTL_CODEX_BIN=fake, FAKE_CODEX_HOME=str(workdir), HARNESSCTL_ADAPTER="codex")
    ok("send", efile, "first turn", env=env)
    wait_results(efile, 1)
    ok("send", efile, "/slow a turn that will not finish", env=env)
    [runtime] = runtime_pids(efile)
    [harness] = wait_for(lambda: children(runtime), what="the app-server")
    started = time.monotonic()
    os.kill(harness, signal.SIGKILL)
    result = wait_results(efile, 2, timeout=5)[-1]
    assert time.monotonic() - started < 2.0
    assert result["status"] == "failed" and "exited unexpectedly" in result["error"]
    ok("send", efile, "after the crash", env=env)
    assert wait_results(efile, 3)[-1]["status"] == "completed"
    with open(str(workdir / "requests.jsonl")) as f:
        methods = [json.loads(line).get("method") for line in f]
    assert methods.count("thread/start") == 1 and methods.count("thread/resume") == 1
    check(efile, mock=False)


def fake_harness(workdir, body):
    path = str(workdir / "fake-harness")
    with open(path, "w") as f:
        f.write("#!%s\n%s\n" % (sys.executable, body))
    os.chmod(path, 0o755)
    return path


NEVER_ANSWERS = """import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(60)"""

ADAPTERS = {"codex": "HARNESSCTL_CODEX_BIN", "claudecode": "HARNESSCTL_CLAUDE_BIN"}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_harness_that_never_answers_the_start_exits_5_or_6_within_the_timeout(adapter, efile, workdir):
    if not os.path.isfile(os.path.join(ROOT, "adapters", adapter, "manifest.json")):
        pytest.skip("no %s adapter" % adapter)
    env = cli_env(**{ADAPTERS[adapter]: fake_harness(workdir, NEVER_ANSWERS), "HARNESSCTL_TIMEOUT": "3",
                     "HARNESSCTL_IDLE_TIMEOUT": "0.5"})
    started = time.monotonic()
    proc = run("send", efile, "hello", "--adapter", adapter, env=env)
    elapsed = time.monotonic() - started
    err = proc.stderr.decode()
    assert proc.returncode in (5, 6), err
    assert err.startswith("harnessctl: ") and err.count("\n") == 1, err
    # the knob holds: far below the default 30 s, with room for the start-ups of a loaded machine
    assert elapsed < 3 + 7, "took %.1fs with HARNESSCTL_TIMEOUT=3" % elapsed
    assert not of_kind(efile, "accepted")
    assert_no_leftovers(str(workdir), [efile], timeout=10)
    check(efile)


def test_a_harness_that_dies_at_every_start_keeps_seq_counting(efile, workdir):
    """Each failed start leaves a diagnostic log line and the runtime idles out:
    the next runtime must continue after it, not reuse its seq."""
    if not os.path.isfile(os.path.join(ROOT, "adapters", "codex", "manifest.json")):
        pytest.skip("no codex adapter")
    env = cli_env(HARNESSCTL_CODEX_BIN=fake_harness(workdir, "raise SystemExit(3)"), HARNESSCTL_IDLE_TIMEOUT="0.2")
    for _ in range(3):
        assert run("send", efile, "hello", "--adapter", "codex", env=env).returncode == 5
        wait_for(lambda: not runtime_pids(efile), what="idle exit")
    seqs = [e["seq"] for e in of_kind(efile, "log")]
    # one line per start; a send whose runtime idled out before it was asked starts one more
    assert len(seqs) >= 3 and seqs == list(range(1, len(seqs) + 1))
    check(efile)
