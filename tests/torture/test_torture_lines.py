"""Torture class "hostile line" (issue 19): every field of every event type given
every wrong JSON type (null, booleans, numbers huge and non-finite, strings
escaped and not, arrays, objects, the field left out), appended as foreign
lines to a session's event file with a live runtime, a stopped one and a lost
one, in random rounds (tests/support/torture_lines.py).  After each round status,
wait, cancel, send and log exit with documented codes (never 1), and the file
passes the independent checker while the fold reads it as it reads the file
without those lines.  6 rounds by default, 40 with HARNESSCTL_TORTURE=full;
HARNESSCTL_TORTURE_SEED replays a run."""

from __future__ import annotations

import json
import os
import random

import pytest
import torture_lines
from torture_support import assert_no_leftovers, count

from harnessctl.eventfile.state import fold

pytestmark = pytest.mark.torture


def test_the_class_gives_every_field_of_every_event_type_a_wrong_value():
    """Of the ~30 wrong values at least 18 are wrong for any field (the rest
    are values a field of that type takes, such as null where null is allowed)."""
    templates = torture_lines.templates("inp-1", "run-1")
    for kind, field in torture_lines.all_fields():
        wrong = [raw for raw in torture_lines.WRONG
                 if torture_lines.is_hostile(torture_lines.variant(templates[kind], field, raw))]
        assert len(wrong) >= 18, (kind, field, wrong)
    assert len(torture_lines.catalogue("inp-1", "run-1")) > 1000


def test_the_fold_takes_nothing_from_a_hostile_line():
    """Each line alone: the fold opens, closes and counts nothing."""
    for line in torture_lines.catalogue("inp-1", "run-1"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        conv = fold([event] if isinstance(event, dict) and "type" in event else [])
        assert not conv.is_busy() and conv.inputs_seen == conv.results_seen == conv.request_count == 0, line
        assert conv.seq <= 1, line  # a seq beyond 2^53 - 1 never counts


def test_hostile_lines_never_break_a_command_or_the_record(workdir):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    rounds = count(6, 40)
    stats = torture_lines.hostile_lines(str(workdir), rounds, seed)
    print(stats)
    assert stats["rounds"] == rounds and stats["lines"] > 0
    assert_no_leftovers(str(workdir), [])
