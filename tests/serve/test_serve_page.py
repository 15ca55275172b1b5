"""The pages of `harnessctl serve` in a real headless Chromium: a real serve over mock sessions made with the
real CLI, and each page used as a person uses it (a click, a typed text).  What the page does is judged by
the event file, what it shows by the page's own elements.  The last test draws the README's pictures
(into docs/images only with HARNESSCTL_REDRAW_PICTURES=1)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional
from urllib.parse import urlencode, urlsplit

import cliutil
import pytest
import serve_support

from harnessctl import landlock

IMAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "docs", "images")
REDRAW = "HARNESSCTL_REDRAW_PICTURES"  # =1: the last test redraws IMAGES (docs/DEVELOPMENT.md)
HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> \x1b[31mred\x1b]0;title\x07"
ASK_NPM_TEST = "/permission command:npm test"


class Fleet:
    """A scratch HOME, a project folder the mock agent works in, and a folder of event files beside it (not in
    it), served by one `harnessctl serve sessions` run from their parent folder (so the pages name the files
    `sessions/NAME`, as a person who ran it there would see them), stopped when the test ends."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.env = serve_support.mock_env(os.path.join(root, "home"))
        self.repo = os.path.join(root, "repo")
        os.makedirs(self.repo)
        os.makedirs(os.path.join(root, "sessions"))
        self.url = ""
        self.proc: Any = None

    def path(self, name: str) -> str:
        """The event file's path, to read it."""
        return os.path.join(self.root, self.served(name))

    def served(self, name: str) -> str:
        """The event file as the pages name it."""
        return "sessions/" + name

    def send(self, name: str, text: str, *extra: str) -> Dict[str, Any]:
        return serve_support.send(self.env, self.path(name), text, self.repo, *extra)

    def serve(self) -> str:
        """The fleet page's URL (serve started on the first call)."""
        if self.proc is None:
            self.proc, self.url = serve_support.start_serve(["sessions"], self.env, cwd=self.root)
        return self.url

    def session_url(self, name: str) -> str:
        url = urlsplit(self.serve())
        token = url.query.split("token=", 1)[1]
        return "%s://%s/session?%s" % (url.scheme, url.netloc, urlencode({"file": self.served(name), "token": token}))

    def stop(self) -> None:
        if self.proc is not None:
            serve_support.stop_serve(self.proc)


@pytest.fixture
def fleet(workdir):
    made = Fleet(str(workdir))
    yield made
    made.stop()


def js(value: Any) -> str:
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


def open_fleet(page, fleet: Fleet, rows: int) -> None:
    page.goto(fleet.serve())
    page.wait_for("document.body.dataset.ready === '1' && document.querySelectorAll('tr.session').length === %d"
                  % rows)


def open_session(page, fleet: Fleet, name: str) -> None:
    page.goto(fleet.session_url(name))
    page.wait_for("document.body.dataset.ready === '1'")


def row(page, fleet: Fleet, name: str) -> Optional[Dict[str, Any]]:
    """The fleet row of a session: its classes and cells' texts."""
    return page.evaluate("""(() => {
        const tr = [...document.querySelectorAll('tr.session')].find((tr) => tr.dataset.file === %s);
        if (!tr) return null;
        const cells = {};
        for (const td of tr.children) cells[td.className] = td.textContent;
        return {classes: [...tr.classList], cells: cells};
    })()""" % js(fleet.served(name)))


def running(fleet: Fleet, name: str) -> str:
    """Wait until the session's run is busy (its /sleep streams); its run id."""
    return cliutil.wait_matching(fleet.path(name), "log", kind="text.delta")[0]["run_id"]


def pending(fleet: Fleet, name: str) -> Dict[str, Any]:
    return cliutil.wait_matching(fleet.path(name), "request", state="pending")[0]


def dialogs(page) -> List[Dict[str, Any]]:
    """The JavaScript dialogs (alert, confirm, prompt) the page opened."""
    return [e for e in page.browser.events(page.session) if e["method"] == "Page.javascriptDialogOpening"]


