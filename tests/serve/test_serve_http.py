"""`harnessctl serve` without a browser: a real serve subprocess, mock sessions made with the real CLI, and
requests with http.client: its URL line and signals, the token and Host guard, the pages'
security headers, the files it refuses, the three POSTs, the fleet feed, its command-line errors, and an
ssh:// session."""

from __future__ import annotations

import json
import os
import signal
import socket
from html.parser import HTMLParser

import pytest
import ssh_support
from cliutil import command, critical, events, ok, run, wait_for
from servebed import PERMISSION, WAIT, Scratch, Serve, free_port, readline

PAGES = ["/", "/static/app.js", "/static/style.css", "/events", "/session", "/session/events"]
ACTIONS = ["/reply", "/send", "/cancel"]


# -- the beds --------------------------------------------------------------------------


@pytest.fixture
def scratch(tmp_path):
    found = Scratch(tmp_path)
    yield found
    found.close()


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """One serve of a folder for the tests that change nothing: an idle session and one awaiting a reply in
    it; beside it, sessions it must never show (one awaiting a reply outside, one in a subfolder, a link
    outside to a served file, and one planted in it to the session outside)."""
    found = Scratch(tmp_path_factory.mktemp("serve-http"))
    try:
        found.send(found.file("idle.jsonl"), "hello", "--wait")
        found.asking(found.file("asking.jsonl"))
        found.asking(found.file("secret.jsonl", found.outside))
        os.mkdir(found.file("sub"))
        found.send(found.file("deep.jsonl", found.file("sub")), "hello", "--wait")
        os.symlink(found.file("asking.jsonl"), found.file("link.jsonl", found.outside))
        os.symlink(found.file("secret.jsonl", found.outside), found.file("planted.jsonl"))
        found.server = found.serve()
        yield found
    finally:
        found.close()


NOT_SERVED = {  # the files the bed's serve must refuse, by kind
    "system file": lambda bed: "/etc/passwd",
    "dotdot out of the dir": lambda bed: os.path.join(bed.fleet, "..", "outside", "secret.jsonl"),
    "file beside the dir": lambda bed: bed.file("secret.jsonl", bed.outside),
    "symlink to a served file": lambda bed: bed.file("link.jsonl", bed.outside),
    "file in a subfolder": lambda bed: os.path.join(bed.fleet, "sub", "deep.jsonl"),
    "symlink in the dir to a file outside": lambda bed: bed.file("planted.jsonl"),
}


class Scripts(HTMLParser):
    """Every <script> of a page: its attributes and whether it has a body; and any on* attribute."""

    def __init__(self):
        super().__init__()
        self.scripts, self.handlers, self._open = [], [], None

    def handle_starttag(self, tag, attrs):
        self.handlers.extend(name for name, _ in attrs if name.startswith("on"))
        if tag == "script":
            self._open = {"attrs": dict(attrs), "body": ""}
            self.scripts.append(self._open)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open["body"] += data


# -- the URL line and the signals --------------------------------------------------------------------------


def test_serve_prints_one_url_line_with_the_token_and_nothing_else_on_stdout(scratch):
    serve = scratch.serve()
    assert serve.line.decode().startswith("http://127.0.0.1:%d/?token=" % serve.port)
    assert serve.get("/")[0] == 200
    code, out, _ = serve.stop()
    assert (code, out) == (0, b"")


def test_the_port_given_is_the_port_served(scratch):
    port = free_port()
    serve = scratch.serve(scratch.fleet, "--port", str(port))
    assert serve.port == port
    assert serve.get("/")[0] == 200


def test_sigterm_ends_serve_with_exit_0(scratch):
    assert scratch.serve().stop(signal.SIGTERM)[0] == 0


def test_sighup_ends_serve_with_exit_0(scratch):
    """`ssh -t box harnessctl serve`: the tunnel closing hangs up the remote terminal, and serve ends."""
    code, _, err = scratch.serve().stop(signal.SIGHUP)
    assert (code, err) == (0, b"")


def test_sigint_ends_serve_with_exit_0(scratch):
    code, _, err = scratch.serve().stop(signal.SIGINT)
    assert (code, err) == (0, b"")


