"""The HTTP face of `harnessctl serve`: the pages, their live feeds
(server-sent events), a worktree session's patch (as `diff` prints it) and
the three things a page does (reply, send, cancel), each checked by the
guard first and done through the same calls as the command line, so the
event file records them as the CLI would.
"""

from __future__ import annotations

import io
import json
import os
import queue
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ..commands import Send, check_text
from ..errors import HarnessctlError, UsageError
from ..visible import shown
from . import pages
from .follow import Follower, patch_text
from .guard import TOKEN_HEADER

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .fleet import Fleet, Subscriber
    from .guard import Guard

REQUEST_TIMEOUT = 10.0  # seconds a connection has to send its request: HARNESSCTL_SERVE_TIMEOUT
KEEPALIVE = 15.0  # seconds between two comments on a quiet feed: how a page that left is noticed
BODY_LIMIT = 1 << 20  # bytes of a POST's JSON body
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC = {"/static/app.js": "text/javascript; charset=utf-8", "/static/style.css": "text/css; charset=utf-8",
          "/static/icon.svg": "image/svg+xml"}
HTTP_STATUS = {2: 400, 3: 409, 4: 404, 5: 503}  # exit code -> HTTP status; any other: 500


class Server(ThreadingHTTPServer):
    """One serve: the guard, the fleet (and its session operations) and the static files."""

    daemon_threads = True

    def __init__(self, address: Tuple[str, int], guard: Guard, fleet: Fleet,
                 request_timeout: float = REQUEST_TIMEOUT) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.request_timeout = request_timeout
        self.guard = guard
        self.fleet = fleet
        self.sessions = fleet.sessions
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
        self.static: Dict[str, bytes] = {}
        for path in STATIC:
            with open(os.path.join(here, os.path.basename(path)), "rb") as f:
                self.static[path] = f.read()


class Deadline(io.RawIOBase):
    """A connection's bytes, read before a deadline: a connection that sends
    its request slowly or never (one thread each) is dropped when it passes,
    however it trickles its bytes (a per-read timeout alone would not be)."""

    def __init__(self, connection: socket.socket, seconds: float) -> None:
        super().__init__()
        self.connection = connection
        self.deadline = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the request took too long to arrive")
        self.connection.settimeout(left)
        return self.connection.recv_into(buffer)


