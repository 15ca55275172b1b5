"""The core's holding of sends for a harness that cannot steer
(harnessctl/holding.py): accepted queued at once, one next run for all of
them with each attributed to it, cancelled results on a cancel."""

from __future__ import annotations

from fakehost import FakeHost

from harnessctl.backend import Input
from harnessctl.holding import HeldInputs


def held(host):
    started = []

    def start_run(items):
        started.append([i.text for i in items])
        return host.new_run()

    return HeldInputs(host, start_run), started


def test_a_held_input_is_accepted_queued_with_no_run():
    host = FakeHost()
    inputs, started = held(host)
    inputs.hold(Input("in-1", "one"))
    assert host.business() == [("accepted", "in-1", "queued", None)] and started == [] and inputs


def test_the_next_run_takes_every_held_input_in_order_and_attributes_each():
    host = FakeHost()
    inputs, started = held(host)
    inputs.hold(Input("in-1", "one"))
    inputs.hold(Input("in-2", "two"))
    inputs.start_next()
    assert started == [["one", "two"]] and not inputs
    assert host.named("attributed") == [("attributed", "in-1", "run-1"), ("attributed", "in-2", "run-1")]


def test_with_nothing_held_no_run_starts():
    host = FakeHost()
    inputs, started = held(host)
    inputs.start_next()
    assert started == [] and host.calls == []


def test_a_cancel_ends_every_held_input_cancelled_in_no_run():
    host = FakeHost()
    inputs, started = held(host)
    inputs.hold(Input("in-1", "one"))
    inputs.hold(Input("in-2", "two"))
    inputs.cancel()
    inputs.start_next()
    assert host.results() == [("result", None, ["in-1", "in-2"], "cancelled", {
        "output": "", "usage": None, "cost_usd": None, "error": None})] and started == []