def test_serve_stops_on_sigterm_while_a_feed_is_open(scratch):
    serve = scratch.serve()
    feed = serve.feed()
    feed.first_rows()
    assert serve.stop()[0] == 0
    feed.close()


# -- the token and the Host header -------------------------------------------------------------------------


def test_the_token_and_host_let_every_page_through(bed):
    """The other tests' 403s are the guard's, not a page that is not there."""
    served = bed.file("asking.jsonl")
    for path in PAGES:
        assert bed.server.get(path, file=served)[0] == 200, path


@pytest.mark.parametrize("path", PAGES)
def test_a_get_without_the_token_is_refused(bed, path):
    status, _, body = bed.server.get(path, token=False, file=bed.file("asking.jsonl"))
    assert status == 403, body


@pytest.mark.parametrize("path", PAGES)
def test_a_get_with_a_wrong_token_is_refused(bed, path):
    wrong = bed.server.token[:-1] + ("A" if bed.server.token[-1] != "A" else "B")
    assert bed.server.get(path, token=wrong, file=bed.file("asking.jsonl"))[0] == 403


@pytest.mark.parametrize("action", ACTIONS)
def test_a_post_without_the_token_header_is_refused_and_writes_nothing(bed, action):
    target = bed.file("asking.jsonl")
    before = critical(target)
    body = {"file": target, "request_id": "req-1", "answer": "deny", "text": "hi"}
    assert bed.server.post(action, body, token=False)[0] == 403
    assert critical(target) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_a_post_with_the_token_only_in_the_query_is_refused(bed, action):
    body = {"file": bed.file("asking.jsonl"), "request_id": "req-1", "answer": "deny", "text": "hi"}
    status, _, _ = bed.server.request("POST", bed.server.path(action), json.dumps(body).encode(),
                                      {"Content-Type": "application/json"})
    assert status == 403


def test_a_post_with_a_wrong_token_header_is_refused(bed):
    body = {"file": bed.file("asking.jsonl"), "text": "hi"}
    assert bed.server.post("/send", body, token="not-" + bed.server.token)[0] == 403


@pytest.mark.parametrize("path", ["/", "/events", "/session"])
def test_a_get_naming_another_host_is_refused_even_with_the_token(bed, path):
    """DNS rebinding: a name the attacker points at 127.0.0.1 reaches nothing."""
    headers = {"Host": "evil.example:%d" % bed.server.port}
    assert bed.server.get(path, headers=headers, file=bed.file("asking.jsonl"))[0] == 403


def test_a_post_naming_another_host_is_refused_even_with_the_token(bed):
    target = bed.file("asking.jsonl")
    before = critical(target)
    headers = {"Host": "evil.example:%d" % bed.server.port}
    assert bed.server.post("/send", {"file": target, "text": "hi"}, headers=headers)[0] == 403
    assert critical(target) == before


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1"])
def test_a_host_header_with_another_port_is_accepted_as_a_tunnel_sends_it(bed, name):
    """`ssh -L 9090:127.0.0.1:8080 box harnessctl serve --port 8080`: the browser says port 9090.  The port
    guards nothing (a rebinding page is told by its DNS name), so the tunnel works."""
    headers = {"Host": "%s:%d" % (name, bed.server.port + 1)}
    assert bed.server.get("/", headers=headers)[0] == 200
    assert bed.server.get("/events", headers=headers)[0] == 200


def test_a_refused_host_says_why_and_what_to_do_without_the_token(bed):
    status, _, body = bed.server.get("/", headers={"Host": "evil.example:%d" % bed.server.port})
    text = body.decode()
    assert status == 403 and text.count("\n") == 1, text
    for part in ("'evil.example:%d'" % bed.server.port, "DNS name", "127.0.0.1:LOCAL_PORT", "URL"):
        assert part in text, (part, text)
    assert bed.server.token not in text


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1"])
def test_a_host_header_naming_this_server_is_accepted(bed, name):
    assert bed.server.get("/", headers={"Host": "%s:%d" % (name, bed.server.port)})[0] == 200


