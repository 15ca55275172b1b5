"""The claudecode manifest: well formed, and every capability it lists is
backed by a real-binary test that exists (in test_claudecode_real.py, or
test_fork_real.py for fork)."""

from __future__ import annotations

import json
import os

from cliutil import ROOT
from proofs import defined

from adapters.claudecode.backend import ClaudeCodeBackend
from harnessctl.store import registry

MANIFEST = os.path.join(ROOT, "adapters", "claudecode", "manifest.json")

BACKED_BY = {
    "steer": ["test_steer_during_a_slow_tool_lands_in_the_same_run",
              "test_steer_during_the_final_answer_becomes_the_next_run",
              "test_three_quick_sends_are_each_covered_by_exactly_one_result",
              "test_steer_while_a_permission_waits_is_folded_after_the_answer"],
    "cancel": ["test_cancel_mid_tool_gives_a_cancelled_result_and_keeps_the_session",
               "test_cancel_drops_a_queued_input_with_its_own_cancelled_result"],
    "approvals": ["test_permission_allow_by_reply_from_another_process_runs_the_tool",
                  "test_permission_deny_by_reply_does_not_run_the_tool",
                  "test_allow_session_stops_asking_for_the_same_command"],
    "questions": ["test_ask_user_question_is_answered_by_reply"],
    "resume": ["test_idle_exit_then_resume_keeps_the_history",
               "test_after_a_failed_first_turn_and_idle_exit_the_session_resumes"],
    "usage": ["test_plain_run_gives_accepted_message_and_completed_result"],
    "cost": ["test_plain_run_gives_accepted_message_and_completed_result"],
    "crash-recovery": ["test_claude_crash_mid_turn_fails_the_run_and_the_next_send_resumes",
                       "test_kill_9_of_the_runtime_fails_the_open_input_and_never_replays_it"],
    "structured-output": ["test_schema_send_prints_a_result_whose_output_json_is_the_structured_output",
                          "test_schema_send_reaches_the_model_as_claudes_structured_output_tool",
                          "test_schema_answer_in_prose_fails_the_run_with_exit_7",
                          "test_schema_answers_that_never_fit_fail_the_run_after_claudes_retries_with_exit_7",
                          "test_two_sends_with_different_schemas_on_one_file_are_both_honoured"],
    "fork": ["test_a_claude_code_fork_continues_the_session_and_the_original_never_sees_the_forks_turns"],
}


def load():
    with open(MANIFEST, encoding="utf-8") as fh:
        return json.load(fh)


def test_manifest_names_an_importable_backend():
    manifest = load()
    assert manifest["name"] == "claudecode" and manifest["version"]
    assert registry.backend_class("claudecode") is ClaudeCodeBackend
    assert manifest["harness"]["binary_env"] == "HARNESSCTL_CLAUDE_BIN"


def test_every_capability_is_backed_by_a_real_binary_test():
    capabilities = load()["capabilities"]
    assert capabilities and set(capabilities) == set(BACKED_BY)
    for capability in capabilities:
        assert BACKED_BY[capability], capability
        for name in BACKED_BY[capability]:
            assert name in defined("tests/real/test_claudecode_real.py") or name in defined(
                "tests/real/test_fork_real.py"), (capability, name)
