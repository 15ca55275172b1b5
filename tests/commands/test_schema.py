"""Every event the project writes validates against schema/events.schema.json."""

from __future__ import annotations

import os
import signal

import schemacheck
from cliutil import events, of_type, ok, runtime_pids, status, wait_for, wait_results


def test_the_checker_rejects_a_bad_event():
    assert schemacheck.check_event({"type": "result", "ts": "now", "seq": 0})


def test_every_event_of_a_busy_session_validates(efile):
    ok("send", efile, "/sleep 0.5\nhello", "--adapter", "mock")
    ok("send", efile, "steer")
    wait_results(efile, 1)
    ok("send", efile, "/permission p?")
    wait_for(lambda: of_type(efile, "request"), what="request")
    ok("reply", efile, "req-1", "allow")
    ok("send", efile, "/question q?")
    wait_for(lambda: len(of_type(efile, "request")) == 3, what="question")
    ok("reply", efile, "req-2", "yes")
    ok("send", efile, "/fail boom")
    ok("send", efile, "/permission never answered")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="second permission")
    ok("cancel", efile)
    wait_results(efile, 5)
    ok("send", efile, "/crash")
    wait_results(efile, 6)
    ok("send", efile, "/sleep 30")
    [pid] = runtime_pids(efile)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(efile), what="runtime gone")
    status(efile)
    written = events(efile)
    assert {e["type"] for e in written} == {"accepted", "message", "request", "result", "log"}
    for event in written:
        assert schemacheck.check_event(event) == [], event