def test_fleet_page_lists_every_session_and_shows_the_one_awaiting_a_reply(page, fleet):
    fleet.send("idle.jsonl", "hello", "--wait")
    fleet.send("asks.jsonl", ASK_NPM_TEST, "--mode", "ask")
    pending(fleet, "asks.jsonl")
    open_fleet(page, fleet, 2)
    names = page.evaluate("[...document.querySelectorAll('tr.session td.name')].map((td) => td.textContent)")
    assert sorted(names) == ["asks.jsonl", "idle.jsonl"]
    asks = page.wait_for("(() => { const tr = document.querySelector('tr.session.awaiting'); "
                         "return tr && tr.dataset.file; })()")
    assert asks == fleet.served("asks.jsonl")
    shown = row(page, fleet, "asks.jsonl")
    assert shown is not None
    assert shown["cells"]["state"].startswith("awaiting reply"), shown
    assert "npm test" in shown["cells"]["activity"], shown
    idle = row(page, fleet, "idle.jsonl")
    assert idle is not None and "awaiting" not in idle["classes"], idle


@pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))
def test_a_boxed_session_says_so_on_its_row_and_on_its_page(page, fleet):
    fleet.send("boxed.jsonl", "hello", "--sandbox", "--wait")
    fleet.send("open.jsonl", "hello", "--wait")
    open_fleet(page, fleet, 2)
    assert row(page, fleet, "boxed.jsonl")["cells"]["agent"] == "mock (boxed)"
    assert row(page, fleet, "open.jsonl")["cells"]["agent"] == "mock"
    open_session(page, fleet, "boxed.jsonl")
    assert "boxed" in page.wait_for("document.getElementById('facts').textContent")


def test_fleet_header_counts_the_failed_sessions(page, fleet):
    fleet.send("idle.jsonl", "hello", "--wait")
    fleet.send("failed.jsonl", "/fail")
    cliutil.wait_matching(fleet.path("failed.jsonl"), "result", status="failed")
    open_fleet(page, fleet, 2)
    page.wait_for("document.querySelectorAll('tr.session.state-failed').length === 1")
    summary = page.evaluate("document.getElementById('summary').textContent")
    assert summary == "2 sessions, 0 running, 0 awaiting a reply, 1 failed", summary


def test_fleet_page_shows_a_new_session_as_its_file_appears(page, fleet):
    fleet.send("first.jsonl", "hello", "--wait")
    open_fleet(page, fleet, 1)
    page.evaluate("window.sameDocument = true")
    fleet.send("second.jsonl", "hello", "--wait")
    page.wait_for("document.querySelectorAll('tr.session').length === 2")
    assert row(page, fleet, "second.jsonl") is not None
    assert page.evaluate("window.sameDocument") is True


def test_answering_a_question_in_its_field_replies_with_the_text(page, fleet):
    fleet.send("asks.jsonl", "/question Which branch should I rebase onto?")
    request = pending(fleet, "asks.jsonl")
    open_session(page, fleet, "asks.jsonl")
    field = "#transcript input[data-question]"
    page.wait_for("!!document.querySelector(%s)" % js(field))
    page.type(field, "release-2.1")
    page.click("button.answer.fields[data-request=%s]" % js(request["request_id"]))
    replied = cliutil.wait_matching(fleet.path("asks.jsonl"), "request", state="replied",
                                    request_id=request["request_id"])[0]
    assert (replied["answer"], replied["by"]) == ({"q1": "release-2.1"}, "reply")
    result = cliutil.wait_matching(fleet.path("asks.jsonl"), "result", run_id=request["run_id"])[0]
    assert result["output"].splitlines() == ["answer: release-2.1"]


