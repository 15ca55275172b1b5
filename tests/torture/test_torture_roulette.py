"""Torture scenario 1: kill -9 roulette (issue 5).

The runtime of one event file is killed with SIGKILL at random moments (its
own start-up, the harness start, steering, a pending request being answered,
a result being written, the idle exit with a send racing it), round after
round.  After every round the whole file is checked: every send that exited 0
is accepted exactly once, nothing is duplicated or replayed, every input ends
in exactly one result, and the file stays valid.  The mock adapter plays 30
rounds by default and 200 with HARNESSCTL_TORTURE=full; the Codex and Claude
Code adapters, against the fake harnesses of their own tests (whose logs show
that no input reached a harness twice), 6 and 50.
HARNESSCTL_TORTURE_SEED replays a run."""

from __future__ import annotations

import os
import random

import pytest
from torture_support import ClaudeRoulette, CodexRoulette, Roulette, assert_no_leftovers, count

pytestmark = pytest.mark.torture


def play(roulette_class, workdir, rounds):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    roulette = roulette_class(str(workdir), seed)
    stats = roulette.play(rounds)
    print(stats)
    assert stats["kills"] == rounds
    assert all(stats["by_moment"][m] for m in roulette.moments), stats["by_moment"]
    assert_no_leftovers(str(workdir), [roulette.path])


def test_kill_9_roulette_loses_duplicates_and_replays_nothing(workdir):
    play(Roulette, workdir, count(30, 200))


@pytest.mark.parametrize("roulette_class", [CodexRoulette, ClaudeRoulette], ids=["codex", "claudecode"])
def test_kill_9_roulette_with_a_real_adapter_over_its_fake_harness(roulette_class, workdir):
    if not os.path.isfile(roulette_class.fake):
        pytest.skip("no fake harness for the %s adapter" % roulette_class.adapter)
    play(roulette_class, workdir, count(6, 50))
