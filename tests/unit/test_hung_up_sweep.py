"""The look for `wait` commands that hung up runs each second only while a
wait is held (issue 50): an idle runtime holds none, and must not wake for it."""

from __future__ import annotations

from harnessctl.runtime.watches import HUNG_UP_CHECK, Watches


class Waiter:
    def __init__(self):
        self.gone = False
        self.replies = []

    def hung_up(self):
        return self.gone

    def reply(self, response):
        self.replies.append(response)


def watches():
    """Watches over a running conversation (a conversation-wide wait stays open), and their timers."""
    later = []
    return Watches(None, None, lambda: {"state": "running"}, lambda s, fn: later.append((s, fn))), later


def run(later):
    due, later[:] = list(later), []
    for _, fn in due:
        fn()


def test_no_look_is_armed_while_no_wait_is_held():
    _, later = watches()
    assert later == []


def test_a_held_wait_arms_one_look_however_many_come():
    w, later = watches()
    w.add(None, Waiter())
    w.add(None, Waiter())
    assert [seconds for seconds, _ in later] == [HUNG_UP_CHECK]


def test_the_look_drops_a_hung_up_wait_and_stops_once_none_is_held():
    w, later = watches()
    waiter = Waiter()
    w.add(None, waiter)
    run(later)
    assert [seconds for seconds, _ in later] == [HUNG_UP_CHECK] and waiter.replies == []  # still waiting
    waiter.gone = True
    run(later)
    assert w.open == [] and waiter.replies == [b""] and later == []
