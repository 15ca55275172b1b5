"""Budgets on the real harnesses (`send --max-tokens`): codex 0.171.0 and
Claude Code 2.1.332 on the project's mock models, which report the usage the
real APIs report.  A run that spends the budget is interrupted at the usage
update that crosses it and ends `failed` with error_class budget; the next
send exits 2; the totals are the sum of the results."""

from __future__ import annotations

import json
import os

import pytest
from claudecode_support.mock_messages import bash, reply, text, wait_file_command
from claudecode_support.session import real_session as claude_session
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session as codex_session

from harnessctl.eventfile.state import spent

pytestmark = pytest.mark.real


@pytest.fixture
def real_codex(workdir):
    with codex_session(workdir) as pair:
        yield pair


@pytest.fixture
def cc(workdir):
    with claude_session(str(workdir)) as session:
        yield session


def test_codex_run_that_spends_max_tokens_is_interrupted_and_fails_with_budget(real_codex):
    s, mock = real_codex
    mock.add(mr.exec_command("sleep 60"))  # 110 tokens for this request (mock_responses.USAGE), then a long tool
    proc = s.cmd("send", s.path, "Work long.", "--adapter", "codex", "--cwd", s.cwd, "--max-tokens", "100", "--wait")
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert (result["status"], result["error_class"]) == ("failed", "budget")
    assert result["error"].startswith("the conversation spent 110 tokens of its --max-tokens 100")
    assert len(mock.requests) == 1  # interrupted before codex asked the model again


def test_codex_send_after_the_budget_is_spent_exits_2_until_raised(real_codex):
    s, mock = real_codex
    # a second "Going on." for a loaded machine: should the sleep fail at once (codex's sandbox refused
    # to start under load), codex asks the model again before the interrupt lands, and takes the first
    mock.add(mr.exec_command("sleep 60"), mr.text("Going on."), mr.text("Going on."))
    s.cmd("send", s.path, "Work long.", "--adapter", "codex", "--cwd", s.cwd, "--max-tokens", "100", "--wait")
    refused = s.cmd("send", s.path, "More.")
    assert refused.returncode == 2 and b"the budget is spent" in refused.stderr
    proc = s.cmd("send", s.path, "More.", "--max-tokens", "1000", "--wait")
    assert proc.returncode == 0 and json.loads(proc.stdout)["output"] == "Going on."


def test_codex_totals_are_the_sum_of_the_results(real_codex):
    s, mock = real_codex
    mock.add(mr.text("One."), mr.text("Two."))
    s.cmd("send", s.path, "First.", "--adapter", "codex", "--cwd", s.cwd, "--max-tokens", "10000", "--wait")
    last = json.loads(s.cmd("send", s.path, "Second.", "--wait").stdout)
    results = s.events("result")
    assert last["totals"]["tokens"] == sum(spent(r["usage"]) for r in results) == 220
    assert json.loads(s.cmd("status", s.path).stdout)["totals"]["tokens"] == 220


def claude_long_tool(cc, usage):
    """A Bash call that runs until its flag file appears (never, here), announced with `usage`."""
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = "--allowedTools Bash"
    flag = os.path.join(cc.root, "never.flag")
    return reply(bash(wait_file_command(flag)), usage=usage)


def test_claude_run_that_spends_max_tokens_is_interrupted_and_fails_with_budget(cc):
    cc.mock.script(claude_long_tool(cc, {"input_tokens": 100, "output_tokens": 7}))
    proc = cc.run("send", cc.path, "Work long.", "--adapter", "claudecode", "--cwd", cc.work, "--max-tokens", "50",
                  "--wait")
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert (result["status"], result["error_class"]) == ("failed", "budget")
    assert result["error"].startswith("the conversation spent 100 tokens of its --max-tokens 50")
    assert len(cc.mock.bodies()) == 1


def test_claude_send_after_the_budget_is_spent_exits_2_until_raised(cc):
    cc.mock.script(claude_long_tool(cc, {"input_tokens": 100, "output_tokens": 7}), reply(text("Going on.")))
    cc.run("send", cc.path, "Work long.", "--adapter", "claudecode", "--cwd", cc.work, "--max-tokens", "50", "--wait")
    refused = cc.run("send", cc.path, "More.")
    assert refused.returncode == 2 and b"the budget is spent" in refused.stderr
    proc = cc.run("send", cc.path, "More.", "--max-tokens", "10000", "--wait")
    assert proc.returncode == 0 and json.loads(proc.stdout)["output"] == "Going on."


def test_claude_totals_and_cost_are_the_sum_of_the_results(cc):
    cc.mock.script(reply(text("One.")), reply(text("Two.")))
    cc.run("send", cc.path, "First.", "--adapter", "claudecode", "--cwd", cc.work, "--max-cost-usd", "5", "--wait")
    last = json.loads(cc.run("send", cc.path, "Second.", "--wait").stdout)
    results = cc.results()
    assert last["totals"]["tokens"] == sum(spent(r["usage"]) for r in results) == 30
    assert last["totals"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in results))
    report = json.loads(cc.run("status", cc.path).stdout)
    assert report["totals"] == last["totals"] and report["max_cost_usd"] == 5
