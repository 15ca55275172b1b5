"""The codex manifest: it loads through the registry and every capability it
claims is backed by a named test."""

from __future__ import annotations

import json
import os

from cliutil import ROOT
from proofs import missing

from adapters.codex.backend import CodexBackend
from harnessctl.store import registry

MANIFEST = os.path.join(ROOT, "adapters", "codex", "manifest.json")
BACKEND, FAKE = "tests/adapters/codex/test_codex_backend.py::", "tests/adapters/codex/test_codex_fake.py::"
REAL, FORK = "tests/real/test_codex_real.py::", "tests/real/test_fork_real.py::"

BACKED_BY = {
    "steer": [REAL + "test_steer_lands_in_the_same_run_with_one_result_for_both_inputs",
              FAKE + "test_steer_that_loses_the_race_with_turn_end_starts_a_new_run",
              FAKE + "test_steer_answered_after_its_turn_ended_still_counts_in_that_run"],
    "cancel": [REAL + "test_cancel_mid_stream_gives_a_cancelled_result_and_no_half_message",
               REAL + "test_unreachable_model_endpoint_retries_visibly_and_cancel_ends_it",
               FAKE + "test_endless_retry_loop_stays_visible_and_cancellable",
               BACKEND + "test_cancel_before_the_turn_id_is_known_interrupts_once_it_is"],
    "approvals": [REAL + "test_approval_allowed_by_a_later_reply_runs_the_command",
                  REAL + "test_approval_denied_by_a_later_reply_does_not_run_the_command",
                  REAL + "test_file_change_approval_shows_the_diff"],
    "questions": [REAL + "test_question_answered_by_reply_reaches_the_model"],
    "resume": [REAL + "test_idle_exit_then_send_resumes_the_thread_with_its_history",
               REAL + "test_kill_9_of_the_runtime_fails_the_run_without_replay_and_the_next_send_resumes"],
    "usage": [REAL + "test_plain_run_gives_message_and_completed_result_with_usage"],
    "crash-recovery": [FAKE + "test_app_server_crash_fails_the_run_and_the_next_send_resumes_the_thread"],
    "structured-output": [REAL + "test_schema_send_prints_a_result_whose_output_json_is_the_answer",
                          REAL + "test_schema_send_reaches_the_model_as_the_responses_json_schema_format",
                          REAL + "test_schema_answer_that_is_not_json_fails_the_run_with_exit_7"],
    "fork": [FORK + "test_a_codex_fork_continues_the_thread_and_the_original_never_sees_the_forks_turns",
             FAKE + "test_a_fork_continues_the_thread_in_its_own_cwd_and_the_original_goes_on_without_it"],
}


def test_every_capability_in_the_manifest_is_backed_by_a_test():
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    assert sorted(manifest["capabilities"]) == sorted(BACKED_BY)
    assert [capability for capability, tests in BACKED_BY.items() if not tests] == []
    assert missing(proof for tests in BACKED_BY.values() for proof in tests) == []  # none renamed or removed


def test_registry_loads_the_codex_backend_and_the_pinned_harness():
    assert registry.backend_class("codex") is CodexBackend
    harness = registry.manifest("codex")["harness"]
    assert harness["version"] == "0.171.0" and harness["binary_env"] == "HARNESSCTL_CODEX_BIN"
