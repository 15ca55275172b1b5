"""`harnessctl serve` of sessions with a worktree (issue 49): a row carries the branch and the changes, counted
again while a page is open though the event file did not change; GET /session/patch answers `diff FILE` as text,
guarded as the other pages; and in headless Chromium the row shows them and the session page its patch, inert,
refreshed as the worktree changes.  Real git repositories, mock sessions made with the real CLI."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
import ssh_support
from cliutil import command, ok
from gitbed import new_repo
from servebed import WAIT, Scratch

MARKUP = "<b>bold</b> <img src=x onerror=alert(1)> \x1b[31mred\n"
SHOWN = "<b>bold</b> <img src=x onerror=alert(1)> \\x1b[31mred"
COUNTED = {"files": 2, "added": 2, "removed": 1}  # a.txt: one line changed; markup.html: one line, new
TREE_TEXT = "harnessctl/tree \u00b7 2 files +2 \u22121"


def worktree_session(scratch: Scratch, name: str) -> str:
    """A git repository beside the served folder, and a mock session on it with --worktree: its worktree's path."""
    repo = os.path.join(scratch.base, "repo")
    if not os.path.isdir(repo):
        new_repo(Path(repo), {"a.txt": "one\ntwo\n"})
    ok("send", scratch.file(name), "hi", "--worktree", "--adapter", "mock", "--cwd", repo, "--wait", env=scratch.env)
    return scratch.status(scratch.file(name))["worktree"]["path"]


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def edited(tree: str) -> None:
    """The edits COUNTED counts: one line of a.txt changed, a new file of markup and a terminal escape."""
    write(os.path.join(tree, "a.txt"), "one\nTWO\n")
    write(os.path.join(tree, "markup.html"), MARKUP)


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """One serve of a folder holding a worktree session with edits (tree.jsonl) and one without a worktree."""
    found = Scratch(tmp_path_factory.mktemp("serve-worktree"))
    try:
        edited(worktree_session(found, "tree.jsonl"))
        found.send(found.file("plain.jsonl"), "hello", "--wait")
        found.server = found.serve()
        yield found
    finally:
        found.close()


@pytest.fixture
def scratch(tmp_path):
    found = Scratch(tmp_path)
    yield found
    found.close()


def rows_by_file(serve):
    feed = serve.feed()
    try:
        return {row["file"]: row for row in feed.first_rows()}
    finally:
        feed.close()


# -- the rows --------------------------------------------------------------------------------------------------


def test_a_worktree_sessions_row_carries_its_branch_and_its_changes(bed):
    rows = rows_by_file(bed.server)
    tree = rows[bed.file("tree.jsonl")]["worktree"]
    assert (tree["branch"], tree["changes"]) == ("harnessctl/tree", COUNTED)
    assert "worktree" not in rows[bed.file("plain.jsonl")]


def test_a_row_is_sent_again_when_its_worktree_changes_though_its_event_file_did_not(scratch):
    tree = worktree_session(scratch, "tree.jsonl")
    serve = scratch.serve()
    feed = serve.feed()
    try:
        file = scratch.file("tree.jsonl")
        assert [row["worktree"]["changes"] for row in feed.first_rows()] == [{"files": 0, "added": 0, "removed": 0}]
        size = os.path.getsize(file)
        edited(tree)
        _, row = feed.until(lambda name, data: name == "row" and data["worktree"]["changes"] != {
            "files": 0, "added": 0, "removed": 0}, "a row with the new changes")
        assert (row["file"], row["worktree"]["changes"]) == (file, COUNTED)
        assert os.path.getsize(file) == size  # the event file did not change: the fleet counted again
    finally:
        feed.close()


# -- GET /session/patch ----------------------------------------------------------------------------------------


def test_the_patch_of_a_served_worktree_session_is_its_diff_as_text_with_escapes_shown(bed):
    file = bed.file("tree.jsonl")
    status, headers, body = bed.server.get("/session/patch", file=file)
    assert status == 200, body
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    diff = ok("diff", file, env=bed.env).stdout.decode("utf-8")
    assert "\x1b" in diff and b"\x1b" not in body
    assert body.decode("utf-8") == diff.replace("\x1b", "\\x1b")
    assert "+" + SHOWN + "\n" in body.decode("utf-8")


def test_the_patch_needs_the_token(bed):
    file = bed.file("tree.jsonl")
    assert bed.server.get("/session/patch", token=False, file=file)[0] == 403
    assert bed.server.get("/session/patch", token="x" * 43, file=file)[0] == 403


