"""One session page's transcript: the entries `log` shows, drawn as `log`
draws them (log/render.py, every agent text cleaned first), with colour
names where `log` writes terminal codes, so that the page and the terminal
never disagree about what happened.

A local file is folded here as `log --follow` folds it (log/printer.py),
read on from where it stopped each time the fleet's watch says it changed; a
remote one is `log --json` on its machine, asked again when its row changed.
"""

from __future__ import annotations

import json
import os
import re

from ..log.printer import Printer
from ..log.render import Style, answers_of, render
from ..log.show import open_log
from ..log.transcript import Transcript
from ..log.window import window
from ..remote.address import is_remote
from ..store.address import resolve
from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, List, Optional, Tuple, Union

    from ..sessions import Session, Sessions

    Drawn = Dict[str, Any]
    Entry = Dict[str, Any]

# render's colours become marks: \x01names\x02text\x03.  No agent text can
# hold one: render sees only cleaned text, in which every control character
# is shown escaped (visible.py).
PAINTED = re.compile("\x01([^\x02]*)\x02([^\x03]*)\x03")


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
    """A page's transcript of one local file, read on as it grows."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.style = Marks(file)
        self.f: Optional[BinaryIO] = None
        self.printer = Printer(Transcript(), self.style, False)
        self.offset = 0
        self.sent: Dict[str, str] = {}

    def close(self) -> None:
        if self.f is not None:
            self.f.close()

    def start(self) -> List[Drawn]:
        """Everything `log FILE` shows now (its window of the file)."""
        self.f = open_log(resolve(self.file))
        start = window(self.f, os.fstat(self.f.fileno()).st_size, None, None)
        self.offset = self.printer.feed(self.f, start)
        return self._changed(list(self.printer.transcript.entries))

    def more(self) -> Tuple[bool, List[Drawn]]:
        """(whether the page starts over: the path names a new or shorter
        file now, as `log --follow` reads it again; the entries new or changed)."""
        assert self.f is not None
        try:
            st = os.stat(self.file)
        except OSError:
            return False, []  # gone for now (being replaced): look again at the next change
        fst = os.fstat(self.f.fileno())
        if (st.st_dev, st.st_ino) != (fst.st_dev, fst.st_ino) or st.st_size < self.offset:
            self.close()
            self.printer, self.sent, self.offset = Printer(Transcript(), self.style, False), {}, 0
            return True, self.start()
        keys: List[str] = []
        self.offset = self.printer.feed(self.f, self.offset, keys)
        transcript = self.printer.transcript
        return False, self._changed([k for k in keys if transcript.settled(transcript.entries[k])])

    def _changed(self, keys: List[str]) -> List[Drawn]:
        found = []
        transcript = self.printer.transcript
        for key in self.printer.grouped(list(dict.fromkeys(keys))):
            entry = transcript.entries[key]
            if not transcript.shown(entry):
                continue
            one = drawn(key, entry, self.style)
            text = json.dumps(one)
            if self.sent.get(key) != text:
                self.sent[key] = text
                found.append(one)
        return found


class RemoteFollower:
    """A page's transcript of a session on another machine: `log --json`
    there, asked again whenever its row changed (remote rows change rarely:
    REMOTE_POLL)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.style = Marks(session.file)
        self.sent: Dict[str, str] = {}

    def close(self) -> None:
        pass

    def start(self) -> List[Drawn]:
        return self.more()[1]

    def more(self) -> Tuple[bool, List[Drawn]]:
        found = []
        for piece in self.session.pieces(None, None, True):
            entry = json.loads(piece)
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or "entry" not in entry:
                continue  # a note about the reading
            key = entry.pop("id")
            entry.pop("reply", None)
            if self.sent.get(key) != piece:
                self.sent[key] = piece
                found.append(drawn(key, entry, self.style))
        return False, found


def follower(file: str, sessions: Sessions) -> Union[Follower, RemoteFollower]:
    """The follower of a local or remote session."""
    return RemoteFollower(sessions.at(file)) if is_remote(file) else Follower(file)
