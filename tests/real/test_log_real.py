"""`harnessctl log` of sessions with the real codex and claude (the mock model
behind them): what a person reads of a real harness's commands, file changes and
messages.  The mock-backed log tests are tests/commands/test_log.py."""

from __future__ import annotations

import os
import signal

import pytest
from logutil import log


def no_raw_json(text):
    return not any(line.lstrip().startswith("{") for line in text.splitlines())


@pytest.mark.real
def test_log_of_a_real_codex_session_shows_the_command_its_exit_code_the_file_change_and_the_message(workdir):
    from codex_support import mock_responses as mr
    from codex_support.fixtures import real_session

    with real_session(workdir) as (s, mock):
        s.configure(approval_policy="never", sandbox_mode="workspace-write")
        add = "*** Begin Patch\n*** Add File: patched.txt\n+hello\n+from apply_patch\n*** End Patch\n"
        mock.add(mr.exec_command("echo harnessctl-hi", call_id="call_echo"), mr.apply_patch(add, call_id="call_add"),
                 mr.text("Patched."))
        proc = s.cmd("send", s.path, "edit a file", "--adapter", "codex", "--cwd", s.cwd, "--model", "gpt-5.5")
        assert proc.returncode == 0, proc.stderr.decode()
        s.wait("result")
        text = log(s.path)
    lines = text.splitlines()
    assert any(line.startswith("  $ ") and "echo harnessctl-hi  ok (exit 0, " in line for line in lines), text
    assert any(line.startswith("    +2 -0 ") and line.endswith("patched.txt (new)") for line in lines), text
    assert "<<< assistant\n    Patched.\n=== result completed" in text and no_raw_json(text)


@pytest.mark.real
def test_log_of_a_real_claude_session_shows_the_command_its_exit_code_the_file_change_and_the_message(workdir):
    from claudecode_support.fixtures import real_claude
    from claudecode_support.mock_messages import MockMessages, bash, reply, text, tool_use
    from claudecode_support.session import Session

    binary = real_claude()
    path = os.path.join(str(workdir), "new.txt")
    with MockMessages() as mock:
        cc = Session(str(workdir), mock, binary)
        cc.env["HARNESSCTL_CLAUDE_ARGS"] = "--allowedTools 'Bash Write'"
        mock.script(reply(bash("echo bad >&2; exit 4", "Fail")),
                    reply(tool_use("Write", {"file_path": path, "content": "alpha\nbeta\n"})), reply(text("Wrote it.")))
        cc.send("run and write")
        cc.wait_results(1)
        shown = log(cc.path)
        pid = cc.runtime_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
    lines = shown.splitlines()
    assert "  $ echo bad >&2; exit 4  failed (exit 4, " in "\n".join(lines), shown
    assert "    +2 -0 %s (new)" % path in lines, shown
    assert "<<< assistant\n    Wrote it.\n=== result completed" in shown and no_raw_json(shown)