@pytest.mark.parametrize("file", ["/etc/passwd", "outside", "none"])
def test_the_patch_of_a_file_not_served_is_404(bed, file):
    paths = {"/etc/passwd": "/etc/passwd", "outside": os.path.join(bed.outside, "tree.jsonl"), "none": None}
    query = {"file": paths[file]} if paths[file] else {}
    status, _, body = bed.server.get("/session/patch", **query)
    assert (status, body) == (404, b"harnessctl: not a session this server shows\n")


def test_the_patch_of_a_session_without_a_worktree_is_refused_with_the_reason(bed):
    status, _, body = bed.server.get("/session/patch", file=bed.file("plain.jsonl"))
    assert status == 400
    assert body.decode().startswith("harnessctl: ") and "has no worktree" in body.decode(), body


# -- the pages, in Chromium ------------------------------------------------------------------------------------


def session_url(scratch: Scratch, name: str) -> str:
    serve = scratch.server
    return "http://%s/session?%s" % (serve.host, urlencode({"file": scratch.file(name), "token": serve.token}))


def test_the_fleet_page_shows_a_worktree_sessions_branch_and_changes_on_its_row(page, bed):
    page.goto(bed.server.line.decode().strip())
    page.wait_for("document.body.dataset.ready === '1' && document.querySelectorAll('tr.session').length === 2")
    shown = page.evaluate("[...document.querySelectorAll('tr.session')].map((tr) => [tr.dataset.file, "
                          "tr.querySelector('td.name a').textContent, "
                          "(tr.querySelector('td.name .worktree') || {}).textContent || null])")
    assert sorted(shown) == [[bed.file("plain.jsonl"), "plain.jsonl", None],
                             [bed.file("tree.jsonl"), "tree.jsonl", TREE_TEXT]]


def test_the_session_page_shows_its_patch_folded_inert_and_refreshed_as_the_worktree_changes(page, scratch):
    tree = worktree_session(scratch, "tree.jsonl")
    edited(tree)
    scratch.server = scratch.serve()
    page.goto(session_url(scratch, "tree.jsonl"))
    page.wait_for("document.body.dataset.ready === '1' && !document.getElementById('worktree').hidden")
    assert page.evaluate("document.getElementById('changes').textContent") == "worktree " + TREE_TEXT
    assert page.evaluate("document.querySelector('#worktree details').open") is False  # folded
    page.click("#worktree summary")
    text = page.wait_for("(() => { const t = document.getElementById('patch').textContent; "
                         "return t.includes('markup.html') && t; })()", WAIT)
    assert "+" + SHOWN + "\n" in text and "+TWO\n" in text and "-two\n" in text
    assert "\x1b" not in text
    assert page.evaluate("document.querySelectorAll('#patch b, img').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # app.js alone
    write(os.path.join(tree, "later.txt"), "written later\n")  # the event file is not touched
    page.wait_for("document.getElementById('patch').textContent.includes('+written later')", WAIT)
    assert page.evaluate("document.getElementById('changes').textContent").endswith("3 files +3 \u22121")
    dialogs = [e for e in page.browser.events(page.session) if e["method"] == "Page.javascriptDialogOpening"]
    assert dialogs == [] and page.console_errors() == []


# -- ssh:// ------------------------------------------------------------------------------------------------------


def test_an_ssh_sessions_row_and_patch_are_those_of_its_machine(scratch, ssh_bed):
    """The remote row is `status` there (the changes counted there); the patch is `diff` run there."""
    tree = worktree_session(scratch, "remote.jsonl")  # made here, where the bed's machine is
    edited(tree)
    scratch.env = ssh_bed.env(scratch.env, command())
    address = ssh_support.address("h1", scratch.file("remote.jsonl"))
    serve = scratch.serve(address)
    feed = serve.feed()
    try:
        _, row = feed.until(lambda name, data: name == "row" and data["file"] == address, "the remote row")
    finally:
        feed.close()
    assert (row["worktree"]["branch"], row["worktree"]["changes"]) == ("harnessctl/remote", COUNTED)
    status, _, body = serve.get("/session/patch", file=address)
    assert status == 200, body
    assert body.decode() == ok("diff", scratch.file("remote.jsonl"), env=scratch.env).stdout.decode().replace(
        "\x1b", "\\x1b")
