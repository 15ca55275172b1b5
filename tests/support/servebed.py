"""`harnessctl serve` as the HTTP tests drive it (tests/serve/): a real serve
subprocess on a scratch folder of mock sessions made with the real CLI, its
URL line read, and its fleet feed followed."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import time
from urllib.parse import urlencode

from cliutil import cli_env, command, interruptible, kill_all_under, ok, wait_for

WAIT = 20.0  # seconds any one awaited answer, line or event may take before the test fails
URL = re.compile(r"http://(127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d+)/\?token=([A-Za-z0-9_-]{32,})\n\Z")
PERMISSION = "/permission command:npm test"


class Serve:
    """One `harnessctl serve` subprocess and the requests a test makes of it."""

    def __init__(self, args, env, cwd):
        self.proc = subprocess.Popen(command("serve", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=cwd, preexec_fn=interruptible)
        self.line = readline(self.proc.stdout)
        found = URL.match(self.line.decode())
        assert found, (self.line, self.proc.poll())
        self.port, self.token = int(found.group(2)), found.group(3)
        self.host = "%s:%d" % (found.group(1), self.port)  # the Host header the URL's browser sends
        self.address = {"0.0.0.0": "127.0.0.1", "[::1]": "::1"}.get(found.group(1), found.group(1))

    def stop(self, signum=signal.SIGTERM):
        """(exit code, what it printed on stdout after the URL line, its stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        out, err = self.proc.communicate(timeout=WAIT)
        return self.proc.returncode, out, err

    def path(self, path, token=True, **query):
        """`path` with its query: the file and, unless token is False (or a string: that one), the token."""
        if token:
            query["token"] = self.token if token is True else token
        return path + ("?" + urlencode(query) if query else "")

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body) of one request; Host is this server's unless `headers` names another."""
        connection = http.client.HTTPConnection(self.address, self.port, timeout=WAIT)
        try:
            sent = {"Host": self.host}
            sent.update(headers or {})
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            if response.getheader("Content-Type", "").startswith("text/event-stream"):
                return response.status, response.headers, b""  # a feed: its status is what is asked
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def get(self, path, headers=None, **query):
        return self.request("GET", self.path(path, **query), headers=headers)

    def post(self, action, body, token=True, headers=None):
        """(status, the JSON answer or None) of a POST; `body` a value sent as JSON, or bytes sent as they are."""
        sent = {"Content-Type": "application/json"}
        if token:
            sent["X-Harnessctl-Token"] = self.token if token is True else token
        sent.update(headers or {})
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, headers_, answer = self.request("POST", action, data, sent)
        is_json = headers_.get("Content-Type", "").startswith("application/json")
        return status, json.loads(answer) if is_json else None

    def feed(self, path="/events", **query):
        return Feed(self, self.path(path, **query))


class Feed:
    """A server-sent event stream read line by line: each event as (name, data)."""

    def __init__(self, serve, path):
        self.connection = http.client.HTTPConnection(serve.address, serve.port, timeout=WAIT)
        self.connection.request("GET", path, headers={"Host": serve.host})
        self.response = self.connection.getresponse()
        assert self.response.status == 200, (self.response.status, self.response.read())
        assert self.response.getheader("Content-Type").startswith("text/event-stream")

    def close(self):
        self.connection.close()

    def next(self, deadline=None):
        """The next event; a feed quiet but for its keep-alive comments fails the test at `deadline`."""
        deadline = deadline or time.monotonic() + WAIT
        name, data = "message", []
        while True:
            assert time.monotonic() < deadline, "no event on the feed within %gs" % WAIT
            line = self.response.readline()
            assert line, "the feed ended"
            line = line.decode().rstrip("\r\n")
            if not line:
                if data:
                    return name, json.loads("\n".join(data))
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)

    def until(self, found, what):
        """The first event for which found(name, data) is true; every event before it is skipped."""
        deadline = time.monotonic() + WAIT
        while True:
            name, data = self.next(deadline)
            if found(name, data):
                return name, data
            assert time.monotonic() < deadline, "no %s on the feed within %gs" % (what, WAIT)

    def first_rows(self):
        """The rows sent before `ready`: the fleet when the page opened."""
        rows = []
        while True:
            name, data = self.next()
            if name == "ready":
                return rows
            assert name == "row", (name, data)
            rows.append(data)


def readline(pipe):
    """One line of a child's pipe, or what there is when WAIT passed (a test fails on it, never hangs)."""
    ready, _, _ = select.select([pipe], [], [], WAIT)
    return pipe.readline() if ready else b""


class Scratch:
    """A scratch HOME, the mock sessions' --cwd, a served folder and a folder beside it (outside), and the
    serves started on them; event files are never inside the --cwd."""

    def __init__(self, base):
        self.base = str(base)
        self.home, self.cwd, self.fleet, self.outside = (os.path.join(self.base, name)
                                                         for name in ("home", "cwd", "fleet", "outside"))
        for folder in (self.home, self.cwd, self.fleet, self.outside):
            os.mkdir(folder)
        self.env = cli_env(HOME=self.home, HARNESSCTL_ADAPTER="mock")
        self.serves = []
        self.server = None  # the bed's one serve

    def file(self, name, folder=None):
        return os.path.join(folder or self.fleet, name)

    def send(self, path, text, *flags):
        ok("send", path, text, "--cwd", self.cwd, *flags, env=self.env)

    def asking(self, path):
        """A session awaiting the reply to req-1, a permission for `npm test`."""
        self.send(path, PERMISSION, "--mode", "ask")
        wait_for(lambda: self.status(path)["state"] == "awaiting_reply", WAIT, "awaiting_reply")

    def status(self, path):
        return json.loads(ok("status", path, env=self.env).stdout)

    def serve(self, *args):
        serve = Serve(args or (self.fleet,), self.env, self.base)
        self.serves.append(serve)
        return serve

    def close(self):
        for serve in self.serves:
            if serve.proc.poll() is None:
                serve.proc.kill()
                serve.proc.communicate()
        kill_all_under(self.base)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
