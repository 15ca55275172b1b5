"""`harnessctl mcp --root ssh://host/dir`: the MCP server's tools on ssh:// files under that folder of
that machine (the real sshd of tests/support/ssh_support.py), and nothing outside it there."""

from __future__ import annotations

import os

import cliutil
import pytest
from cliutil import of_type, wait_for
from mcp_support.client import Client, structured
from ssh_support import address, remote_commands


@pytest.fixture
def root(workdir):
    folder = workdir / "root"
    folder.mkdir()
    return str(folder)


@pytest.fixture
def mcp(root, ssh_env):
    client = Client("--root", address("h1", root), cwd=root, env=ssh_env)
    client.initialize()
    yield client
    client.stop()


def test_send_and_status_tools_run_on_an_ssh_file_under_an_ssh_root(mcp, root):
    path = os.path.join(root, "a.jsonl")
    found = structured(mcp.tool("send", file=address("h1", path), text="hello", adapter="mock", cwd=root, wait=True))
    assert (found["outcome"], found["output"]) == ("completed", "echo: hello")
    assert of_type(path, "accepted")[0]["text"] == "hello"
    (line,) = structured(mcp.tool("status", files=[address("h1", path)]))["statuses"]
    assert (line["file"], line["state"]) == (address("h1", path), "idle")


def test_an_ssh_file_outside_the_ssh_root_is_refused(mcp, workdir):
    outside = str(workdir / "outside.jsonl")
    result = mcp.tool("send", file=address("h1", outside), text="hello", adapter="mock", cwd=str(workdir))
    assert result["isError"] is True and "not under the allowed ssh:// roots" in result["structuredContent"]["error"]
    assert not os.path.exists(outside)


def test_the_same_path_on_another_machine_is_refused(mcp, root):
    path = os.path.join(root, "a.jsonl")
    result = mcp.tool("send", file=address("h2", path), text="hello", adapter="mock", cwd=root)
    assert result["isError"] is True and "not under the allowed ssh:// roots" in result["structuredContent"]["error"]
    assert not os.path.exists(path)


def test_a_symlink_out_of_the_ssh_root_is_refused_on_that_machine(mcp, root, workdir):
    (workdir / "elsewhere").mkdir()
    os.symlink(str(workdir / "elsewhere"), os.path.join(root, "link"))
    result = mcp.tool("send", file=address("h1", os.path.join(root, "link", "a.jsonl")), text="hello",
                      adapter="mock", cwd=root)
    assert result["isError"] is True and "not under HARNESSCTL_ROOT" in result["structuredContent"]["error"], result
    assert not os.path.exists(str(workdir / "elsewhere" / "a.jsonl"))


def test_a_request_parked_there_is_answered_with_the_reply_tool_and_waited_for(mcp, root):
    path = os.path.join(root, "a.jsonl")
    asked = structured(mcp.tool("send", file=address("h1", path), text="/permission deploy?", adapter="mock",
                                cwd=root, wait=True))
    assert asked["outcome"] == "request"
    assert structured(mcp.tool("reply", file=address("h1", path), request_id=asked["request_id"], answer="allow"))
    done = structured(mcp.tool("wait", file=address("h1", path), input_id=asked["input_id"]))
    assert done["outcome"] == "completed" and "permission: allow" in done["output"]
    [replied] = [e for e in of_type(path, "request") if e["state"] == "replied"]
    assert replied["by"] == "reply"


def test_log_fork_and_cancel_tools_work_on_that_machine(mcp, root):
    path, new = os.path.join(root, "a.jsonl"), os.path.join(root, "b.jsonl")
    structured(mcp.tool("send", file=address("h1", path), text="first words", adapter="mock", cwd=root, wait=True))
    log = structured(mcp.tool("log", file=address("h1", path)))
    assert "first words" in log["text"] and any(e.get("entry") == "result" for e in log["entries"])
    forked = structured(mcp.tool("fork", file=address("h1", path), new_file=address("h1", new)))
    assert (forked["file"], forked["forked_from"]) == (address("h1", new), address("h1", path))
    structured(mcp.tool("send", file=address("h1", path), text="/sleep 60"))
    assert structured(mcp.tool("cancel", file=address("h1", path))) == {"outcome": "done", "exit_code": 0}
    assert structured(mcp.tool("wait", file=address("h1", path)))["state"] == "idle"


def test_a_remote_run_is_a_task_that_is_answered_with_tasks_update(mcp, root):
    path = os.path.join(root, "a.jsonl")
    handle = mcp.modern_tool("send", file=address("h1", path), text="/permission deploy?", adapter="mock", cwd=root,
                             wait=True)
    assert handle["resultType"] == "task", handle
    key = next(iter(until(mcp, handle["taskId"], "input_required")["inputRequests"]))
    mcp.modern("tasks/update", {"taskId": handle["taskId"], "inputResponses": {
        key: {"action": "accept", "content": {"answer": "allow"}}}})
    done = until(mcp, handle["taskId"], "completed")
    assert "permission: allow" in done["result"]["structuredContent"]["output"]


def until(mcp, task_id, status):
    return wait_for(lambda: (lambda t: t if t["status"] == status else None)(
        mcp.modern("tasks/get", {"taskId": task_id})["result"]), 60, "task %s" % status)


def test_a_long_wait_on_an_ssh_file_is_one_remote_wait_the_runtime_there_answers(ssh_bed, root, workdir):
    log = str(workdir / "remote.log")
    client = Client("--root", address("h1", root), cwd=root, env=ssh_bed.logged_env(cliutil.cli_env(), log))
    try:
        client.initialize()
        path = address("h1", os.path.join(root, "a.jsonl"))
        asked = structured(client.tool("send", file=path, text="/sleep 5", adapter="mock", cwd=root))
        remote_commands(log)
        done = structured(client.tool("wait", file=path, input_id=asked["input_id"]))
    finally:
        client.stop()
    assert done["outcome"] == "completed"
    assert [words.split()[-4] for words in remote_commands(log)] == ["wait"]  # not one per slice: the answer is pushed
