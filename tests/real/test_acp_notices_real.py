"""What a first send to a real ACP agent says when the agent makes no progress,
and that a notice is never the answer: claude-agent-acp 0.101.0, codex-acp
2.6.0 and gemini-cli 0.61.0 (tests/support/acp_support/agents.py).

* A model on a closed port: claude-agent-acp retries for about 3 minutes
  without a word over ACP or on stderr, codex-acp reports "Reconnecting...
  waiting for network" for longer.  A waiting `send --wait` prints harnessctl's
  no-progress warning within 15 s, with the agent's own words, and the run
  ends `failed` at HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT.  gemini fails the
  prompt at once, with its reason.
* claude-agent-acp behind a gateway (ANTHROPIC_BASE_URL at the mock) in its
  default `auto` mode (no --mode) sends a notice about auto-mode billing with
  the first answer: a `warning` line, and `output` is the answer.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime

import pytest
from acp_support.agents import sessions
from cliutil import only

pytestmark = pytest.mark.real

LIMITS = {"claude": 20, "codex": 8}  # HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT: claude's proves the 10 s warning


@pytest.fixture
def start(workdir):
    with sessions(workdir) as start:
        yield start


@pytest.fixture
def closed_port():
    """A URL on 127.0.0.1 whose port is bound but not listening: a connect is
    refused, and no other process can take the port meanwhile."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield "http://127.0.0.1:%d" % sock.getsockname()[1]
    sock.close()


def seconds_between(earlier: dict, later: dict) -> float:
    def parse(ts: str) -> datetime:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return (parse(later["ts"]) - parse(earlier["ts"])).total_seconds()


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_an_agent_that_cannot_reach_its_model_is_heard_of_within_15_s_and_fails_at_the_limit(start, agent,
                                                                                             closed_port):
    limit = LIMITS[agent]
    if agent == "claude":  # claude's own retries (10, over about 3 minutes), not the tests' none
        s = start(agent, ANTHROPIC_BASE_URL=closed_port, CLAUDE_CODE_MAX_RETRIES="10",
                  HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT=str(limit))
    else:
        s = start(agent, HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT=str(limit))
        s.model.point_at(s.root, closed_port)
    proc = s.cmd("send", s.path, "Say hello.", *s.flags(), "--wait")
    stderr = proc.stderr.decode()
    assert proc.returncode == 7, (proc.returncode, stderr, s.runtime_log()[-2000:])
    assert "harnessctl: %s warns: the ACP agent %s has shown no progress %g s after the prompt" % (
        agent, agent, min(10, limit / 2)) in stderr
    accepted = only(s.events("accepted"))
    warning = only([w for w in s.events("log", "warning") if w["source"] == "no_progress"])
    assert seconds_between(accepted, warning) < 15
    if agent == "codex":  # the agent's own words: the error it reports while it retries
        assert "it reports: Reconnecting... waiting for network" in warning["message"]
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (result["status"], result["error_class"]) == ("failed", "no_progress")
    assert "showed no progress in %d s (HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT)" % limit in result["error"]
    assert "has shown no progress" in s.cmd("log", s.path).stdout.decode()


def test_claude_behind_a_gateway_without_a_mode_answers_with_the_answer_and_logs_the_billing_notice(start):
    s = start("claude", HARNESSCTL_ACP_MODE="")  # no --mode: claude-agent-acp's own default, auto
    s.model.answer("Hello from the mock.")
    proc = s.cmd("send", s.path, "Say hello.", *s.flags(), "--wait")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode())
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert result["output"] == "Hello from the mock."
    assert only(s.events("log", "session"))["approval_policy"] == "auto"  # claude-agent-acp's default: no mode set
    notices = [w for w in s.events("log", "warning") if w["source"] == "notice"]
    assert notices and "auto mode" in notices[0]["message"]
    assert all("auto mode" not in m["text"] for m in s.events("message"))
    assert "auto mode" in s.cmd("log", s.path).stdout.decode()


def test_gemini_that_cannot_reach_its_model_fails_at_once_with_its_reason(start, closed_port):
    s = start("gemini", GOOGLE_GEMINI_BASE_URL=closed_port)
    proc = s.cmd("send", s.path, "Say hello.", *s.flags(), "--wait")
    assert proc.returncode == 7, (proc.returncode, proc.stderr.decode())
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert "fetch failed" in result["error"] and result["error_class"] == "http_500"
    assert [w for w in s.events("log", "warning") if w["source"] == "no_progress"] == []
