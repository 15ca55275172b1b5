"""Why no box can be made (harnessctl/landlock.py): the one line a send with
--sandbox exits 2 with, for each kind of system that cannot give one."""

from __future__ import annotations

import sys

from harnessctl import landlock


def test_a_system_that_is_not_linux_is_named(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert landlock.why_not() == ('--sandbox needs Linux\'s Landlock; this system is darwin '
                                  '(docs/OPERATIONS.md, "The box")')


def test_a_kernel_without_landlock_is_named_with_its_release(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(landlock, "abi", lambda: 0)
    reason = landlock.why_not()
    assert reason is not None and "does not offer" in reason and "lsm=" in reason


def test_a_kernel_with_an_older_abi_is_named_with_the_abi_it_offers(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(landlock, "abi", lambda: 4)
    reason = landlock.why_not()
    assert reason is not None and "needs Landlock ABI 6" in reason and "offers ABI 4" in reason