def test_clicking_allow_answers_the_request_as_reply_does(page, fleet):
    fleet.send("asks.jsonl", ASK_NPM_TEST, "--mode", "ask")
    request = pending(fleet, "asks.jsonl")
    open_session(page, fleet, "asks.jsonl")
    allow = 'button.answer[data-answer="allow"][data-request=%s]' % js(request["request_id"])
    page.wait_for("!!document.querySelector(%s)" % js(allow))
    page.click(allow)
    replied = cliutil.wait_matching(fleet.path("asks.jsonl"), "request", state="replied",
                                    request_id=request["request_id"])[0]
    assert (replied["answer"], replied["by"]) == ("allow", "reply")
    entry = "#transcript div.entry[data-id=%s]" % js("request:" + request["request_id"])
    page.wait_for("(() => { const e = document.querySelector(%s); return e && e.innerText.includes('-> allow') "
                  "&& !e.innerText.includes('pending'); })()" % js(entry))
    assert page.evaluate("document.querySelectorAll('button.answer').length") == 0


def test_text_sent_from_the_box_steers_the_running_run(page, fleet):
    fleet.send("busy.jsonl", "hello", "--wait")  # a runtime up already: the next run starts at once
    open_session(page, fleet, "busy.jsonl")
    fleet.send("busy.jsonl", "/sleep 15")  # long enough to steer into on a loaded machine; then it ends by itself
    run_id = cliutil.wait_matching(fleet.path("busy.jsonl"), "accepted", text="/sleep 15")[0]["run_id"]
    page.wait_for("document.getElementById('state').textContent === 'running'")
    page.type("textarea#text", "also check the flaky test")
    page.click("button#send")
    steer = cliutil.wait_matching(fleet.path("busy.jsonl"), "accepted", text="also check the flaky test")[0]
    assert (steer["delivery"], steer["run_id"]) == ("steer", run_id)
    result = cliutil.wait_matching(fleet.path("busy.jsonl"), "result", run_id=run_id)[0]
    assert result["status"] == "completed"
    assert "echo: also check the flaky test" in result["output"].splitlines()


def test_transcript_shows_a_new_event_line_without_a_reload(page, fleet):
    fleet.send("chat.jsonl", "first question", "--wait")
    open_session(page, fleet, "chat.jsonl")
    page.wait_for("document.getElementById('transcript').innerText.includes('echo: first question')")
    page.evaluate("window.sameDocument = true")
    fleet.send("chat.jsonl", "second question")
    page.wait_for("document.getElementById('transcript').innerText.includes('echo: second question')")
    assert page.evaluate("window.sameDocument") is True


def test_agent_text_with_markup_and_terminal_escapes_is_shown_inert(page, fleet):
    fleet.send("hostile.jsonl", HOSTILE, "--wait")
    open_session(page, fleet, "hostile.jsonl")
    text = page.wait_for("(() => { const t = document.getElementById('transcript').innerText; "
                         "return t.includes('echo: <script>') && t; })()")
    assert "echo: <script>alert(1)</script> <img src=x onerror=alert(2)> \\x1b[31mred\\x1b]0;title\\x07" in text
    assert "\x1b" not in text and "\x07" not in text
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # app.js alone
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert dialogs(page) == []
    assert page.console_errors() == []


def test_fleet_row_of_a_file_named_with_markup_and_escapes_is_shown_inert(page, fleet):
    name = "<img src=x onerror=alert(1)>\x1b[31mred.jsonl"
    fleet.send(name, "hello", "--wait")
    open_fleet(page, fleet, 1)
    shown = row(page, fleet, name)
    assert shown is not None
    assert shown["cells"]["name"] == "<img src=x onerror=alert(1)>\\x1b[31mred.jsonl"
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert dialogs(page) == []
    assert page.console_errors() == []


def test_fleet_row_of_a_request_with_markup_and_escapes_is_shown_inert(page, fleet):
    fleet.send("asks.jsonl", "/permission " + HOSTILE)
    pending(fleet, "asks.jsonl")
    open_fleet(page, fleet, 1)
    activity = page.wait_for("(() => { const td = document.querySelector('tr.awaiting td.activity'); "
                             "return td && td.textContent; })()")
    assert activity == "permission: " + HOSTILE.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert dialogs(page) == []
    assert page.console_errors() == []


