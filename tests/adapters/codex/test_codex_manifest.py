"""The codex manifest: it loads through the registry and every capability it
claims is backed by a named test."""

from __future__ import annotations

import json
import os

import test_codex_backend
import test_codex_fake
import test_codex_real
import test_fork_real
from cliutil import ROOT

from adapters.codex.backend import CodexBackend
from harnessctl.store import registry

MANIFEST = os.path.join(ROOT, "adapters", "codex", "manifest.json")

BACKED_BY = {
    "steer": [test_codex_real.test_steer_lands_in_the_same_run_with_one_result_for_both_inputs,
              test_codex_fake.test_steer_that_loses_the_race_with_turn_end_starts_a_new_run,
              test_codex_fake.test_steer_answered_after_its_turn_ended_still_counts_in_that_run],
    "cancel": [test_codex_real.test_cancel_mid_stream_gives_a_cancelled_result_and_no_half_message,
               test_codex_real.test_unreachable_model_endpoint_retries_visibly_and_cancel_ends_it,
               test_codex_fake.test_endless_retry_loop_stays_visible_and_cancellable,
               test_codex_backend.test_cancel_before_the_turn_id_is_known_interrupts_once_it_is],
    "approvals": [test_codex_real.test_approval_allowed_by_a_later_reply_runs_the_command,
                  test_codex_real.test_approval_denied_by_a_later_reply_does_not_run_the_command,
                  test_codex_real.test_file_change_approval_shows_the_diff],
    "questions": [test_codex_real.test_question_answered_by_reply_reaches_the_model],
    "resume": [test_codex_real.test_idle_exit_then_send_resumes_the_thread_with_its_history,
               test_codex_real.test_kill_9_of_the_runtime_fails_the_run_without_replay_and_the_next_send_resumes],
    "usage": [test_codex_real.test_plain_run_gives_message_and_completed_result_with_usage],
    "crash-recovery": [test_codex_fake.test_app_server_crash_fails_the_run_and_the_next_send_resumes_the_thread],
    "structured-output": [test_codex_real.test_schema_send_prints_a_result_whose_output_json_is_the_answer,
                          test_codex_real.test_schema_send_reaches_the_model_as_the_responses_json_schema_format,
                          test_codex_real.test_schema_answer_that_is_not_json_fails_the_run_with_exit_7],
    "fork": [test_fork_real.test_a_codex_fork_continues_the_thread_and_the_original_never_sees_the_forks_turns,
             test_codex_fake.test_a_fork_continues_the_thread_in_its_own_cwd_and_the_original_goes_on_without_it],
}


def test_every_capability_in_the_manifest_is_backed_by_a_test():
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    assert sorted(manifest["capabilities"]) == sorted(BACKED_BY)
    # a renamed or removed test already breaks BACKED_BY as this module loads; left: a claim backed by nothing
    assert [capability for capability, tests in BACKED_BY.items() if not tests] == []


def test_registry_loads_the_codex_backend_and_the_pinned_harness():
    assert registry.backend_class("codex") is CodexBackend
    harness = registry.manifest("codex")["harness"]
    assert harness["version"] == "0.171.0" and harness["binary_env"] == "HARNESSCTL_CODEX_BIN"
