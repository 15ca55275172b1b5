"""Torture scenario 1: kill -9 roulette (issue 5).

The runtime of one event file is killed with SIGKILL at random moments (its
own start-up, the harness start, steering, a pending request being answered,
a result being written, the idle exit with a send racing it), round after
round.  After every round the whole file is checked: every send that exited 0
is accepted exactly once, nothing is duplicated or replayed, every input ends
in exactly one result, and the file stays valid.  30 rounds by default, 200
with HARNESSCTL_TORTURE=full; HARNESSCTL_TORTURE_SEED replays a run."""

from __future__ import annotations

import os
import random

import pytest
from torture_support import MOMENTS, Roulette, assert_no_leftovers, count

pytestmark = pytest.mark.torture


def test_kill_9_roulette_loses_duplicates_and_replays_nothing(workdir):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    rounds = count(30, 200)
    stats = Roulette(str(workdir), seed).play(rounds)
    print(stats)
    assert stats["kills"] == rounds
    assert all(stats["by_moment"][m] for m in MOMENTS), stats["by_moment"]
    assert_no_leftovers(str(workdir), [os.path.join(str(workdir), "roulette.jsonl")])