def test_cancel_button_cancels_the_running_run(page, fleet):
    fleet.send("busy.jsonl", "/sleep 60")
    run_id = running(fleet, "busy.jsonl")
    open_session(page, fleet, "busy.jsonl")
    page.wait_for("document.getElementById('state').textContent === 'running'")
    page.click("button#cancel")
    result = cliutil.wait_matching(fleet.path("busy.jsonl"), "result", run_id=run_id)[0]
    assert result["status"] == "cancelled"


def pictures_folder(tmp_path) -> str:
    """Where the README's pictures go: docs/images when HARNESSCTL_REDRAW_PICTURES=1 asks for them, else a
    scratch folder, so that a test run leaves the checkout as it found it (.ci/run fails on a changed tracked
    file) and still proves that the pictures can be taken."""
    return IMAGES if os.environ.get(REDRAW) == "1" else str(tmp_path / "images")


def tracked_pictures() -> Dict[str, bytes]:
    """docs/images' files and their bytes."""
    found = {}
    for name in sorted(os.listdir(IMAGES)):
        with open(os.path.join(IMAGES, name), "rb") as f:
            found[name] = f.read()
    return found


def test_readme_pictures_are_drawn_in_the_checkout_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(REDRAW, raising=False)
    assert pictures_folder(tmp_path) == str(tmp_path / "images")
    monkeypatch.setenv(REDRAW, "1")
    assert pictures_folder(tmp_path) == IMAGES


def test_readme_pictures_of_the_fleet_and_of_a_session_awaiting_approval(page, fleet, tmp_path):
    """docs/images/serve-fleet.png and serve-session.png: every run draws them, in a scratch folder, and
    HARNESSCTL_REDRAW_PICTURES=1 over the tracked ones, so that a change to the pages is one command away from
    its pictures."""
    fleet.send("fix-flaky-test.jsonl", "/plan x read the failing test | > fix the race in the queue | run the suite\n"
               "/tool npm test -- --runInBand\n/edit src/queue.js\n/permission command:npm test -- --runInBand")
    fleet.send("bump-dependencies.jsonl", "/usage 48210 3120\nbump the minor versions and update the lockfile",
               "--wait")
    fleet.send("migrate-to-esm.jsonl", "/fail the model's context window is full")
    fleet.send("add-retry-to-uploads.jsonl", "/tool npm run build\n/sleep 600")
    fleet.send("update-api-docs.jsonl", ASK_NPM_TEST, "--mode", "ask")
    fleet.send("review-pull-request.jsonl", "/usage 12800 940\nreview the open pull request", "--wait")
    pending(fleet, "fix-flaky-test.jsonl")
    pending(fleet, "update-api-docs.jsonl")
    running(fleet, "add-retry-to-uploads.jsonl")
    cliutil.wait_matching(fleet.path("migrate-to-esm.jsonl"), "result", status="failed")
    open_fleet(page, fleet, 6)
    page.wait_for("document.querySelectorAll('tr.awaiting').length === 2 && "
                  "document.querySelectorAll('tr.state-running').length === 1")
    images, before = pictures_folder(tmp_path), tracked_pictures()
    os.makedirs(images, exist_ok=True)
    fleet_png = os.path.join(images, "serve-fleet.png")
    page.screenshot(fleet_png)
    open_session(page, fleet, "fix-flaky-test.jsonl")
    page.wait_for("!!document.querySelector('button.answer[data-answer=\"allow\"]')")
    page.evaluate("document.querySelectorAll('#transcript details').forEach((fold) => { fold.open = true; })")
    session_png = os.path.join(images, "serve-session.png")
    page.screenshot(session_png)
    for path in (fleet_png, session_png):
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", path
    if images != IMAGES:
        assert tracked_pictures() == before  # issue 47: every run redrew them, leaving the checkout changed

