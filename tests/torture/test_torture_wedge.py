"""Torture scenario: an agent that tries to wedge its runtime (tests/support/torture_wedge.py).
6 rounds by default, 40 with HARNESSCTL_TORTURE=full; HARNESSCTL_TORTURE_SEED replays a run."""

from __future__ import annotations

import os
import random

import pytest
from torture_support import count
from torture_wedge import Wedges

pytestmark = pytest.mark.torture


def test_no_misbehaviour_of_the_agent_wedges_the_runtime_or_breaks_the_file(workdir):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    rounds = count(6, 40)
    stats = Wedges(str(workdir), seed).play(rounds)
    print(stats)
    assert stats["rounds"] == rounds