class Handler(BaseHTTPRequestHandler):
    """One request: refused unless its Host names this server and it carries the token."""

    server: Server
    server_version = "harnessctl"

    def setup(self) -> None:
        """The request (line, headers, body) must be in within the server's
        request_timeout; BaseHTTPRequestHandler drops the connection when not."""
        super().setup()
        self.rfile = io.BufferedReader(Deadline(self.connection, self.server.request_timeout))

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: serve's output is its URL (and its warnings) alone."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query, errors="surrogateescape")
        if not self._allowed(_one(query, "token")):
            return
        guard, file = self.server.guard, _one(query, "file")
        if url.path == "/":
            self._answer(200, "text/html; charset=utf-8", pages.page(guard.token))
        elif url.path in STATIC:
            self._answer(200, STATIC[url.path], self.server.static[url.path])
        elif url.path == "/events":
            self._fleet_feed()
        elif url.path in ("/session", "/session/events", "/session/patch") and not self._served(file):
            return
        elif url.path == "/session":
            self._answer(200, "text/html; charset=utf-8", pages.page(guard.token, self.server.sessions.name(str(file))))
        elif url.path == "/session/events":
            self._session_feed(str(file))
        elif url.path == "/session/patch":
            self._patch(str(file))
        else:
            self._error(404, "no such page: %s" % url.path)

    def do_POST(self) -> None:
        if not self._allowed(self.headers.get(TOKEN_HEADER)):
            return
        actions: Dict[str, Callable[[str, Dict[str, Any]], Dict[str, Any]]] = {
            "/reply": self._reply, "/send": self._send, "/cancel": self._cancel}
        action = actions.get(urlsplit(self.path).path)
        if action is None:
            self._error(404, "no such action: %s" % self.path)
            return
        body = self._body()
        if body is None:
            return
        file = body.get("file")
        if not isinstance(file, str):
            self._error(400, "the body needs file (a string): the session, as the fleet names it")
            return
        if not self._served(file):
            return
        try:
            answer = action(file, body)
        except HarnessctlError as e:
            self._json(HTTP_STATUS.get(e.exit_code, 500), {"error": str(e), "exit_code": e.exit_code})
            return
        self._json(200, dict(answer, exit_code=0))

    def do_HEAD(self) -> None:
        self._error(405, "GET or POST")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD

    # -- the checks -----------------------------------------------------------------

    def _allowed(self, token: Optional[str]) -> bool:
        guard = self.server.guard
        refused = guard.host_refused(self.headers.get("Host"))
        if refused is not None:
            self._error(403, refused)
            return False
        if not guard.token_ok(token):
            self._error(403, "a token is needed: open the URL harnessctl serve printed")
            return False
        return True

    def _served(self, file: Any) -> bool:
        """Only a session the fleet shows, named as it names it, is ever opened."""
        if isinstance(file, str) and self.server.fleet.served(file):
            return True
        self._error(404, "not a session this server shows")
        return False

    def _body(self) -> Optional[Dict[str, Any]]:
        """A POST's JSON object; None when refused (answered already)."""
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            length = -1
        if not 0 <= length <= BODY_LIMIT:
            self._error(400, "a JSON body of at most %d bytes, with its Content-Length" % BODY_LIMIT)
            return None
        try:
            body = json.loads(self.rfile.read(length))
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            self._error(400, "the body must be a JSON object")
            return None
        return body

    # -- the actions, as the command line does them ----------------------------------------

    def _reply(self, file: str, body: Dict[str, Any]) -> Dict[str, Any]:
        request_id, answer = body.get("request_id"), body.get("answer")
        if not isinstance(request_id, str) or answer is None:
            raise UsageError("reply needs request_id (a string) and answer")
        if not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        self.server.sessions.at(file).reply(request_id, answer)
        return {"outcome": "replied", "request_id": request_id}

    def _send(self, file: str, body: Dict[str, Any]) -> Dict[str, Any]:
        text = body.get("text")
        if not isinstance(text, str):
            raise UsageError("send needs text (a string)")
        request = Send(file, check_text(text), {})
        return {"outcome": "accepted", "input_id": self.server.sessions.at(file).send(request)}

    def _cancel(self, file: str, body: Dict[str, Any]) -> Dict[str, Any]:
        self.server.sessions.at(file).cancel()
        return {"outcome": "done"}

    def _patch(self, file: str) -> None:
        """What the session changed in its worktree, as `diff FILE` prints it (follow.patch_text)."""
        try:
            text = patch_text(self.server.sessions.at(file).patch())
        except HarnessctlError as e:  # no worktree (2), its folder gone, git failed
            self._error(HTTP_STATUS.get(e.exit_code, 500), shown(str(e)))
            return
        except OSError as e:  # gone since it was listed
            self._error(404, shown("cannot read %s: %s" % (file, e.strerror or e)))
            return
        self._answer(200, "text/plain; charset=utf-8", text.encode())

    # -- the feeds ---------------------------------------------------------------------

    def _fleet_feed(self) -> None:
        rows, subscriber = self.server.fleet.subscribe()
        try:
            self._begin_feed()
            for row in rows:
                self._event("row", row)
            self._event("ready", {})
            self._pump(subscriber, self._event)
        except (BrokenPipeError, ConnectionError):
            pass  # the page went away
        finally:
            self.server.fleet.unsubscribe(subscriber)

    def _session_feed(self, file: str) -> None:
        rows, subscriber = self.server.fleet.subscribe()  # before the first read: no change is missed
        try:
            follows = Follower(self.server.sessions.at(file), lambda: subscriber.put("entries", {"file": file}))
        except BaseException:
            self.server.fleet.unsubscribe(subscriber)
            raise
        try:
            try:
                first = follows.start()
            except HarnessctlError as e:
                self._error(HTTP_STATUS.get(e.exit_code, 500), str(e))
                return
            except OSError as e:  # gone since it was listed
                self._error(404, "cannot read %s: %s" % (file, e.strerror or e))
                return
            self._begin_feed()
            for row in rows:
                if row["file"] == file:
                    self._event("status", row)
            for entry in first:
                self._event("entry", entry)
            self._event("ready", {})

            def changed(name: str, data: Dict[str, Any]) -> None:
                if data.get("file") != file:
                    return
                if name == "gone":
                    self._event("gone", data)
                    return
                restart, entries = follows.more()
                if restart:
                    self._event("reset", {})
                for entry in entries:
                    self._event("entry", entry)
                if name != "entries":  # not only entries pushed by a remote follow (remote/calls.Stream)
                    self._event("status", data)

            self._pump(subscriber, changed)
        except (BrokenPipeError, ConnectionError):
            pass
        finally:
            self.server.fleet.unsubscribe(subscriber)
            follows.close()

    def _begin_feed(self) -> None:
        """A feed lives as long as its page: no deadline once it is open (a
        page that left is noticed by the keep-alive write that fails)."""
        self.connection.settimeout(None)
        self.send_response(200)
        self._headers("text/event-stream; charset=utf-8")
        self.end_headers()

    def _pump(self, subscriber: Subscriber, handle: Callable[[str, Dict[str, Any]], None]) -> None:
        """Hand each change to `handle` until the page goes away or falls too far behind."""
        while not subscriber.dropped:
            try:
                name, data = subscriber.events.get(timeout=KEEPALIVE)
            except queue.Empty:
                self.wfile.write(b": still here\n\n")
                self.wfile.flush()
                continue
            handle(name, data)

    def _event(self, name: str, data: Dict[str, Any]) -> None:
        self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode())
        self.wfile.flush()

    # -- answers --------------------------------------------------------------------

    def _headers(self, content_type: str) -> None:
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Security-Policy", POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.connection.settimeout(self.server.request_timeout)  # as long to take an answer as to ask
        self.send_response(status)
        self._headers(content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Dict[str, Any]) -> None:
        self._answer(status, "application/json", json.dumps(value).encode())

    def _error(self, status: int, message: str) -> None:
        self._answer(status, "text/plain; charset=utf-8", ("harnessctl: %s\n" % message).encode())


def _one(query: Dict[str, List[str]], name: str) -> Optional[str]:
    values = query.get(name)
    return values[0] if values else None

