"""Every capability an ACP preset claims in adapters/acp/manifest.json (and
every `degraded` one) names a test of the module the preset's `tests` key
names (tests/real/test_acp_real.py for codex, claude and gemini, with their
fork in tests/real/test_fork_real.py; tests/real/test_acp_reach_real.py for
the reach agents, test_acp_pypi_real.py for the PyPI ones) that proves it
against that real agent: a claim with no such test, or a test that does not run for
that agent, fails here (no agent needed to check that).  docs/ACP.md's
presets table is the manifest's."""

from __future__ import annotations

import os

import readme
import test_acp_pypi_real as pypi
import test_acp_reach_real as reach
import test_acp_real as real
import test_fork_real as fork
from acp_support.recipes import PYPI, trait, written
from cliutil import ROOT

from harnessctl.store import registry

PRESETS = registry.manifest("acp")["agents"]

# capability -> the real-agent tests that prove it, each with the agents it runs for
PROOFS = {
    "tests/real/test_acp_real.py": {
        "steer": [real.test_a_send_mid_turn_steers_into_the_same_run],
        "cancel": [real.test_cancel_ends_the_running_run_cancelled],
        "approvals": [real.test_permission_denied_by_a_later_reply_does_not_run_the_command,
                      real.test_permission_allowed_by_a_later_reply_runs_the_command],
        "resume": [real.test_send_after_idle_exit_resumes_the_conversation],
        "usage": [real.test_a_run_reports_the_tokens_the_model_counted],
        "cost": [real.test_a_run_reports_the_tokens_the_model_counted],  # asserts cost_usd for claude only
        "crash-recovery": [real.test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on],
        "fork": [fork.test_an_acp_fork_continues_the_session_and_the_original_never_sees_the_forks_turns],
    },
    "tests/real/test_acp_reach_real.py": reach.PROOFS,
    "tests/real/test_acp_pypi_real.py": pypi.PROOFS,
}
DEGRADED = {  # (test module, capability) -> the test that shows the weaker form
    ("tests/real/test_acp_real.py", "steer"): real.test_a_send_mid_turn_on_gemini_waits_for_its_own_next_run,
    ("tests/real/test_acp_real.py", "resume"): real.test_gemini_after_idle_exit_starts_a_new_session_and_says_so,
    ("tests/real/test_acp_real.py", "fork"): fork.test_a_gemini_file_cannot_be_forked_and_fork_says_why,
    ("tests/real/test_acp_reach_real.py", "steer"): reach.DEGRADED["steer"],
    ("tests/real/test_acp_reach_real.py", "approvals"): reach.DEGRADED["approvals"],
    ("tests/real/test_acp_reach_real.py", "fork"): reach.DEGRADED["fork"],
    ("tests/real/test_acp_pypi_real.py", "steer"): pypi.DEGRADED["steer"],
    ("tests/real/test_acp_pypi_real.py", "approvals"): pypi.DEGRADED["approvals"],
    ("tests/real/test_acp_pypi_real.py", "cancel"): pypi.DEGRADED["cancel"],
    ("tests/real/test_acp_pypi_real.py", "fork"): pypi.DEGRADED["fork"],
}


def agents_of(test) -> tuple:
    """The agents a test runs for (its `agent` parameter), or ("gemini",) for a
    test of test_acp_real.py named for gemini."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "agent":
            return tuple(mark.args[1])
    return ("gemini",) if "gemini" in test.__name__ else ()


def costs(agent: str) -> bool:
    """Whether the usage test asserts a cost for this agent."""
    return agent == "claude" if agent in real.AGENTS else trait(agent, "cost") is not None


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


def test_every_reach_agent_with_a_recipe_is_a_preset_tested_there():
    assert [a for a, p in PRESETS.items() if p.get("tests") == "tests/real/test_acp_reach_real.py"] == written()


def test_every_pypi_agent_with_a_recipe_is_a_preset_tested_there():
    assert [a for a, p in PRESETS.items() if p.get("tests") == "tests/real/test_acp_pypi_real.py"] == written(PYPI)


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
