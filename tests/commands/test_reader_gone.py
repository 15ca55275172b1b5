"""A command that blocks ends once nobody reads its stdout (stdio.end_with_reader):
the pipe's reader exited, or the ssh that ran it on this machine is gone.
It ends as Ctrl-C ends it, exit 130, and the run goes on."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from cliutil import interruptible, of_type, ok, start, status, wait_for


def busy(efile):
    ok("send", efile, "/sleep 60", "--adapter", "mock")
    wait_for(lambda: status(efile)["state"] == "running", what="running")


def ended_when_reader_gone(*args, preexec_fn=interruptible):
    proc = start(*args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=preexec_fn)
    proc.stdout.close()  # the reader goes away
    wait_for(lambda: proc.poll() is not None, what="the command ended")
    return proc.returncode


def test_wait_ends_with_130_when_its_reader_is_gone_and_the_run_goes_on(efile):
    busy(efile)
    assert ended_when_reader_gone("wait", efile) == 130
    assert status(efile)["state"] == "running"


def test_wait_any_ends_when_its_reader_is_gone(efile):
    busy(efile)
    assert ended_when_reader_gone("wait", "--any", efile) == 130


def test_log_follow_ends_when_its_reader_is_gone(efile):
    busy(efile)
    # 130 when the reader went first; 2 when the transcript it prints at once met the closed pipe
    # first (EPIPE, as `log | true`): either way it ends, and does not follow on for nobody
    assert ended_when_reader_gone("log", "--follow", efile) in (130, 2)


def test_send_wait_ends_when_its_reader_is_gone_after_the_input_was_accepted(efile):
    busy(efile)
    assert ended_when_reader_gone("send", efile, "steer", "--wait") == 130
    assert [e["text"] for e in of_type(efile, "accepted")] == ["/sleep 60", "steer"]


def sigint_ignored():
    """As a script's background job has it (`harnessctl wait F | head -1 &` in sh without job control)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def sigint_blocked():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@pytest.mark.parametrize("caller", [sigint_ignored, sigint_blocked], ids=["ignored", "blocked"])
def test_a_wait_whose_caller_ignores_or_blocks_sigint_still_ends_with_130_when_its_reader_is_gone(efile, caller):
    busy(efile)
    assert ended_when_reader_gone("wait", efile, preexec_fn=caller) == 130
    assert status(efile)["state"] == "running"


def test_a_reader_gone_before_the_start_ends_it_by_its_code_never_by_the_signal(efile):
    """The watcher's SIGINT and the first write's EPIPE come together: whichever
    wins, the command leaves with its code (130 or 2), never killed by SIGINT."""
    busy(efile)
    codes = set()
    for _ in range(20):
        read, write = os.pipe()
        os.close(read)  # nobody will ever read
        proc = start("log", "--follow", efile, stdout=write, stderr=subprocess.DEVNULL, preexec_fn=interruptible)
        os.close(write)
        codes.add(proc.wait(timeout=60))
    assert codes <= {130, 2}, codes
