"""One vocabulary whatever the harness: the same shell command, run by the REAL
codex and the REAL claude (each against its loopback mock model), is logged
as `tool.started` / `tool.completed` lines with the same fields and the same
meaning.  Skipped when a binary is missing, failed under HARNESSCTL_REQUIRE_REAL=1."""

from __future__ import annotations

import os
import signal
from typing import Any, Dict, List

import pytest
from cliutil import events
from schemacheck import check_event

pytestmark = pytest.mark.real

COMMAND = "echo harnessctl-same"


def tool_lines(path: str) -> List[Dict[str, Any]]:
    """The file's tool.started and tool.completed lines, after checking every line's schema."""
    written = events(path)
    assert [(e, check_event(e)) for e in written if check_event(e)] == []
    return [e for e in written if e["type"] == "log" and e["kind"] in ("tool.started", "tool.completed")]


def codex_lines(workdir: str) -> List[Dict[str, Any]]:
    from codex_support import mock_responses as mr
    from codex_support.fixtures import real_session

    with real_session(workdir) as (s, mock):
        s.configure(approval_policy="never", sandbox_mode="workspace-write")
        mock.add(mr.exec_command(COMMAND, call_id="call_same"), mr.text("Ran it."))
        proc = s.cmd("send", s.path, "run the command", "--adapter", "codex", "--cwd", s.cwd)
        assert proc.returncode == 0, proc.stderr.decode()
        s.wait("result")
        return tool_lines(s.path)


def claude_lines(workdir: str) -> List[Dict[str, Any]]:
    from claudecode_support.fixtures import real_claude
    from claudecode_support.mock_messages import MockMessages, bash, reply, text
    from claudecode_support.session import Session

    binary = real_claude()
    with MockMessages() as mock:
        cc = Session(workdir, mock, binary)
        cc.env["HARNESSCTL_CLAUDE_ARGS"] = "--allowedTools Bash"
        mock.script(reply(bash(COMMAND, "Echo")), reply(text("Ran it.")))
        cc.send("run the command")
        cc.wait_results(1)
        pid = cc.runtime_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
        return tool_lines(cc.path)


def test_the_same_command_run_by_real_codex_and_real_claude_is_logged_with_the_same_fields(workdir):
    codex_dir, claude_dir = os.path.join(str(workdir), "codex"), os.path.join(str(workdir), "claude")
    os.mkdir(codex_dir)
    os.mkdir(claude_dir)
    logged = {"codex": codex_lines(codex_dir), "claude": claude_lines(claude_dir)}
    for harness, lines in logged.items():
        assert [e["kind"] for e in lines] == ["tool.started", "tool.completed"], (harness, lines)
        started, completed = lines
        assert (started["tool"], started["title"], started["tool_id"]) == ("command", COMMAND,
                                                                          completed["tool_id"]), (harness, lines)
        assert (completed["tool"], completed["title"], completed["status"], completed["exit_code"]) == (
            "command", COMMAND, "completed", 0), (harness, completed)
        assert "harnessctl-same" in completed["output"] and isinstance(completed["duration_ms"], int), completed
    for kind in (0, 1):  # the same fields, whatever the harness (the values of course differ)
        assert sorted(logged["codex"][kind]) == sorted(logged["claude"][kind]), (logged["codex"][kind],
                                                                                  logged["claude"][kind])
