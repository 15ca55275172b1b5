"""The runtime's loop (harnessctl/runtime/loop.py): commands are served before, and
in between, the jobs a flooding harness queued (issue 19, section 7)."""

from __future__ import annotations

from harnessctl.runtime.loop import Loop


def test_a_command_runs_before_the_harness_lines_queued_ahead_of_it():
    loop, ran = Loop(on_error=print), []
    for i in range(3):
        loop.post(lambda i=i: ran.append("lines %d" % i))
    loop.post(lambda: ran.append("status"), owner="waiter")
    loop.run_once(0)
    assert ran == ["status"]
    for _ in range(3):
        loop.run_once(0)
    assert ran == ["status", "lines 0", "lines 1", "lines 2"]


def test_a_long_job_lets_the_waiting_commands_in_between_its_steps():
    loop, ran = Loop(on_error=print), []

    def batch() -> None:
        for i in range(3):
            ran.append("line %d" % i)
            if i == 0:
                loop.post(lambda: ran.append("status"), owner="waiter")
            loop.run_commands()

    loop.post(batch)
    loop.run_once(0)
    assert ran == ["line 0", "status", "line 1", "line 2"]


def test_commands_keep_their_order_and_drain_hands_back_their_owners():
    loop, ran = Loop(on_error=print), []
    loop.post(lambda: ran.append("send"), owner="a")
    loop.post(lambda: ran.append("lines"))
    loop.post(lambda: ran.append("cancel"), owner="b")
    loop.run_once(0)
    assert ran == ["send"]
    assert loop.drain() == ["b"]
