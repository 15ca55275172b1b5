"""The served sessions, and the one thread that watches them for every page.

Each tick the thread looks at every served folder and file with one stat (no
read): only a file that changed is asked its status (as `status` asks it:
its live runtime answers from memory), and every page subscribed hears the
new row.  So a page open costs a queue, not a poll of its own, and an idle
fleet a stat per file per tick.  Sessions on other machines (ssh://) are
asked by a second thread, one `status` per machine every REMOTE_POLL seconds
(remote/fleet.py), and a row is sent only when its line changed.

A session with a worktree has its changes in its row (status counts them
with git), but an edit in the worktree does not touch the event file: while
a page is open, the thread counts them again (worktree.changes, no status)
for a row not asked for WORKTREE_POLL seconds, at most RECOUNTS a tick, and
sends the row when they changed.  A remote row's are counted there, on each
ask.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time

from ..commands import error_line, file_status, listed
from ..errors import HarnessctlError
from ..sessions import latest_activity
from ..store.address import under
from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set, Tuple

    from ..sessions import Sessions

    Row = Dict[str, Any]
    Look = Tuple[int, int, int, int]

POLL = 0.25  # seconds between two looks at the local files: a page hears an event line within it
REMOTE_POLL = 2.0  # seconds between two asks of the remote sessions: each is an ssh round trip
WORKTREE_POLL = 5.0  # seconds a worktree row's changes may be old while a page is open
RECOUNTS = 2  # worktree rows counted again at most per tick: a tick's git work stays small
BACKLOG = 10000  # events a page that stopped reading may owe before it is dropped (it reconnects)


class Subscriber:
    """One page's feed: (event name, data) pairs, in order.  A page that
    stops reading is dropped rather than let its backlog grow without end;
    its browser reconnects and starts from a fresh picture."""

    def __init__(self) -> None:
        self.events: queue.Queue[Tuple[str, Any]] = queue.Queue(BACKLOG)
        self.dropped = False

    def put(self, event: str, data: Any) -> None:
        try:
            self.events.put_nowait((event, data))
        except queue.Full:
            self.dropped = True


class Fleet:
    """The sessions of the arguments (a folder's event files as `status DIR`
    lists them, appearing as they appear), their rows, and the pages that
    follow them."""

    def __init__(self, args: List[str], sessions: Sessions) -> None:
        self.local, self.remote = sessions.split(args)
        self.roots = [os.path.realpath(arg) for arg in self.local]
        self.sessions = sessions
        self.lock = threading.Lock()
        self.rows: Dict[str, Row] = {}
        self.subscribers: List[Subscriber] = []
        self.stopped = threading.Event()
        self._folders: Dict[str, Tuple[Optional[Look], List[str]]] = {}  # a folder's look and files
        self._looks: Dict[str, Optional[Look]] = {}  # a local file's last look
        self._asked: Set[str] = set()  # the rows of sessions on other machines
        self._counted: Dict[str, float] = {}  # a local worktree row's last count of its changes (monotonic)

    # -- what pages ask -------------------------------------------------------------

    def served(self, file: str) -> bool:
        """Whether `file` is one of the sessions shown, exactly as the fleet
        names it, and (on this machine) really inside the served folders now:
        nothing else is ever opened for a page."""
        with self.lock:
            if file not in self.rows:
                return False
            if file in self._asked:
                return True  # held to the roots on its machine
        return self.inside(file)

    def inside(self, file: str) -> bool:
        """Whether a local file's real path is a served FILE or in a served
        folder: a symlink an agent planted in one leads nowhere."""
        return under(os.path.realpath(file), self.roots)

    def subscribe(self) -> Tuple[List[Row], Subscriber]:
        """Every row now, and a feed of what changes from now on."""
        subscriber = Subscriber()
        with self.lock:
            self.subscribers.append(subscriber)
            return sorted(self.rows.values(), key=lambda row: row["index"]), subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self.lock:
            if subscriber in self.subscribers:
                self.subscribers.remove(subscriber)

    def _placed(self, row: Row, index: int) -> Row:
        """A status line as a row: its place among the rows and the name it is shown by."""
        row.update(index=index, name=self.sessions.name(row["file"]))
        return row

    # -- watching -------------------------------------------------------------------

    def start(self) -> None:
        threading.Thread(target=self._watch_local, name="local", daemon=True).start()
        if self.remote:
            threading.Thread(target=self._watch_remote, name="remote", daemon=True).start()

    def _watch_local(self) -> None:
        while not self.stopped.wait(POLL):
            self.look()
            self.recount()

    def _watch_remote(self) -> None:
        while True:
            try:
                self.ask_remote()
            except HarnessctlError:
                pass  # ssh itself could not start: the rows stay as they were, asked again
            if self.stopped.wait(REMOTE_POLL):
                return

    def look(self) -> None:
        """One look at the local sessions: rows for the files that changed,
        gone for those no longer listed.  A missing folder is an error here
        (the first look, before serving, raises it) and, later, no files."""
        files = []
        for arg in self.local:
            files.extend(self._files_of(arg))
        index = {file: i for i, file in enumerate(files)}
        for file in [f for f in self._looks if f not in index]:
            del self._looks[file]
            self._counted.pop(file, None)
            self._publish(file, None)
        for file in files:
            seen = _look(file)
            if file not in self._looks or seen != self._looks[file] or self._moved(file, index[file]):
                self._looks[file] = seen
                row = self._row(file, index[file])
                if isinstance(row.get("worktree"), dict):
                    self._counted[file] = time.monotonic()
                else:
                    self._counted.pop(file, None)
                self._publish(file, row)

    def recount(self) -> None:
        """While a page is open, the changes of the local worktree rows
        counted longest ago (more than WORKTREE_POLL seconds), RECOUNTS at
        most: a row is sent again when they changed.  Only look() and this
        publish local rows, both on the local thread."""
        with self.lock:
            if not self.subscribers:
                return
            now = time.monotonic()
            due = sorted((at, file) for file, at in self._counted.items() if now - at >= WORKTREE_POLL)[:RECOUNTS]
            rows = [(file, self.rows.get(file)) for _, file in due]
        for file, row in rows:
            if row is None or not isinstance(row.get("worktree"), dict) or not self.inside(file):
                self._counted.pop(file, None)  # look() asks it again when it changes
                continue
            self._counted[file] = now
            counted = inert(_changes(file))
            if row["worktree"].get("changes") != counted:
                self._publish(file, dict(row, worktree=dict(row["worktree"], changes=counted)))

    def _files_of(self, arg: str) -> List[str]:
        """A FILE argument itself; a folder's event files, listed again only when the folder changed."""
        seen = _look(arg)
        known = self._folders.get(arg)
        if known is not None and known[0] == seen and seen is not None:
            return known[1]
        try:
            files = listed(arg)
        except HarnessctlError:
            if known is None:
                raise
            files = []
        files = [arg] if files is None else files
        self._folders[arg] = (seen, files)
        return files

    def _moved(self, file: str, index: int) -> bool:
        with self.lock:
            row = self.rows.get(file)
            return row is not None and row["index"] != index

    def _row(self, file: str, index: int) -> Row:
        if self.inside(file):
            line, _ = file_status(file)
        else:
            line = error_line(file, "refusing %s: its real path is not in the served folders" % file, 2)
        row = self._placed(json.loads(line), index)
        if row.get("state") in ("running", "cancelling"):
            row["activity"] = latest_activity(file)
        return inert(row)

    def ask_remote(self) -> None:
        """The remote sessions' lines, one ssh per machine; rows for the lines that changed."""
        lines = [line for lines in self.sessions.statuses(self.remote) for line in lines]
        base = 1 << 20  # remote rows after the local ones, in the order given
        for i, line in enumerate(lines):
            row = inert(self._placed(json.loads(line), base + i))
            with self.lock:
                self._asked.add(row["file"])
                same = self.rows.get(row["file"]) == row
            if not same:
                self._publish(row["file"], row)

    def _publish(self, file: str, row: Optional[Row]) -> None:
        with self.lock:
            if row is None:
                self.rows.pop(file, None)
            else:
                self.rows[file] = row
            subscribers = list(self.subscribers)
        for subscriber in subscribers:
            subscriber.put("row" if row is not None else "gone", row if row is not None else {"file": file})


def inert(value: Any) -> Any:
    """A row with its texts as a person may read them: the pages put each in
    as it is (as text, never markup), and a control character in one (an
    agent's request message, a file name) is shown escaped, as `log` shows
    it; only `file`, the name a page sends back, stays exact."""
    if isinstance(value, dict):
        return {key: item if key == "file" else inert(item) for key, item in value.items()}
    if isinstance(value, list):
        return [inert(item) for item in value]
    return shown(value) if isinstance(value, str) else value


def _changes(file: str) -> Dict[str, Any]:
    """What the session changed in its worktree, as status counts it (client.py)."""
    from ..binding import worktree_of
    from ..worktree import changes

    try:
        found: Dict[str, Any] = changes(worktree_of(file))
    except HarnessctlError as e:
        found = {"error": str(e)}
    except OSError as e:  # gone since it was listed: look() says so next
        found = {"error": "cannot read %s: %s" % (file, e.strerror or e)}
    return found


def _look(path: str) -> Optional[Look]:
    """What one stat says of a path: a change in any of it is a change."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
