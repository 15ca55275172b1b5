"""The runtime's parts know no `Runtime` (issue 33): each is given what it
uses and tells the coordinator through a callback, so each works on its own."""

from __future__ import annotations

import ast
import os

from cliutil import ROOT

from harnessctl.runtime.cancel import Cancel
from harnessctl.runtime.host import verdict
from harnessctl.runtime.spending import Spending

PARTS = ("sends", "cancel", "replies", "requests", "spending", "hookrunner", "host", "supervisor", "lifetime",
         "reachwatch")
HERE = os.path.join(ROOT, "harnessctl", "runtime")


def test_no_part_imports_or_names_the_runtime():
    for part in PARTS:
        with open(os.path.join(HERE, part + ".py")) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("coordinator", "harnessctl.runtime.coordinator"), part
                assert node.module or "coordinator" not in [a.name for a in node.names], part
            assert not (isinstance(node, ast.Name) and node.id == "Runtime"), part


class Conv:
    def __init__(self):
        self.busy = True
        self.open_runs = {"run-1": {}}
        self.spent_tokens, self.spent_cost = 0, None

    def is_busy(self):
        return self.busy


class Timers:
    def __init__(self):
        self.jobs = []

    def call_later(self, seconds, job):
        self.jobs.append((seconds, job))


STOPPED = type("Supervisor", (), {"state": "stopped", "backend": None})()


def test_a_cancel_the_harness_ignores_tells_the_runtime_once_its_grace_is_over():
    conv, timers, overdue = Conv(), Timers(), []
    cancel = Cancel(conv.is_busy, STOPPED, timers, 15.0, overdue.append)
    cancel.request(sending=False)
    cancel.request(sending=False)  # a second cancel does not put the deadline off
    assert cancel.cancelling and [s for s, _ in timers.jobs] == [15.0]
    timers.jobs[0][1]()
    assert overdue == ["the harness did not end the run within 15 s of the cancel: it was stopped"]


def test_a_cancel_the_run_ended_in_time_is_not_overdue():
    conv, timers, overdue = Conv(), Timers(), []
    cancel = Cancel(conv.is_busy, STOPPED, timers, 15.0, overdue.append)
    cancel.request(sending=False)
    conv.busy = False
    cancel.settled()
    timers.jobs[0][1]()
    assert not cancel.cancelling and overdue == []


def test_spending_decides_and_the_runtime_keeps_the_binding():
    noted = []
    spending = Spending(Conv(), None, noted.append)
    binding = {"adapter": "mock", "max_tokens": 10}
    assert spending.rebind(binding, {"max_tokens": None}) is binding  # nothing changes: nothing is recorded
    assert spending.usage_seen("run-1", {"input_tokens": 8, "output_tokens": 4}, binding)
    assert not spending.usage_seen("run-1", {"input_tokens": 9, "output_tokens": 4}, binding)  # told once
    assert spending.run_ended("run-1") is not None and noted


def test_the_budget_has_the_last_word_on_a_result_whatever_the_harness_said():
    assert verdict("completed", None, None, "spent 12 of 10 tokens", True, "{}", None) == (
        "failed", "spent 12 of 10 tokens: the run was interrupted", "budget", None)


def test_a_completed_answer_that_is_no_json_fails_its_schema():
    status, error, error_class, _ = verdict("completed", None, None, None, True, "not json", None)
    assert (status, error_class) == ("failed", "schema") and error


def test_a_result_without_a_schema_or_budget_is_as_the_harness_said():
    assert verdict("completed", None, None, None, False, "hi", None) == ("completed", None, None, None)
    assert verdict("failed", "boom", "model", None, True, "", None) == ("failed", "boom", "model", None)
