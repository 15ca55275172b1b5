"""Budgets: `send --max-tokens N` and `--max-cost-usd X`, bound to the file and
enforced by the runtime, black-box through the CLI with the mock adapter
(docs/PROTOCOL-COMMANDS.md section 20; the mock's `/usage IN OUT` reports tokens as a
harness does).  The real codex and Claude are in test_budget_real.py."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import cli_env, events, ok, only, run, runtime_pids, status, wait_for

from harnessctl.eventfile.state import spent

SPEND_AND_WORK = "/usage 50 10\n/usage 50 10\n/sleep 30\nwork"  # 60 tokens, then 120, then works on


def send(path, text, *flags, env=None):
    return run("send", path, text, "--adapter", "mock", *flags, env=env)


def results(path):
    return [e for e in events(path) if e["type"] == "result"]


def test_a_run_that_spends_the_budget_is_interrupted_and_fails_with_error_class_budget(efile):
    proc = send(efile, SPEND_AND_WORK, "--max-tokens", "100", "--wait")
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert (result["status"], result["error_class"]) == ("failed", "budget")
    assert result["error"] == "the conversation spent 120 tokens of its --max-tokens 100: the run was interrupted"
    assert status(efile)["state"] == "failed"


def test_a_send_after_the_budget_is_spent_exits_2_and_nothing_is_sent(efile):
    send(efile, SPEND_AND_WORK, "--max-tokens", "100", "--wait")
    proc = send(efile, "more")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert b"the budget is spent: the conversation spent 120 tokens of its --max-tokens 100" in proc.stderr
    assert len([e for e in events(efile) if e["type"] == "accepted"]) == 1


def test_a_run_within_the_budget_completes(efile):
    proc = send(efile, "/usage 40 10\nsmall", "--max-tokens", "100", "--wait")
    assert proc.returncode == 0 and json.loads(proc.stdout)["totals"] == {"tokens": 50, "cost_usd": None}


def test_a_send_that_raises_the_limit_goes_on_with_the_conversation(efile):
    send(efile, SPEND_AND_WORK, "--max-tokens", "100", "--wait")
    proc = send(efile, "more", "--max-tokens", "1000", "--wait")
    assert proc.returncode == 0, proc.stderr
    assert status(efile)["max_tokens"] == 1000
    with open(efile + ".d/binding.json", encoding="utf-8") as f:
        assert json.load(f)["max_tokens"] == 1000


def test_a_limit_raised_while_no_runtime_lives_is_bound_by_the_send(efile):
    send(efile, SPEND_AND_WORK, "--max-tokens", "100", "--wait")
    for pid in runtime_pids(efile):
        os.kill(pid, 9)
    wait_for(lambda: not runtime_pids(efile), what="the runtime gone")
    assert send(efile, "more").returncode == 2
    assert send(efile, "more", "--max-tokens", "500", "--wait").returncode == 0
    assert status(efile)["max_tokens"] == 500


def test_each_result_carries_the_conversations_totals(efile):
    send(efile, "/usage 10 5\none", "--wait")
    send(efile, "/usage 20 5\ntwo", "--wait")
    assert [r["totals"]["tokens"] for r in results(efile)] == [15, 40]


def test_status_totals_are_the_sum_of_the_results(efile):
    send(efile, "/usage 10 5\none", "--wait")
    send(efile, "/usage 20 5\ntwo", "--wait")
    assert status(efile)["totals"] == {"tokens": sum(spent(r["usage"]) for r in results(efile)), "cost_usd": None}


def test_status_counts_a_running_runs_tokens_so_far(efile):
    send(efile, "/usage 30 3\n/sleep 30\nwork", "--max-tokens", "1000")
    wait_for(lambda: status(efile)["totals"]["tokens"] == 33, what="the streamed usage in status")
    assert status(efile)["state"] == "running"


def test_totals_survive_an_idle_exit(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.2")
    send(efile, "/usage 10 5\none", "--max-tokens", "100", "--wait", env=env)
    wait_for(lambda: not runtime_pids(efile), what="the idle exit")
    report = status(efile)
    assert report["runtime"] == "stopped" and report["totals"]["tokens"] == 15 and report["max_tokens"] == 100


def test_max_cost_usd_exits_2_at_the_first_send_where_the_harness_reports_no_cost(efile):
    proc = send(efile, "hi", "--max-cost-usd", "1.5")
    assert proc.returncode == 2 and b"the mock adapter reports no cost" in proc.stderr
    assert not os.path.exists(efile)


@pytest.mark.parametrize("flag, value", [("--max-tokens", "0"), ("--max-tokens", "-5"), ("--max-tokens", "1e3"),
                                         ("--max-cost-usd", "0"), ("--max-cost-usd", "nan"),
                                         ("--max-cost-usd", "inf"), ("--max-cost-usd", "ten")])
def test_a_limit_that_is_not_a_positive_number_exits_2(efile, flag, value):
    proc = send(efile, "hi", flag, value)
    assert proc.returncode == 2 and flag.encode() in proc.stderr and not os.path.exists(efile)


def test_log_shows_the_totals_on_the_result_line(efile):
    send(efile, "/usage 10 5\none", "--wait")
    text = ok("log", efile).stdout.decode()
    assert "=== result completed (run " in text and "conversation 15 tokens)" in text


def test_a_run_the_budget_interrupted_keeps_its_own_usage(efile):
    send(efile, SPEND_AND_WORK, "--max-tokens", "100", "--wait")
    result = only(results(efile))
    assert result["usage"] == {"input_tokens": 100, "output_tokens": 20} and result["totals"]["tokens"] == 120
