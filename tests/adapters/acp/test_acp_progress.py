"""Through the CLI and the runtime over the fake ACP agent
(acp_support/fake_agent.py): an agent that makes no progress is heard of on a
waiting send's stderr and ends `failed` at HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT,
and a notice is a `log` line, never the answer."""

from __future__ import annotations

import json

from acp_support.fakeagent import Agent
from cliutil import matching, run


def test_a_send_to_an_agent_that_makes_no_progress_says_why_on_stderr_and_fails_at_the_limit(workdir):
    agent = Agent(workdir, HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT="2")
    proc = agent.send("/silent", "--wait")
    stderr = proc.stderr.decode()
    assert proc.returncode == 7, (proc.returncode, stderr)
    assert "acp warns: the ACP agent fake_agent.py has shown no progress 1 s after the prompt" in stderr
    # the agent's own words: its stderr's line that says why, not the chatter that follows it
    assert "its stderr says: fake: API Error: Connection refused (ECONNREFUSED), retrying" in stderr
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (result["status"], result["error_class"]) == ("failed", "no_progress")
    assert "showed no progress in 2 s (HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT)" in result["error"]
    assert len(agent.received("session/cancel")) == 1
    (warning,) = matching(agent.path, "log", "warning")
    assert warning["source"] == "no_progress" and "ECONNREFUSED" in warning["message"]


def test_a_notice_after_the_answer_is_a_warning_line_and_not_the_output(workdir):
    agent = Agent(workdir)
    proc = agent.send("/notice", "--wait")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.decode().splitlines()[-1])["output"] == "echo: notice"
    (warning,) = matching(agent.path, "log", "warning")
    assert (warning["message"], warning["source"]) == ("Fake warning: this is not the answer", "notice")
    assert "warns: Fake warning: this is not the answer" in proc.stderr.decode()


def test_an_agent_that_exits_before_it_is_ready_is_quoted_from_its_stdout_and_stderr(workdir):
    """kimi-cli 1.52.0's `kimi acp` prints why on stdout and exits 0."""
    script = workdir / "retired-agent"
    script.write_text("#!/bin/sh\necho 'kimi-cli is no longer maintained'\necho 'see the new CLI' >&2\n")
    script.chmod(0o755)
    proc = run("send", str(workdir / "s.jsonl"), "hi", "--adapter", "acp", "--agent", str(script), "--cwd",
               str(workdir), "--wait")
    stderr = proc.stderr.decode()
    assert proc.returncode == 5 and stderr.count("\n") == 1, stderr
    assert "exited (code 0) before it was ready; its stdout said: kimi-cli is no longer maintained" in stderr
    assert "its stderr ends: see the new CLI" in stderr
