"""Every capability an ACP preset claims in adapters/acp/manifest.json (and
every `degraded` one) names the test of tests/test_acp_real.py that proves it
against that real agent: a claim with no such test, or a test that does not
run for that agent, fails here (no agent needed to check that)."""

from __future__ import annotations

import test_acp_real as real

from harnessctl import registry

ALL = ("codex", "claude", "gemini")

# capability -> the real-agent tests that prove it, each with the agents it runs for
PROOFS = {
    "steer": [real.test_a_send_mid_turn_steers_into_the_same_run],
    "cancel": [real.test_cancel_ends_the_running_run_cancelled],
    "approvals": [real.test_permission_denied_by_a_later_reply_does_not_run_the_command,
                  real.test_permission_allowed_by_a_later_reply_runs_the_command],
    "resume": [real.test_send_after_idle_exit_resumes_the_conversation],
    "usage": [real.test_a_run_reports_the_tokens_the_model_counted],
    "cost": [real.test_a_run_reports_the_tokens_the_model_counted],  # asserts cost_usd for claude only
    "crash-recovery": [real.test_an_agent_killed_mid_run_fails_the_run_and_the_next_send_goes_on],
}
DEGRADED = {  # (agent, capability) -> the test that shows the weaker form
    ("gemini", "steer"): real.test_a_send_mid_turn_on_gemini_waits_for_its_own_next_run,
    ("gemini", "resume"): real.test_gemini_after_idle_exit_starts_a_new_session_and_says_so,
}
COST = ("claude",)  # the agents whose usage_update reports a cost


def agents_of(test) -> tuple:
    """The agents a test of test_acp_real.py runs for (its `agent` parameter)."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "agent":
            return tuple(mark.args[1])
    return ()


def test_every_capability_a_preset_claims_is_proved_against_that_agent():
    for agent, preset in registry.manifest("acp")["agents"].items():
        for word in preset["capabilities"]:
            assert word in PROOFS, (agent, word)
            runs_for = [agents_of(t) for t in PROOFS[word]]
            assert all(agent in agents for agents in runs_for), (agent, word, runs_for)
            assert word != "cost" or agent in COST, (agent, word)


def test_every_degraded_capability_names_its_test():
    for agent, preset in registry.manifest("acp")["agents"].items():
        for word in preset.get("degraded", {}):
            assert (agent, word) in DEGRADED, (agent, word)


def test_presets_not_tested_here_claim_nothing():
    for agent, preset in registry.manifest("acp")["agents"].items():
        if agent not in ALL:
            assert (preset["capabilities"], preset["version"]) == ([], None), agent
