"""Hooks against the real harnesses (issue 23): codex, claude, and an ACP agent (codex-acp).

Per binary: an approval the harness parks runs the --on-request hook with exactly the pending
`request` line of the file; a hook that hangs is killed after HARNESSCTL_HOOK_TIMEOUT and logged,
and the run goes on (the reply is heard, the result completes).  Skipped without the binaries,
failed instead under HARNESSCTL_REQUIRE_REAL=1."""

from __future__ import annotations

import json
import os

import pytest
from acp_support.agents import PERMISSION_FILE, sessions
from claudecode_support.mock_messages import bash, reply, text
from claudecode_support.session import real_session as claude_session
from cliutil import matching, wait_matching
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session as codex_session
from hookutil import gone, hook, raw_line, wait_records

pytestmark = pytest.mark.real

ESCALATED_TOUCH = mr.function_call(
    "exec_command",
    {"cmd": "touch approved.txt", "sandbox_permissions": "require_escalated", "justification": "needs to write"},
    "call_touch",
)


def parked_hook_ran(path, out):
    """The hook's record, checked against the pending request line it was run for."""
    record = wait_records(out, 1)[0]
    request = json.loads(record["stdin"])
    assert request["type"] == "request" and request["state"] == "pending" and request["kind"] == "permission"
    assert record["stdin"].encode("utf-8") == raw_line(path, request["seq"])
    assert record["event"] == "request" and record["file"] == os.path.abspath(path)
    return request


def killed_and_logged(path, out):
    """The hanging hook's diagnostic (it is killed, its process group too)."""
    note = wait_matching(path, "log", kind="diagnostic", hook="on_request", timeout=60)[0]
    assert note["level"] == "warning" and "killed after 1 s" in note["message"]
    request = matching(path, "request", state="pending")[0]
    assert note["request_id"] == request["request_id"] and note["event_seq"] == request["seq"]
    gone(out)
    return request


# -- codex --------------------------------------------------------------------------------------------------------


@pytest.fixture
def real_codex(workdir):
    with codex_session(workdir) as pair:
        yield pair


def codex_approval(real_codex, command, **env):
    s, mock = real_codex
    s.env.update(env)
    s.configure(approval_policy="on-request", sandbox_mode="read-only")
    mock.add(ESCALATED_TOUCH, mr.text("Done."))
    proc = s.cmd("send", s.path, "Run touch approved.txt", "--adapter", "codex", "--cwd", s.cwd,
                 "--on-request", command)
    assert proc.returncode == 0, proc.stderr.decode()
    return s


def codex_goes_on(s, request):
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    (result,) = s.wait("result")
    assert result["status"] == "completed" and result["output"] == "Done."
    assert os.path.exists(os.path.join(s.cwd, "approved.txt"))


def test_codex_a_parked_approval_runs_the_request_hook_with_its_line(real_codex, workdir):
    command, out = hook(workdir)
    s = codex_approval(real_codex, command)
    request = parked_hook_ran(s.path, out)
    assert request["tool"] == "command" and "touch approved.txt" in request["message"]
    codex_goes_on(s, request)


def test_codex_a_hanging_hook_is_killed_and_logged_and_the_run_goes_on(real_codex, workdir):
    command, out = hook(workdir, "hang")
    s = codex_approval(real_codex, command, HARNESSCTL_HOOK_TIMEOUT="1")
    codex_goes_on(s, killed_and_logged(s.path, out))


# -- claude -------------------------------------------------------------------------------------------------------


@pytest.fixture
def cc(workdir):
    with claude_session(str(workdir)) as session:
        yield session


def claude_approval(cc, command, **env):
    cc.env.update(env)
    cc.mock.script(reply(text("I'll create it."), bash("touch approved.txt", "Create approved.txt")),
                   reply(text("Created.")))
    cc.send("please create approved.txt", "--on-request", command)


def claude_goes_on(cc, request):
    cc.reply(request["request_id"], "allow")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed"
    assert os.path.exists(os.path.join(cc.work, "approved.txt"))


def test_claude_a_parked_approval_runs_the_request_hook_with_its_line(cc, workdir):
    command, out = hook(workdir)
    claude_approval(cc, command)
    request = parked_hook_ran(cc.path, out)
    assert request["name"] == "Bash" and request["input"]["command"] == "touch approved.txt"
    claude_goes_on(cc, request)


def test_claude_a_hanging_hook_is_killed_and_logged_and_the_run_goes_on(cc, workdir):
    command, out = hook(workdir, "hang")
    claude_approval(cc, command, HARNESSCTL_HOOK_TIMEOUT="1")
    claude_goes_on(cc, killed_and_logged(cc.path, out))


# -- an ACP agent: codex-acp --------------------------------------------------------------------------------------


@pytest.fixture
def start(workdir):
    with sessions(workdir) as start:
        yield start


def acp_approval(start, command, **env):
    s = start("codex", **env)
    s.model.asks_permission()
    s.model.answer("Created it.")
    s.send("Create the file.", "--on-request", command)
    return s


def acp_goes_on(s, request):
    assert s.cmd("reply", s.path, request["request_id"], "allow").returncode == 0
    result = s.wait("result")[0]
    assert (result["status"], result["output"]) == ("completed", "Created it.")
    assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))


def test_acp_a_parked_approval_runs_the_request_hook_with_its_line(start, workdir):
    command, out = hook(workdir)
    s = acp_approval(start, command)
    request = parked_hook_ran(s.path, out)
    assert PERMISSION_FILE in json.dumps(request)
    acp_goes_on(s, request)


def test_acp_a_hanging_hook_is_killed_and_logged_and_the_run_goes_on(start, workdir):
    command, out = hook(workdir, "hang")
    s = acp_approval(start, command, HARNESSCTL_HOOK_TIMEOUT="1")
    acp_goes_on(s, killed_and_logged(s.path, out))
