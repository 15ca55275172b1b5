"""Every capability an ACP preset claims in adapters/acp/manifest.json (and
every `degraded` one) names a test of the module the preset's `tests` key
names (tests/real/test_acp_real.py for codex, claude and gemini, with their
fork in tests/real/test_fork_real.py; tests/real/test_acp_reach_real.py for
the reach agents, test_acp_pypi_real.py for the PyPI ones) that proves it
against that real agent: a claim with no such test, or a test that does not run for
that agent, fails here (no agent needed to check that: pytest collects those
modules in a child process and says which agents each test runs for).
docs/ACP.md's presets table is the manifest's."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List, Set

import readme
from acp_support.agents import AGENTS
from acp_support.recipes import PYPI, trait, written
from cliutil import ROOT

from harnessctl.store import registry

PRESETS = registry.manifest("acp")["agents"]
ACP, REACH, PYPI_TESTS = ("tests/real/test_acp_real.py", "tests/real/test_acp_reach_real.py",
                          "tests/real/test_acp_pypi_real.py")
FORK = "tests/real/test_fork_real.py"
CANCEL_EARLY = "test_cancel_before_the_first_token_ends_the_run_cancelled_and_the_next_send_goes_on"
PYPI_KILLED = "test_an_agent_killed_mid_run_fails_the_run_and_the_restarted_agent_has_the_conversation"

# the module a preset's `tests` names -> capability -> the real-agent tests ("FILE::TEST") that prove it
PROOFS = {
    ACP: {
        "steer": [ACP + "::test_a_send_mid_turn_steers_into_the_same_run"],
        "cancel": [ACP + "::test_cancel_ends_the_running_run_cancelled"],
        "approvals": [ACP + "::test_permission_denied_by_a_later_reply_does_not_run_the_command",
                      ACP + "::test_permission_allowed_by_a_later_reply_runs_the_command"],
        "resume": [ACP + "::test_send_after_idle_exit_resumes_the_conversation"],
        "usage": [ACP + "::test_a_run_reports_the_tokens_the_model_counted"],
        "cost": [ACP + "::test_a_run_reports_the_tokens_the_model_counted"],  # asserts cost_usd for claude only
        "crash-recovery": [ACP + "::test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on"],
        "fork": [FORK + "::test_an_acp_fork_continues_the_session_and_the_original_never_sees_the_forks_turns"],
    },
    REACH: {
        "cancel": [REACH + "::test_cancel_ends_the_running_run_cancelled",
                   REACH + "::" + CANCEL_EARLY],
        "approvals": [REACH + "::test_permission_denied_by_a_later_reply_does_not_run_the_command",
                      REACH + "::test_permission_allowed_by_a_later_reply_runs_the_command"],
        "resume": [REACH + "::test_send_after_idle_exit_resumes_the_conversation"],
        "usage": [REACH + "::test_a_run_reports_the_tokens_the_model_counted"],
        "cost": [REACH + "::test_a_run_reports_the_tokens_the_model_counted"],  # asserts the recipe's cost trait
        "crash-recovery": [REACH + "::test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on"],
        "fork": [REACH + "::test_a_fork_continues_the_session_and_the_original_never_sees_the_forks_turns"],
    },
    PYPI_TESTS: {
        "cancel": [PYPI_TESTS + "::test_cancel_ends_the_running_run_cancelled",
                   PYPI_TESTS + "::" + CANCEL_EARLY],
        "approvals": [PYPI_TESTS + "::test_permission_denied_by_a_later_reply_does_not_run_the_command",
                      PYPI_TESTS + "::test_permission_allowed_by_a_later_reply_runs_the_command"],
        "resume": [PYPI_TESTS + "::" + PYPI_KILLED],
        "crash-recovery": [PYPI_TESTS + "::" + PYPI_KILLED],
        "fork": [PYPI_TESTS + "::test_a_fork_continues_the_session_and_the_original_never_sees_the_forks_turns"],
    },
}
DEGRADED = {  # (test module, capability) -> the test that shows the weaker form
    (ACP, "steer"): ACP + "::test_a_send_mid_turn_on_gemini_waits_for_its_own_next_run",
    (ACP, "resume"): ACP + "::test_gemini_after_idle_exit_starts_a_new_session_and_says_so",
    (ACP, "fork"): FORK + "::test_a_gemini_file_cannot_be_forked_and_fork_says_why",
    (REACH, "steer"): REACH + "::test_a_send_mid_turn_is_queued_for_its_own_next_run",
    (REACH, "approvals"): REACH + "::test_a_command_runs_without_asking",
    (REACH, "fork"): REACH + "::test_fork_refuses_the_file_of_an_agent_that_cannot_fork_and_says_why",
    (PYPI_TESTS, "steer"): PYPI_TESTS + "::test_a_send_mid_turn_is_queued_for_its_own_next_run",
    (PYPI_TESTS, "approvals"): PYPI_TESTS + "::test_a_command_runs_without_asking",
    (PYPI_TESTS, "cancel"): PYPI_TESTS + "::test_cancel_ends_the_running_run_cancelled",
    (PYPI_TESTS, "fork"): PYPI_TESTS + "::test_fork_refuses_the_file_of_an_agent_that_cannot_fork_and_says_why",
}


def collected() -> Dict[str, Set[str]]:
    """{"FILE::TEST": its parameter ids} of every test pytest collects from the
    modules the proofs name ("" for a test with no parameters)."""
    paths = sorted({ACP, REACH, PYPI_TESTS, FORK})
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    out = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, out
    ids: Dict[str, Set[str]] = {}
    for line in out.splitlines():
        if "::" in line:
            node, _, param = line.partition("[")
            ids.setdefault(node, set()).add(param.rstrip("]"))
    return ids


COLLECTED = collected()


def agents_of(test: str) -> List[str]:
    """The agents a test runs for (the first part of each of its parameter ids),
    or gemini for a test of test_acp_real.py with no parameters named for it."""
    ids = COLLECTED.get(test, set())
    if ids == {""}:
        return ["gemini"] if "gemini" in test.partition("::")[2] else []
    return [agent for agent in PRESETS if any(i == agent or i.startswith(agent + "-") for i in ids)]


def costs(agent: str) -> bool:
    """Whether the usage test asserts a cost for this agent."""
    return agent == "claude" if agent in AGENTS else trait(agent, "cost") is not None


def test_every_capability_a_preset_claims_is_proved_against_that_agent():
    for agent, preset in PRESETS.items():
        proofs = PROOFS.get(preset.get("tests", ""), {})
        for word in preset["capabilities"]:
            assert word in proofs, (agent, word, preset.get("tests"))
            runs_for = [agents_of(t) for t in proofs[word]]
            assert all(agent in agents for agents in runs_for), (agent, word, runs_for)
            assert word != "cost" or costs(agent), (agent, word)


def test_every_degraded_capability_names_a_test_that_runs_for_that_agent():
    for agent, preset in PRESETS.items():
        for word in preset.get("degraded", {}) if "tests" in preset else ():
            test = DEGRADED.get((preset.get("tests", ""), word))
            assert test is not None and agent in agents_of(test), (agent, word)


def test_every_named_proof_is_a_test_pytest_collects():
    named = [t for proofs in PROOFS.values() for tests in proofs.values() for t in tests] + list(DEGRADED.values())
    assert [test for test in named if test not in COLLECTED] == []


def test_every_reach_agent_with_a_recipe_is_a_preset_tested_there():
    assert [a for a, p in PRESETS.items() if p.get("tests") == REACH] == written()


def test_every_pypi_agent_with_a_recipe_is_a_preset_tested_there():
    assert [a for a, p in PRESETS.items() if p.get("tests") == PYPI_TESTS] == written(PYPI)


def test_a_reach_presets_modes_are_ones_its_recipe_proved():
    for agent in written() + written(PYPI):
        table = PRESETS[agent].get("modes", {})
        assert {mode: trait(agent, "modes").get(mode) for mode in table} == table, agent


def test_presets_not_tested_here_claim_nothing_and_say_why():
    for agent, preset in PRESETS.items():
        if "tests" not in preset:
            assert (preset["capabilities"], preset["version"], "modes" in preset) == ([], None, False), agent
            assert preset.get("unproven"), agent
            assert list(preset["degraded"]) == ["fork"] and preset["degraded"]["fork"].startswith("not proven: ")


def test_every_preset_claims_fork_or_says_in_one_phrase_why_not():
    """`harnessctl fork` quotes degraded.fork when it refuses a preset's file:
    one short phrase naming the agent and its version (or "not proven")."""
    for agent, preset in PRESETS.items():
        why = preset.get("degraded", {}).get("fork")
        assert ("fork" in preset["capabilities"]) != bool(why), agent
        if why and "tests" in preset:
            assert preset["version"].split()[0] in why and len(why) <= 120, (agent, why)


def test_the_acp_pages_presets_table_is_the_manifests():
    with open(os.path.join(ROOT, "docs", "ACP.md"), encoding="utf-8") as f:
        assert readme.presets_table() in f.read()
