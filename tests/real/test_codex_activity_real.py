"""The activity vocabulary from the real `codex app-server` (pinned 0.171.0)
against the loopback Responses mock: a shell command, an apply_patch edit and
a failed turn, as the `log` and `result` lines a consumer reads.

Skipped when codex is not installed, failed instead under
HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets); every event of the file must
match schema/events.schema.json (checked by `real_session`)."""

from __future__ import annotations

import shutil

import pytest
from cliutil import missing_part
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session

pytestmark = pytest.mark.real


@pytest.fixture
def real_codex(workdir):
    with real_session(workdir) as pair:
        yield pair


def test_a_shell_command_is_tool_started_and_completed_with_exit_code_and_output(real_codex):
    s, mock = real_codex
    mock.add(mr.exec_command("echo harnessctl-hi", call_id="call_echo"), mr.text("Ran it."))
    s.send("Run echo.", first=True)
    assert s.wait("result")[0]["status"] == "completed"
    (started,) = s.events("log", kind="tool.started")
    assert (started["tool"], started["name"], started["title"]) == ("command", "commandExecution",
                                                                    "echo harnessctl-hi")
    assert "echo harnessctl-hi" in started["input"]["command"] and started["input"]["cwd"]
    (completed,) = s.events("log", kind="tool.completed")
    assert (completed["tool_id"], completed["tool"], completed["status"]) == (started["tool_id"], "command",
                                                                              "completed")
    assert completed["exit_code"] == 0 and "harnessctl-hi" in completed["output"]
    (session,) = s.events("log", kind="session")
    assert (session["harness"], session["version"], session["model"]) == ("codex", "0.171.0", "mock-model")
    assert (session["approval_policy"], session["sandbox"]) == ("never", "readOnly")
    usage = s.events("log", kind="usage")
    assert usage and usage[-1]["input_tokens"] == 200 and usage[-1]["context_used"] == 110


def test_apply_patch_is_a_file_change_with_a_unified_diff(real_codex):
    s, mock = real_codex
    s.configure(approval_policy="never", sandbox_mode="workspace-write")
    add = "*** Begin Patch\n*** Add File: patched.txt\n+hello\n+from apply_patch\n*** End Patch\n"
    update = ("*** Begin Patch\n*** Update File: patched.txt\n@@\n hello\n-from apply_patch\n+from codex\n"
              "*** End Patch\n")
    mock.add(mr.apply_patch(add, call_id="call_add"), mr.apply_patch(update, call_id="call_update"),
             mr.text("Patched."))
    proc = s.cmd("send", s.path, "edit a file", "--adapter", "codex", "--cwd", s.cwd, "--model", "gpt-5.5")
    assert proc.returncode == 0, proc.stderr.decode()
    assert s.wait("result")[0]["output"] == "Patched."
    added, updated = s.events("log", kind="file.changed")
    assert added["path"].endswith("patched.txt") and added["change"] == "add"
    assert "+hello\n+from apply_patch\n" in added["diff"] and (added["added"], added["removed"]) == (2, 0)
    assert added["diff"].startswith("--- /dev/null\n+++ b/")
    assert updated["change"] == "update" and updated["move_path"] is None
    assert "-from apply_patch\n+from codex\n" in updated["diff"] and (updated["added"], updated["removed"]) == (1, 1)
    assert updated["diff"].startswith("--- ")
    tools = s.events("log", kind="tool.completed")
    assert [(t["tool"], t["status"]) for t in tools] == [("file_change", "completed")] * 2
    assert {c["tool_id"] for c in (added, updated)} == {t["tool_id"] for t in tools}


def test_a_failed_turn_carries_codexs_error_class(real_codex):
    s, mock = real_codex
    mock.add(mr.http_error(401, "Incorrect API key provided: sk-mock"))
    s.send("trigger error", first=True)
    (result,) = s.wait("result")
    assert result["status"] == "failed" and "401" in result["error"]
    assert result["error_class"] == "httpConnectionFailed"


def unsandboxed(s, workdir) -> None:
    """Issue 47's set-up: codex's temporary folder ($TMPDIR) holds its CODEX_HOME, so
    codex makes no codex-linux-sandbox helper, and with bubblewrap installed every
    sandboxed command fails.  Without bubblewrap codex uses its own and commands run."""
    missing_part(None if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed")
    s.env["TMPDIR"] = str(workdir)


def test_commands_codex_cannot_sandbox_are_said_in_one_warning_and_a_send_wait_note(real_codex, workdir):
    s, mock = real_codex
    unsandboxed(s, workdir)
    mock.add(mr.exec_command("echo one", call_id="call_one"), mr.exec_command("echo two", call_id="call_two"),
             mr.text("Both failed."))
    proc = s.cmd("send", s.path, "Run echo twice.", "--adapter", "codex", "--cwd", s.cwd, "--wait")
    assert proc.returncode == 0, proc.stderr.decode()
    assert s.wait("result")[0]["status"] == "completed"
    # codex 0.171.0 sends such a command's item only now and then; the model always sees this
    outputs = mr.tool_outputs(mock.requests[-1])
    assert sorted(outputs) == ["call_one", "call_two"]
    assert all("bwrap: execvp codex-linux-sandbox: No such file or directory" in o for o in outputs.values())
    assert all((t["status"], t["output"]) == ("failed", "bwrap: execvp codex-linux-sandbox: No such file or "
                                              "directory\n") for t in s.events("log", kind="tool.completed"))
    (warning,) = [w for w in s.events("log", kind="warning") if w["source"] == "sandbox"]
    assert warning["message"].startswith("codex cannot sandbox its commands, so each one fails; at start codex "
                                         "said: Refusing to create helper binaries under temporary dir ")
    assert warning["message"].endswith("(CODEX_HOME must lie outside $TMPDIR, else /tmp)")
    assert "harnessctl: codex warns: codex cannot sandbox its commands" in proc.stderr.decode()


def test_a_run_that_fails_after_commands_codex_could_not_sandbox_says_so_in_its_error(real_codex, workdir):
    s, mock = real_codex
    unsandboxed(s, workdir)
    mock.add(mr.exec_command("echo one"), mr.http_error(401, "Incorrect API key provided: sk-mock"))
    s.send("Run echo.", first=True)
    (result,) = s.wait("result")
    assert result["status"] == "failed" and "401" in result["error"]
    assert "; codex cannot sandbox its commands, so each one fails; at start codex said: Refusing" in result["error"]