# -- the pages' security headers -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/session"])
def test_a_page_has_a_csp_with_script_src_self_and_no_unsafe_inline(bed, path):
    _, headers, _ = bed.server.get(path, file=bed.file("asking.jsonl"))
    policy = {part.split()[0]: part.split()[1:] for part in headers["Content-Security-Policy"].split(";")
              if part.strip()}
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'none'"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/", "/session", "/static/app.js", "/static/style.css"])
def test_a_page_says_nosniff(bed, path):
    _, headers, _ = bed.server.get(path, file=bed.file("asking.jsonl"))
    assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("path", ["/", "/session"])
def test_a_page_has_no_inline_script(bed, path):
    _, _, body = bed.server.get(path, file=bed.file("asking.jsonl"))
    parser = Scripts()
    parser.feed(body.decode())
    assert parser.scripts, "the page loads its script"
    assert all(script["attrs"].get("src") and not script["body"].strip() for script in parser.scripts)
    assert parser.handlers == []


# -- files outside the served folders ------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(NOT_SERVED))
@pytest.mark.parametrize("path", ["/session", "/session/events"])
def test_a_page_of_a_file_not_served_is_refused(bed, path, kind):
    status, _, body = bed.server.get(path, file=NOT_SERVED[kind](bed))
    assert status == 404, body


@pytest.mark.parametrize("kind", list(NOT_SERVED))
@pytest.mark.parametrize("action", ACTIONS)
def test_a_post_naming_a_file_not_served_is_refused_and_writes_nothing(bed, action, kind):
    target = NOT_SERVED[kind](bed)
    before = critical(target)
    body = {"file": target, "request_id": "req-1", "answer": "allow", "text": "hi"}
    assert bed.server.post(action, body)[0] == 404
    assert critical(target) == before


def test_a_symlink_planted_in_the_dir_has_a_row_that_says_nothing_of_the_file_outside(bed):
    feed = bed.server.feed()
    (row,) = [row for row in feed.first_rows() if row["file"] == bed.file("planted.jsonl")]
    feed.close()
    assert "error" in row and "state" not in row and "requests" not in row, row


def test_a_file_served_alone_is_served_and_its_neighbour_is_not(bed):
    serve = bed.serve(bed.file("idle.jsonl"))
    neighbour = bed.file("asking.jsonl")
    before = critical(neighbour)
    assert serve.get("/session", file=bed.file("idle.jsonl"))[0] == 200
    assert serve.get("/session", file=neighbour)[0] == 404
    assert serve.get("/session/events", file=neighbour)[0] == 404
    assert serve.post("/reply", {"file": neighbour, "request_id": "req-1", "answer": "allow"})[0] == 404
    assert critical(neighbour) == before


# -- reply, send, cancel ---------------------------------------------------------------------------------


