"""Torture scenario: waiters under cancel, replies and kill -9 (tests/support/torture_waiters.py).
8 rounds by default, 60 with HARNESSCTL_TORTURE=full; HARNESSCTL_TORTURE_SEED replays a run."""

from __future__ import annotations

import os
import random

import pytest
from torture_support import assert_no_leftovers, count
from torture_waiters import MOMENTS, Waiters, many_waiters

pytestmark = pytest.mark.torture


def test_every_waiter_returns_a_line_of_the_file_and_the_exit_code_it_means(workdir):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    rounds = count(8, 60)
    game = Waiters(str(workdir), seed)
    stats = game.play(rounds)
    print(stats)
    assert stats["rounds"] == rounds and stats["waiters"] >= rounds
    if rounds >= 40:
        assert all(stats["by_moment"][m] for m in MOMENTS), stats["by_moment"]
    assert_no_leftovers(str(workdir), [game.path])


def test_2000_waits_held_at_once_leave_status_and_cancel_answering_and_each_gets_the_result(workdir):
    """Issue 19: the runtime was started under the common soft limit of 1024 descriptors."""
    stats = many_waiters(str(workdir), 2000)
    print(stats)
    assert stats["waiters"] == 2000
