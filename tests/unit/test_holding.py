"""The core's holding of sends for a harness that cannot steer
(harnessctl/kit/holding.py): accepted queued at once, one next run for all of
them with each attributed to it, cancelled results on a cancel."""

from __future__ import annotations

from fakehost import FakeHost

from harnessctl.kit.backend import Input
from harnessctl.kit.holding import HeldInputs


def holding(*texts):
    """(host, HeldInputs holding in-1, in-2, ... with `texts`, the texts of each run started)."""
    host, started = FakeHost(), []

    def start_run(items):
        started.append([i.text for i in items])
        return host.new_run()

    inputs = HeldInputs(host, start_run)
    for n, text in enumerate(texts, 1):
        inputs.hold(Input("in-%d" % n, text))
    return host, inputs, started


def test_a_held_input_is_accepted_queued_with_no_run():
    host, inputs, started = holding("one")
    assert host.business() == [("accepted", "in-1", "queued", None)] and started == [] and inputs


def test_the_next_run_takes_every_held_input_in_order_and_attributes_each():
    host, inputs, started = holding("one", "two")
    inputs.start_next()
    assert started == [["one", "two"]] and not inputs
    assert host.named("attributed") == [("attributed", "in-1", "run-1"), ("attributed", "in-2", "run-1")]


def test_with_nothing_held_no_run_starts():
    host, inputs, started = holding()
    inputs.start_next()
    assert started == [] and host.calls == []


def test_a_cancel_ends_every_held_input_cancelled_in_no_run():
    host, inputs, started = holding("one", "two")
    inputs.cancel()
    inputs.start_next()
    assert [c[1:4] for c in host.results()] == [(None, ["in-1", "in-2"], "cancelled")] and started == []
