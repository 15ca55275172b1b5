"""One session page's transcript: the entries `log` shows, drawn as `log`
draws them (log/render.py, every agent text cleaned first), with colour
names where `log` writes terminal codes, so that the page and the terminal
never disagree about what happened.

The entries come from the session (Session.entries): a local file folded
as `log --follow` folds it, read on from where it stopped each time the
fleet's watch says it changed; a remote one's from one `log --json --follow`
on its machine, which wakes the page as its lines come (remote/calls.Stream).

A session with a worktree has its patch beside the transcript (patch_text):
`diff FILE`'s bytes as a terminal shows them, asked when the page asks.
"""

from __future__ import annotations

import json
import re

from ..log.render import Style, answers_of, render
from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Tuple

    from ..log.reader import Entries
    from ..sessions import Session

    Drawn = Dict[str, Any]
    Entry = Dict[str, Any]

# render's colours become marks: \x01names\x02text\x03.  No agent text can
# hold one: render sees only cleaned text, in which every control character
# is shown escaped (visible.py).
PAINTED = re.compile("\x01([^\x02]*)\x02([^\x03]*)\x03")
PATCH_LIMIT = 2 << 20  # bytes of a patch a page shows; `diff FILE` prints it all


class Marks(Style):
    """log's Style with marks for colours, and diffs shown (the page folds them)."""

    def __init__(self, file: str) -> None:
        super().__init__(True, file, diff=True)

    def paint(self, text: str, *names: str) -> str:
        return "\x01%s\x02%s\x03" % (" ".join(names), text) if text else text


def drawn(key: str, entry: Entry, style: Style) -> Drawn:
    """An entry as the page draws it: its lines as (text, colour names) pieces,
    and a pending request's answers."""
    lines = [pieces(line) for line in render(entry, style)]
    found: Drawn = {"id": key, "kind": entry["entry"], "lines": lines}
    if entry["entry"] == "request" and entry.get("state") == "pending":
        found["request"] = answers(entry)
    return found


def pieces(line: str) -> List[Tuple[str, str]]:
    """A rendered line cut where its colours change."""
    found: List[Tuple[str, str]] = []
    at = 0
    for match in PAINTED.finditer(line):
        if match.start() > at:
            found.append((line[at:match.start()], ""))
        found.append((match.group(2), match.group(1)))
        at = match.end()
    if at < len(line) or not found:
        found.append((line[at:], ""))
    return found


def answers(entry: Entry) -> Dict[str, Any]:
    """What a pending request's buttons send: each option as `reply` takes it
    (its label cleaned for the eye, its value exact), and a question's fields."""
    options, asked = answers_of(entry)
    questions = []
    for question in asked:
        choices = [str(o) for o in question.get("options") or () if isinstance(o, (str, int, float))]
        questions.append({"id": str(question.get("id")), "label": shown(str(question.get("question") or "")),
                          "options": choices, "optional": question.get("optional") is True})
    return {"request_id": str(entry.get("request_id")), "options": [{"label": shown(o), "answer": o} for o in options],
            "questions": questions}


class Follower:
    """A page's transcript of one session, drawn as its entries come
    (Session.entries: a local file read on as it grows, a remote one's
    followed there), each sent again only when it changed."""

    def __init__(self, session: Session, wake: Callable[[], None]) -> None:
        self.reader = session.entries(wake)
        self.style = Marks(session.file)
        self.sent: Dict[str, str] = {}

    def close(self) -> None:
        self.reader.close()

    def start(self) -> List[Drawn]:
        """Everything `log FILE` shows now."""
        return self._changed(self.reader.start())

    def more(self) -> Tuple[bool, List[Drawn]]:
        """(whether the page starts over, the entries new or changed)."""
        again, entries = self.reader.more()
        if again:
            self.sent = {}
        return again, self._changed(entries)

    def _changed(self, entries: Entries) -> List[Drawn]:
        found = []
        for key, entry in entries:
            one = drawn(key, entry, self.style)
            text = json.dumps(one)
            if self.sent.get(key) != text:
                self.sent[key] = text
                found.append(one)
        return found


def patch_text(patch: bytes) -> str:
    """A session's patch (Session.patch) as its page shows it: as `diff`
    shows it on a terminal, UTF-8 with replacement and every control
    character but newline and tab shown escaped; cut at PATCH_LIMIT bytes."""
    more = len(patch) - PATCH_LIMIT
    text = shown(patch[:PATCH_LIMIT].decode("utf-8", "replace"), lines=True)
    if more > 0:
        text += "\n[%d more bytes: `harnessctl diff FILE` prints them all]\n" % more
    return text
