"""The two pages' HTML: skeletons only.  Everything the sessions say arrives
later as JSON and is put into the page as text by static/app.js (never as
HTML), so no agent text is ever parsed as markup; the few values written here
are the server's own and escaped all the same."""

from __future__ import annotations

from html import escape

from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional

HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%(title)s</title>
<link rel="stylesheet" href="/static/style.css?token=%(token)s">
<link rel="icon" href="/static/icon.svg?token=%(token)s">
<script src="/static/app.js?token=%(token)s" defer></script>
</head>
"""

FLEET = """<body data-page="fleet">
<header><h1>harnessctl</h1><span id="summary"></span><span id="notice" role="status"></span></header>
<table id="fleet"><thead><tr><th>session</th><th>agent</th><th>state</th><th>now</th><th>spent</th>
<th>last activity</th></tr></thead><tbody></tbody></table>
<p id="empty" hidden>No sessions yet: they appear here as their event files appear.</p>
</body></html>
"""

SESSION = """<body data-page="session">
<header><a href="/?token=%(token)s">fleet</a> <h1>%(name)s</h1> <span id="state"></span>
<span id="facts"></span></header>
<main id="transcript"></main>
<section id="worktree" hidden><details><summary id="changes"></summary>
<button id="refresh" type="button">Refresh</button><pre id="patch"></pre></details></section>
<footer><span id="notice" role="status"></span>
<textarea id="text" rows="2" placeholder="A message: steers the running run, or starts the next"></textarea>
<button id="send" type="button">Send</button><button id="cancel" type="button">Cancel run</button></footer>
</body></html>
"""


def page(token: str, name: Optional[str] = None) -> bytes:
    """The fleet page, or with a session's `name` (Sessions.name) that session's page."""
    if name is None:
        return ((HEAD % {"title": "harnessctl fleet", "token": escape(token)}) + FLEET).encode()
    name = escape(shown(name))
    values = {"title": name + " - harnessctl", "token": escape(token), "name": name}
    return ((HEAD % values) + SESSION % values).encode()
