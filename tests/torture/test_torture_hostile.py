"""Torture class: the hostile agent (issue 19).

An ACP agent that writes harnessctl's files, sends escape sequences in every
field it controls, floods, never answers a cancel and streams without a
newline (tests/support/torture_hostile.py says what each round checks, and which
finding of issue 19 each check waits for).  One round per behaviour, then
mixed rounds: 3 by default, 40 with HARNESSCTL_TORTURE=full.
HARNESSCTL_TORTURE_SEED replays a run.  Alone:

    python3 -m pytest -q tests/torture/test_torture_hostile.py [-k junk]
"""

from __future__ import annotations

import os
import random

import pytest
import torture_hostile
from torture_support import count

pytestmark = pytest.mark.torture


def seed() -> int:
    value = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % value)
    return value


@pytest.mark.parametrize("behaviour", torture_hostile.BEHAVIOURS)
def test_one_hostile_behaviour(behaviour, workdir):
    print(torture_hostile.hostile(str(workdir), 1, seed(), behaviours=(behaviour,)))


def test_mixed_hostile_rounds(workdir):
    stats = torture_hostile.hostile(str(workdir), count(3, 40), seed())
    print(stats)
