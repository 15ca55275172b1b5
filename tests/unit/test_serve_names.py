"""The name a serve page shows a session by (docs/PROTOCOL-SERVE.md section 24): the file's name, and the machine of an
ssh:// session, since `a.jsonl` here and `a.jsonl` on a box are two sessions."""

from __future__ import annotations

import pytest

from harnessctl.serve.pages import page
from harnessctl.sessions import Sessions


@pytest.mark.parametrize("file, name", [
    ("/home/me/agent/a.jsonl", "a.jsonl"),
    ("a.jsonl", "a.jsonl"),
    ("ssh://box/home/me/a.jsonl", "a.jsonl on box"),
    ("ssh://me@box:2222/srv/a.jsonl", "a.jsonl on me@box:2222"),
    ("ssh://[::1]:22/a.jsonl", "a.jsonl on [::1]:22"),
    ("ssh://box", "ssh://box"),
])
def test_a_session_is_shown_by_its_name_and_its_machine(file, name):
    assert Sessions([]).name(file) == name


def test_a_session_page_is_titled_by_the_same_name():
    assert b"<h1>a.jsonl on me@box</h1>" in page("t", Sessions([]).name("ssh://me@box/srv/a.jsonl"))
