"""`harnessctl serve` drops a connection that does not send its request in time (HARNESSCTL_SERVE_TIMEOUT),
however it trickles its bytes, so idle sockets cannot hold a thread each forever; a live feed, once open,
is not dropped.  Raw sockets on 127.0.0.1; every wait is for a condition (the server closing), bounded by
WAIT only so that a failing test ends."""

from __future__ import annotations

import select
import socket
import time

import pytest
from cliutil import run
from servebed import WAIT, Scratch

TIMEOUT = "1"  # seconds: HARNESSCTL_SERVE_TIMEOUT for these tests


@pytest.fixture
def scratch(tmp_path):
    found = Scratch(tmp_path)
    found.env["HARNESSCTL_SERVE_TIMEOUT"] = TIMEOUT
    yield found
    found.close()


def connect(serve):
    return socket.create_connection((serve.address, serve.port), timeout=WAIT)


def closed_by_server(sock, trickle=b""):
    """Whether the server closes `sock` within WAIT, while the test sends `trickle` a byte every 0.2 s."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(trickle[:1])
                trickle = trickle[1:]
            if select.select([sock], [], [], 0.2)[0]:
                return sock.recv(65536) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_a_connection_that_sends_nothing_is_closed(scratch):
    serve = scratch.serve()
    with connect(serve) as sock:
        assert closed_by_server(sock)
    assert serve.get("/")[0] == 200  # and serve goes on serving


def test_a_connection_that_trickles_its_request_is_closed(scratch):
    """A byte every 0.2 s, never a whole request: each read is quick, the request never done."""
    serve = scratch.serve()
    request = b"GET /?token=%s HTTP/1.0\r\nHost: %s\r\n" % (serve.token.encode(), serve.host.encode())
    with connect(serve) as sock:
        assert closed_by_server(sock, request + b"X-Slow: " + b"a" * 1000)


def test_many_idle_connections_are_all_closed(scratch):
    serve = scratch.serve()
    sockets = [connect(serve) for _ in range(50)]
    try:
        assert all(closed_by_server(sock) for sock in sockets)
    finally:
        for sock in sockets:
            sock.close()


def test_a_feed_open_longer_than_the_timeout_still_gets_its_events(scratch):
    serve = scratch.serve()
    feed = serve.feed()
    assert feed.first_rows() == []
    with connect(serve) as sock:  # opened after the feed: once it is closed, the feed is older than the timeout
        assert closed_by_server(sock)
    path = scratch.file("new.jsonl")
    scratch.send(path, "hello", "--wait")
    feed.until(lambda name, data: name == "row" and data["file"] == path, "row of the new file")
    feed.close()


def test_a_request_sent_in_time_is_answered(scratch):
    serve = scratch.serve()
    assert serve.get("/")[0] == 200


@pytest.mark.parametrize("value", ["nan", "inf", "soon"])
def test_a_timeout_that_is_no_number_of_seconds_is_exit_2(scratch, value):
    env = dict(scratch.env, HARNESSCTL_SERVE_TIMEOUT=value)
    proc = run("serve", scratch.fleet, env=env, cwd=scratch.base)
    assert proc.returncode == 2, proc.stderr
    assert b"HARNESSCTL_SERVE_TIMEOUT" in proc.stderr
