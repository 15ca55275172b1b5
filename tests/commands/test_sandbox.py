"""`send --sandbox`, black-box through the CLI with the mock adapter: what is
bound and shown, what is refused before anything starts, and that a runtime
answers no request without the proof (docs/OPERATIONS.md, "The box";
docs/PROTOCOL-POLICY.md section 11).  What the box keeps an agent from doing is
proved by tests/commands/test_sandbox_hostile.py and the real agents."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys

import pytest
from cliutil import ROOT, cli_env, ok, run, status, wait_results

from harnessctl import landlock
from harnessctl.store import ipc

pytestmark = pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))


@pytest.fixture
def work(workdir):
    path = workdir / "work"
    path.mkdir()
    return str(path)


def test_a_boxed_session_runs_and_status_says_it_is_boxed(efile, work):
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work, "--sandbox")
    assert wait_results(efile, 1)[0]["output"] == "echo: hello"
    line = status(efile)
    assert line["sandbox"] is True and "sandbox_write" not in line


def test_status_shows_the_folders_a_send_added_to_the_box(efile, work, workdir):
    extra = workdir / "extra"
    extra.mkdir()
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work, "--sandbox", "--sandbox-write", str(extra))
    assert status(efile)["sandbox_write"] == [os.path.realpath(str(extra))]


def test_an_unboxed_session_shows_no_sandbox_field(efile, work):
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work)
    assert "sandbox" not in status(efile)


def test_sandbox_write_without_sandbox_is_a_usage_error_and_binds_nothing(efile, work):
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", work, "--sandbox-write", work)
    assert proc.returncode == 2 and b"give --sandbox too" in proc.stderr
    assert not os.path.exists(efile)


def test_sandbox_write_of_a_missing_folder_is_a_usage_error(efile, work):
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", work, "--sandbox", "--sandbox-write", work + "/no")
    assert proc.returncode == 2 and proc.stderr.decode().strip().endswith("not a directory")
    assert not os.path.exists(efile)


def test_an_event_file_inside_the_cwd_cannot_be_boxed_and_nothing_starts(work):
    inside = os.path.join(work, "events.jsonl")
    proc = run("send", inside, "hi", "--adapter", "mock", "--cwd", work, "--sandbox")
    assert proc.returncode == 2, proc.stderr
    assert b"must neither read nor write" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not os.path.exists(inside + ".d/runtime.sock")


def test_a_sandbox_write_folder_holding_the_event_file_is_refused(efile, work, workdir):
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", work, "--sandbox", "--sandbox-write", str(workdir))
    assert proc.returncode == 2 and b"--sandbox-write" in proc.stderr


def test_mode_full_without_a_box_warns_once_on_the_send_that_binds_it(efile, work):
    first = ok("send", efile, "one", "--adapter", "mock", "--cwd", work, "--mode", "full")
    assert first.stderr.decode().count("warning: --mode full without --sandbox") == 1
    wait_results(efile, 1)
    assert b"warning" not in ok("send", efile, "two").stderr


def test_mode_full_in_a_box_says_nothing(efile, work):
    assert ok("send", efile, "one", "--adapter", "mock", "--cwd", work, "--mode", "full", "--sandbox").stderr == b""


def test_a_box_is_bound_a_later_send_to_an_unboxed_file_cannot_add_one(efile, work):
    ok("send", efile, "one", "--adapter", "mock", "--cwd", work)
    wait_results(efile, 1)
    proc = run("send", efile, "two", "--sandbox")
    assert proc.returncode == 2 and b"sandbox is bound" in proc.stderr


def test_a_later_send_to_a_boxed_file_need_not_repeat_sandbox(efile, work):
    ok("send", efile, "one", "--adapter", "mock", "--cwd", work, "--sandbox")
    ok("send", efile, "two")
    assert [r["output"] for r in wait_results(efile, 2)] == ["echo: one", "echo: two"]


FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


def _harnessctl_inside(efile: str, work: str, *args: str) -> dict:
    """What the fake ACP agent, boxed, got when it ran `harnessctl ARGS` itself
    (a script in its workspace, a sub-agent): its tool call's end."""
    line = " ".join(shlex.quote(word) for word in (sys.executable, "-m", "harnessctl") + args)
    ok("send", efile, "/tool " + line, "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", work,
       "--sandbox", "--wait", "--timeout", "60")
    (ended,) = [e for e in events_of(efile) if e.get("kind") == "tool.completed"]
    return ended


def events_of(path: str) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_a_boxed_agent_runs_a_harnessctl_session_of_its_own_inside_the_box(efile, work):
    inner = os.path.join(work, "inner.jsonl")
    ended = _harnessctl_inside(efile, work, "send", inner, "hello", "--adapter", "mock", "--wait")
    assert ended["exit_code"] == 0 and '"output":"echo: hello"' in ended["output"], ended
    assert [e["status"] for e in events_of(inner) if e["type"] == "result"] == ["completed"]


def test_a_boxed_agent_boxes_a_session_of_its_own_inside_its_box(efile, work):
    inner_cwd = os.path.join(work, "sub")
    os.mkdir(inner_cwd)
    inner = os.path.join(work, "inner.jsonl")
    ended = _harnessctl_inside(efile, work, "send", inner, "hello", "--adapter", "mock", "--cwd", inner_cwd,
                               "--sandbox", "--wait")
    assert ended["exit_code"] == 0 and '"output":"echo: hello"' in ended["output"], ended


def test_a_boxed_agent_cannot_ask_the_runtime_that_boxes_it(efile, work):
    ended = _harnessctl_inside(efile, work, "status", efile)
    assert ended["exit_code"] == 5 and "refused" in ended["output"], ended


def _ask(socket_path: str, request: bytes) -> str:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(30)
    conn.connect(socket_path)
    conn.sendall(request)
    conn.shutdown(socket.SHUT_WR)
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    conn.close()
    return b"".join(chunks).decode()


def test_a_runtime_refuses_a_request_without_the_proof(efile, work):
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work)
    wait_results(efile, 1)
    for request in (ipc.encode_fields(["status"]), ipc.encode_fields([ipc.PROOF + "0" * 32, "status"])):
        answer = _ask(efile + ".d/runtime.sock", request)
        assert answer.startswith("5 refused: this command cannot read the state folder this runtime uses"), answer


def test_a_runtime_answers_a_request_with_the_proof(efile, work):
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work)
    wait_results(efile, 1)
    answer = _ask(efile + ".d/runtime.sock", ipc.encode_request(["status"]))
    assert answer.startswith("0 ") and json.loads(answer[2:])["state"] == "idle"


def test_a_command_with_another_state_folder_is_refused_by_the_runtime(efile, work, workdir):
    ok("send", efile, "hello", "--adapter", "mock", "--cwd", work)
    wait_results(efile, 1)
    other = cli_env(HARNESSCTL_STATE_DIR=str(workdir / "other-state"))
    proc = run("status", efile, env=other)
    assert proc.returncode == 5 and b"refused" in proc.stderr


def test_why_not_names_the_abi_this_kernel_offers():
    found = landlock.abi()
    assert found >= landlock.NEEDED_ABI and landlock.why_not() is None
