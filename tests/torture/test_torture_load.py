"""Torture scenarios 2 and 3: fan-in into one file, and many files at once (issue 5);
and concurrent sends, cancels and replies into one file.

Default counts keep `.ci/run` short on a small machine; HARNESSCTL_TORTURE=full
runs the issue's 64 senders x 10 sends and 100 files."""

from __future__ import annotations

import pytest
from torture_support import count, fan_in, many_files, storm

pytestmark = pytest.mark.torture


def test_fan_in_of_concurrent_senders_into_a_cold_file_accepts_every_send_once(workdir):
    senders, per_sender = count(16, 64), count(4, 10)
    stats = fan_in(str(workdir), senders, per_sender)
    print(stats)
    assert stats["accepted"] == senders * per_sender


def test_many_files_each_with_a_live_runtime_answer_and_then_all_idle_out_cleanly(workdir):
    files = count(12, 100)
    stats = many_files(str(workdir), files)
    print(stats)
    assert stats["alive_at_once"] == files


def test_concurrent_sends_cancels_and_replies_leave_every_input_with_one_result(workdir):
    stats = storm(str(workdir), 4, count(10, 50))
    print(stats)
    assert stats["cancels"] and stats["results"]