def test_reply_answers_a_pending_request_and_the_file_records_it_by_reply(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    status, answer = scratch.serve().post("/reply", {"file": path, "request_id": "req-1", "answer": "allow"})
    assert (status, answer) == (200, {"outcome": "replied", "request_id": "req-1", "exit_code": 0})
    replied = [e for e in events(path) if e["type"] == "request" and e["state"] == "replied"]
    assert [(e["request_id"], e["answer"], e["by"]) for e in replied] == [("req-1", "allow", "reply")]


def test_reply_to_an_unknown_request_id_is_409_with_the_cli_exit_code_3(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    status, answer = scratch.serve().post("/reply", {"file": path, "request_id": "req-9", "answer": "allow"})
    assert (status, answer["exit_code"]) == (409, 3)
    assert "req-9" in answer["error"]
    assert scratch.status(path)["state"] == "awaiting_reply"


def test_reply_with_an_answer_the_request_does_not_allow_is_400_with_exit_code_2(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    status, answer = scratch.serve().post("/reply", {"file": path, "request_id": "req-1", "answer": "maybe"})
    assert (status, answer["exit_code"]) == (400, 2)


def test_send_returns_the_input_id_the_file_records(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "hello", "--wait")
    status, answer = scratch.serve().post("/send", {"file": path, "text": "again"})
    assert (status, answer["outcome"], answer["exit_code"]) == (200, "accepted", 0)
    accepted = [(e["input_id"], e["text"]) for e in events(path) if e["type"] == "accepted"]
    assert accepted[-1] == (answer["input_id"], "again")


def test_cancel_ends_the_running_run(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "/sleep 60")
    status, answer = scratch.serve().post("/cancel", {"file": path})
    assert (status, answer) == (200, {"outcome": "done", "exit_code": 0})
    results = wait_for(lambda: [e for e in events(path) if e["type"] == "result"], WAIT, "a result")
    assert results[0]["status"] == "cancelled"


@pytest.mark.parametrize("body", [b"not json", b"", b"[1, 2]", b'"text"', b"{"])
@pytest.mark.parametrize("action", ACTIONS)
def test_a_body_that_is_not_a_json_object_is_400(bed, action, body):
    assert bed.server.post(action, body)[0] == 400


MISSING = [  # FILE stands for a served session
    ("/reply", {"request_id": "req-1", "answer": "allow"}),
    ("/reply", {"file": "FILE", "answer": "allow"}),
    ("/reply", {"file": "FILE", "request_id": "req-1"}),
    ("/reply", {"file": "FILE", "request_id": 1, "answer": "allow"}),
    ("/send", {"text": "hi"}),
    ("/send", {"file": "FILE"}),
    ("/send", {"file": "FILE", "text": 1}),
    ("/send", {"file": ["FILE"], "text": "hi"}),
    ("/cancel", {}),
]


@pytest.mark.parametrize("action, body", MISSING)
def test_a_body_missing_a_field_is_400_and_writes_nothing(bed, action, body):
    target = bed.file("asking.jsonl")
    before = critical(target)
    body = {key: target if value == "FILE" else value for key, value in body.items()}
    status, answer = bed.server.post(action, body)
    assert status == 400, answer
    assert critical(target) == before


# -- the fleet feed --------------------------------------------------------------------------------------


def test_the_fleet_feed_sends_a_row_per_session_then_ready(scratch):
    for name in ("a.jsonl", "b.jsonl"):
        scratch.send(scratch.file(name), "hello", "--wait")
    feed = scratch.serve().feed()
    rows = feed.first_rows()
    assert [(row["file"], row["state"]) for row in rows] == [(scratch.file("a.jsonl"), "idle"),
                                                            (scratch.file("b.jsonl"), "idle")]
    feed.close()


def test_a_new_event_file_in_the_dir_appears_as_a_row_without_reconnecting(scratch):
    feed = scratch.serve().feed()
    assert feed.first_rows() == []
    path = scratch.file("new.jsonl")
    scratch.send(path, "hello", "--wait")
    _, row = feed.until(lambda name, data: name == "row" and data["file"] == path, "row of the new file")
    assert (row["adapter"], row["name"]) == ("mock", "new.jsonl")
    feed.close()


def test_a_removed_event_file_is_gone_from_the_feed(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "hello", "--wait")
    feed = scratch.serve().feed()
    assert [row["file"] for row in feed.first_rows()] == [path]
    os.unlink(path)
    name, data = feed.until(lambda name, data: name != "row", "gone")
    assert (name, data) == ("gone", {"file": path})
    feed.close()


def test_an_awaiting_reply_session_has_a_row_awaiting_reply(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "hello", "--wait", "--mode", "ask")
    feed = scratch.serve().feed()
    assert [row["state"] for row in feed.first_rows()] == ["idle"]
    scratch.send(path, PERMISSION)
    _, row = feed.until(lambda name, data: data.get("state") == "awaiting_reply", "awaiting_reply")
    assert [r["request_id"] for r in row["requests"]] == ["req-1"]
    feed.close()


def test_a_failed_session_has_a_row_failed_for_the_header_to_count(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "/fail")
    wait_for(lambda: scratch.status(path)["state"] == "failed", WAIT, "failed")
    feed = scratch.serve().feed()
    assert [(row["name"], row["state"]) for row in feed.first_rows()] == [("a.jsonl", "failed")]
    feed.close()


def test_a_row_on_the_feed_follows_a_reply_made_from_the_command_line(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    feed = scratch.serve().feed()
    assert [row["state"] for row in feed.first_rows()] == ["awaiting_reply"]
    ok("reply", path, "req-1", "allow", env=scratch.env)
    feed.until(lambda name, data: name == "row" and data["state"] == "idle", "the idle row")
    feed.close()


def test_a_file_given_before_a_send_creates_it_gets_its_row_once_it_exists(scratch):
    path = scratch.file("later.jsonl")
    feed = scratch.serve(path).feed()
    assert [(row["file"], row["exit_code"]) for row in feed.first_rows()] == [(path, 4)]
    scratch.send(path, "hello", "--wait")
    feed.until(lambda name, data: name == "row" and data.get("state") == "idle", "the idle row")
    feed.close()


# -- a session's feed --------------------------------------------------------------------------------------


def first_of_session(feed):
    """(the status rows, the entries) a session feed sends before `ready`."""
    statuses, entries = [], []
    while True:
        name, data = feed.next()
        if name == "ready":
            return statuses, entries
        assert name in ("status", "entry"), (name, data)
        (statuses if name == "status" else entries).append(data)


def test_the_session_feed_sends_its_status_and_transcript_then_ready(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    statuses, entries = first_of_session(scratch.serve().feed("/session/events", file=path))
    assert [row["state"] for row in statuses] == ["awaiting_reply"]
    (request,) = [entry for entry in entries if entry["id"] == "request:req-1"]
    assert request["request"]["request_id"] == "req-1"
    assert [option["answer"] for option in request["request"]["options"]] == ["allow", "deny"]


def test_the_session_feed_shows_the_request_answered_once_replied(scratch):
    path = scratch.file("a.jsonl")
    scratch.asking(path)
    serve = scratch.serve()
    feed = serve.feed("/session/events", file=path)
    first_of_session(feed)
    assert serve.post("/reply", {"file": path, "request_id": "req-1", "answer": "allow"})[0] == 200
    _, entry = feed.until(lambda name, data: name == "entry" and data["id"] == "request:req-1", "the request again")
    assert "request" not in entry
    feed.until(lambda name, data: name == "status" and data["state"] == "idle", "the idle status")
    feed.close()


# -- command-line errors -----------------------------------------------------------------------------------


def serve_error(scratch, *args):
    """(exit code, stdout, stderr) of a serve that must not start."""
    proc = run("serve", *args, env=scratch.env, cwd=scratch.base, timeout=WAIT)
    return proc.returncode, proc.stdout, proc.stderr.decode()


@pytest.mark.parametrize("port", ["abc", "70000", "-1", ""])
def test_a_port_that_is_not_a_port_number_is_exit_2_with_one_line(scratch, port):
    code, out, err = serve_error(scratch, scratch.fleet, "--port", port)
    assert (code, out) == (2, b"")
    assert len(err.splitlines()) == 1 and err.startswith("harnessctl: "), err


def test_a_missing_dir_named_with_its_slash_is_exit_4(scratch):
    code, out, err = serve_error(scratch, os.path.join(scratch.base, "nonexistent") + "/")
    assert (code, out) == (4, b"")
    assert len(err.splitlines()) == 1 and "nonexistent" in err


def test_a_file_not_there_yet_is_served_with_one_warning_line_naming_it(scratch):
    """`serve ~/agnet` (a mistyped folder) is a FILE a send may create: served, but not silently."""
    typo, later = os.path.join(scratch.base, "agnet"), scratch.file("later.jsonl")
    serve = scratch.serve(typo, scratch.fleet, later)
    feed = serve.feed()
    assert [row["file"] for row in feed.first_rows()] == [typo, later]
    feed.close()
    code, _, err = serve.stop()
    lines = err.decode().splitlines()
    assert code == 0 and len(lines) == 2, lines
    for line, path in zip(lines, (typo, later)):
        assert line.startswith("harnessctl: warning: nothing at %s: " % path) and "folder" in line, line


def test_a_file_in_a_folder_that_does_not_exist_is_exit_4(scratch):
    """No send can create it (send refuses a missing folder), so it is the typo a missing DIR/ is."""
    missing = os.path.join(scratch.base, "agnet")
    code, out, err = serve_error(scratch, scratch.fleet, os.path.join(missing, "a.jsonl"))
    assert (code, out) == (4, b"")
    assert len(err.splitlines()) == 1 and "no such directory: %s " % missing in err, err


def test_an_existing_file_and_folder_give_no_warning(scratch):
    path = scratch.file("a.jsonl")
    scratch.send(path, "hello", "--wait")
    _, _, err = scratch.serve(scratch.fleet, path).stop()
    assert err == b""


def test_a_port_in_use_is_exit_5(scratch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, out, err = serve_error(scratch, scratch.fleet, "--port", str(taken.getsockname()[1]))
    assert (code, out) == (5, b"")
    assert len(err.splitlines()) == 1, err


def test_a_host_other_than_loopback_warns_and_still_needs_the_token(scratch):
    serve = scratch.serve(scratch.fleet, "--host", "0.0.0.0")
    assert serve.host.startswith("0.0.0.0:")
    assert "warning" in readline(serve.proc.stderr).decode()
    assert serve.get("/", token=False, headers={"Host": "127.0.0.1:%d" % serve.port})[0] == 403
    assert serve.get("/", headers={"Host": "127.0.0.1:%d" % serve.port})[0] == 200


def test_a_loopback_host_gives_no_warning(scratch):
    _, _, err = scratch.serve().stop()
    assert err == b""


def test_an_ipv6_loopback_host_is_served_with_its_address_in_brackets(scratch):
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError as e:
        pytest.skip("no IPv6 loopback here: %s" % e)
    serve = scratch.serve(scratch.fleet, "--host", "::1")
    assert serve.host.startswith("[::1]:")
    for name in ("[::1]", "localhost"):
        assert serve.get("/", headers={"Host": "%s:%d" % (name, serve.port)})[0] == 200, name
    assert serve.get("/", headers={"Host": "evil.example:%d" % serve.port})[0] == 403
    assert serve.stop()[2] == b""


def test_serve_without_an_argument_serves_the_current_folder(scratch):
    scratch.send(scratch.file("a.jsonl"), "hello", "--wait")
    serve = Serve((), scratch.env, scratch.fleet)
    scratch.serves.append(serve)
    feed = serve.feed()
    assert [(row["name"], row["state"]) for row in feed.first_rows()] == [("a.jsonl", "idle")]
    feed.close()


def test_serve_help_exits_0_with_its_usage(scratch):
    proc = run("serve", "--help", env=scratch.env, cwd=scratch.base, timeout=WAIT)
    assert proc.returncode == 0
    assert b"harnessctl serve" in proc.stdout and b"--port" in proc.stdout


# -- ssh:// sessions ---------------------------------------------------------------------------------


def test_an_ssh_address_is_listed_with_its_remote_state(scratch, ssh_bed):
    scratch.env = ssh_bed.env(scratch.env, command())
    address = ssh_support.address("h1", scratch.file("remote.jsonl", scratch.outside))
    scratch.send(address, "/sleep 60")
    feed = scratch.serve(address).feed()
    _, row = feed.until(lambda name, data: name == "row" and data["file"] == address, "the remote row")
    assert (row["state"], row["adapter"], row["name"]) == ("running", "mock", "remote.jsonl on h1")
    _, _, page = scratch.serves[-1].get("/session", file=address)
    assert "<h1>remote.jsonl on h1</h1>" in page.decode()
    feed.close()
    ok("cancel", address, env=scratch.env)


def test_an_ssh_sessions_page_gets_its_entries_pushed_by_one_follow_there(scratch, ssh_bed):
    log = scratch.file("remote.log", scratch.outside)
    scratch.env = ssh_bed.logged_env(scratch.env, log)
    address = ssh_support.address("h1", scratch.file("remote.jsonl", scratch.outside))
    scratch.send(address, "first", "--wait")
    serve = scratch.serve(address)
    rows = serve.feed()
    rows.until(lambda name, data: name == "row" and data["file"] == address, "the remote row")
    rows.close()
    feed = serve.feed("/session/events", file=address)
    feed.until(lambda name, data: name == "ready", "the page's first picture")
    for text in ("second", "third"):
        scratch.send(address, text, "--wait")
        shown = "echo: %s" % text
        feed.until(lambda name, data, shown=shown: name == "entry" and shown in json.dumps(data), "the new entry")
    feed.close()
    path = address[len("ssh://h1"):]
    logs = [words.split(" log ", 1)[1] for words in ssh_support.remote_commands(log) if " log " in words]
    assert logs == ["--json -- " + path, "--json --follow -- " + path]  # asked once, then pushed: not per change
