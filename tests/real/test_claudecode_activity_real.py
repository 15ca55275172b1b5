"""The activity vocabulary end to end: the CLI, the runtime, the REAL `claude`
binary and the loopback Messages API mock (see test_claudecode_real.py)."""

from __future__ import annotations

import os
import signal

import pytest
from claudecode_support.fixtures import real_claude
from claudecode_support.mock_messages import MockMessages, bash, reply, text, tool_use
from claudecode_support.session import Session
from schemacheck import check_event

pytestmark = pytest.mark.real


@pytest.fixture
def cc(workdir):
    binary = real_claude()
    with MockMessages() as mock:
        session = Session(str(workdir), mock, binary)
        session.env["HARNESSCTL_CLAUDE_ARGS"] = "--allowedTools 'Bash Write'"
        yield session
        pid = session.runtime_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)  # its claude dies with it (PR_SET_PDEATHSIG)
    assert [(e, check_event(e)) for e in session.events() if check_event(e)] == []


def logs(cc, kind):
    return [e for e in cc.events("log") if e["kind"] == kind]


def test_a_bash_command_is_a_command_tool_with_its_exit_code_and_output(cc):
    cc.mock.script(reply(bash("echo real-hi", "Say hi")), reply(bash("echo bad >&2; exit 4", "Fail")),
                   reply(text("Ran both.")))
    accepted = cc.send("run two commands")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed"
    started = logs(cc, "tool.started")
    assert [(s["tool"], s["name"], s["title"]) for s in started] == [
        ("command", "Bash", "echo real-hi"), ("command", "Bash", "echo bad >&2; exit 4")]
    ok, failed = logs(cc, "tool.completed")
    assert (ok["tool_id"], ok["tool"], ok["status"], ok["exit_code"]) == (started[0]["tool_id"], "command",
                                                                          "completed", 0)
    assert ok["output"] == "real-hi" and ok["run_id"] == accepted["run_id"]
    assert (failed["status"], failed["exit_code"]) == ("failed", 4) and "bad" in failed["output"]


def test_a_write_is_a_file_change_with_its_diff(cc):
    path = os.path.join(cc.work, "new.txt")
    cc.mock.script(reply(tool_use("Write", {"file_path": path, "content": "alpha\nbeta\n"})), reply(text("Wrote it.")))
    cc.send("write new.txt")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and open(path).read() == "alpha\nbeta\n"
    [changed] = logs(cc, "file.changed")
    assert (changed["path"], changed["change"], changed["added"], changed["removed"]) == (path, "add", 2, 0)
    assert "+alpha\n+beta\n" in changed["diff"]
    [done] = logs(cc, "tool.completed")
    assert (done["tool"], done["name"], done["tool_id"]) == ("file_change", "Write", changed["tool_id"])


def test_partial_messages_stream_as_text_delta_under_the_messages_id(cc):
    cc.mock.script(reply(text("Hello from a streamed answer."), delay=0.01))
    cc.send("stream something")
    [result] = cc.wait_results(1)
    [message] = cc.events("message")
    deltas = logs(cc, "text.delta")
    assert deltas and {d["message_id"] for d in deltas} == {message["message_id"]}
    assert "".join(d["text"] for d in deltas) == message["text"] == result["output"]


def test_a_run_logs_its_session_and_usage(cc):
    cc.mock.script(reply(text("Counted."), usage={"input_tokens": 40, "output_tokens": 8}))
    cc.send("count tokens")
    [result] = cc.wait_results(1)
    [session] = logs(cc, "session")
    assert (session["harness"], session["version"]) == ("claude", "2.1.332") and session["session_id"]
    *streamed, usage = logs(cc, "usage")  # as the API call streams (message_start, message_delta), then the result's
    assert [(u["input_tokens"], u["output_tokens"]) for u in streamed] == [(40, 0), (40, 8)]
    assert (usage["input_tokens"], usage["output_tokens"], usage["run_id"]) == (40, 8, result["run_id"])
    assert usage["context_window"] and usage["context_used"] == 40
    assert result["usage"]["input_tokens"] == 40 and result["cost_usd"] > 0
