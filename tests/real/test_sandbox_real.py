"""`--mode full --sandbox` against the real agents, each on its mock model
server: a file the model writes inside the cwd lands; a command that writes
outside the cwd, appends to the event file or writes the sidecar fails with
a permission error and changes nothing; the agent's own state still works (a
second turn, after the runtime idled out, resumes the session).
docs/OPERATIONS.md, "The box"."""

from __future__ import annotations

import json
import os
from typing import List

import pytest
from acp_support.agents import real_agent
from claudecode_support import mock_messages as mm
from claudecode_support.session import real_session as claude_session
from cliutil import only
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session as codex_session

from harnessctl import landlock

pytestmark = [pytest.mark.real,
              pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))]

# What the model runs, one command each, in the cwd, a folder beside the event file:
# the first lands, each of the others must fail.  The escapes hide their target
# from a harness's own reading of the command (Claude Code denies a redirection
# into the event file itself): only the box stops them.  Each keeps its error in
# the cwd (not every agent reports a command's output over its wire).
INSIDE = "echo inside > inside.txt"
TARGETS = ("outside.txt", "events.jsonl", "events.jsonl.d/binding.json")
ESCAPES = tuple("python3 -c \"open('..' + '/%s', 'a').write('{}')\" 2> error-%d.txt" % (target, n)
                for n, target in enumerate(TARGETS))


class Untouched:
    """What lies outside the cwd, as it was before the agent ran: the event file
    stays well-formed and only grows by harnessctl's lines, the binding is the same."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path + ".d/binding.json", "rb") as f:
            self.binding = f.read()

    def check(self) -> None:
        with open(self.path + ".d/binding.json", "rb") as f:
            assert f.read() == self.binding
        with open(self.path, "rb") as f:
            lines = f.read().splitlines()
        assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
        assert not os.path.exists(os.path.join(os.path.dirname(self.path), "outside.txt"))


def denied(cwd: str) -> List[str]:
    """The targets an escape command failed to open with a permission error."""
    found = []
    for n, target in enumerate(TARGETS):
        with open(os.path.join(cwd, "error-%d.txt" % n)) as f:
            if "PermissionError: [Errno 13] Permission denied: '../%s'" % target in f.read():
                found.append(target)
    return found


def test_codex_boxed_writes_in_the_cwd_is_denied_outside_and_resumes(workdir):
    with codex_session(workdir) as (s, mock):
        s.env["HARNESSCTL_IDLE_TIMEOUT"] = "2"
        mock.add(mr.exec_command(INSIDE, "call_in"),
                 *(mr.exec_command(cmd, "call_%d" % n) for n, cmd in enumerate(ESCAPES)), mr.text("Done."))
        proc = s.cmd("send", s.path, "write files", "--adapter", "codex", "--cwd", s.cwd, "--model", "gpt-5.5",
                     "--mode", "full", "--sandbox")
        assert proc.returncode == 0, proc.stderr.decode()
        untouched = Untouched(s.path)
        assert s.wait("result")[0]["status"] == "completed", s.runtime_log()
        with open(os.path.join(s.cwd, "inside.txt")) as f:
            assert f.read() == "inside\n"
        assert denied(s.cwd) == list(TARGETS)
        untouched.check()
        s.runtime_gone()
        mock.add(mr.text("Resumed."))
        s.send("again")
        assert s.wait("result", 2)[1]["output"] == "Resumed."
        first, last = mock.requests[0], mock.requests[-1]
        assert last["headers"]["thread-id"] == first["headers"]["thread-id"]


def test_claude_code_boxed_writes_in_the_cwd_is_denied_outside_and_resumes(workdir):
    with claude_session(str(workdir)) as cc:
        cc.env["HARNESSCTL_IDLE_TIMEOUT"] = "2"
        cc.mock.script(*(mm.reply(mm.bash(cmd, "Run it")) for cmd in (INSIDE,) + ESCAPES), mm.reply(mm.text("Done.")))
        cc.send("write files", "--mode", "full", "--sandbox")
        untouched = Untouched(cc.path)
        [result] = cc.wait_results(1)
        assert result["status"] == "completed" and cc.events("request") == []
        with open(os.path.join(cc.work, "inside.txt")) as f:
            assert f.read() == "inside\n"
        assert denied(cc.work) == list(TARGETS)
        untouched.check()
        cc.wait_runtime_gone()
        cc.mock.script(mm.reply(mm.text("Resumed.")))
        cc.send("again")
        assert cc.wait_results(2)[1]["output"] == "Resumed."
        assert "write files" in json.dumps(cc.mock.bodies()[-1])  # the history came back: resumed


# codex-acp, claude-agent-acp, gemini-cli from npm; mistral-vibe from PyPI (its preset has a full mode).
# gemini offers yolo only in a folder it trusts (its own setting, the box is ours).
@pytest.mark.parametrize("agent", ["codex", "claude", "gemini", "vibe"])
def test_an_acp_agent_boxed_writes_in_the_cwd_is_denied_outside_and_resumes(workdir, agent):
    trust = {"GEMINI_CLI_TRUST_WORKSPACE": "true"} if agent == "gemini" else {}
    with real_agent(workdir, agent, HARNESSCTL_IDLE_TIMEOUT="2", **trust) as s:
        for command in (INSIDE,) + ESCAPES:
            s.model.runs(command, escalated=False)
        s.model.answer("Done.")
        s.send("write files", "--mode", "full", "--sandbox")
        untouched = Untouched(s.path)
        assert only(s.wait("result"))["status"] == "completed", s.runtime_log()[-3000:]
        with open(os.path.join(s.cwd, "inside.txt")) as f:
            assert f.read() == "inside\n"
        assert denied(s.cwd) == list(TARGETS)
        untouched.check()
        s.runtime_gone()
        s.model.answer("Resumed.")
        s.send("again")
        assert s.wait("result", 2)[1]["output"] == "Resumed."
